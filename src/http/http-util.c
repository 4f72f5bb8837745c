/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "http-util.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "macro.h"
#include "parse-util.h"

static const char *skip_ws(const char *p, const char *end) {
        assert(p);

        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        return p;
}

static const char *trim_end(const char *start, const char *p) {
        assert(p);

        while (p > start && (p[-1] == ' ' || p[-1] == '\t'))
                p--;
        return p;
}

static bool token_eq(const char *a, size_t la, const char *b) {
        assert(a);
        assert(b);

        return strlen(b) == la && strncasecmp(a, b, la) == 0;
}

/* q of one Accept element's parameters ("q=0.5"); 1000 means q=1. */
static unsigned accept_q(const char *p, const char *end) {
        assert(p);
        assert(end);

        while (p < end) {
                const char *semi = memchr(p, ';', (size_t) (end - p)), *e = semi ?: end;
                const char *s = skip_ws(p, e);

                if (e - s >= 2 && (s[0] == 'q' || s[0] == 'Q') && s[1] == '=') {
                        unsigned q = 0, digits = 0;
                        s += 2;
                        if (s < e && *s == '1')
                                return 1000;
                        if (s < e && *s == '0')
                                s++;
                        if (s < e && *s == '.')
                                for (s++; s < e && *s >= '0' && *s <= '9' && digits < 3; s++, digits++)
                                        q = q * 10 + (unsigned) (*s - '0');
                        for (; digits < 3; digits++)
                                q *= 10;
                        return q;
                }
                p = semi ? semi + 1 : end;
        }
        return 1000;
}

bool http_accepts(const char *accept, const char *type) {
        const char *slash = strchr(type, '/');
        int best = -1;
        unsigned best_q = 0;

        assert(type);

        /* MCP requires the header, so its absence admits nothing. */
        if (isempty(accept) || !slash)
                return false;

        for (const char *p = accept, *end = accept + strlen(accept); p < end;) {
                const char *comma = memchr(p, ',', (size_t) (end - p)), *e = comma ?: end;
                const char *semi = memchr(p, ';', (size_t) (e - p));
                const char *r = skip_ws(p, e), *re = trim_end(r, semi ?: e);
                const char *rs = memchr(r, '/', (size_t) (re - r));
                int specificity = -1;

                if (rs) {
                        bool type_any = token_eq(r, (size_t) (rs - r), "*");
                        bool sub_any = token_eq(rs + 1, (size_t) (re - rs - 1), "*");
                        bool type_eq = (size_t) (rs - r) == (size_t) (slash - type) &&
                                       strncasecmp(r, type, (size_t) (rs - r)) == 0;
                        bool sub_eq = token_eq(rs + 1, (size_t) (re - rs - 1), slash + 1);

                        if (type_eq && sub_eq)
                                specificity = 2;
                        else if (type_eq && sub_any)
                                specificity = 1;
                        else if (type_any && sub_any)
                                specificity = 0;
                }
                /* The most specific range decides: an exact "text/html;q=0" beats a wildcard. */
                if (specificity > best) {
                        best = specificity;
                        best_q = accept_q(semi ? semi + 1 : e, e);
                }
                p = comma ? comma + 1 : end;
        }
        return best >= 0 && best_q > 0;
}

bool http_content_type_is(const char *content_type, const char *type) {
        const char *p, *e;

        assert(type);

        if (!content_type)
                return false;
        p = skip_ws(content_type, content_type + strlen(content_type));
        e = p + strcspn(p, ";");
        e = trim_end(p, e);
        return token_eq(p, (size_t) (e - p), type);
}

const char *http_bearer_token(const char *authorization) {
        const char *p;

        if (!authorization || strncasecmp(authorization, "Bearer", 6) != 0 ||
            (authorization[6] != ' ' && authorization[6] != '\t'))
                return NULL;
        p = authorization + 6;
        while (*p == ' ' || *p == '\t')
                p++;
        return *p ? p : NULL;
}

int http_parse_address(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
        _cleanup_free_ char *host = NULL;
        const char *colon, *port_s;
        struct sockaddr_storage ss = {};
        uint16_t port;

        assert(ret);
        assert(ret_len);

        if (isempty(s))
                return -EINVAL;
        if (s[0] == '[') {
                const char *close = strchr(s, ']');
                if (!close || close[1] != ':')
                        return -EINVAL;
                host = strndup(s + 1, (size_t) (close - s - 1));
                port_s = close + 2;
        } else {
                colon = strrchr(s, ':');
                if (!colon)
                        return -EINVAL;
                host = strndup(s, (size_t) (colon - s));
                port_s = colon + 1;
        }
        if (!host)
                return -ENOMEM;
        if (parse_port(port_s, &port) < 0)
                return -EINVAL;

        if (s[0] == '[') {
                struct sockaddr_in6 *sa = (struct sockaddr_in6 *) &ss;
                if (inet_pton(AF_INET6, host, &sa->sin6_addr) != 1)
                        return -EINVAL;
                sa->sin6_family = AF_INET6;
                sa->sin6_port = htons((uint16_t) port);
                *ret_len = sizeof *sa;
        } else if (isempty(host)) {
                struct sockaddr_in6 *sa = (struct sockaddr_in6 *) &ss;
                sa->sin6_family = AF_INET6;
                sa->sin6_addr = in6addr_any;
                sa->sin6_port = htons((uint16_t) port);
                *ret_len = sizeof *sa;
        } else {
                struct sockaddr_in *sa = (struct sockaddr_in *) &ss;
                if (strcasecmp(host, "localhost") == 0)
                        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
                        return -EINVAL;
                sa->sin_family = AF_INET;
                sa->sin_port = htons((uint16_t) port);
                *ret_len = sizeof *sa;
        }
        *ret = ss;
        return 0;
}

bool sockaddr_is_loopback(const struct sockaddr *sa) {
        assert(sa);

        if (sa->sa_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
        if (sa->sa_family == AF_INET6) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
                return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
        }
        return false;
}

uint16_t sockaddr_port(const struct sockaddr *sa) {
        assert(sa);

        if (sa->sa_family == AF_INET)
                return ntohs(((const struct sockaddr_in *) sa)->sin_port);
        if (sa->sa_family == AF_INET6)
                return ntohs(((const struct sockaddr_in6 *) sa)->sin6_port);
        return 0;
}

int buf_append(char **buf, size_t *size, size_t *alloc, const char *data, size_t len) {
        assert(buf);
        assert(size);
        assert(alloc);

        if (*size + len + 1 > *alloc) {
                size_t want = MAX(*size + len + 1, MAX(*alloc * 2, (size_t) 256));
                char *p = realloc(*buf, want);
                if (!p)
                        return -ENOMEM;
                *buf = p;
                *alloc = want;
        }
        memcpy(*buf + *size, data, len);
        *size += len;
        (*buf)[*size] = 0;
        return 0;
}

static int append_event(char **buf, size_t *size, size_t *alloc, const char *event, const char *data, size_t len) {
        assert(buf);
        assert(size);
        assert(alloc);

        if (event && (buf_append(buf, size, alloc, "event: ", 7) < 0 ||
                      buf_append(buf, size, alloc, event, strlen(event)) < 0 ||
                      buf_append(buf, size, alloc, "\n", 1) < 0))
                return -ENOMEM;
        /* Serialized JSON has no raw newlines, but a CR or LF would end the
         * data line early and let the rest pose as SSE fields. */
        for (size_t i = 0;;) {
                size_t n = 0;
                while (i + n < len && data[i + n] != '\n' && data[i + n] != '\r')
                        n++;
                if (buf_append(buf, size, alloc, "data: ", 6) < 0 || buf_append(buf, size, alloc, data + i, n) < 0 ||
                    buf_append(buf, size, alloc, "\n", 1) < 0)
                        return -ENOMEM;
                i += n;
                if (i >= len)
                        break;
                i += (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') ? 2 : 1;
        }
        return buf_append(buf, size, alloc, "\n", 1);
}

size_t sse_event_size(const char *event, const char *data, size_t len) {
        size_t n = event ? strlen("event: ") + strlen(event) + 1 : 0;

        assert(data || len == 0);

        /* As append_event() splits it. */
        for (size_t i = 0;;) {
                size_t k = 0;
                while (i + k < len && data[i + k] != '\n' && data[i + k] != '\r')
                        k++;
                n += strlen("data: ") + k + 1;
                i += k;
                if (i >= len)
                        break;
                i += (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') ? 2 : 1;
        }
        return n + 1;
}

int sse_append_event(char **buf, size_t *size, size_t *alloc, const char *event, const char *data, size_t len) {
        size_t old = *size;
        int r;

        assert(buf);
        assert(size);
        assert(alloc);
        assert(data || len == 0);

        r = append_event(buf, size, alloc, event, data, len);
        if (r < 0)
                *size = old;    /* nothing half-written is ever sent */
        return r;
}

bool str_is_visible_ascii(const char *s) {
        if (isempty(s))
                return false;
        for (; *s; s++)
                if ((unsigned char) *s < 0x21 || (unsigned char) *s > 0x7e)
                        return false;
        return true;
}

char *mcp_header_value_decode(const char *v) {
        static const char prefix[] = "=?base64?", suffix[] = "?=";
        _cleanup_free_ uint8_t *out = NULL;
        size_t l = strlen(v), n, len;

        assert(v);

        if (l < strlen(prefix) + strlen(suffix) || !strneq(v, prefix, strlen(prefix)) ||
            !streq(v + l - strlen(suffix), suffix))
                return strdup(v);

        n = l - strlen(prefix) - strlen(suffix);
        /* Padding may be left out; a header value has no line breaks to skip. */
        if (base64_decode(v + strlen(prefix), n, n, &out, &len, NULL) < 0)
                return NULL;
        /* An embedded NUL cannot match a JSON string we compare with. */
        if (memchr(out, 0, len))
                return NULL;
        return strndup((const char *) out, len);
}
