/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-policy.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "dns-name.h"
#include "parse-util.h"
#include "strv.h"

#define POLICY_PREFIX "MCP_EXEC_EGRESS_POLICY_"
#define CALLERS_PREFIX "MCP_EXEC_EGRESS_CALLERS_"
#define CALLERS_MAX 1024
/* Longest token quoted back in an error message. */
#define QUOTE_MAX 80

#define KiB (UINT64_C(1) << 10)
#define GiB (UINT64_C(1) << 30)



/* Values are lists: entries separated by blanks or commas. Returns the next
 * entry (its length in *ret_len) and moves *p past it; NULL at the end. */
static const char *next_token(const char **p, size_t *ret_len) {
        const char *s = *p, *start;

        s += strspn(s, " \t,");
        if (!*s)
                return NULL;
        start = s;
        s += strcspn(s, " \t,");
        *ret_len = (size_t) (s - start);
        *p = s;
        return start;
}

static char *strndup_lower(const char *s, size_t n) {
        char *r = strndup(s, n);

        for (char *q = r; q && *q; q++)
                if (*q >= 'A' && *q <= 'Z')
                        *q = (char) (*q - 'A' + 'a');
        return r;
}

static bool pattern_is_valid(const char *s, size_t n) {
        if (n > 2 && s[0] == '*' && s[1] == '.')
                return dns_name_is_valid(s + 2, n - 2);
        return dns_name_is_valid(s, n);
}

/* The part of "PREFIX<NAME>=…" after the prefix: [A-Z0-9_]{1,32}. */
static bool policy_suffix_is_valid(const char *s, size_t n) {
        if (n == 0 || n > EGRESS_POLICY_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
                        return false;
        return true;
}

static int parse_port_token(const char *var, const char *t, size_t n, EgressPolicy *p, char **ret_error) {
        char buf[6];
        uint16_t port;

        if (n < 2 || n - 1 >= sizeof buf)
                return config_fail(ret_error, "%s: invalid port '%.*s', expected :1 to :65535", var,
                                   (int) MIN(n, QUOTE_MAX), t);
        memcpy(buf, t + 1, n - 1);
        buf[n - 1] = 0;
        if (parse_port(buf, &port) < 0 || port == 0)
                return config_fail(ret_error, "%s: invalid port '%.*s', expected :1 to :65535", var, (int) n, t);
        if (p->n_ports >= EGRESS_PORTS_MAX)
                return config_fail(ret_error, "%s: more than %d ports", var, EGRESS_PORTS_MAX);
        p->ports[p->n_ports++] = port;
        return 0;
}

static int parse_policy_value(const char *var, const char *value, EgressPolicy *p, char **ret_error) {
        const char *t, *cursor = value;
        size_t n, n_hosts = 0;
        int r;

        while ((t = next_token(&cursor, &n))) {
                if (t[0] == ':') {
                        r = parse_port_token(var, t, n, p, ret_error);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!pattern_is_valid(t, n))
                        return config_fail(ret_error,
                                    "%s: invalid host pattern '%.*s', expected a DNS name or *.name "
                                    "(letters, digits, '-' and '.'; no IP address, no trailing dot)",
                                    var, (int) MIN(n, QUOTE_MAX), t);
                if (n_hosts >= EGRESS_HOSTS_MAX)
                        return config_fail(ret_error, "%s: more than %d host patterns", var, EGRESS_HOSTS_MAX);
                r = strv_extend_n(&p->hosts, t, n);
                if (r < 0)
                        return r;
                for (char *q = p->hosts[n_hosts]; *q; q++)
                        if (*q >= 'A' && *q <= 'Z')
                                *q = (char) (*q - 'A' + 'a');
                n_hosts++;
        }
        if (n_hosts == 0)
                return config_fail(ret_error,
                                   "%s: no host pattern, expected e.g. \"pypi.org files.pythonhosted.org :443\"", var);
        if (p->n_ports == 0)
                p->ports[p->n_ports++] = 443;
        return 0;
}

static int parse_policies(char *const *envp, EgressConfig *c, char **ret_error) {
        const size_t pl = strlen(POLICY_PREFIX);
        int r;

        for (char *const *e = envp; e && *e; e++) {
                _cleanup_free_ char *var = NULL;
                const char *eq, *name;
                EgressPolicy *p;
                size_t nl;

                if (!strneq(*e, POLICY_PREFIX, pl) || !(eq = strchr(*e, '=')))
                        continue;
                name = *e + pl;
                nl = (size_t) (eq - name);
                var = strndup(*e, (size_t) (eq - *e));
                if (!var)
                        return -ENOMEM;
                if (!policy_suffix_is_valid(name, nl))
                        return config_fail(ret_error,
                                           "%s: invalid policy name, expected %s and 1 to %d of A-Z, 0-9 and _", var,
                                           POLICY_PREFIX, EGRESS_POLICY_NAME_MAX);
                if (c->n_policies >= EGRESS_POLICIES_MAX)
                        return config_fail(ret_error, "%s: more than %d egress policies", var, EGRESS_POLICIES_MAX);
                if (!c->policies && !(c->policies = new0(EgressPolicy, EGRESS_POLICIES_MAX)))
                        return -ENOMEM;

                p = c->policies + c->n_policies;
                p->name = strndup_lower(name, nl);
                if (!p->name)
                        return -ENOMEM;
                c->n_policies++;        /* now owned by c, freed with it */
                for (size_t i = 0; i + 1 < c->n_policies; i++)
                        if (streq(c->policies[i].name, p->name))
                                return config_fail(ret_error, "%s: set twice", var);
                r = parse_policy_value(var, eq + 1, p, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool egress_caller_is_valid(const char *s, size_t n) {
        if (n > 4 && strneq(s, "uid:", 4)) {
                char buf[11];
                uint64_t uid;

                if (n - 4 >= sizeof buf)
                        return false;
                memcpy(buf, s + 4, n - 4);
                buf[n - 4] = 0;
                return parse_uint(buf, &uid) >= 0 && uid < UINT32_MAX;
        }
        if (n == strlen("http:loopback") && strneq(s, "http:loopback", n))
                return true;
        if (n > 11 && n <= 11 + 32 && strneq(s, "http:token:", 11)) {
                for (size_t i = 11; i < n; i++)
                        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
                              s[i] == '-'))
                                return false;
                return true;
        }
        return false;
}

static int parse_callers_value(const char *var, const char *value, EgressPolicy *p, char **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        const char *t, *cursor = value;
        size_t n, count = 0;
        int r;

        /* Set but empty: nobody may use the policy (non-NULL, empty). */
        l = new0(char *, 1);
        if (!l)
                return -ENOMEM;
        while ((t = next_token(&cursor, &n))) {
                if (!egress_caller_is_valid(t, n))
                        return config_fail(ret_error,
                                    "%s: invalid caller '%.*s', expected uid:N, http:token:NAME or http:loopback",
                                    var, (int) MIN(n, QUOTE_MAX), t);
                if (++count > CALLERS_MAX)
                        return config_fail(ret_error, "%s: more than %d callers", var, CALLERS_MAX);
                r = strv_extend_n(&l, t, n);
                if (r < 0)
                        return r;
        }
        p->callers = TAKE_PTR(l);
        return 0;
}

static int parse_callers(char *const *envp, EgressConfig *c, char **ret_error) {
        const size_t pl = strlen(CALLERS_PREFIX);
        int r;

        for (char *const *e = envp; e && *e; e++) {
                _cleanup_free_ char *var = NULL, *name = NULL;
                const char *eq;
                EgressPolicy *p;

                if (!strneq(*e, CALLERS_PREFIX, pl) || !(eq = strchr(*e, '=')))
                        continue;
                var = strndup(*e, (size_t) (eq - *e));
                if (!var)
                        return -ENOMEM;
                if (!policy_suffix_is_valid(*e + pl, (size_t) (eq - *e - pl)))
                        return config_fail(ret_error,
                                           "%s: invalid policy name, expected %s and 1 to %d of A-Z, 0-9 and _", var,
                                           CALLERS_PREFIX, EGRESS_POLICY_NAME_MAX);
                name = strndup_lower(*e + pl, (size_t) (eq - *e - pl));
                if (!name)
                        return -ENOMEM;
                p = (EgressPolicy *) egress_config_find(c, name);
                if (!p)
                        return config_fail(ret_error, "%s: no %s%s to go with it", var, POLICY_PREFIX, var + pl);
                if (p->callers)
                        return config_fail(ret_error, "%s: set twice", var);
                r = parse_callers_value(var, eq + 1, p, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Test only: the documentation /24s, nothing else, however it is spelled. */
static int parse_testing_public(char *const *envp, EgressConfig *c, char **ret_error) {
        static const char *const allowed[] = { "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24" };
        const char *v, *t, *cursor;
        size_t n;

        v = cursor = config_env_lookup(envp, "MCP_EXEC_EGRESS_TESTING_PUBLIC");
        if (!v)
                return 0;
        while ((t = next_token(&cursor, &n))) {
                char buf[sizeof "198.51.100.0"];
                struct in_addr a;
                size_t i, j;

                for (i = 0; i < ELEMENTSOF(allowed); i++)
                        if (strlen(allowed[i]) == n && strneq(allowed[i], t, n))
                                break;
                if (i == ELEMENTSOF(allowed))
                        return config_fail(ret_error,
                                    "MCP_EXEC_EGRESS_TESTING_PUBLIC: invalid range '%.*s', only 192.0.2.0/24, "
                                    "198.51.100.0/24 and 203.0.113.0/24 are accepted (test only)",
                                    (int) MIN(n, QUOTE_MAX), t);
                memcpy(buf, t, n - 3);
                buf[n - 3] = 0;
                if (inet_pton(AF_INET, buf, &a) != 1)
                        return -EINVAL;
                for (j = 0; j < c->n_testing_public; j++)
                        if (c->testing_public[j] == a.s_addr)
                                break;
                if (j == c->n_testing_public)
                        c->testing_public[c->n_testing_public++] = a.s_addr;
        }
        return 0;
}

static int parse_caps(char *const *envp, EgressConfig *c, char **ret_error) {
        const char *v;
        uint64_t x;

        v = config_env_lookup(envp, "MCP_EXEC_EGRESS_MAX_CONNECTIONS");
        if (v) {
                if (parse_uint(v, &x) < 0 || x < 1 || x > 256)
                        return config_fail(
                                ret_error,
                                "MCP_EXEC_EGRESS_MAX_CONNECTIONS=%s: invalid value, expected a count between 1 and 256",
                                v);
                c->max_connections = x;
        }
        v = config_env_lookup(envp, "MCP_EXEC_EGRESS_MAX_BYTES");
        if (v) {
                if (parse_size(v, &x) < 0 || x < 4 * KiB || x > 1024 * GiB)
                        return config_fail(
                                ret_error,
                                "MCP_EXEC_EGRESS_MAX_BYTES=%s: invalid value, expected a size between 4K and 1024G", v);
                c->max_bytes = x;
        }
        return 0;
}

int egress_config_parse(char *const *envp, EgressConfig *ret, char **ret_error) {
        EgressConfig c = {
                .max_connections = EGRESS_DEFAULT_MAX_CONNECTIONS,
                .max_bytes = EGRESS_DEFAULT_MAX_BYTES,
        };
        int r;

        assert(ret);

        r = parse_caps(envp, &c, ret_error);
        if (r >= 0)
                r = parse_testing_public(envp, &c, ret_error);
        if (r >= 0)
                r = parse_policies(envp, &c, ret_error);
        if (r >= 0)
                r = parse_callers(envp, &c, ret_error);
        if (r < 0) {
                egress_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

void egress_config_done(EgressConfig *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n_policies; i++) {
                free(c->policies[i].name);
                strv_free(c->policies[i].hosts);
                strv_free(c->policies[i].callers);
        }
        c->policies = mfree(c->policies);
        c->n_policies = 0;
}

const EgressPolicy *egress_config_find(const EgressConfig *c, const char *name) {
        assert(c);

        if (!name)
                return NULL;
        for (size_t i = 0; i < c->n_policies; i++)
                if (streq(c->policies[i].name, name))
                        return c->policies + i;
        return NULL;
}

bool egress_policy_allows_caller(const EgressPolicy *p, const char *caller) {
        assert(p);

        if (!p->callers)
                return true;
        if (!caller)
                return false;
        STRV_FOREACH(x, p->callers)
                if (streq(*x, caller))
                        return true;
        return false;
}

static bool pattern_matches(const char *pattern, const char *host, size_t hl) {
        size_t sl;

        if (pattern[0] != '*')
                return strcasecmp(pattern, host) == 0;
        /* "*.suffix": at least one label before ".suffix", never suffix itself. */
        sl = strlen(pattern + 1);       /* ".suffix" */
        return hl > sl && strcasecmp(host + hl - sl, pattern + 1) == 0;
}

bool egress_policy_allows(const EgressPolicy *p, const char *host, uint16_t port) {
        size_t hl;
        bool port_ok = false;

        assert(p);

        if (!host)
                return false;
        hl = strlen(host);
        /* Also what keeps IP literals out: none is a valid name here. */
        if (!dns_name_is_valid(host, hl))
                return false;
        for (size_t i = 0; i < p->n_ports; i++)
                port_ok = port_ok || p->ports[i] == port;
        if (!port_ok)
                return false;
        STRV_FOREACH(x, p->hosts)
                if (pattern_matches(*x, host, hl))
                        return true;
        return false;
}

bool egress_config_is_policy_name(const char *assignment) {
        if (!assignment)
                return false;
        return strneq(assignment, POLICY_PREFIX, strlen(POLICY_PREFIX)) ||
               strneq(assignment, CALLERS_PREFIX, strlen(CALLERS_PREFIX));
}
