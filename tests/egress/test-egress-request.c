/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/egress/egress-request.[ch]: the proxy request head a
 * run's client sends, what is served, what is refused, and the head that goes
 * upstream. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress-request.h"
#include "macro.h"
#include "test-helpers.h"

/* Parses all of s (as one read) and returns the result. */
static int parse(const char *s, EgressRequest *ret, const char **reason) {
        return egress_request_parse(s, strlen(s), ret, reason);
}

/* s is refused with -EBADMSG, and a reason containing needle. */
static void refused(const char *s, const char *needle) {
        EgressRequest r = { .port = 7 };
        const char *reason = NULL;
        int k;

        k = parse(s, &r, &reason);
        if (k != -EBADMSG)
                ASSERT_FAIL_("'%s' gave %d, not -EBADMSG", s, k);
        ASSERT_CONTAINS(reason, needle);
        ASSERT_EQ_INT(r.port, 7);       /* untouched */
        ASSERT_TRUE(!r.upstream_head);
        ASSERT_EQ_INT(parse(s, &r, NULL), -EBADMSG);
}

static void accepted(const char *s, EgressRequest *ret) {
        const char *reason = NULL;
        int k;

        k = parse(s, ret, &reason);
        if (k != (int) strlen(s))
                ASSERT_FAIL_("'%s' gave %d (%s)", s, k, reason ?: "");
}

TEST(test_connect) {
        EgressRequest r;

        accepted("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\nUser-Agent: pip\r\n\r\n", &r);
        ASSERT_TRUE(r.connect);
        ASSERT_STREQ(r.host, "pypi.org");
        ASSERT_EQ_INT(r.port, 443);
        ASSERT_EQ_U64(r.body_len, 0);
        ASSERT_TRUE(!r.upstream_head);
        egress_request_done(&r);

        /* Lower case, no trailing dot; HTTP/1.0, no Host (Python's tunnel). */
        accepted("CONNECT Files.PythonHosted.ORG.:8443 HTTP/1.0\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "files.pythonhosted.org");
        ASSERT_EQ_INT(r.port, 8443);
        egress_request_done(&r);

        /* IP literals are parsed, for the caller to refuse with its verdict. */
        accepted("CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "127.0.0.1");
        accepted("CONNECT 127.0.0.1.:443 HTTP/1.1\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "127.0.0.1");
        accepted("CONNECT 0x7F.1:443 HTTP/1.1\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "0x7f.1");
        accepted("CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "2130706433");
        accepted("CONNECT [::FFFF:169.254.169.254]:443 HTTP/1.1\r\nHost: [::ffff:169.254.169.254]:443\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "::ffff:169.254.169.254");
        /* A numeric last label reads as IPv4 to URL parsers: kept as a literal. */
        accepted("CONNECT 1.2.3.4.5.08:443 HTTP/1.1\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "1.2.3.4.5.08");
        accepted("CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "fe80::1%25eth0");
        egress_request_done(&r);

        refused("CONNECT pypi.org HTTP/1.1\r\n\r\n", "without a port");
        refused("CONNECT pypi.org: HTTP/1.1\r\n\r\n", "invalid port");
        refused("CONNECT pypi.org:https HTTP/1.1\r\n\r\n", "invalid port");
        refused("CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", "invalid port");
        refused("CONNECT pypi.org:65536 HTTP/1.1\r\n\r\n", "invalid port");
        refused("CONNECT pypi.org:443x HTTP/1.1\r\n\r\n", "invalid port");
        refused("CONNECT pypi.org:-443 HTTP/1.1\r\n\r\n", "invalid port");
        refused("CONNECT pypi.org:000443 HTTP/1.1\r\n\r\n", "invalid port");
        refused("CONNECT ::1:443 HTTP/1.1\r\n\r\n", "without brackets");
        refused("CONNECT [::1:443 HTTP/1.1\r\n\r\n", "IPv6");
        refused("CONNECT [pypi.org]:443 HTTP/1.1\r\n\r\n", "IPv6");
        refused("CONNECT [::1]x:443 HTTP/1.1\r\n\r\n", "junk");
        refused("CONNECT py%70i.org:443 HTTP/1.1\r\n\r\n", "invalid character in the host");
        refused("CONNECT py_pi.org:443 HTTP/1.1\r\n\r\n", "invalid character in the host");
        refused("CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n", "invalid character in the host");
        refused("CONNECT :443 HTTP/1.1\r\n\r\n", "invalid host");
        refused("CONNECT pypi..org:443 HTTP/1.1\r\n\r\n", "invalid host");
        refused("CONNECT -pypi.org:443 HTTP/1.1\r\n\r\n", "invalid host");
        refused("CONNECT pypi.org:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n", "CONNECT with a body");
        refused("CONNECT pypi.org:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n", "differs");
        refused("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:444\r\n\r\n", "differs");
        refused("CONNECT pypi.org:443 HTTP/1.1\r\nHost: evil.example\r\n\r\n", "differs");
        /* A Host without a port names the host only; the same host is fine. */
        accepted("CONNECT pypi.org:443 HTTP/1.1\r\nHost: PyPI.org\r\n\r\n", &r);
        accepted("CONNECT pypi.org:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &r);
}

TEST(test_absolute) {
        static const char req[] =
                "GET http://Example.COM/simple/pip/?x=1&y=%20 HTTP/1.1\r\n"
                "Host: example.com\r\n"
                "User-Agent: curl/8\r\n"
                "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
                "Proxy-Connection: Keep-Alive\r\n"
                "Connection: keep-alive, X-Secret\r\n"
                "Keep-Alive: timeout=5\r\n"
                "TE: trailers\r\n"
                "Trailer: X-T\r\n"
                "Upgrade: h2c\r\n"
                "X-Secret: drop me\r\n"
                "Accept:\t*/*  \r\n"
                "proxy-foo: bar\r\n"
                "\r\n";
        static const char up[] =
                "GET /simple/pip/?x=1&y=%20 HTTP/1.1\r\n"
                "Host: example.com\r\n"
                "User-Agent: curl/8\r\n"
                "Accept: */*\r\n"
                "Connection: close\r\n"
                "\r\n";
        EgressRequest r;

        accepted(req, &r);
        ASSERT_FALSE(r.connect);
        ASSERT_STREQ(r.host, "example.com");
        ASSERT_EQ_INT(r.port, 80);
        ASSERT_EQ_U64(r.upstream_head_len, strlen(up));
        ASSERT_STREQ(r.upstream_head, up);
        egress_request_done(&r);
        ASSERT_TRUE(!r.upstream_head);
        egress_request_done(&r);
        egress_request_done(NULL);

        /* Host from the URL with its port unless 80; HTTP/1.0 goes up as 1.1. */
        accepted("HEAD http://example.com:8080 HTTP/1.0\r\n\r\n", &r);
        ASSERT_EQ_INT(r.port, 8080);
        ASSERT_STREQ(r.upstream_head, "HEAD / HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n");
        egress_request_done(&r);
        accepted("OPTIONS HTTP://example.com:80?q HTTP/1.1\r\nHost: example.com:80\r\n\r\n", &r);
        ASSERT_EQ_INT(r.port, 80);
        ASSERT_STREQ(r.upstream_head, "OPTIONS /?q HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
        egress_request_done(&r);

        /* A body: its length, and the head's length before it. */
        {
                static const char post[] = "POST http://example.com/upload HTTP/1.1\r\nContent-Length: 3\r\n"
                                           "content-length: 3\r\n\r\nabc";
                const char *reason = NULL;

                ASSERT_EQ_INT(parse(post, &r, &reason), (int) strlen(post) - 3);
                ASSERT_EQ_U64(r.body_len, 3);
                /* The repeated Content-Length goes up once. */
                ASSERT_STREQ(r.upstream_head, "POST /upload HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\n"
                                              "Connection: close\r\n\r\n");
                egress_request_done(&r);
        }
        accepted("PUT http://example.com/ HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n", &r);
        ASSERT_EQ_U64(r.body_len, UINT64_MAX);
        egress_request_done(&r);
        accepted("DELETE http://127.0.0.1/ HTTP/1.1\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "127.0.0.1");
        egress_request_done(&r);
        accepted("PATCH http://[::1]:8080/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", &r);
        ASSERT_STREQ(r.host, "::1");
        ASSERT_STREQ(r.upstream_head, "PATCH / HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n");
        egress_request_done(&r);

        refused("GET https://example.com/ HTTP/1.1\r\n\r\n", "https://");
        refused("GET ftp://example.com/ HTTP/1.1\r\n\r\n", "not an absolute http:// URL");
        refused("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", "not an absolute http:// URL");
        refused("GET example.com:80 HTTP/1.1\r\n\r\n", "not an absolute http:// URL");
        refused("GET http://user@example.com/ HTTP/1.1\r\n\r\n", "userinfo");
        refused("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", "userinfo");
        refused("GET http://evil.example@example.com:80/ HTTP/1.1\r\n\r\n", "userinfo");
        refused("GET http://example.com/#top HTTP/1.1\r\n\r\n", "fragment");
        refused("GET http://example.com#top HTTP/1.1\r\n\r\n", "fragment");
        refused("GET http:// HTTP/1.1\r\n\r\n", "empty host");
        refused("GET http:///x HTTP/1.1\r\n\r\n", "empty host");
        refused("GET http://:80/ HTTP/1.1\r\n\r\n", "invalid host");
        refused("GET http://example.com:/ HTTP/1.1\r\n\r\n", "invalid port");
        refused("GET http://ex%61mple.com/ HTTP/1.1\r\n\r\n", "invalid character in the host");
        refused("GET http://example.com\\@evil/ HTTP/1.1\r\n\r\n", "userinfo");
        refused("GET http://example.com/ HTTP/1.1\r\nHost: other.example\r\n\r\n", "differs");
        refused("GET http://example.com/ HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", "differs");
        refused("GET http://example.com:8080/ HTTP/1.1\r\nHost: example.com\r\n\r\n", "differs");
        refused("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nHost: example.com\r\n\r\n", "more than one Host");
        refused("GET http://example.com/ HTTP/1.1\r\nHost:\r\n\r\n", "invalid Host header");
        refused("GET http://example.com/ HTTP/1.1\r\nHost: user@example.com\r\n\r\n", "invalid Host header");
        refused("POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding");
        refused("POST http://example.com/ HTTP/1.1\r\ntransfer-encoding: identity\r\n\r\n", "Transfer-Encoding");
        refused("POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "disagree");
        refused("POST http://example.com/ HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n", "invalid Content-Length");
        refused("POST http://example.com/ HTTP/1.1\r\nContent-Length: +3\r\n\r\n", "invalid Content-Length");
        refused("POST http://example.com/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length");
        refused("POST http://example.com/ HTTP/1.1\r\nContent-Length:\r\n\r\n", "invalid Content-Length");
        refused("POST http://example.com/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
                "invalid Content-Length");
}

TEST(test_request_line) {
        refused("TRACE http://example.com/ HTTP/1.1\r\n\r\n", "method not served");
        refused("get http://example.com/ HTTP/1.1\r\n\r\n", "method not served");
        refused("GET http://example.com/ HTTP/2.0\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
        refused("GET http://example.com/ http/1.1\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
        refused("GET http://example.com/ HTTP/1.1 \r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
        refused("GET  http://example.com/ HTTP/1.1\r\n\r\n", "malformed request line");
        refused("GET http://example.com/  HTTP/1.1\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
        refused("GET http://example.com/\r\n\r\n", "malformed request line");
        refused("GET\r\n\r\n", "malformed request line");
        refused("\r\n\r\n", "malformed request line");
        refused("GET http://example.com/\t HTTP/1.1\r\n\r\n", "invalid character in the request target");
        refused("GET http://example.com/\xc3\xa9 HTTP/1.1\r\n\r\n", "invalid character in the request target");
}

TEST(test_framing) {
        EgressRequest r;
        const char *reason = NULL;

        /* Bare LF and bare CR are refused as soon as they arrive. */
        refused("GET http://example.com/ HTTP/1.1\nHost: example.com\n\n", "bare LF");
        refused("GET http://example.com/ HTTP/1.1\n", "bare LF");
        refused("GET http://example.com/ HTTP/1.1\r\nA: b\n\r\n", "bare LF");
        refused("GET http://example.com/ HTTP/1.1\r\n\n", "bare LF");
        refused("GET http://example.com/ HTTP/1.1\rX", "bare CR");
        refused("GET http://example.com/ HTTP/1.1\r\nA: b\rc\r\n\r\n", "bare CR");
        refused("GET http://example.com/ HTTP/1.1\r\nA: \x01\r\n\r\n", "control character");
        refused("GET http://example.com/ HTTP/1.1\r\nA: \x7f\r\n\r\n", "control character");
        ASSERT_EQ_INT(egress_request_parse("GET http://a.com/ HTTP/1.1\r\nA: \0b\r\n\r\n", 36, &r, &reason), -EBADMSG);
        ASSERT_CONTAINS(reason, "NUL");
        refused("GET http://example.com/ HTTP/1.1\r\nA: b\r\n c\r\n\r\n", "obs-fold");
        refused("GET http://example.com/ HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n", "obs-fold");
        refused("GET http://example.com/ HTTP/1.1\r\n Host: evil.example\r\n\r\n", "obs-fold");
        refused("GET http://example.com/ HTTP/1.1\r\nHost : example.com\r\n\r\n", "invalid header name");
        refused("GET http://example.com/ HTTP/1.1\r\n: x\r\n\r\n", "malformed header line");
        refused("GET http://example.com/ HTTP/1.1\r\nNoColon\r\n\r\n", "malformed header line");
        refused("GET http://example.com/ HTTP/1.1\r\nA(b): x\r\n\r\n", "invalid header name");

        /* HTAB in a value is fine, and the value's blanks are trimmed. */
        accepted("GET http://example.com/ HTTP/1.1\r\nX-A: \t1\t2 \t\r\n\r\n", &r);
        ASSERT_STREQ(r.upstream_head, "GET / HTTP/1.1\r\nHost: example.com\r\nX-A: 1\t2\r\nConnection: close\r\n\r\n");
        egress_request_done(&r);
}

TEST(test_incremental) {
        static const char req[] = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n";
        EgressRequest r = {};

        /* Every prefix is incomplete (0) and leaves ret alone; all of it parses. */
        for (size_t i = 0; i < strlen(req); i++) {
                r.port = 9;
                ASSERT_EQ_INT(egress_request_parse(req, i, &r, NULL), 0);
                ASSERT_EQ_INT(r.port, 9);
        }
        ASSERT_EQ_INT(egress_request_parse(req, strlen(req), &r, NULL), (int) strlen(req));
        ASSERT_EQ_INT(r.port, 80);
        egress_request_done(&r);
        ASSERT_EQ_INT(egress_request_parse(NULL, 0, &r, NULL), 0);
}

/* A head of exactly len bytes: the request line, X-Pad headers, blank line. */
static char *make_head(size_t len, size_t *ret_headers) {
        static const char line[] = "GET http://example.com/ HTTP/1.1\r\n";
        char *s = malloc(len + 1);
        size_t at = strlen(line), n = 0;

        ASSERT_TRUE(s);
        memcpy(s, line, at);
        while (len - at - 2 > 0) {
                /* "X: " + pad + CRLF, at most 1000 bytes, at least 5. */
                size_t left = len - at - 2, l = left > 1005 ? 1000 : left;

                ASSERT_TRUE(l >= 5);
                memcpy(s + at, "X: ", 3);
                memset(s + at + 3, 'p', l - 5);
                memcpy(s + at + l - 2, "\r\n", 2);
                at += l;
                n++;
        }
        memcpy(s + at, "\r\n", 3);
        *ret_headers = n;
        return s;
}

TEST(test_limits) {
        EgressRequest r;
        const char *reason = NULL;
        size_t n_headers;
        char *s, *big;

        /* A head of EGRESS_REQUEST_HEAD_MAX bytes is served, one more is not. */
        s = make_head(EGRESS_REQUEST_HEAD_MAX, &n_headers);
        ASSERT_TRUE(n_headers <= 100);
        ASSERT_EQ_INT(egress_request_parse(s, strlen(s), &r, NULL), EGRESS_REQUEST_HEAD_MAX);
        egress_request_done(&r);
        free(s);
        s = make_head(EGRESS_REQUEST_HEAD_MAX + 1, &n_headers);
        ASSERT_EQ_INT(egress_request_parse(s, strlen(s), &r, &reason), -E2BIG);
        ASSERT_CONTAINS(reason, "too long");
        /* Short of the limit without an end: wait for more. */
        ASSERT_EQ_INT(egress_request_parse(s, EGRESS_REQUEST_HEAD_MAX - 1, &r, NULL), 0);
        ASSERT_EQ_INT(egress_request_parse(s, EGRESS_REQUEST_HEAD_MAX, &r, NULL), -E2BIG);
        free(s);

        /* 100 header lines are served, 101 are not. */
        big = malloc(EGRESS_REQUEST_HEAD_MAX);
        ASSERT_TRUE(big);
        for (int k = 100; k <= 101; k++) {
                size_t at = (size_t) sprintf(big, "GET http://example.com/ HTTP/1.1\r\n");

                for (int i = 0; i < k; i++)
                        at += (size_t) sprintf(big + at, "X-%d: v\r\n", i);
                at += (size_t) sprintf(big + at, "\r\n");
                if (k == 100) {
                        ASSERT_EQ_INT(egress_request_parse(big, at, &r, NULL), (int) at);
                        egress_request_done(&r);
                } else {
                        ASSERT_EQ_INT(egress_request_parse(big, at, &r, &reason), -EBADMSG);
                        ASSERT_CONTAINS(reason, "too many header lines");
                }
        }
        free(big);
}

int main(void) {
        RUN(test_connect);
        RUN(test_absolute);
        RUN(test_request_line);
        RUN(test_framing);
        RUN(test_incremental);
        RUN(test_limits);
        return 0;
}
