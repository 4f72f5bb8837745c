/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base64.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_len(size_t n) {
        if (n / 3 >= SIZE_MAX / 4 - 1)
                return SIZE_MAX;
        return (n + 2) / 3 * 4;
}

int base64_encode(const void *data, size_t n, char **ret, size_t *ret_len) {
        const uint8_t *p = data;
        size_t len = base64_encoded_len(n);
        char *out, *o;

        assert(data || n == 0);
        assert(ret);

        if (len == SIZE_MAX)
                return -ENOMEM;
        out = o = malloc(len + 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16;
                size_t left = n - i;

                if (left > 1)
                        v |= (uint32_t) p[i + 1] << 8;
                if (left > 2)
                        v |= p[i + 2];
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
                *o++ = left > 1 ? alphabet[v >> 6 & 63] : '=';
                *o++ = left > 2 ? alphabet[v & 63] : '=';
        }
        *o = 0;
        *ret = out;
        if (ret_len)
                *ret_len = len;
        return 0;
}

static int value_of(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

static int invalid(size_t *ret_offset, size_t i) {
        if (ret_offset)
                *ret_offset = i;
        return -EINVAL;
}

int base64_decode(const char *s, size_t n, uint64_t max, uint8_t **ret, size_t *ret_len, size_t *ret_offset) {
        size_t digits = 0, pad = 0, out_len, o = 0;
        uint32_t acc = 0;
        unsigned k = 0;
        uint8_t *out;

        assert(s || n == 0);
        assert(ret);
        assert(ret_len);

        /* First pass: validate and count, so nothing is allocated for bad or
         * oversized input. */
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '\n' || c == '\r')
                        continue;
                if (c == '=') {
                        pad++;
                        if (pad > 2)
                                return invalid(ret_offset, i);
                        continue;
                }
                if (pad > 0 || value_of(c) < 0)
                        return invalid(ret_offset, i);
                digits++;
        }
        /* One digit alone carries 6 bits: no whole byte. Padding, when
         * present, completes the last group exactly. */
        if (digits % 4 == 1 || (pad > 0 && (digits + pad) % 4 != 0))
                return invalid(ret_offset, n);
        out_len = digits / 4 * 3 + (digits % 4 == 0 ? 0 : digits % 4 - 1);
        if (out_len > max)
                return -EFBIG;

        out = malloc(out_len > 0 ? out_len : 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int v = value_of(s[i]);

                if (v < 0)
                        continue;
                acc = acc << 6 | (uint32_t) v;
                if (++k == 4) {
                        out[o++] = (uint8_t) (acc >> 16);
                        out[o++] = (uint8_t) (acc >> 8);
                        out[o++] = (uint8_t) acc;
                        acc = 0;
                        k = 0;
                }
        }
        if (k >= 2)
                out[o++] = (uint8_t) (acc >> (6 * k - 8));
        if (k == 3)
                out[o++] = (uint8_t) (acc >> 2);
        assert(o == out_len);
        *ret = out;
        *ret_len = out_len;
        return 0;
}
