/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "http-auth.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "http-util.h"
#include "macro.h"
#include "parse-util.h"
#include "strv.h"

static bool host_is_loopback(const HttpAuth *a, const char *host);

void http_auth_done(HttpAuth *a) {
        if (!a)
                return;
        if (a->token)
                explicit_bzero(a->token, strlen(a->token));
        a->token = mfree(a->token);
        http_tokens_done(&a->named);
        strv_free(a->origins);
        a->origins = NULL;
        strv_free(a->hosts);
        a->hosts = NULL;
        a->bound_host = mfree(a->bound_host);
}

bool streq_consttime(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        volatile unsigned char d = la != lb;

        assert(a);
        assert(b);

        /* Time depends on the configured length only, never on where the
         * first differing byte is. */
        for (size_t i = 0; i < lb; i++)
                d |= (unsigned char) b[i] ^ (unsigned char) (i < la ? a[i] : 0);
        return d == 0;
}

bool http_auth_has_token(const HttpAuth *a) {
        assert(a);

        return a->token || a->named.n > 0 || a->token_required;
}

/* Which entry t is: 0 none, 1 the single token, i + 2 named token i; with
 * *ret_hits how many entries it is. Every token is compared, and a hit's
 * index is selected by mask, never or-ed with another's, so that time depends
 * on the lengths only and an index is always one entry's. */
static size_t token_index(const HttpAuth *a, const char *t, size_t *ret_hits) {
        volatile size_t idx = 0, hits = 0;
        size_t m;

        assert(a);
        assert(t);
        assert(ret_hits);

        if (a->token) {
                m = (size_t) 0 - (size_t) streq_consttime(t, a->token);
                idx = (idx & ~m) | (m & 1);
                hits += m & 1;
        }
        for (size_t i = 0; i < a->named.n; i++) {
                m = (size_t) 0 - (size_t) streq_consttime(t, a->named.entries[i].token);
                idx = (idx & ~m) | (m & (i + 2));
                hits += m & 1;
        }
        *ret_hits = hits;
        return idx;
}

bool http_auth_token_match(const HttpAuth *a, const char *x_mcp_auth, const char *authorization,
                           const char **ret_name) {
        const char *x = isempty(x_mcp_auth) ? NULL : x_mcp_auth, *bearer = http_bearer_token(authorization);
        size_t ix = 0, ib = 0, hx = 0, hb = 0, idx;

        assert(a);

        if (!http_auth_has_token(a)) {
                if (ret_name)
                        *ret_name = NULL;
                return true;
        }
        /* Each header is matched on its own, both with every token, before
         * anything is decided: timing tells neither which token matched nor
         * whether any did. Which headers are present is no secret. */
        if (x)
                ix = token_index(a, x, &hx);
        if (bearer)
                ib = token_index(a, bearer, &hb);
        /* Every token given must be one entry, and the same one: two names
         * (or a name and a wrong token) are no caller at all. */
        if ((!x && !bearer) || (x && hx != 1) || (bearer && hb != 1) || (x && bearer && ix != ib))
                return false;
        idx = x ? ix : ib;
        assert(idx >= 1 && idx <= a->named.n + 1);
        assert(idx != 1 || a->token);
        if (ret_name)
                *ret_name = idx == 1 ? HTTP_TOKEN_DEFAULT_NAME : a->named.entries[idx - 2].name;
        return true;
}

bool http_auth_token_ok(const HttpAuth *a, const char *x_mcp_auth, const char *authorization) {
        assert(a);

        return http_auth_token_match(a, x_mcp_auth, authorization, NULL);
}

int http_auth_set_named(HttpAuth *a, HttpTokens *named, const char **ret_error) {
        assert(ret_error);

        assert(a);
        assert(named);

        *ret_error = NULL;
        for (size_t i = 0; a->token && i < named->n; i++)
                if (streq(named->entries[i].token, a->token)) {
                        *ret_error = "a named token is the auth-token credential too (one token, one caller)";
                        return -EINVAL;
                }
        http_tokens_done(&a->named);
        a->named = *named;
        *named = (HttpTokens) {};
        if (http_auth_has_token(a))
                a->token_required = true;
        return 0;
}

static bool origin_eq(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);

        assert(a);
        assert(b);

        /* "http://x/" and "http://x" name the same origin. */
        if (la > 0 && a[la - 1] == '/')
                la--;
        if (lb > 0 && b[lb - 1] == '/')
                lb--;
        return la == lb && strncasecmp(a, b, la) == 0;
}

bool http_auth_origin_ok(const HttpAuth *a, const char *origin) {
        assert(a);

        if (!origin)
                return true;
        /* Our own origin is no cross-site request (a page there would be us).
         * Only on loopback, where the Host rule says who we are; a rebound
         * name (http://evil.example:8080) fails that rule. */
        if (a->check_host && strncmp(origin, "http://", 7) == 0 && host_is_loopback(a, origin + 7))
                return true;
        for (char **o = a->origins; o && *o; o++)
                if (origin_eq(origin, *o))
                        return true;
        return false;
}

/* Splits "name[:port]" (name may be a bracketed IPv6 literal): the name's
 * length, and the port, 0 if none is given. False if it is no such thing. */
static bool split_host(const char *host, size_t *ret_name_len, uint16_t *ret_port) {
        const char *port_s;
        size_t name_len;
        uint16_t port = 0;

        assert(ret_name_len);
        assert(ret_port);

        if (isempty(host))
                return false;
        if (host[0] == '[') {
                const char *close = strchr(host, ']');
                if (!close)
                        return false;
                name_len = (size_t) (close - host + 1);
        } else
                name_len = strcspn(host, ":");
        if (name_len == 0)
                return false;
        port_s = host + name_len;
        if (*port_s == ':') {
                if (parse_port(port_s + 1, &port) < 0 || port == 0)
                        return false;
        } else if (*port_s)
                return false;
        *ret_name_len = name_len;
        *ret_port = port;
        return true;
}

static bool host_is_loopback(const HttpAuth *a, const char *host) {
        assert(a);

        static const char *const names[] = { "localhost", "127.0.0.1", "[::1]" };
        size_t name_len;
        uint16_t port;

        if (!split_host(host, &name_len, &port))
                return false;
        if ((port ?: 80) != a->port)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strlen(names[i]) == name_len && strncasecmp(host, names[i], name_len) == 0)
                        return true;
        return a->bound_host && strlen(a->bound_host) == name_len && strncasecmp(host, a->bound_host, name_len) == 0;
}

static bool host_is_listed(const HttpAuth *a, const char *host) {
        size_t name_len, entry_len;
        uint16_t port, entry_port;

        assert(a);

        if (!split_host(host, &name_len, &port))
                return false;
        for (char **e = a->hosts; e && *e; e++) {
                if (!split_host(*e, &entry_len, &entry_port))
                        continue;
                if (entry_len == name_len && strncasecmp(host, *e, name_len) == 0 &&
                    (entry_port == 0 || entry_port == port))
                        return true;
        }
        return false;
}

bool http_auth_host_is_address(const char *host, const struct sockaddr *sa) {
        char a[INET6_ADDRSTRLEN + 2] = "";
        size_t name_len;
        uint16_t port;

        if (!sa || !split_host(host, &name_len, &port))
                return false;
        if (sa->sa_family == AF_INET)
                (void) inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, a, sizeof a);
        else if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *) sa)->sin6_addr))
                /* An IPv4 client of a dual-stack socket. */
                (void) inet_ntop(AF_INET, ((const struct sockaddr_in6 *) sa)->sin6_addr.s6_addr + 12, a, sizeof a);
        else if (sa->sa_family == AF_INET6) {
                a[0] = '[';
                if (inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, a + 1, sizeof a - 2))
                        strcat(a, "]");
                else
                        a[0] = 0;
        }
        return a[0] && strlen(a) == name_len && strncasecmp(host, a, name_len) == 0 &&
               (port ?: 80) == sockaddr_port(sa);
}

bool http_auth_host_ok(const HttpAuth *a, const char *host) {
        assert(a);

        if (a->hosts && host_is_listed(a, host))
                return true;
        if (a->check_host)
                return host_is_loopback(a, host);
        return !a->hosts;
}

int http_auth_parse_origins(const char *list, char ***ret) {
        assert(ret);

        return strv_split_list(list, ret);
}

int http_auth_parse_hosts(const char *list, char ***ret) {
        assert(ret);

        return strv_split_list(list, ret);
}

static int check_token(char *t, const char **ret_error) {
        size_t l = strlen(t);

        assert(t);
        assert(ret_error);

        /* A file written by echo ends in a newline; blanks are never part of it. */
        while (l > 0 && strchr(" \t\r\n", t[l - 1]))
                t[--l] = 0;
        if (l == 0)
                return 0;
        if (l > HTTP_AUTH_TOKEN_MAX) {
                *ret_error = "the token is longer than 4096 bytes";
                return -EINVAL;
        }
        if (!str_is_visible_ascii(t)) {
                *ret_error = "the token must be visible ASCII (no blanks or control characters)";
                return -EINVAL;
        }
        return 1;
}

int http_auth_load_token(const char *credentials_dir, char **ret, const char **ret_source, const char **ret_error) {
        _cleanup_free_ char *t = NULL;
        const char *e;
        int r;

        assert(ret);
        assert(ret_source);
        assert(ret_error);

        *ret_error = NULL;
        if (!isempty(credentials_dir)) {
                _cleanup_free_ char *path = NULL;
                _cleanup_close_ int fd = -EBADF;
                size_t n = 0;

                if (asprintf(&path, "%s/auth-token", credentials_dir) < 0)
                        return -ENOMEM;
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0 && errno != ENOENT) {
                        *ret_error = "the credential auth-token cannot be read";
                        return negative_errno();
                }
                if (fd >= 0) {
                        t = malloc(HTTP_AUTH_TOKEN_MAX + 2);
                        if (!t)
                                return -ENOMEM;
                        for (;;) {
                                ssize_t k = read(fd, t + n, HTTP_AUTH_TOKEN_MAX + 1 - n);
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if (k < 0) {
                                        *ret_error = "the credential auth-token cannot be read";
                                        return negative_errno();
                                }
                                if (k == 0 || (n += (size_t) k) > HTTP_AUTH_TOKEN_MAX)
                                        break;
                        }
                        t[n] = 0;
                        if (strlen(t) != n) {
                                *ret_error = "the credential auth-token contains a NUL byte";
                                return -EINVAL;
                        }
                        r = check_token(t, ret_error);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                *ret_source = "credential";
                                *ret = TAKE_PTR(t);
                                return 0;
                        }
                        t = mfree(t);
                }
        }

        e = getenv("MCP_EXEC_AUTH_TOKEN");
        if (e) {
                t = strdup(e);
                if (!t)
                        return -ENOMEM;
                /* Nothing we start should inherit it. */
                (void) unsetenv("MCP_EXEC_AUTH_TOKEN");
                r = check_token(t, ret_error);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret_source = "environment";
                        *ret = TAKE_PTR(t);
                        return 0;
                }
        }
        *ret_source = NULL;
        *ret = NULL;
        return 0;
}
