/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "file-uri.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static bool unreserved(uint8_t c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
               c == '_' || c == '~';
}

int file_uri_from_path(const char *path, size_t len, char **ret) {
        static const char hex[] = "0123456789ABCDEF";
        static const char prefix[] = "file://";
        char *uri, *o;

        assert(path || len == 0);
        assert(ret);

        if (len == 0 || path[0] != '/' || memchr(path, 0, len))
                return -EINVAL;
        if (len > (SIZE_MAX - sizeof prefix) / 3)
                return -ENOMEM;
        uri = malloc(sizeof prefix + 3 * len);
        if (!uri)
                return -ENOMEM;
        memcpy(uri, prefix, sizeof prefix - 1);
        o = uri + sizeof prefix - 1;
        for (size_t i = 0; i < len; i++) {
                uint8_t c = (uint8_t) path[i];

                if (unreserved(c) || c == '/')
                        *o++ = (char) c;
                else {
                        *o++ = '%';
                        *o++ = hex[c >> 4];
                        *o++ = hex[c & 15];
                }
        }
        *o = 0;
        *ret = uri;
        return 0;
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int file_uri_to_path(const char *uri, char **ret, size_t *ret_len) {
        _cleanup_free_ char *path = NULL;
        const char *p;
        size_t n = 0;

        assert(uri);
        assert(ret);

        if (strneq(uri, "file:///", 8))
                p = uri + 7;
        else if (strneq(uri, "file://localhost/", 17))
                p = uri + 16;
        else
                return -EINVAL;

        path = malloc(strlen(p) + 1);
        if (!path)
                return -ENOMEM;
        for (; *p; p++) {
                int hi, lo;

                if (*p != '%') {
                        /* A query or fragment is no part of a file name we made. */
                        if (*p == '?' || *p == '#')
                                return -EINVAL;
                        path[n++] = *p;
                        continue;
                }
                hi = unhex(p[1]);
                lo = hi >= 0 ? unhex(p[2]) : -1;
                if (lo < 0 || (hi == 0 && lo == 0))
                        return -EINVAL;
                path[n++] = (char) (hi << 4 | lo);
                p += 2;
        }
        path[n] = 0;
        *ret = TAKE_PTR(path);
        if (ret_len)
                *ret_len = n;
        return 0;
}
