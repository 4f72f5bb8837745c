/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "utf8.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed sequence at s (at most n bytes), 0 if none,
 * following the table in Unicode 15 §3.9 (D92). */
static size_t utf8_valid_len(const uint8_t *s, size_t n) {
        uint8_t c = s[0];

        if (c < 0x80)
                return 1;
        if (c >= 0xC2 && c <= 0xDF)
                return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
        if (c >= 0xE0 && c <= 0xEF) {
                uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
                return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
        }
        if (c >= 0xF0 && c <= 0xF4) {
                uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
                return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
        }
        return 0;
}

bool utf8_is_valid(const char *s, size_t n) {
        const uint8_t *p = (const uint8_t *) s;

        for (size_t i = 0; i < n;) {
                size_t l = utf8_valid_len(p + i, n - i);
                if (l == 0)
                        return false;
                i += l;
        }
        return true;
}

char *utf8_sanitize(const char *s, size_t n, size_t *ret_len) {
        const uint8_t *p = (const uint8_t *) s;
        size_t o = 0;
        char *out;

        /* Worst case: every byte becomes a 3-byte U+FFFD. */
        if (n > (SIZE_MAX - 1) / 3)
                return NULL;
        out = malloc(n * 3 + 1);
        if (!out)
                return NULL;

        for (size_t i = 0; i < n;) {
                size_t l = utf8_valid_len(p + i, n - i);
                if (l > 0) {
                        memcpy(out + o, p + i, l);
                        o += l;
                        i += l;
                } else {
                        memcpy(out + o, "\xEF\xBF\xBD", 3);
                        o += 3;
                        i++;
                }
        }
        out[o] = 0;
        if (ret_len)
                *ret_len = o;
        return out;
}

/* Bytes one character takes inside a JSON string as json-c writes it (no
 * slash escapes): two for the short escapes, six for other control bytes. */
static size_t json_char_cost(uint8_t c) {
        switch (c) {
        case '"': case '\\': case '\b': case '\f': case '\n': case '\r': case '\t':
                return 2;
        default:
                return c < 0x20 ? 6 : 1;
        }
}

size_t utf8_json_prefix(const char *s, size_t n, size_t budget, size_t *ret_cost) {
        const uint8_t *p = (const uint8_t *) s;
        size_t i = 0, cost = 0;

        /* s is well-formed UTF-8 (utf8_sanitize): cut only before a lead byte. */
        while (i < n) {
                size_t l = 1, c;

                while (i + l < n && (p[i + l] & 0xC0) == 0x80)
                        l++;
                c = l == 1 ? json_char_cost(p[i]) : l;
                if (cost + c > budget)
                        break;
                cost += c;
                i += l;
        }
        if (ret_cost)
                *ret_cost = cost;
        return i;
}

size_t utf8_whole_prefix(const char *s, size_t n, size_t max) {
        size_t k = n < max ? n : max;

        assert(s || n == 0);

        /* Back to the start of the character that k splits; at most three
         * steps on well-formed text. */
        while (k > 0 && k < n && ((uint8_t) s[k] & 0xC0) == 0x80)
                k--;
        return k;
}
