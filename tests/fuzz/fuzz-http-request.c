/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the pure helpers of the HTTP request path (http-util.h,
 * http-auth.h) on fuzzed header values. The first byte picks the helper;
 * the rest is the header value, NUL-terminated as libmicrohttpd hands it. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http-auth.h"
#include "http-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *v, *second;
        unsigned op;

        if (size < 1 || size > 16 * 1024)
                return 0;
        op = data[0];
        v = malloc(size);
        if (!v)
                abort();
        memcpy(v, data + 1, size - 1);
        v[size - 1] = '\0';
        /* Where the value has an embedded NUL, what follows is a second value. */
        second = v + strlen(v) + 1;
        if (second > v + size - 1)
                second = v + size - 1;

        static char origin_ok[] = "https://ok.example";
        static char *origins[] = { origin_ok, NULL };
        HttpAuth a = { .token = (char *) "s3cret-token", .origins = origins, .check_host = true,
                       .port = 8080, .bound_host = (char *) "127.0.0.1" };
        HttpAuth a6 = { .check_host = true, .port = 80, .bound_host = (char *) "[::1]" };

        switch (op % 12) {
        case 0:
                (void) http_accepts(v, "application/json");
                (void) http_accepts(v, "text/event-stream");
                (void) http_accepts(v, second);
                break;
        case 1:
                (void) http_content_type_is(v, "application/json");
                (void) http_content_type_is(v, second);
                break;
        case 2: {
                const char *t = http_bearer_token(v);
                if (t && (t < v || t > v + strlen(v)))
                        abort();
                (void) http_auth_token_ok(&a, second, v);
                (void) http_auth_token_ok(&a, v, NULL);
                /* The value as a tokens file, then as a request against it. */
                {
                        HttpTokens named = {};
                        const char *why = NULL, *name = NULL;
                        char buf[128];
                        int r = http_tokens_parse(v, strlen(v), &named, buf, sizeof buf, &why);

                        if (r >= 0) {
                                HttpAuth n = {};
                                if (http_auth_set_named(&n, &named, &why) < 0)
                                        abort();
                                if (http_auth_token_match(&n, second, NULL, &name) && name && !n.named.n)
                                        abort();
                                http_tokens_done(&n.named);
                        } else if (r == -EINVAL && !why)
                                abort();
                }
                break;
        }
        case 3: {
                struct sockaddr_storage ss;
                socklen_t len = 0;
                if (http_parse_address(v, &ss, &len) >= 0) {
                        if (len == 0 || len > sizeof ss)
                                abort();
                        (void) sockaddr_is_loopback((struct sockaddr *) &ss);
                        (void) sockaddr_port((struct sockaddr *) &ss);
                }
                break;
        }
        case 4:
                (void) http_auth_origin_ok(&a, v);
                (void) http_auth_origin_ok(&a6, v);
                break;
        case 5:
                (void) http_auth_host_ok(&a, v);
                (void) http_auth_host_ok(&a6, v);
                break;
        case 6: {
                char **list = NULL;
                if (http_auth_parse_origins(v, &list) >= 0 && list) {
                        HttpAuth b = { .origins = list };
                        (void) http_auth_origin_ok(&b, second);
                        for (char **p = list; *p; p++)
                                free(*p);
                        free(list);
                }
                break;
        }
        case 7: {
                char *buf = NULL;
                size_t sz = 0, alloc = 0;
                /* The event name is ours (a constant), never a client value. */
                if (sse_append_event(&buf, &sz, &alloc, str_is_visible_ascii(second) ? second : NULL, v, strlen(v)) < 0)
                        abort();
                /* The framing cannot be broken: no bare CR, every line is a field. */
                if (!buf || sz > alloc)
                        abort();
                for (size_t i = 0; i < sz; i++)
                        if (buf[i] == '\r')
                                abort();
                if (sz < 2 || buf[sz - 1] != '\n' || buf[sz - 2] != '\n')
                        abort();
                free(buf);
                break;
        }
        case 8: {
                char *d = mcp_header_value_decode(v);
                free(d);
                break;
        }
        case 9:
                (void) str_is_visible_ascii(v);
                break;
        case 10:
                (void) streq_consttime(v, second);
                break;
        case 11: {
                char *buf = NULL;
                size_t sz = 0, alloc = 0;
                if (buf_append(&buf, &sz, &alloc, v, strlen(v)) < 0 ||
                    buf_append(&buf, &sz, &alloc, second, strlen(second)) < 0)
                        abort();
                if (sz != strlen(v) + strlen(second) || sz > alloc)
                        abort();
                free(buf);
                break;
        }
        }
        free(v);
        return 0;
}
