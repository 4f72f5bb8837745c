/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/http/http-util.[ch] and http-auth.[ch]: header parsing,
 * listen addresses, SSE framing, the token, Origin and Host checks. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http-auth.h"
#include "http-util.h"
#include "macro.h"
#include "test-helpers.h"

TEST(test_accepts) {
        ASSERT_TRUE(http_accepts("application/json, text/event-stream", "application/json"));
        ASSERT_TRUE(http_accepts("application/json, text/event-stream", "text/event-stream"));
        ASSERT_TRUE(http_accepts("text/event-stream,application/json", "application/json"));
        ASSERT_TRUE(http_accepts("Application/JSON; charset=utf-8", "application/json"));
        ASSERT_TRUE(http_accepts("*/*", "text/event-stream"));
        ASSERT_TRUE(http_accepts("text/*", "text/event-stream"));
        ASSERT_TRUE(http_accepts("application/json;q=0.5", "application/json"));
        ASSERT_TRUE(http_accepts("  application/json  ;  q=1 ", "application/json"));
        ASSERT_FALSE(http_accepts("application/json", "text/event-stream"));
        ASSERT_FALSE(http_accepts("application/json;q=0", "application/json"));
        ASSERT_FALSE(http_accepts("application/json;q=0.000", "application/json"));
        ASSERT_FALSE(http_accepts("*/*, text/event-stream;q=0", "text/event-stream"));
        ASSERT_TRUE(http_accepts("*/*;q=0, text/event-stream", "text/event-stream"));
        ASSERT_FALSE(http_accepts("application/jsonx", "application/json"));
        ASSERT_FALSE(http_accepts("application", "application/json"));
        ASSERT_FALSE(http_accepts(NULL, "application/json"));
        ASSERT_FALSE(http_accepts("", "application/json"));
        ASSERT_FALSE(http_accepts(",,,;;", "application/json"));
}

TEST(test_content_type) {
        ASSERT_TRUE(http_content_type_is("application/json", "application/json"));
        ASSERT_TRUE(http_content_type_is("application/json; charset=utf-8", "application/json"));
        ASSERT_TRUE(http_content_type_is(" APPLICATION/Json ", "application/json"));
        ASSERT_FALSE(http_content_type_is("text/plain", "application/json"));
        ASSERT_FALSE(http_content_type_is("application/json-seq", "application/json"));
        ASSERT_FALSE(http_content_type_is(NULL, "application/json"));
        ASSERT_FALSE(http_content_type_is("", "application/json"));
}

TEST(test_bearer) {
        ASSERT_STREQ(http_bearer_token("Bearer abc"), "abc");
        ASSERT_STREQ(http_bearer_token("bearer   abc"), "abc");
        ASSERT_TRUE(http_bearer_token("Basic abc") == NULL);
        ASSERT_TRUE(http_bearer_token("Bearerabc") == NULL);
        ASSERT_TRUE(http_bearer_token("Bearer ") == NULL);
        ASSERT_TRUE(http_bearer_token(NULL) == NULL);
}

static void check_addr(const char *s, int family, const char *host, uint16_t port) {
        struct sockaddr_storage ss;
        socklen_t len;
        char buf[INET6_ADDRSTRLEN];

        ASSERT_EQ_INT(http_parse_address(s, &ss, &len), 0);
        ASSERT_EQ_INT(ss.ss_family, family);
        if (family == AF_INET) {
                ASSERT_EQ_INT(len, sizeof(struct sockaddr_in));
                ASSERT_TRUE(inet_ntop(AF_INET, &((struct sockaddr_in *) &ss)->sin_addr, buf, sizeof buf));
        } else {
                ASSERT_EQ_INT(len, sizeof(struct sockaddr_in6));
                ASSERT_TRUE(inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &ss)->sin6_addr, buf, sizeof buf));
        }
        ASSERT_STREQ(buf, host);
        ASSERT_EQ_INT(sockaddr_port((struct sockaddr *) &ss), port);
}

TEST(test_address) {
        struct sockaddr_storage ss;
        socklen_t len;

        check_addr("127.0.0.1:8080", AF_INET, "127.0.0.1", 8080);
        check_addr("localhost:80", AF_INET, "127.0.0.1", 80);
        check_addr("0.0.0.0:1", AF_INET, "0.0.0.0", 1);
        check_addr("[::1]:8080", AF_INET6, "::1", 8080);
        /* The Go server's ":8080": every interface. */
        check_addr(":8080", AF_INET6, "::", 8080);
        ASSERT_EQ_INT(http_parse_address("", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("127.0.0.1", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("127.0.0.1:", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("127.0.0.1:65536", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("127.0.0.1:-1", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("127.0.0.1:80x", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("example.com:80", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("[::1]8080", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("[::1:8080", &ss, &len), -EINVAL);
        ASSERT_EQ_INT(http_parse_address("[zz]:8080", &ss, &len), -EINVAL);
}

TEST(test_loopback) {
        struct sockaddr_storage ss;
        socklen_t len;

        ASSERT_EQ_INT(http_parse_address("127.0.0.1:1", &ss, &len), 0);
        ASSERT_TRUE(sockaddr_is_loopback((struct sockaddr *) &ss));
        ASSERT_EQ_INT(http_parse_address("127.1.2.3:1", &ss, &len), 0);
        ASSERT_TRUE(sockaddr_is_loopback((struct sockaddr *) &ss));
        ASSERT_EQ_INT(http_parse_address("[::1]:1", &ss, &len), 0);
        ASSERT_TRUE(sockaddr_is_loopback((struct sockaddr *) &ss));
        ASSERT_EQ_INT(http_parse_address("[::ffff:127.0.0.1]:1", &ss, &len), 0);
        ASSERT_TRUE(sockaddr_is_loopback((struct sockaddr *) &ss));
        ASSERT_EQ_INT(http_parse_address("0.0.0.0:1", &ss, &len), 0);
        ASSERT_FALSE(sockaddr_is_loopback((struct sockaddr *) &ss));
        ASSERT_EQ_INT(http_parse_address(":1", &ss, &len), 0);
        ASSERT_FALSE(sockaddr_is_loopback((struct sockaddr *) &ss));
        ASSERT_EQ_INT(http_parse_address("10.0.0.1:1", &ss, &len), 0);
        ASSERT_FALSE(sockaddr_is_loopback((struct sockaddr *) &ss));
}

TEST(test_sse) {
        char *b = NULL;
        size_t size = 0, alloc = 0;

        ASSERT_EQ_INT(sse_append_event(&b, &size, &alloc, NULL, "{}", 2), 0);
        ASSERT_STREQ(b, "data: {}\n\n");
        size = 0;
        ASSERT_EQ_INT(sse_append_event(&b, &size, &alloc, "message", "x", 1), 0);
        ASSERT_STREQ(b, "event: message\ndata: x\n\n");
        /* Line breaks in data cannot smuggle fields or end the event. */
        size = 0;
        ASSERT_EQ_INT(sse_append_event(&b, &size, &alloc, NULL, "a\nevent: x\r\nb\rc", 15), 0);
        ASSERT_STREQ(b, "data: a\ndata: event: x\ndata: b\ndata: c\n\n");
        size = 0;
        ASSERT_EQ_INT(sse_append_event(&b, &size, &alloc, NULL, "", 0), 0);
        ASSERT_STREQ(b, "data: \n\n");
        free(b);
}

TEST(test_header_value_decode) {
        char *s;

        ASSERT_STREQ(s = mcp_header_value_decode("exec"), "exec");
        free(s);
        ASSERT_STREQ(s = mcp_header_value_decode("=?base64?ZXhlYw==?="), "exec");
        free(s);
        ASSERT_STREQ(s = mcp_header_value_decode("=?base64?w6k=?="), "\xc3\xa9");
        free(s);
        ASSERT_STREQ(s = mcp_header_value_decode("=?base64?" "?="), "");
        free(s);
        ASSERT_TRUE(mcp_header_value_decode("=?base64?ZX!oYw==?=") == NULL);
        ASSERT_TRUE(mcp_header_value_decode("=?base64?ZX=hYw?=") == NULL);
        /* A NUL inside cannot match any name. */
        ASSERT_TRUE(mcp_header_value_decode("=?base64?AA==?=") == NULL);
        ASSERT_STREQ(s = mcp_header_value_decode("=?base64?"), "=?base64?");
        free(s);
}

TEST(test_visible_ascii) {
        ASSERT_TRUE(str_is_visible_ascii("abc!~"));
        ASSERT_FALSE(str_is_visible_ascii("a b"));
        ASSERT_FALSE(str_is_visible_ascii("a\tb"));
        ASSERT_FALSE(str_is_visible_ascii("\x7f"));
        ASSERT_FALSE(str_is_visible_ascii("\xc3\xa9"));
        ASSERT_FALSE(str_is_visible_ascii(""));
        ASSERT_FALSE(str_is_visible_ascii(NULL));
}

TEST(test_token) {
        HttpAuth a = { .token = (char *) "s3cret" }, none = {};

        ASSERT_TRUE(streq_consttime("abc", "abc"));
        ASSERT_FALSE(streq_consttime("abc", "abd"));
        ASSERT_FALSE(streq_consttime("ab", "abc"));
        ASSERT_FALSE(streq_consttime("abcd", "abc"));
        ASSERT_FALSE(streq_consttime("", "abc"));
        ASSERT_TRUE(streq_consttime("", ""));

        ASSERT_TRUE(http_auth_token_ok(&none, NULL, NULL));
        ASSERT_TRUE(http_auth_token_ok(&a, "s3cret", NULL));
        ASSERT_TRUE(http_auth_token_ok(&a, NULL, "Bearer s3cret"));
        ASSERT_TRUE(http_auth_token_ok(&a, "s3cret", "Bearer s3cret"));
        ASSERT_TRUE(http_auth_token_ok(&a, "", "Bearer s3cret"));
        /* A wrong token is refused even beside the right one. */
        ASSERT_FALSE(http_auth_token_ok(&a, "wrong", "Bearer s3cret"));
        ASSERT_FALSE(http_auth_token_ok(&a, "s3cret", "Bearer wrong"));
        ASSERT_TRUE(http_auth_token_ok(&a, "s3cret", "Basic Zm9v"));
        ASSERT_FALSE(http_auth_token_ok(&a, NULL, NULL));
        ASSERT_FALSE(http_auth_token_ok(&a, "s3cre", NULL));
        ASSERT_FALSE(http_auth_token_ok(&a, "s3cret2", NULL));
        ASSERT_FALSE(http_auth_token_ok(&a, NULL, "s3cret"));
        ASSERT_FALSE(http_auth_token_ok(&a, NULL, "Basic s3cret"));
        ASSERT_FALSE(http_auth_token_ok(&a, "", "Bearer "));
}

/* Several tokens: each passes as its own name, none as another's, and a
 * prefix, an extension or no token passes as none. */
TEST(test_named_token_match) {
        static const char text[] = "# teams\n"
                                   "alice  tok-alice\n"
                                   "\n"
                                   "bob\ttok-bob   # the build farm\n"
                                   "ci-2 tok-ci\r\n";
        HttpAuth a = { .token = strdup("tok-default") }, none = {};
        HttpTokens t = {};
        const char *why, *name;
        char buf[128];

        ASSERT_EQ_INT(http_tokens_parse(text, strlen(text), &t, buf, sizeof buf, &why), 0);
        ASSERT_EQ_INT(t.n, 3);
        ASSERT_EQ_INT(http_auth_set_named(&a, &t, &why), 0);
        ASSERT_TRUE(t.n == 0 && t.entries == NULL);

        ASSERT_TRUE(http_auth_token_match(&a, "tok-alice", NULL, &name));
        ASSERT_STREQ(name, "alice");
        ASSERT_TRUE(http_auth_token_match(&a, NULL, "Bearer tok-bob", &name));
        ASSERT_STREQ(name, "bob");
        ASSERT_TRUE(http_auth_token_match(&a, "tok-ci", "Bearer tok-ci", &name));
        ASSERT_STREQ(name, "ci-2");
        ASSERT_TRUE(http_auth_token_match(&a, "tok-default", NULL, &name));
        ASSERT_STREQ(name, "default");
        name = "untouched";
        ASSERT_FALSE(http_auth_token_match(&a, "tok-alic", NULL, &name));
        ASSERT_FALSE(http_auth_token_match(&a, "tok-alicex", NULL, &name));
        ASSERT_FALSE(http_auth_token_match(&a, "alice", NULL, &name));
        ASSERT_FALSE(http_auth_token_match(&a, NULL, NULL, &name));
        ASSERT_STREQ(name, "untouched");
        ASSERT_TRUE(http_auth_token_match(&none, NULL, NULL, &name));
        ASSERT_TRUE(name == NULL);

        /* A named token that is the single one too would be two callers. */
        ASSERT_EQ_INT(http_tokens_parse("dup tok-default\n", 16, &t, buf, sizeof buf, &why), 0);
        ASSERT_EQ_INT(http_auth_set_named(&a, &t, &why), -EINVAL);
        ASSERT_TRUE(why != NULL);
        http_tokens_done(&t);
        ASSERT_TRUE(http_auth_token_match(&a, "tok-bob", NULL, &name));

        /* Removing every token locks everyone out; it never lets everyone in. */
        free(a.token);
        a.token = NULL;
        ASSERT_EQ_INT(http_auth_set_named(&a, &t, &why), 0);
        ASSERT_TRUE(http_auth_has_token(&a));
        ASSERT_FALSE(http_auth_token_match(&a, "tok-bob", NULL, &name));
        ASSERT_FALSE(http_auth_token_match(&a, NULL, NULL, &name));
        http_auth_done(&a);
}

/* Every pair of what the two headers may carry, against the single token and
 * five named ones: each header is matched on its own, so two tokens are
 * never a third caller (with indices or-ed, the first and the third named
 * ones made the fifth, and the fourth and fifth read past the list), and a
 * request whose headers disagree, or one of whose tokens is wrong, is no
 * caller at all. */
TEST(test_token_pairs) {
        static const char text[] = "n1 tok-n1\nn2 tok-n2\nn3 tok-n3\nn4 tok-n4\nn5 tok-n5\n";
        static const char *const names[] = { "default", "n1", "n2", "n3", "n4", "n5" };
        enum { NONE = -2, WRONG = -1 };
        /* What each header value carries: NONE, WRONG, or an index of names[]. */
        static const struct {
                const char *v;
                int who;
        } x[] = {
                { NULL, NONE },     { "", NONE },         { "tok-default", 0 }, { "tok-n1", 1 },
                { "tok-n2", 2 },    { "tok-n3", 3 },      { "tok-n4", 4 },      { "tok-n5", 5 },
                { "tok-n", WRONG }, { "tok-n55", WRONG }, { "n1", WRONG },
        }, b[] = {
                { NULL, NONE },                 { "Basic tok-n1", NONE },        { "Bearer ", NONE },
                { "Bearer tok-default", 0 },    { "Bearer tok-n1", 1 },          { "bearer  tok-n2", 2 },
                { "Bearer tok-n3", 3 },         { "Bearer tok-n4", 4 },          { "Bearer\ttok-n5", 5 },
                { "Bearer tok-n", WRONG },      { "Bearer tok-n1x", WRONG },     { "Bearer wrong", WRONG },
        };
        HttpAuth a = { .token = strdup("tok-default") };
        HttpTokens t = {};
        const char *why;
        char buf[128];
        size_t n_ok = 0;

        ASSERT_EQ_INT(http_tokens_parse(text, strlen(text), &t, buf, sizeof buf, &why), 0);
        ASSERT_EQ_INT(t.n, 5);
        ASSERT_EQ_INT(http_auth_set_named(&a, &t, &why), 0);

        for (size_t i = 0; i < ELEMENTSOF(x); i++)
                for (size_t j = 0; j < ELEMENTSOF(b); j++) {
                        int wx = x[i].who, wb = b[j].who;
                        /* A caller if some header carries a right token and
                         * every header that carries one carries that one. */
                        int want = wx == NONE ? wb : wb == NONE || wb == wx ? wx : WRONG;
                        const char *name = "untouched";
                        bool ok = http_auth_token_match(&a, x[i].v, b[j].v, &name);

                        if (ok != (want >= 0) || !streq(name, ok ? names[want] : "untouched"))
                                ASSERT_FAIL_("X-MCP-AUTH: %s, Authorization: %s: %s as \"%s\", want %s",
                                             x[i].v ?: "(none)", b[j].v ?: "(none)", ok ? "accepted" : "refused",
                                             name, want >= 0 ? names[want] : "refused");
                        ASSERT_EQ_INT(http_auth_token_ok(&a, x[i].v, b[j].v), want >= 0);
                        n_ok += ok;
                }
        /* Each of the six alone (beside any of three X-MCP-AUTH-less
         * Authorization values, or either Authorization-less value), and in both. */
        ASSERT_EQ_INT(n_ok, 6 * (3 + 2 + 1));
        http_auth_done(&a);
}

/* Bad files are refused with the line number, never the line. */
TEST(test_tokens_parse) {
        static const char *const bad[] = {
                "alice\n",                     /* no token */
                "alice zq9 extra\n",           /* three fields */
                "Alice zq9\n",                 /* capitals */
                "default zq9\n",               /* reserved */
                "loopback zq9\n",
                "a.b zq9\n",
                "abcdefghijabcdefghijabcdefghijabc zq9\n",     /* 33 characters */
                "alice zq9\nbob zq9\n",       /* one token, two names */
                "alice zq91\nalice zq92\n",   /* one name twice */
                "alice zq9\x7f\n",
                "alice zq9\xc3\xa9\n",
        };
        HttpTokens t = {};
        const char *why;
        char buf[128];

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                why = NULL;
                ASSERT_EQ_INT(http_tokens_parse(bad[i], strlen(bad[i]), &t, buf, sizeof buf, &why), -EINVAL);
                ASSERT_TRUE(why && strneq(why, "line ", 5));
                ASSERT_TRUE(!strstr(why, "zq9"));
                ASSERT_TRUE(t.n == 0);
        }
        ASSERT_EQ_INT(http_tokens_parse("a\0b zq9\n", 9, &t, buf, sizeof buf, &why), -EINVAL);
        ASSERT_EQ_INT(http_tokens_parse("", 0, &t, buf, sizeof buf, &why), 0);
        ASSERT_EQ_INT(t.n, 0);
        ASSERT_EQ_INT(http_tokens_parse("abcdefghijabcdefghijabcdefghijab zq9", 36, &t, buf, sizeof buf, &why), 0);
        ASSERT_EQ_INT(t.n, 1);
        http_tokens_done(&t);
}

/* The file: missing is none; others may not read it. */
TEST(test_tokens_load) {
        char dir[] = "/tmp/test-http-tokens.XXXXXX", path[256], buf[128];
        HttpTokens t = {};
        const char *why;
        int fd;

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/tokens", dir);
        ASSERT_EQ_INT(http_tokens_load(path, &t, buf, sizeof buf, &why), 0);
        ASSERT_EQ_INT(t.n, 0);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(write(fd, "alice tok-a\n", 12), 12);
        close(fd);
        ASSERT_EQ_INT(chmod(path, 0640), 0);
        ASSERT_EQ_INT(http_tokens_load(path, &t, buf, sizeof buf, &why), 0);
        ASSERT_EQ_INT(t.n, 1);
        ASSERT_STREQ(t.entries[0].name, "alice");
        http_tokens_done(&t);
        ASSERT_EQ_INT(chmod(path, 0644), 0);
        ASSERT_EQ_INT(http_tokens_load(path, &t, buf, sizeof buf, &why), -EPERM);
        ASSERT_TRUE(why && t.n == 0);
        ASSERT_EQ_INT(unlink(path), 0);
        ASSERT_EQ_INT(mkdir(path, 0700), 0);
        ASSERT_EQ_INT(http_tokens_load(path, &t, buf, sizeof buf, &why), -EINVAL);
        ASSERT_EQ_INT(rmdir(path), 0);
        ASSERT_EQ_INT(rmdir(dir), 0);
}

TEST(test_origin) {
        HttpAuth a = {};

        ASSERT_TRUE(http_auth_origin_ok(&a, NULL));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://localhost:8080"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "null"));
        ASSERT_FALSE(http_auth_origin_ok(&a, ""));
        ASSERT_EQ_INT(http_auth_parse_origins(" https://app.example , http://localhost:3000/,,", &a.origins), 0);
        ASSERT_STREQ(a.origins[0], "https://app.example");
        ASSERT_STREQ(a.origins[1], "http://localhost:3000/");
        ASSERT_TRUE(a.origins[2] == NULL);
        ASSERT_TRUE(http_auth_origin_ok(&a, "https://app.example"));
        ASSERT_TRUE(http_auth_origin_ok(&a, "HTTPS://APP.EXAMPLE/"));
        ASSERT_TRUE(http_auth_origin_ok(&a, "http://localhost:3000"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "https://app.example.evil"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://app.example"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://localhost:30000"));
        http_auth_done(&a);
        ASSERT_EQ_INT(http_auth_parse_origins("", &a.origins), 0);
        ASSERT_TRUE(a.origins == NULL);
        ASSERT_EQ_INT(http_auth_parse_origins(NULL, &a.origins), 0);
        ASSERT_TRUE(a.origins == NULL);
}

TEST(test_origin_own_loopback) {
        /* On loopback our own origin passes without a list; nothing else. */
        HttpAuth a = { .check_host = true, .port = 8080, .bound_host = (char *) "127.0.0.1" };

        ASSERT_TRUE(http_auth_origin_ok(&a, "http://localhost:8080"));
        ASSERT_TRUE(http_auth_origin_ok(&a, "http://127.0.0.1:8080"));
        ASSERT_TRUE(http_auth_origin_ok(&a, "http://[::1]:8080"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://localhost:8081"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://localhost"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://evil.example:8080"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "https://localhost:8080"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://localhost:8080/x"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "http://localhost.evil.example:8080"));
        ASSERT_FALSE(http_auth_origin_ok(&a, "null"));
}

TEST(test_host) {
        HttpAuth a = { .check_host = true, .port = 8080, .bound_host = (char *) "127.0.0.2" }, off = {};

        ASSERT_TRUE(http_auth_host_ok(&a, "127.0.0.1:8080"));
        ASSERT_TRUE(http_auth_host_ok(&a, "localhost:8080"));
        ASSERT_TRUE(http_auth_host_ok(&a, "LocalHost:8080"));
        ASSERT_TRUE(http_auth_host_ok(&a, "[::1]:8080"));
        ASSERT_TRUE(http_auth_host_ok(&a, "127.0.0.2:8080"));
        ASSERT_FALSE(http_auth_host_ok(&a, "127.0.0.1"));           /* port 80 */
        ASSERT_FALSE(http_auth_host_ok(&a, "127.0.0.1:8081"));
        ASSERT_FALSE(http_auth_host_ok(&a, "evil.example:8080"));
        ASSERT_FALSE(http_auth_host_ok(&a, "localhost.evil.example:8080"));
        ASSERT_FALSE(http_auth_host_ok(&a, "127.0.0.1.nip.io:8080"));
        ASSERT_FALSE(http_auth_host_ok(&a, "127.0.0.1:8080x"));
        ASSERT_FALSE(http_auth_host_ok(&a, "127.0.0.1:"));
        ASSERT_FALSE(http_auth_host_ok(&a, "[::1]"));
        ASSERT_FALSE(http_auth_host_ok(&a, "[::1:8080"));
        ASSERT_FALSE(http_auth_host_ok(&a, ""));
        ASSERT_FALSE(http_auth_host_ok(&a, NULL));
        a.port = 80;
        ASSERT_TRUE(http_auth_host_ok(&a, "localhost"));
        ASSERT_TRUE(http_auth_host_ok(&a, "localhost:80"));
        ASSERT_TRUE(http_auth_host_ok(&off, "anything.example"));
        ASSERT_TRUE(http_auth_host_ok(&off, NULL));
}

TEST(test_allowed_hosts) {
        /* Loopback with a list: the loopback names and the listed ones. */
        HttpAuth lo = { .check_host = true, .port = 8080, .bound_host = (char *) "127.0.0.1" };
        /* Beyond loopback: only the listed ones; without a list, anything. */
        HttpAuth remote = { .port = 8080, .bound_host = (char *) "10.0.0.5" }, open = remote;

        ASSERT_EQ_INT(http_auth_parse_hosts(" mcp.example.com , lb.example:8443,[2001:db8::1]:8080,10.0.0.5", &lo.hosts), 0);
        ASSERT_STREQ(lo.hosts[0], "mcp.example.com");
        ASSERT_STREQ(lo.hosts[1], "lb.example:8443");
        ASSERT_TRUE(lo.hosts[4] == NULL);
        ASSERT_EQ_INT(http_auth_parse_hosts("mcp.example.com,lb.example:8443,[2001:db8::1]:8080,10.0.0.5", &remote.hosts), 0);

        for (HttpAuth *a = &lo; a; a = a == &lo ? &remote : NULL) {
                /* A name without a port in the list: any port, or none. */
                ASSERT_TRUE(http_auth_host_ok(a, "mcp.example.com"));
                ASSERT_TRUE(http_auth_host_ok(a, "MCP.Example.Com:443"));
                ASSERT_TRUE(http_auth_host_ok(a, "mcp.example.com:8080"));
                /* With a port: that port only. */
                ASSERT_TRUE(http_auth_host_ok(a, "lb.example:8443"));
                ASSERT_FALSE(http_auth_host_ok(a, "lb.example"));
                ASSERT_FALSE(http_auth_host_ok(a, "lb.example:443"));
                ASSERT_TRUE(http_auth_host_ok(a, "[2001:db8::1]:8080"));
                ASSERT_FALSE(http_auth_host_ok(a, "[2001:db8::1]:8081"));
                ASSERT_TRUE(http_auth_host_ok(a, "10.0.0.5:8080"));
                /* Names that only look alike, and malformed ones. */
                ASSERT_FALSE(http_auth_host_ok(a, "mcp.example.com.evil.example"));
                ASSERT_FALSE(http_auth_host_ok(a, "evil-mcp.example.com"));
                ASSERT_FALSE(http_auth_host_ok(a, "mcp.example.co"));
                ASSERT_FALSE(http_auth_host_ok(a, "mcp.example.com:"));
                ASSERT_FALSE(http_auth_host_ok(a, "mcp.example.com:0"));
                ASSERT_FALSE(http_auth_host_ok(a, "mcp.example.com:8080x"));
                ASSERT_FALSE(http_auth_host_ok(a, "[2001:db8::1"));
                ASSERT_FALSE(http_auth_host_ok(a, ":8080"));
                ASSERT_FALSE(http_auth_host_ok(a, ""));
                ASSERT_FALSE(http_auth_host_ok(a, NULL));
        }
        /* Loopback names stay allowed on loopback, and only there. */
        ASSERT_TRUE(http_auth_host_ok(&lo, "localhost:8080"));
        ASSERT_TRUE(http_auth_host_ok(&lo, "127.0.0.1:8080"));
        ASSERT_FALSE(http_auth_host_ok(&lo, "localhost:8081"));
        ASSERT_FALSE(http_auth_host_ok(&lo, "evil.example:8080"));
        ASSERT_FALSE(http_auth_host_ok(&remote, "localhost:8080"));
        ASSERT_FALSE(http_auth_host_ok(&remote, "evil.example:8080"));
        ASSERT_TRUE(http_auth_host_ok(&open, "evil.example:8080"));
        ASSERT_TRUE(http_auth_host_ok(&open, NULL));
        /* The list does not widen the Origin rule: our own origin is a loopback one. */
        ASSERT_FALSE(http_auth_origin_ok(&lo, "http://mcp.example.com"));
        ASSERT_TRUE(http_auth_origin_ok(&lo, "http://localhost:8080"));

        lo.bound_host = remote.bound_host = NULL;
        http_auth_done(&lo);
        http_auth_done(&remote);
        ASSERT_EQ_INT(http_auth_parse_hosts("", &lo.hosts), 0);
        ASSERT_TRUE(lo.hosts == NULL);
}

TEST(test_host_is_address) {
        struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(8080) };
        struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(8080) }, mapped = v6;
        struct sockaddr_in v4_80 = { .sin_family = AF_INET, .sin_port = htons(80) };

        ASSERT_EQ_INT(inet_pton(AF_INET, "10.0.0.5", &v4.sin_addr), 1);
        ASSERT_EQ_INT(inet_pton(AF_INET, "10.0.0.5", &v4_80.sin_addr), 1);
        ASSERT_EQ_INT(inet_pton(AF_INET6, "2001:db8::5", &v6.sin6_addr), 1);
        ASSERT_EQ_INT(inet_pton(AF_INET6, "::ffff:10.0.0.5", &mapped.sin6_addr), 1);

        ASSERT_TRUE(http_auth_host_is_address("10.0.0.5:8080", (struct sockaddr *) &v4));
        ASSERT_FALSE(http_auth_host_is_address("10.0.0.5", (struct sockaddr *) &v4));          /* port 80 */
        ASSERT_TRUE(http_auth_host_is_address("10.0.0.5", (struct sockaddr *) &v4_80));
        ASSERT_FALSE(http_auth_host_is_address("10.0.0.6:8080", (struct sockaddr *) &v4));
        ASSERT_FALSE(http_auth_host_is_address("10.0.0.50:8080", (struct sockaddr *) &v4));
        ASSERT_FALSE(http_auth_host_is_address("10.0.0.5.nip.io:8080", (struct sockaddr *) &v4));
        ASSERT_FALSE(http_auth_host_is_address("10.0.0.5:8081", (struct sockaddr *) &v4));
        ASSERT_TRUE(http_auth_host_is_address("[2001:DB8::5]:8080", (struct sockaddr *) &v6));
        ASSERT_FALSE(http_auth_host_is_address("[2001:db8::6]:8080", (struct sockaddr *) &v6));
        ASSERT_FALSE(http_auth_host_is_address("2001:db8::5", (struct sockaddr *) &v6));
        /* An IPv4 client on a dual-stack socket names the IPv4 address. */
        ASSERT_TRUE(http_auth_host_is_address("10.0.0.5:8080", (struct sockaddr *) &mapped));
        ASSERT_FALSE(http_auth_host_is_address(NULL, (struct sockaddr *) &v4));
        ASSERT_FALSE(http_auth_host_is_address("", (struct sockaddr *) &v4));
        ASSERT_FALSE(http_auth_host_is_address("10.0.0.5:8080", NULL));
}

static char *write_credential(const char *content, size_t n) {
        char *dir = strdup("/tmp/test-http-cred.XXXXXX"), path[256];
        int fd;

        ASSERT_TRUE(dir && mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/auth-token", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(write(fd, content, n), (ssize_t) n);
        close(fd);
        return dir;
}

static void remove_credential(char *dir) {
        char path[256];

        (void) snprintf(path, sizeof path, "%s/auth-token", dir);
        (void) unlink(path);
        (void) rmdir(dir);
        free(dir);
}

TEST(test_load_token) {
        const char *source, *why;
        char *t, *dir, big[HTTP_AUTH_TOKEN_MAX + 2];

        (void) unsetenv("MCP_EXEC_AUTH_TOKEN");
        ASSERT_EQ_INT(http_auth_load_token(NULL, &t, &source, &why), 0);
        ASSERT_TRUE(t == NULL && source == NULL);

        /* The environment, which is then cleared. */
        ASSERT_EQ_INT(setenv("MCP_EXEC_AUTH_TOKEN", "envtok\n", 1), 0);
        ASSERT_EQ_INT(http_auth_load_token("/nonexistent", &t, &source, &why), 0);
        ASSERT_STREQ(t, "envtok");
        ASSERT_STREQ(source, "environment");
        ASSERT_TRUE(getenv("MCP_EXEC_AUTH_TOKEN") == NULL);
        free(t);

        /* The credential wins over the environment. */
        dir = write_credential("credtok\n", 8);
        ASSERT_EQ_INT(setenv("MCP_EXEC_AUTH_TOKEN", "envtok", 1), 0);
        ASSERT_EQ_INT(http_auth_load_token(dir, &t, &source, &why), 0);
        ASSERT_STREQ(t, "credtok");
        ASSERT_STREQ(source, "credential");
        free(t);
        remove_credential(dir);
        (void) unsetenv("MCP_EXEC_AUTH_TOKEN");

        /* An empty credential is no token. */
        dir = write_credential("\n", 1);
        ASSERT_EQ_INT(http_auth_load_token(dir, &t, &source, &why), 0);
        ASSERT_TRUE(t == NULL);
        remove_credential(dir);

        /* Tokens that cannot travel in a header are refused. */
        dir = write_credential("two words", 9);
        ASSERT_EQ_INT(http_auth_load_token(dir, &t, &source, &why), -EINVAL);
        ASSERT_TRUE(why != NULL);
        remove_credential(dir);
        dir = write_credential("a\0b", 3);
        ASSERT_EQ_INT(http_auth_load_token(dir, &t, &source, &why), -EINVAL);
        remove_credential(dir);
        memset(big, 'x', sizeof big);
        dir = write_credential(big, sizeof big);
        ASSERT_EQ_INT(http_auth_load_token(dir, &t, &source, &why), -EINVAL);
        remove_credential(dir);
        /* Exactly the maximum, with a newline, is fine. */
        big[HTTP_AUTH_TOKEN_MAX] = '\n';
        dir = write_credential(big, HTTP_AUTH_TOKEN_MAX + 1);
        ASSERT_EQ_INT(http_auth_load_token(dir, &t, &source, &why), 0);
        ASSERT_EQ_INT(strlen(t), HTTP_AUTH_TOKEN_MAX);
        free(t);
        remove_credential(dir);
}

int main(void) {
        RUN(test_accepts);
        RUN(test_content_type);
        RUN(test_bearer);
        RUN(test_address);
        RUN(test_loopback);
        RUN(test_sse);
        RUN(test_named_token_match);
        RUN(test_token_pairs);
        RUN(test_tokens_parse);
        RUN(test_tokens_load);
        RUN(test_header_value_decode);
        RUN(test_visible_ascii);
        RUN(test_token);
        RUN(test_origin);
        RUN(test_origin_own_loopback);
        RUN(test_host);
        RUN(test_allowed_hosts);
        RUN(test_host_is_address);
        RUN(test_load_token);
        return 0;
}
