/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "parse-util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int parse_uint(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (isempty(s))
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *ret = v;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        static const struct {
                char suffix;
                unsigned shift;
        } table[] = { { 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 } };
        _cleanup_free_ char *num = NULL;
        uint64_t v, factor = 1;
        size_t n;
        int r;

        if (isempty(s))
                return -EINVAL;
        n = strlen(s);
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (toupper((unsigned char) s[n - 1]) == table[i].suffix) {
                        factor = UINT64_C(1) << table[i].shift;
                        n--;
                        break;
                }
        num = strndup(s, n);
        if (!num)
                return -ENOMEM;
        r = parse_uint(num, &v);
        if (r < 0)
                return r;
        if (v > UINT64_MAX / factor)
                return -ERANGE;
        *ret = v * factor;
        return 0;
}

int parse_percent(const char *s, uint64_t *ret) {
        _cleanup_free_ char *num = NULL;
        size_t n;

        if (isempty(s))
                return -EINVAL;
        n = strlen(s);
        if (s[n - 1] == '%')
                n--;
        num = strndup(s, n);
        if (!num)
                return -ENOMEM;
        return parse_uint(num, ret);
}

int parse_port(const char *s, uint16_t *ret) {
        uint64_t v;
        int r;

        r = parse_uint(s, &v);
        if (r < 0)
                return r == -ERANGE ? -EINVAL : r;
        if (v > UINT16_MAX)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}
