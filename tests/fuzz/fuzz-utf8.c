/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: utf8_sanitize must return well-formed UTF-8 (checked by
 * an independent validator), keep valid input unchanged, and grow by at most
 * 3 bytes per input byte (each bad byte becomes at most one U+FFFD). */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 3629, table 3-7 of the Unicode standard. Returns the length of the
 * well-formed sequence at p, or 0. */
static size_t valid_seq(const uint8_t *p, size_t n) {
        uint8_t c = p[0];
        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
        if (c >= 0xe0 && c <= 0xef) {
                uint8_t lo = 0x80, hi = 0xbf;
                if (c == 0xe0)
                        lo = 0xa0;
                if (c == 0xed)
                        hi = 0x9f;
                if (n < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80)
                        return 0;
                return 3;
        }
        if (c >= 0xf0 && c <= 0xf4) {
                uint8_t lo = 0x80, hi = 0xbf;
                if (c == 0xf0)
                        lo = 0x90;
                if (c == 0xf4)
                        hi = 0x8f;
                if (n < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
                        return 0;
                return 4;
        }
        return 0;
}

static bool is_valid(const uint8_t *p, size_t n) {
        while (n > 0) {
                size_t k = valid_seq(p, n);
                if (k == 0)
                        return false;
                p += k;
                n -= k;
        }
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *in, *out;
        size_t out_len = (size_t) -1;

        in = malloc(size ? size : 1);
        if (!in)
                abort();
        memcpy(in, data, size);
        out = utf8_sanitize(in, size, &out_len);
        if (!out)
                abort();                /* only on OOM, which the fuzzer does not cause */
        if (out[out_len] != '\0')
                abort();
        if (!is_valid((const uint8_t *) out, out_len))
                abort();
        if (out_len > 3 * size)
                abort();
        if (is_valid(data, size)) {
                /* Valid input comes back as it is. */
                if (out_len != size || memcmp(out, data, size) != 0)
                        abort();
        } else if (out_len == size && memcmp(out, data, size) == 0)
                abort();
        free(out);
        free(in);
        return 0;
}
