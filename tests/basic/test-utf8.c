/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/utf8.[ch]: well-formed UTF-8 passes unchanged,
 * every byte that does not start a well-formed sequence becomes U+FFFD. */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "test-helpers.h"
#include "utf8.h"

#define FFFD "\xEF\xBF\xBD"

/* Sanitizes in[0..n) and compares with want[0..want_n). */
static void check(const char *in, size_t n, const char *want, size_t want_n) {
        size_t len = SIZE_MAX;
        char *exact = malloc(n > 0 ? n : 1), *out;

        /* An exact-size heap copy: no terminator to lean on, and reading
         * past n is caught under ASan. */
        ASSERT_TRUE(exact);
        memcpy(exact, in, n);
        out = utf8_sanitize(exact, n, &len);
        free(exact);
        ASSERT_TRUE(out);
        if (len != want_n || memcmp(out, want, want_n) != 0) {
                fprintf(stderr, "input:");
                for (size_t i = 0; i < n; i++)
                        fprintf(stderr, " %02X", (unsigned) (uint8_t) in[i]);
                fprintf(stderr, "\noutput:");
                for (size_t i = 0; i < len && len != SIZE_MAX; i++)
                        fprintf(stderr, " %02X", (unsigned) (uint8_t) out[i]);
                fprintf(stderr, "\n");
        }
        ASSERT_EQ_U64(len, want_n);
        ASSERT_MEMEQ(out, want, want_n);
        ASSERT_EQ_INT(out[len], 0);
        free(out);

        /* ret_len is optional. */
        out = utf8_sanitize(in, n, NULL);
        ASSERT_TRUE(out);
        ASSERT_MEMEQ(out, want, want_n);
        free(out);
}

/* String literal helpers: the size of a literal without its final NUL. */
#define CHECK(in, want) check((in), sizeof(in) - 1, (want), sizeof(want) - 1)
#define CHECK_SAME(in) CHECK(in, in)

TEST(test_valid) {
        CHECK_SAME("");
        CHECK_SAME("hello, world\n\t\x7f");
        CHECK_SAME("\xC2\x80");                 /* U+0080, smallest 2-byte */
        CHECK_SAME("\xC3\xA9t\xC3\xA9");        /* été */
        CHECK_SAME("\xDF\xBF");                 /* U+07FF */
        CHECK_SAME("\xE0\xA0\x80");             /* U+0800, smallest 3-byte */
        CHECK_SAME("\xE2\x82\xAC");             /* € */
        CHECK_SAME("\xED\x9F\xBF");             /* U+D7FF, just below the surrogates */
        CHECK_SAME("\xEE\x80\x80");             /* U+E000, just above them */
        CHECK_SAME("\xEF\xBF\xBD");             /* U+FFFD itself */
        CHECK_SAME("\xEF\xBF\xBF");             /* U+FFFF */
        CHECK_SAME("\xF0\x90\x80\x80");         /* U+10000, smallest 4-byte */
        CHECK_SAME("\xF0\x9D\x84\x9E");         /* 𝄞 */
        CHECK_SAME("\xF0\x9F\x98\x80");         /* 😀 */
        CHECK_SAME("\xF4\x8F\xBF\xBF");         /* U+10FFFF, the last code point */
        CHECK_SAME("a\xC3\xA9" "b\xE2\x82\xAC" "c\xF0\x9F\x98\x80" "d");
}

TEST(test_embedded_nul) {
        CHECK_SAME("a\0b");
        CHECK_SAME("\0");
        CHECK_SAME("\0\0\0");
        CHECK_SAME("\xC3\xA9\0\xE2\x82\xAC\0");
        /* A NUL right after a lead byte: the lead is replaced, the NUL kept. */
        CHECK("\xC3\0", FFFD "\0");
        CHECK("\xE2\x82\0", FFFD FFFD "\0");
}

TEST(test_overlong) {
        CHECK("\xC0\x80", FFFD FFFD);                   /* NUL, 2 bytes */
        CHECK("\xC1\xBF", FFFD FFFD);                   /* U+007F, 2 bytes */
        CHECK("\xC0\xAF", FFFD FFFD);                   /* '/', 2 bytes */
        CHECK("\xE0\x80\x80", FFFD FFFD FFFD);          /* NUL, 3 bytes */
        CHECK("\xE0\x80\xAF", FFFD FFFD FFFD);          /* '/', 3 bytes */
        CHECK("\xE0\x9F\xBF", FFFD FFFD FFFD);          /* U+07FF, 3 bytes */
        CHECK("\xF0\x80\x80\x80", FFFD FFFD FFFD FFFD); /* NUL, 4 bytes */
        CHECK("\xF0\x8F\xBF\xBF", FFFD FFFD FFFD FFFD); /* U+FFFF, 4 bytes */
        CHECK("\xF8\x80\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD);
        CHECK("\xFC\x80\x80\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD FFFD);
        CHECK("a\xC0\x80z", "a" FFFD FFFD "z");
}

TEST(test_surrogates) {
        CHECK("\xED\xA0\x80", FFFD FFFD FFFD);          /* U+D800 */
        CHECK("\xED\xAD\xBF", FFFD FFFD FFFD);          /* U+DB7F */
        CHECK("\xED\xB0\x80", FFFD FFFD FFFD);          /* U+DC00 */
        CHECK("\xED\xBF\xBF", FFFD FFFD FFFD);          /* U+DFFF */
        /* A CESU-8 pair for U+10000. */
        CHECK("\xED\xA0\x80\xED\xB0\x80", FFFD FFFD FFFD FFFD FFFD FFFD);
}

TEST(test_too_large) {
        CHECK("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* U+110000 */
        CHECK("\xF4\xBF\xBF\xBF", FFFD FFFD FFFD FFFD);
        CHECK("\xF5\x80\x80\x80", FFFD FFFD FFFD FFFD);
        CHECK("\xF7\xBF\xBF\xBF", FFFD FFFD FFFD FFFD);
        for (unsigned b = 0xF5; b <= 0xFF; b++) {
                char in[2] = { (char) b, 'x' };
                check(in, sizeof in, FFFD "x", 4);
        }
}

TEST(test_truncated) {
        CHECK("\xC3", FFFD);
        CHECK("a\xC3", "a" FFFD);
        CHECK("\xE2", FFFD);
        CHECK("\xE2\x82", FFFD FFFD);
        CHECK("abc\xE2\x82", "abc" FFFD FFFD);
        CHECK("\xF0", FFFD);
        CHECK("\xF0\x9F", FFFD FFFD);
        CHECK("\xF0\x9F\x98", FFFD FFFD FFFD);
        CHECK("ok\xF0\x9F\x98", "ok" FFFD FFFD FFFD);
        /* Interrupted in the middle, then valid text again. */
        CHECK("\xE2\x82" "A", FFFD FFFD "A");
        CHECK("\xF0\x9F\x98" "\xC3\xA9", FFFD FFFD FFFD "\xC3\xA9");
        CHECK("\xF0\x9F\xF0\x9F\x98\x80", FFFD FFFD "\xF0\x9F\x98\x80");
        CHECK("\xC3\xC3\xA9", FFFD "\xC3\xA9");

        /* The length limit counts, not the NUL terminator: a valid sequence
         * cut by n is invalid even though the bytes after it are there. */
        check("\xC3\xA9", 1, FFFD, 3);
        check("\xE2\x82\xAC", 2, FFFD FFFD, 6);
        check("\xF0\x9F\x98\x80", 3, FFFD FFFD FFFD, 9);
        check("\xF0\x9F\x98\x80", 2, FFFD FFFD, 6);
}

TEST(test_lone_continuation) {
        CHECK("\x80", FFFD);
        CHECK("\xBF", FFFD);
        CHECK("\x80\x80\x80", FFFD FFFD FFFD);
        CHECK("a\x80z", "a" FFFD "z");
        CHECK("\xC3\xA9\xA9", "\xC3\xA9" FFFD);
        CHECK("\xE2\x82\xAC\x82\xAC", "\xE2\x82\xAC" FFFD FFFD);
        CHECK("\xF0\x9F\x98\x80\x80", "\xF0\x9F\x98\x80" FFFD);
        for (unsigned b = 0x80; b <= 0xBF; b++) {
                char in[1] = { (char) b };
                check(in, sizeof in, FFFD, 3);
        }
        /* C0, C1 can never start anything. */
        CHECK("\xC0", FFFD);
        CHECK("\xC1\x41", FFFD "A");
}

TEST(test_all_invalid_bytes_expand) {
        /* Worst case: every byte is replaced, the output triples. */
        char in[4096];
        size_t len;
        char *out;

        memset(in, 0xFF, sizeof in);
        out = utf8_sanitize(in, sizeof in, &len);
        ASSERT_TRUE(out);
        ASSERT_EQ_U64(len, 3 * sizeof in);
        for (size_t i = 0; i < sizeof in; i++)
                ASSERT_MEMEQ(out + 3 * i, FFFD, 3);
        ASSERT_EQ_INT(out[len], 0);
        free(out);
}

/* ---- an independent reference ---- */

/* Decodes by code point arithmetic (not by the lead-byte table of Unicode
 * §3.9) and returns the length of the well-formed sequence at s, or 0. */
static size_t ref_valid_len(const uint8_t *s, size_t n) {
        size_t len;
        uint32_t cp, min;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xE0) == 0xC0)
                len = 2, cp = s[0] & 0x1F, min = 0x80;
        else if ((s[0] & 0xF0) == 0xE0)
                len = 3, cp = s[0] & 0x0F, min = 0x800;
        else if ((s[0] & 0xF8) == 0xF0)
                len = 4, cp = s[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (n < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xC0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        return len;
}

static char *ref_sanitize(const uint8_t *s, size_t n, size_t *ret_len) {
        char *out = malloc(3 * n + 1);
        size_t o = 0;

        ASSERT_TRUE(out);
        for (size_t i = 0; i < n;) {
                size_t l = ref_valid_len(s + i, n - i);
                if (l > 0) {
                        memcpy(out + o, s + i, l);
                        o += l;
                        i += l;
                } else {
                        memcpy(out + o, FFFD, 3);
                        o += 3;
                        i++;
                }
        }
        *ret_len = o;
        return out;
}

static void compare_with_ref(const uint8_t *in, size_t n) {
        size_t got_len, want_len;
        char *got = utf8_sanitize((const char *) in, n, &got_len);
        char *want = ref_sanitize(in, n, &want_len);

        ASSERT_TRUE(got);
        if (got_len != want_len || memcmp(got, want, want_len) != 0) {
                fprintf(stderr, "mismatch with the reference for:");
                for (size_t i = 0; i < n; i++)
                        fprintf(stderr, " %02X", in[i]);
                fprintf(stderr, "\n");
        }
        ASSERT_EQ_U64(got_len, want_len);
        ASSERT_MEMEQ(got, want, want_len);
        free(got);
        free(want);
}

TEST(test_against_reference) {
        /* Bytes at every boundary of the §3.9 table. */
        static const uint8_t edges[] = { 0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xFF };
        uint8_t in[4];
        size_t n = 0;

        /* Every one- and two-byte input, every three-byte input with an edge
         * byte last, and every lead byte from E0 on with edge bytes after. */
        for (unsigned a = 0; a < 256; a++) {
                in[0] = (uint8_t) a;
                compare_with_ref(in, 1);
                for (unsigned b = 0; b < 256; b++) {
                        in[1] = (uint8_t) b;
                        compare_with_ref(in, 2);
                        for (size_t c = 0; c < sizeof edges; c++) {
                                in[2] = edges[c];
                                compare_with_ref(in, 3);
                                n++;
                        }
                }
                if (a < 0xE0)
                        continue;
                for (unsigned b = 0x80; b <= 0xBF; b++)
                        for (size_t c = 0; c < sizeof edges; c++)
                                for (size_t d = 0; d < sizeof edges; d++) {
                                        in[1] = (uint8_t) b;
                                        in[2] = edges[c];
                                        in[3] = edges[d];
                                        compare_with_ref(in, 4);
                                        n++;
                                }
        }
        ASSERT_TRUE(n > 100000);
}

/* utf8_json_prefix() must agree with what json-c really writes: for random
 * text the cost of the whole string is its serialized length minus the
 * quotes, and a cut never splits a character or exceeds the budget. */
TEST(test_json_prefix) {
        static const char sample[] = "a\"\\/\n\t\x01\x1f\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 ";
        unsigned seed = 1;

        for (int iter = 0; iter < 2000; iter++) {
                char raw[64], *text;
                size_t n = (size_t) (rand_r(&seed) % sizeof raw), len, cost, cut, cost2;
                json_object *o;
                size_t jlen;

                for (size_t i = 0; i < n; i++)
                        raw[i] = sample[rand_r(&seed) % (sizeof sample - 1)];
                text = utf8_sanitize(raw, n, &len);
                ASSERT_TRUE(text);
                ASSERT_EQ_INT((int) utf8_json_prefix(text, len, SIZE_MAX, &cost), (int) len);
                o = json_object_new_string_len(text, (int) len);
                ASSERT_TRUE(o);
                (void) json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                         &jlen);
                ASSERT_EQ_INT((int) cost, (int) jlen - 2);
                json_object_put(o);

                for (size_t budget = 0; budget <= cost; budget++) {
                        cut = utf8_json_prefix(text, len, budget, &cost2);
                        ASSERT_TRUE(cut <= len && cost2 <= budget);
                        ASSERT_TRUE(cut == len || ((unsigned char) text[cut] & 0xC0) != 0x80);
                }
                free(text);
        }
        /* A megabyte of 0x01 is six megabytes as JSON. */
        {
                size_t n = 1 << 20, cost;
                char *s = malloc(n);
                ASSERT_TRUE(s);
                memset(s, 1, n);
                ASSERT_EQ_INT((int) utf8_json_prefix(s, n, 2 * n, &cost), (int) (2 * n / 6));
                ASSERT_TRUE(cost <= 2 * n);
                free(s);
        }
}

/* The prefixes of s at each max from 0 to past its end: want[max]. */
static void check_prefix(const char *s, size_t n, const size_t *want, size_t n_want) {
        for (size_t max = 0; max < n_want; max++) {
                if (utf8_whole_prefix(s, n, max) != want[max])
                        fprintf(stderr, "max %zu: %zu, want %zu\n", max, utf8_whole_prefix(s, n, max), want[max]);
                ASSERT_EQ_U64(utf8_whole_prefix(s, n, max), want[max]);
        }
        ASSERT_EQ_U64(utf8_whole_prefix(s, n, SIZE_MAX), n);
}

#define CHECK_PREFIX(s, ...) check_prefix((s), sizeof(s) - 1, (const size_t[]) { __VA_ARGS__ }, \
                                          sizeof((const size_t[]) { __VA_ARGS__ }) / sizeof(size_t))

/* utf8_whole_prefix() cuts 2-, 3- and 4-byte characters at each byte before
 * them, never in them; on invalid bytes, only before a non-continuation
 * byte. */
TEST(test_prefix_len) {
        unsigned seed = 1;

        CHECK_PREFIX("", 0, 0);
        CHECK_PREFIX("ab", 0, 1, 2, 2);
        CHECK_PREFIX("a\xc3\xa9" "b", 0, 1, 1, 3, 4, 4);
        CHECK_PREFIX("a\xe2\x82\xac" "b", 0, 1, 1, 1, 4, 5, 5);
        CHECK_PREFIX("a\xf0\x9f\x98\x80" "b", 0, 1, 1, 1, 1, 5, 6, 6);
        CHECK_PREFIX("\xf0\x9f\x98\x80\xc3\xa9", 0, 0, 0, 0, 4, 4, 6, 6);
        /* A character cut short at the end of s is kept whole with s. */
        CHECK_PREFIX("a\xe2\x82", 0, 1, 1, 3, 3);
        /* Invalid: stray continuation bytes, a lead without them, bytes
         * that are never UTF-8. */
        CHECK_PREFIX("\x80\x80" "a", 0, 0, 2, 3, 3);
        CHECK_PREFIX("a\x80\x80\x80\x80" "b", 0, 0, 0, 0, 0, 5, 6);
        CHECK_PREFIX("\xc3" "b", 0, 1, 2, 2);
        CHECK_PREFIX("\xff\x80\xfe", 0, 0, 2, 3, 3);
        CHECK_PREFIX("\xc0\xaf" "a", 0, 0, 2, 3);

        /* Random sanitized text: never longer than max, never inside a
         * character, and no whole character left out that would fit. */
        for (int iter = 0; iter < 500; iter++) {
                static const char sample[] = "a\x01\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x80\xff";
                char raw[32], *text;
                size_t n = (size_t) (rand_r(&seed) % sizeof raw), len;

                for (size_t i = 0; i < n; i++)
                        raw[i] = sample[rand_r(&seed) % (sizeof sample - 1)];
                text = utf8_sanitize(raw, n, &len);
                ASSERT_TRUE(text);
                for (size_t max = 0; max <= len + 1; max++) {
                        size_t k = utf8_whole_prefix(text, len, max);

                        ASSERT_TRUE(k <= max && k <= len);
                        ASSERT_TRUE(k == len || ((unsigned char) text[k] & 0xC0) != 0x80);
                        ASSERT_TRUE(utf8_is_valid(text, k));
                        for (size_t j = k + 1; j <= max && j <= len; j++)
                                ASSERT_TRUE(j < len && ((unsigned char) text[j] & 0xC0) == 0x80);
                }
                free(text);
        }
}

int main(void) {
        RUN(test_valid);
        RUN(test_embedded_nul);
        RUN(test_overlong);
        RUN(test_surrogates);
        RUN(test_too_large);
        RUN(test_truncated);
        RUN(test_lone_continuation);
        RUN(test_all_invalid_bytes_expand);
        RUN(test_against_reference);
        RUN(test_json_prefix);
        RUN(test_prefix_len);
        return 0;
}
