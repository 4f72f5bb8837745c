/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/egress-policy.[ch], egress-proto.[ch] and
 * dns-name.[ch]: the operator's egress policies parsed from hand-made
 * environments, what they allow, and the verdicts' wire names. */

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dns-name.h"
#include "egress-policy.h"
#include "egress-proto.h"
#include "macro.h"
#include "test-helpers.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* Parses env (NULL-terminated) and expects -EINVAL with a message that
 * contains needle. */
static void expect_invalid(char *const *env, const char *needle) {
        EgressConfig c = { .n_policies = 99 };
        char *error = NULL;

        ASSERT_EQ_INT(egress_config_parse(env, &c, &error), -EINVAL);
        ASSERT_CONTAINS(error, needle);
        ASSERT_TRUE(!strchr(error, '\n'));
        ASSERT_EQ_U64(c.n_policies, 99);        /* ret untouched on failure */
        free(error);
        /* Without ret_error too. */
        ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), -EINVAL);
}

#define INVALID(needle, ...) expect_invalid((char *[]) { __VA_ARGS__, NULL }, needle)

TEST(test_defaults) {
        char *env[] = { "PATH=/usr/bin", "MCP_EXEC_MAX_QUEUE=3", NULL };
        EgressConfig c;

        ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), 0);
        ASSERT_EQ_U64(c.n_policies, 0);
        ASSERT_TRUE(!c.policies);
        ASSERT_EQ_U64(c.max_connections, 8);
        ASSERT_EQ_U64(c.max_bytes, 256 * MiB);
        ASSERT_EQ_U64(c.n_testing_public, 0);
        ASSERT_TRUE(!egress_config_find(&c, "pypi"));
        egress_config_done(&c);

        ASSERT_EQ_INT(egress_config_parse(NULL, &c, NULL), 0);
        ASSERT_EQ_U64(c.n_policies, 0);
        egress_config_done(&c);
        egress_config_done(NULL);
}

TEST(test_policy) {
        char *env[] = {
                "MCP_EXEC_EGRESS_POLICY_PYPI=pypi.org  Files.PythonHosted.org\t:443,:80",
                "MCP_EXEC_EGRESS_POLICY_GH=*.githubusercontent.com github.com",
                "MCP_EXEC_EGRESS_CALLERS_GH=uid:1000 http:token:alice,http:loopback",
                "MCP_EXEC_EGRESS_POLICY_LOCAL_1=localhost :8080",
                "MCP_EXEC_EGRESS_MAX_CONNECTIONS=256",
                "MCP_EXEC_EGRESS_MAX_BYTES=4K",
                NULL,
        };
        const EgressPolicy *p;
        EgressConfig c;

        ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), 0);
        ASSERT_EQ_U64(c.n_policies, 3);
        ASSERT_EQ_U64(c.max_connections, 256);
        ASSERT_EQ_U64(c.max_bytes, 4 * KiB);

        p = egress_config_find(&c, "pypi");
        ASSERT_TRUE(p);
        ASSERT_STREQ(p->name, "pypi");
        ASSERT_STREQ(p->hosts[0], "pypi.org");
        ASSERT_STREQ(p->hosts[1], "files.pythonhosted.org");
        ASSERT_TRUE(!p->hosts[2]);
        ASSERT_EQ_U64(p->n_ports, 2);
        ASSERT_EQ_INT(p->ports[0], 443);
        ASSERT_EQ_INT(p->ports[1], 80);
        ASSERT_TRUE(!p->callers);
        ASSERT_TRUE(egress_policy_allows_caller(p, "uid:1"));
        ASSERT_TRUE(egress_policy_allows_caller(p, NULL));
        ASSERT_TRUE(egress_policy_allows(p, "pypi.org", 443));
        ASSERT_TRUE(egress_policy_allows(p, "PyPI.org", 80));
        ASSERT_TRUE(egress_policy_allows(p, "files.pythonhosted.org", 443));
        ASSERT_FALSE(egress_policy_allows(p, "pypi.org", 8443));
        ASSERT_FALSE(egress_policy_allows(p, "pypi.org.", 443));
        ASSERT_FALSE(egress_policy_allows(p, "www.pypi.org", 443));
        ASSERT_FALSE(egress_policy_allows(p, "xpypi.org", 443));
        ASSERT_FALSE(egress_policy_allows(p, "pypi.org.evil.example", 443));
        ASSERT_FALSE(egress_policy_allows(p, "", 443));
        ASSERT_FALSE(egress_policy_allows(p, NULL, 443));

        /* Names are the suffix in lower case; nothing else finds a policy. */
        ASSERT_TRUE(!egress_config_find(&c, "PYPI"));
        ASSERT_TRUE(!egress_config_find(&c, "pyp"));
        ASSERT_TRUE(!egress_config_find(&c, ""));
        ASSERT_TRUE(!egress_config_find(&c, NULL));

        p = egress_config_find(&c, "gh");
        ASSERT_TRUE(p);
        ASSERT_EQ_U64(p->n_ports, 1);
        ASSERT_EQ_INT(p->ports[0], 443);        /* no port given: 443 only */
        ASSERT_TRUE(egress_policy_allows(p, "raw.githubusercontent.com", 443));
        ASSERT_TRUE(egress_policy_allows(p, "a.b.GITHUBUSERCONTENT.com", 443));
        ASSERT_FALSE(egress_policy_allows(p, "githubusercontent.com", 443));   /* not the suffix itself */
        ASSERT_FALSE(egress_policy_allows(p, "xgithubusercontent.com", 443));
        ASSERT_FALSE(egress_policy_allows(p, "raw.githubusercontent.com", 80));
        ASSERT_TRUE(egress_policy_allows(p, "github.com", 443));
        ASSERT_FALSE(egress_policy_allows(p, "api.github.com", 443));
        ASSERT_TRUE(egress_policy_allows_caller(p, "uid:1000"));
        ASSERT_TRUE(egress_policy_allows_caller(p, "http:token:alice"));
        ASSERT_TRUE(egress_policy_allows_caller(p, "http:loopback"));
        ASSERT_FALSE(egress_policy_allows_caller(p, "uid:1001"));
        ASSERT_FALSE(egress_policy_allows_caller(p, "uid:100"));
        ASSERT_FALSE(egress_policy_allows_caller(p, "http:token:bob"));
        ASSERT_FALSE(egress_policy_allows_caller(p, NULL));

        p = egress_config_find(&c, "local_1");
        ASSERT_TRUE(p);
        ASSERT_TRUE(egress_policy_allows(p, "localhost", 8080));
        ASSERT_FALSE(egress_policy_allows(p, "localhost", 443));
        egress_config_done(&c);
        ASSERT_TRUE(!c.policies);
}

TEST(test_ip_literals_never_allowed) {
        char *env[] = { "MCP_EXEC_EGRESS_POLICY_ANY=*.example.com example :80", NULL };
        static const char *const literals[] = {
                "127.0.0.1", "127.1", "2130706433", "0x7f.1", "0177.0.0.1", "1.2.3.4",
                "::1", "[::1]", "10.0.0.1.", "1.example.com.2", "a.example.0x1f",
        };
        const EgressPolicy *p;
        EgressConfig c;

        ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), 0);
        p = egress_config_find(&c, "any");
        ASSERT_TRUE(p);
        for (size_t i = 0; i < ELEMENTSOF(literals); i++)
                ASSERT_FALSE(egress_policy_allows(p, literals[i], 80));
        /* A name whose last label is a word is one, digits elsewhere are fine. */
        ASSERT_TRUE(egress_policy_allows(p, "1.2.3.example.com", 80));
        ASSERT_TRUE(egress_policy_allows(p, "example", 80));
        egress_config_done(&c);
}

TEST(test_callers_empty_means_nobody) {
        char *env[] = { "MCP_EXEC_EGRESS_POLICY_X=example.com", "MCP_EXEC_EGRESS_CALLERS_X=", NULL };
        EgressConfig c;

        ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), 0);
        ASSERT_TRUE(c.policies[0].callers);
        ASSERT_FALSE(egress_policy_allows_caller(&c.policies[0], "uid:0"));
        ASSERT_FALSE(egress_policy_allows_caller(&c.policies[0], "http:loopback"));
        egress_config_done(&c);
}

TEST(test_testing_public) {
        char *env[] = { "MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/24 203.0.113.0/24,198.51.100.0/24 192.0.2.0/24",
                        NULL };
        EgressConfig c;

        ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), 0);
        ASSERT_EQ_U64(c.n_testing_public, 3);
        ASSERT_EQ_U64(c.testing_public[0], inet_addr("192.0.2.0"));
        ASSERT_EQ_U64(c.testing_public[1], inet_addr("203.0.113.0"));
        ASSERT_EQ_U64(c.testing_public[2], inet_addr("198.51.100.0"));
        egress_config_done(&c);

        INVALID("only 192.0.2.0/24", "MCP_EXEC_EGRESS_TESTING_PUBLIC=10.0.0.0/8");
        INVALID("only 192.0.2.0/24", "MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/23");
        INVALID("only 192.0.2.0/24", "MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0");
        INVALID("only 192.0.2.0/24", "MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.1/24");
        INVALID("only 192.0.2.0/24", "MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/24 127.0.0.0/8");
        INVALID("only 192.0.2.0/24", "MCP_EXEC_EGRESS_TESTING_PUBLIC=0.0.0.0/0");
}

TEST(test_invalid) {
        INVALID("MCP_EXEC_EGRESS_MAX_CONNECTIONS=0", "MCP_EXEC_EGRESS_MAX_CONNECTIONS=0");
        INVALID("MCP_EXEC_EGRESS_MAX_CONNECTIONS=257", "MCP_EXEC_EGRESS_MAX_CONNECTIONS=257");
        INVALID("MCP_EXEC_EGRESS_MAX_CONNECTIONS=", "MCP_EXEC_EGRESS_MAX_CONNECTIONS=");
        INVALID("MCP_EXEC_EGRESS_MAX_CONNECTIONS=-1", "MCP_EXEC_EGRESS_MAX_CONNECTIONS=-1");
        INVALID("MCP_EXEC_EGRESS_MAX_BYTES=4095", "MCP_EXEC_EGRESS_MAX_BYTES=4095");
        INVALID("MCP_EXEC_EGRESS_MAX_BYTES=1X", "MCP_EXEC_EGRESS_MAX_BYTES=1X");

        INVALID("MCP_EXEC_EGRESS_POLICY_: invalid policy name", "MCP_EXEC_EGRESS_POLICY_=a.org");
        INVALID("MCP_EXEC_EGRESS_POLICY_pypi: invalid policy name", "MCP_EXEC_EGRESS_POLICY_pypi=a.org");
        INVALID("invalid policy name", "MCP_EXEC_EGRESS_POLICY_A-B=a.org");
        INVALID("invalid policy name", "MCP_EXEC_EGRESS_POLICY_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456=a.org");
        INVALID("MCP_EXEC_EGRESS_POLICY_X: no host pattern", "MCP_EXEC_EGRESS_POLICY_X=");
        INVALID("MCP_EXEC_EGRESS_POLICY_X: no host pattern", "MCP_EXEC_EGRESS_POLICY_X= :443 ,");
        INVALID("MCP_EXEC_EGRESS_POLICY_X: set twice", "MCP_EXEC_EGRESS_POLICY_X=a.org", "MCP_EXEC_EGRESS_POLICY_X=b.org");

        static const char *const bad_hosts[] = {
                "127.0.0.1", "127.1", "2130706433", "0x7f.1", "10.0.0.1.", "[::1]", "fe80::1%eth0",
                "pypi.org.", ".pypi.org", "pypi..org", "-a.org", "a-.org", "a_b.org", "*", "*.", "*.*.org",
                "a.*.org", "*a.org", "**.org", "*.127.0.0.1", "a%2eorg", "user@a.org", "a.org/x", "a.org:443",
                "h\xc3\xa9.org",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.org", /* 64 */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_hosts); i++) {
                char *a = NULL;

                ASSERT_TRUE(asprintf(&a, "MCP_EXEC_EGRESS_POLICY_X=ok.org %s", bad_hosts[i]) > 0);
                INVALID("MCP_EXEC_EGRESS_POLICY_X: invalid host pattern", a);
                free(a);
        }

        static const char *const bad_ports[] = { ":", ":0", ":65536", ":-1", ":44x", ":123456", "::443", ": 443" };
        for (size_t i = 0; i < ELEMENTSOF(bad_ports); i++) {
                char *a = NULL;

                ASSERT_TRUE(asprintf(&a, "MCP_EXEC_EGRESS_POLICY_X=ok.org %s", bad_ports[i]) > 0);
                INVALID("MCP_EXEC_EGRESS_POLICY_X: invalid port", a);
                free(a);
        }
        INVALID("more than 8 ports", "MCP_EXEC_EGRESS_POLICY_X=a.org :1 :2 :3 :4 :5 :6 :7 :8 :9");

        INVALID("MCP_EXEC_EGRESS_CALLERS_Y: no MCP_EXEC_EGRESS_POLICY_Y", "MCP_EXEC_EGRESS_POLICY_X=a.org",
                "MCP_EXEC_EGRESS_CALLERS_Y=uid:1");
        INVALID("MCP_EXEC_EGRESS_CALLERS_X: invalid caller 'root'", "MCP_EXEC_EGRESS_POLICY_X=a.org",
                "MCP_EXEC_EGRESS_CALLERS_X=uid:1 root");
        static const char *const bad_callers[] = { "uid:", "uid:x", "uid:-1", "uid:4294967295", "uid:99999999999",
                                                   "http:token:", "http:token:Alice", "http:token:a b", "http:",
                                                   "http:loopbackx", "stdio" };
        for (size_t i = 0; i < ELEMENTSOF(bad_callers); i++) {
                char *a = NULL;

                ASSERT_TRUE(asprintf(&a, "MCP_EXEC_EGRESS_CALLERS_X=%s", bad_callers[i]) > 0);
                INVALID("MCP_EXEC_EGRESS_CALLERS_X: invalid caller", "MCP_EXEC_EGRESS_POLICY_X=a.org", a);
                free(a);
        }
}

TEST(test_limits) {
        char *hosts = NULL, *a = NULL;
        size_t len = 0;
        FILE *f;

        /* 64 patterns are fine, 65 are not. */
        f = open_memstream(&hosts, &len);
        ASSERT_TRUE(f);
        for (int i = 0; i < EGRESS_HOSTS_MAX; i++)
                fprintf(f, "h%d.org ", i);
        ASSERT_EQ_INT(fclose(f), 0);
        ASSERT_TRUE(asprintf(&a, "MCP_EXEC_EGRESS_POLICY_X=%s", hosts) > 0);
        {
                char *env[] = { a, NULL };
                EgressConfig c;

                ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), 0);
                ASSERT_TRUE(c.policies[0].hosts[EGRESS_HOSTS_MAX - 1]);
                ASSERT_TRUE(!c.policies[0].hosts[EGRESS_HOSTS_MAX]);
                egress_config_done(&c);
        }
        free(a);
        ASSERT_TRUE(asprintf(&a, "MCP_EXEC_EGRESS_POLICY_X=%s extra.org", hosts) > 0);
        INVALID("more than 64 host patterns", a);
        free(a);
        free(hosts);

        /* 32 policies are fine, 33 are not. */
        {
                char *env[EGRESS_POLICIES_MAX + 2] = {};
                EgressConfig c;

                for (int i = 0; i <= EGRESS_POLICIES_MAX; i++)
                        ASSERT_TRUE(asprintf(&env[i], "MCP_EXEC_EGRESS_POLICY_P%d=a.org", i) > 0);
                char *last = env[EGRESS_POLICIES_MAX];
                env[EGRESS_POLICIES_MAX] = NULL;
                ASSERT_EQ_INT(egress_config_parse(env, &c, NULL), 0);
                ASSERT_EQ_U64(c.n_policies, EGRESS_POLICIES_MAX);
                egress_config_done(&c);
                env[EGRESS_POLICIES_MAX] = last;
                expect_invalid(env, "more than 32 egress policies");
                for (int i = 0; i <= EGRESS_POLICIES_MAX; i++)
                        free(env[i]);
        }

        /* A name of 253 bytes is one, of 254 is not. */
        {
                char name[260];

                memset(name, 'a', sizeof name);
                for (size_t i = 63; i < sizeof name; i += 64)
                        name[i] = '.';
                ASSERT_TRUE(dns_name_is_valid(name, 253));
                ASSERT_FALSE(dns_name_is_valid(name, 254));
                ASSERT_FALSE(dns_name_is_valid(name, 0));
                ASSERT_TRUE(dns_name_is_valid(name, 63));
                ASSERT_FALSE(dns_name_is_valid(name, 64));      /* ends in '.' */
                name[63] = 'a';
                ASSERT_FALSE(dns_name_is_valid(name, 64));      /* a label of 64 */
        }
}

TEST(test_is_policy_name) {
        ASSERT_TRUE(egress_config_is_policy_name("MCP_EXEC_EGRESS_POLICY_PYPI=pypi.org"));
        ASSERT_TRUE(egress_config_is_policy_name("MCP_EXEC_EGRESS_CALLERS_PYPI=uid:1"));
        ASSERT_FALSE(egress_config_is_policy_name("MCP_EXEC_EGRESS_MAX_BYTES=1M"));
        ASSERT_FALSE(egress_config_is_policy_name("MCP_EXEC_EGRESS_POLICYX=1"));
        ASSERT_FALSE(egress_config_is_policy_name(NULL));

        /* config.c asks it: a policy is not a typo, a misspelt prefix is. */
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_EGRESS_POLICY_PYPI=pypi.org"));
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_EGRESS_CALLERS_PYPI=uid:1"));
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_EGRESS_MAX_CONNECTIONS=8"));
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_EGRESS_MAX_BYTES=1M"));
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/24"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_EGRESS_POLICIES_PYPI=pypi.org"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_EGRESS_MAX_CONNECTION=8"));
}

TEST(test_verdict_names) {
        static const char *const names[] = {
                "allowed", "policy", "ip-literal", "non-public", "sni-mismatch", "cap", "bad-request",
                "upstream-failed",
        };

        ASSERT_EQ_INT(ELEMENTSOF(names), _EGRESS_VERDICT_MAX);
        for (int v = 0; v < _EGRESS_VERDICT_MAX; v++) {
                ASSERT_STREQ(egress_verdict_to_string((EgressVerdict) v), names[v]);
                ASSERT_EQ_INT(egress_verdict_from_string(names[v]), v);
        }
        ASSERT_TRUE(!egress_verdict_to_string(_EGRESS_VERDICT_MAX));
        ASSERT_TRUE(!egress_verdict_to_string(_EGRESS_VERDICT_INVALID));
        ASSERT_EQ_INT(egress_verdict_from_string("Allowed"), _EGRESS_VERDICT_INVALID);
        ASSERT_EQ_INT(egress_verdict_from_string(""), _EGRESS_VERDICT_INVALID);
        ASSERT_EQ_INT(egress_verdict_from_string(NULL), _EGRESS_VERDICT_INVALID);
}

int main(void) {
        RUN(test_defaults);
        RUN(test_policy);
        RUN(test_ip_literals_never_allowed);
        RUN(test_callers_empty_means_nobody);
        RUN(test_testing_public);
        RUN(test_invalid);
        RUN(test_limits);
        RUN(test_is_policy_name);
        RUN(test_verdict_names);
        return 0;
}
