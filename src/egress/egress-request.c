/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-request.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dns-name.h"
#include "egress-address.h"
#include "macro.h"

/* Strictness, because the proxy and the upstream must read the same request:
 * - line ends are CRLF only; a bare LF or a bare CR anywhere in the head is
 *   refused (not tolerated as RFC 9112 2.2 allows), as are NUL and other
 *   control bytes but HTAB, and obs-fold (a line starting with a blank);
 * - a header name is a token with the colon right after it;
 * - at most EGRESS_REQUEST_HEADERS_MAX header lines;
 * - Transfer-Encoding is refused, Content-Length must be digits, and several
 *   of them must agree; CONNECT carries none but 0;
 * - a Host header, once at most, must name the target's host and port. */

#define EGRESS_REQUEST_HEADERS_MAX 100

typedef struct Header {
        const char *name, *value;
        size_t name_len, value_len;
} Header;

typedef struct Parser {
        const char *method, *target;
        size_t method_len, target_len;
        const char *path;               /* origin-form path and query; NULL: "/" */
        size_t path_len;
        Header headers[EGRESS_REQUEST_HEADERS_MAX];
        size_t n_headers;
        bool has_host;
        EgressRequest req;
} Parser;

static const char *const methods[] = { "CONNECT", "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH" };

static int bad(const char **ret_reason, const char *reason) {
        if (ret_reason)
                *ret_reason = reason;
        return -EBADMSG;
}

static bool is_tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_ldh_or_dot(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static bool token_eq(const char *s, size_t n, const char *word) {
        assert(s);
        assert(word);

        return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* The head's length (with its blank line), 0 when incomplete, or -EBADMSG for
 * a byte no head may hold, seen as early as it arrives. */
static int find_head_end(const char *buf, size_t n, size_t *ret_len, const char **ret_reason) {
        size_t m = MIN(n, (size_t) EGRESS_REQUEST_HEAD_MAX);

        assert(ret_len);

        for (size_t i = 0; i < m; i++) {
                unsigned char c = (unsigned char) buf[i];

                if (c == '\r') {
                        if (i + 1 == m)
                                break;          /* its LF may come */
                        if (buf[i + 1] != '\n')
                                return bad(ret_reason, "bare CR in the request head");
                        i++;
                        if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
                                *ret_len = i + 1;
                                return 1;
                        }
                        continue;
                }
                if (c == '\n')
                        return bad(ret_reason, "bare LF in the request head");
                if (c == 0)
                        return bad(ret_reason, "NUL byte in the request head");
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return bad(ret_reason, "control character in the request head");
        }
        return 0;
}

/* host[:port] or [v6][:port], s[0..n): into host (lower case, no brackets,
 * no trailing dot) and *ret_port. A host is an LDH name or an IP literal (the
 * caller refuses those with its own verdict); nothing else. */
static int parse_authority(const char *s, size_t n, bool need_port, uint16_t default_port, char host[static 254],
                           uint16_t *ret_port, const char **ret_reason) {
        const char *h = s, *colon = NULL;
        size_t hl;

        assert(s);
        assert(ret_port);

        if (n == 0)
                return bad(ret_reason, "empty host");
        if (s[0] == '[') {
                const char *close = memchr(s, ']', n);
                char lit[254 + 2];

                if (!close || (size_t) (close - s) + 1 > sizeof lit - 1)
                        return bad(ret_reason, "malformed IPv6 host");
                memcpy(lit, s, (size_t) (close - s) + 1);
                lit[close - s + 1] = 0;
                if (!egress_host_is_ip_literal(lit))
                        return bad(ret_reason, "malformed IPv6 host");
                h = s + 1;
                hl = (size_t) (close - h);
                if (close + 1 < s + n) {
                        if (close[1] != ':')
                                return bad(ret_reason, "junk after the IPv6 host");
                        colon = close + 1;
                }
        } else {
                colon = memchr(s, ':', n);
                hl = colon ? (size_t) (colon - s) : n;
                if (colon && memchr(colon + 1, ':', (size_t) (s + n - colon - 1)))
                        return bad(ret_reason, "IPv6 host without brackets");
                for (size_t i = 0; i < hl; i++)
                        if (!is_ldh_or_dot(s[i]))
                                return bad(ret_reason, "invalid character in the host");
                if (hl > 1 && s[hl - 1] == '.')
                        hl--;           /* "example.com." is example.com */
                if (hl == 0 || hl > 253)
                        return bad(ret_reason, "invalid host");
                memcpy(host, s, hl);
                host[hl] = 0;
                if (!dns_name_is_valid(host, hl) && !egress_host_is_ip_literal(host))
                        return bad(ret_reason, "invalid host");
        }
        if (hl == 0 || hl > 253)
                return bad(ret_reason, "invalid host");
        memcpy(host, h, hl);
        host[hl] = 0;
        for (char *q = host; *q; q++)
                if (*q >= 'A' && *q <= 'Z')
                        *q = (char) (*q - 'A' + 'a');

        if (!colon) {
                if (need_port)
                        return bad(ret_reason, "CONNECT target without a port");
                *ret_port = default_port;
                return 0;
        }
        {
                const char *p = colon + 1, *e = s + n;
                uint32_t port = 0;

                if (p == e || e - p > 5)
                        return bad(ret_reason, "invalid port");
                for (; p < e; p++) {
                        if (*p < '0' || *p > '9')
                                return bad(ret_reason, "invalid port");
                        port = port * 10 + (uint32_t) (*p - '0');
                }
                if (port == 0 || port > 65535)
                        return bad(ret_reason, "invalid port");
                *ret_port = (uint16_t) port;
        }
        return 0;
}

/* "http://authority[/path][?query]": no userinfo, no fragment, not https. */
static int parse_absolute(Parser *p, const char **ret_reason) {
        const char *t = p->target, *e = p->target + p->target_len, *a, *end;

        assert(p);

        if (p->target_len >= 8 && strncasecmp(t, "https://", 8) == 0)
                return bad(ret_reason, "https:// in absolute form; use CONNECT");
        if (p->target_len < 7 || strncasecmp(t, "http://", 7) != 0)
                return bad(ret_reason, "not an absolute http:// URL");
        a = t + 7;
        for (end = a; end < e && *end != '/' && *end != '?' && *end != '#'; end++)
                if (*end == '@')
                        return bad(ret_reason, "userinfo in the URL");
        for (const char *c = end; c < e; c++)
                if (*c == '#')
                        return bad(ret_reason, "fragment in the URL");
        p->path = end < e ? end : NULL;
        p->path_len = (size_t) (e - end);
        return parse_authority(a, (size_t) (end - a), false, 80, p->req.host, &p->req.port, ret_reason);
}

/* METHOD SP target SP HTTP/1.x, line[0..n) without its CRLF. */
static int parse_request_line(Parser *p, const char *line, size_t n, const char **ret_reason) {
        const char *sp1, *sp2, *version;
        size_t i;

        assert(p);
        assert(line);

        sp1 = memchr(line, ' ', n);
        if (!sp1)
                return bad(ret_reason, "malformed request line");
        sp2 = memchr(sp1 + 1, ' ', (size_t) (line + n - sp1 - 1));
        if (!sp2 || sp2 == sp1 + 1)
                return bad(ret_reason, "malformed request line");
        version = sp2 + 1;
        if ((size_t) (line + n - version) != 8 ||
            (memcmp(version, "HTTP/1.1", 8) != 0 && memcmp(version, "HTTP/1.0", 8) != 0))
                return bad(ret_reason, "not HTTP/1.0 or HTTP/1.1");

        p->method = line;
        p->method_len = (size_t) (sp1 - line);
        p->target = sp1 + 1;
        p->target_len = (size_t) (sp2 - sp1 - 1);
        for (i = 0; i < ELEMENTSOF(methods); i++)
                if (strlen(methods[i]) == p->method_len && memcmp(methods[i], line, p->method_len) == 0)
                        break;
        if (i == ELEMENTSOF(methods))
                return bad(ret_reason, "method not served");
        for (i = 0; i < p->target_len; i++)
                if ((unsigned char) p->target[i] <= 0x20 || (unsigned char) p->target[i] >= 0x7f)
                        return bad(ret_reason, "invalid character in the request target");

        p->req.connect = p->method_len == 7 && memcmp(line, "CONNECT", 7) == 0;
        if (p->req.connect)
                return parse_authority(p->target, p->target_len, true, 0, p->req.host, &p->req.port, ret_reason);
        return parse_absolute(p, ret_reason);
}

static int check_host_header(Parser *p, const Header *h, const char **ret_reason) {
        char host[254];
        uint16_t port;
        int r;

        assert(p);
        assert(h);

        if (p->has_host)
                return bad(ret_reason, "more than one Host header");
        p->has_host = true;
        /* For CONNECT a Host without a port names the host only. */
        r = parse_authority(h->value, h->value_len, false, p->req.connect ? p->req.port : 80, host, &port,
                            ret_reason);
        if (r < 0)
                return bad(ret_reason, "invalid Host header");
        if (!streq(host, p->req.host) || port != p->req.port)
                return bad(ret_reason, "Host header differs from the request target");
        return 0;
}

static int check_content_length(Parser *p, const Header *h, bool *seen, const char **ret_reason) {
        uint64_t v = 0;

        assert(p);
        assert(h);
        assert(seen);

        if (h->value_len == 0)
                return bad(ret_reason, "invalid Content-Length");
        for (size_t i = 0; i < h->value_len; i++) {
                uint64_t d = (uint64_t) (h->value[i] - '0');

                if (h->value[i] < '0' || h->value[i] > '9' || v > (UINT64_MAX - d) / 10)
                        return bad(ret_reason, "invalid Content-Length");
                v = v * 10 + d;
        }
        if (*seen && v != p->req.body_len)
                return bad(ret_reason, "Content-Length headers disagree");
        if (p->req.connect && v != 0)
                return bad(ret_reason, "CONNECT with a body");
        *seen = true;
        p->req.body_len = v;
        return 0;
}

/* One header line, line[0..n) without CRLF, into p->headers. */
static int parse_header_line(Parser *p, const char *line, size_t n, const char **ret_reason) {
        const char *colon, *v, *e = line + n;
        Header *h;

        assert(p);
        assert(line);

        if (line[0] == ' ' || line[0] == '\t')
                return bad(ret_reason, "folded header line (obs-fold)");
        if (p->n_headers >= EGRESS_REQUEST_HEADERS_MAX)
                return bad(ret_reason, "too many header lines");
        colon = memchr(line, ':', n);
        if (!colon || colon == line)
                return bad(ret_reason, "malformed header line");
        for (const char *c = line; c < colon; c++)
                if (!is_tchar(*c))
                        return bad(ret_reason, "invalid header name");
        for (v = colon + 1; v < e && (*v == ' ' || *v == '\t'); v++)
                ;
        while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;

        h = p->headers + p->n_headers++;
        *h = (Header) {
                .name = line,
                .name_len = (size_t) (colon - line),
                .value = v,
                .value_len = (size_t) (e - v),
        };
        return 0;
}

static int check_headers(Parser *p, const char **ret_reason) {
        bool seen_length = false;
        int r = 0;

        assert(p);

        for (size_t i = 0; i < p->n_headers && r >= 0; i++) {
                const Header *h = p->headers + i;

                if (token_eq(h->name, h->name_len, "Transfer-Encoding"))
                        r = bad(ret_reason, "Transfer-Encoding in a request");
                else if (token_eq(h->name, h->name_len, "Host"))
                        r = check_host_header(p, h, ret_reason);
                else if (token_eq(h->name, h->name_len, "Content-Length"))
                        r = check_content_length(p, h, &seen_length, ret_reason);
        }
        return r;
}

/* Is name one that a Connection header of the request lists? Those are
 * hop-by-hop too (RFC 9110 7.6.1). */
static bool listed_in_connection(const Parser *p, const char *name, size_t nl) {
        assert(p);
        assert(name);

        for (size_t i = 0; i < p->n_headers; i++) {
                const Header *h = p->headers + i;
                const char *s = h->value, *e = h->value + h->value_len;

                if (!token_eq(h->name, h->name_len, "Connection"))
                        continue;
                while (s < e) {
                        const char *t;

                        while (s < e && (*s == ',' || *s == ' ' || *s == '\t'))
                                s++;
                        for (t = s; t < e && *t != ',' && *t != ' ' && *t != '\t'; t++)
                                ;
                        if (t > s && (size_t) (t - s) == nl && strncasecmp(s, name, nl) == 0)
                                return true;
                        s = t;
                }
        }
        return false;
}

static bool is_hop_by_hop(const Parser *p, const Header *h) {
        static const char *const dropped[] = {
                "Host", "Connection", "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Connection",
        };

        assert(p);
        assert(h);

        if (h->name_len >= 6 && strncasecmp(h->name, "Proxy-", 6) == 0)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(dropped); i++)
                if (token_eq(h->name, h->name_len, dropped[i]))
                        return true;
        return listed_in_connection(p, h->name, h->name_len);
}

static int build_upstream_head(Parser *p) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f;
        bool v6 = strchr(p->req.host, ':'), length_sent = false;

        assert(p);

        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%.*s %s%.*s HTTP/1.1\r\nHost: %s%s%s", (int) p->method_len, p->method,
                p->path && p->path[0] == '/' ? "" : "/", (int) p->path_len, p->path ?: "",
                v6 ? "[" : "", p->req.host, v6 ? "]" : "");
        if (p->req.port != 80)
                fprintf(f, ":%u", (unsigned) p->req.port);
        fputs("\r\n", f);
        for (size_t i = 0; i < p->n_headers; i++) {
                const Header *h = p->headers + i;

                /* Content-Length once, even when the client repeated it. */
                if (token_eq(h->name, h->name_len, "Content-Length")) {
                        if (length_sent)
                                continue;
                        length_sent = true;
                }
                if (!is_hop_by_hop(p, h))
                        fprintf(f, "%.*s: %.*s\r\n", (int) h->name_len, h->name, (int) h->value_len, h->value);
        }
        fputs("Connection: close\r\n\r\n", f);
        if (fclose(f) != 0)
                return -ENOMEM;
        p->req.upstream_head = TAKE_PTR(buf);
        p->req.upstream_head_len = len;
        return 0;
}

int egress_request_parse(const char *buf, size_t n, EgressRequest *ret, const char **ret_reason) {
        _cleanup_free_ Parser *p = NULL;
        const char *line, *end, *eol;
        size_t head_len = 0;
        int r;

        assert(ret);

        if (n == 0)
                return 0;
        assert(buf);
        r = find_head_end(buf, n, &head_len, ret_reason);
        if (r < 0)
                return r;
        if (r == 0) {
                if (n >= EGRESS_REQUEST_HEAD_MAX) {
                        if (ret_reason)
                                *ret_reason = "request head too long";
                        return -E2BIG;
                }
                return 0;
        }

        p = new0(Parser, 1);
        if (!p)
                return -ENOMEM;
        end = buf + head_len - 2;       /* the blank line's CRLF */
        eol = memmem(buf, (size_t) (end - buf), "\r\n", 2);
        assert(eol);
        r = parse_request_line(p, buf, (size_t) (eol - buf), ret_reason);
        for (line = eol + 2; r >= 0 && line < end; line = eol + 2) {
                eol = memmem(line, (size_t) (end - line), "\r\n", 2);
                assert(eol);
                r = parse_header_line(p, line, (size_t) (eol - line), ret_reason);
        }
        if (r >= 0)
                r = check_headers(p, ret_reason);
        if (r >= 0 && !p->req.connect)
                r = build_upstream_head(p);
        if (r < 0) {
                egress_request_done(&p->req);
                return r;
        }
        *ret = p->req;
        return (int) head_len;
}

void egress_request_done(EgressRequest *r) {
        if (!r)
                return;
        r->upstream_head = mfree(r->upstream_head);
        r->upstream_head_len = 0;
}
