/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/parse-util.[ch]: the strict number parsers. */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "parse-util.h"
#include "test-helpers.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

static void check_uint(const char *s, int want_r, uint64_t want) {
        uint64_t v = UINT64_C(0xdeadbeef);
        int r = parse_uint(s, &v);

        if (r != want_r)
                fprintf(stderr, "parse_uint(\"%s\") = %d, expected %d\n", s ? s : "(null)", r, want_r);
        ASSERT_EQ_INT(r, want_r);
        if (want_r == 0)
                ASSERT_EQ_U64(v, want);
}

static void check_size(const char *s, int want_r, uint64_t want) {
        uint64_t v = UINT64_C(0xdeadbeef);
        int r = parse_size(s, &v);

        if (r != want_r)
                fprintf(stderr, "parse_size(\"%s\") = %d, expected %d\n", s ? s : "(null)", r, want_r);
        ASSERT_EQ_INT(r, want_r);
        if (want_r == 0)
                ASSERT_EQ_U64(v, want);
}

static void check_percent(const char *s, int want_r, uint64_t want) {
        uint64_t v = UINT64_C(0xdeadbeef);
        int r = parse_percent(s, &v);

        if (r != want_r)
                fprintf(stderr, "parse_percent(\"%s\") = %d, expected %d\n", s ? s : "(null)", r, want_r);
        ASSERT_EQ_INT(r, want_r);
        if (want_r == 0)
                ASSERT_EQ_U64(v, want);
}

TEST(test_parse_uint) {
        check_uint("0", 0, 0);
        check_uint("1", 0, 1);
        check_uint("123", 0, 123);
        check_uint("007", 0, 7);
        check_uint("4294967296", 0, UINT64_C(4294967296));
        /* Largest value and the first ones past it. */
        check_uint("18446744073709551615", 0, UINT64_MAX);
        check_uint("18446744073709551614", 0, UINT64_MAX - 1);
        check_uint("18446744073709551616", -ERANGE, 0);
        check_uint("18446744073709551620", -ERANGE, 0);
        check_uint("18446744073709551625", -ERANGE, 0);
        check_uint("99999999999999999999", -ERANGE, 0);
        check_uint("184467440737095516150", -ERANGE, 0);
        check_uint("000000000000000000000000000018446744073709551615", 0, UINT64_MAX);

        /* Empty, signs, blanks, junk, other bases. */
        check_uint(NULL, -EINVAL, 0);
        check_uint("", -EINVAL, 0);
        check_uint("-1", -EINVAL, 0);
        check_uint("-0", -EINVAL, 0);
        check_uint("+1", -EINVAL, 0);
        check_uint(" 1", -EINVAL, 0);
        check_uint("1 ", -EINVAL, 0);
        check_uint("1\n", -EINVAL, 0);
        check_uint("1x", -EINVAL, 0);
        check_uint("x1", -EINVAL, 0);
        check_uint("0x10", -EINVAL, 0);
        check_uint("1e3", -EINVAL, 0);
        check_uint("1.0", -EINVAL, 0);
        check_uint("1K", -EINVAL, 0);
        check_uint("1%", -EINVAL, 0);
        check_uint("\xd9\xa3", -EINVAL, 0); /* ARABIC-INDIC DIGIT THREE */
}

TEST(test_parse_size) {
        check_size("0", 0, 0);
        check_size("123", 0, 123);
        check_size("1K", 0, KiB);
        check_size("64K", 0, 64 * KiB);
        check_size("64k", 0, 64 * KiB);
        check_size("256M", 0, 256 * MiB);
        check_size("256m", 0, 256 * MiB);
        check_size("1G", 0, GiB);
        check_size("2T", 0, 2 * TiB);
        check_size("0T", 0, 0);
        check_size("18446744073709551615", 0, UINT64_MAX);

        /* Overflow: of the number itself and of number × suffix. */
        check_size("18446744073709551616", -ERANGE, 0);
        check_size("18446744073709551615K", -ERANGE, 0);
        check_size("16777215T", 0, ((UINT64_C(1) << 24) - 1) << 40);
        check_size("16777216T", -ERANGE, 0);
        check_size("17179869183G", 0, ((UINT64_C(1) << 34) - 1) << 30);
        check_size("17179869184G", -ERANGE, 0);
        check_size("17592186044415M", 0, ((UINT64_C(1) << 44) - 1) << 20);
        check_size("17592186044416M", -ERANGE, 0);
        check_size("18014398509481984K", -ERANGE, 0);
        check_size("18014398509481983K", 0, ((UINT64_C(1) << 54) - 1) << 10);

        /* Empty, suffix only, unknown or doubled suffixes, junk. */
        check_size(NULL, -EINVAL, 0);
        check_size("", -EINVAL, 0);
        check_size("K", -EINVAL, 0);
        check_size("M", -EINVAL, 0);
        check_size("1KB", -EINVAL, 0);
        check_size("1KiB", -EINVAL, 0);
        check_size("1KK", -EINVAL, 0);
        check_size("1MK", -EINVAL, 0);
        check_size("1B", -EINVAL, 0);
        check_size("1E", -EINVAL, 0);
        check_size("1P", -EINVAL, 0);
        check_size("1.5G", -EINVAL, 0);
        check_size("-1M", -EINVAL, 0);
        check_size("+1M", -EINVAL, 0);
        check_size("1 M", -EINVAL, 0);
        check_size(" 1M", -EINVAL, 0);
        check_size("1M ", -EINVAL, 0);
        check_size("M1", -EINVAL, 0);
        check_size("0x10", -EINVAL, 0);
        check_size("1%", -EINVAL, 0);
}

TEST(test_parse_percent) {
        check_percent("100%", 0, 100);
        check_percent("100", 0, 100);
        check_percent("0", 0, 0);
        check_percent("0%", 0, 0);
        check_percent("250%", 0, 250);
        check_percent("18446744073709551615%", 0, UINT64_MAX);
        check_percent("18446744073709551616%", -ERANGE, 0);

        check_percent(NULL, -EINVAL, 0);
        check_percent("", -EINVAL, 0);
        check_percent("%", -EINVAL, 0);
        check_percent("%%", -EINVAL, 0);
        check_percent("100%%", -EINVAL, 0);
        check_percent("%100", -EINVAL, 0);
        check_percent("50.5%", -EINVAL, 0);
        check_percent("-5%", -EINVAL, 0);
        check_percent("5 %", -EINVAL, 0);
        check_percent("5% ", -EINVAL, 0);
        check_percent("5K", -EINVAL, 0);
        check_percent("abc%", -EINVAL, 0);
}

static void check_port(const char *s, int want_r, uint16_t want) {
        uint16_t v = 4711;
        int r = parse_port(s, &v);

        if (r != want_r)
                fprintf(stderr, "parse_port(\"%s\") = %d, expected %d\n", s ? s : "(null)", r, want_r);
        ASSERT_EQ_INT(r, want_r);
        ASSERT_EQ_INT(v, want_r == 0 ? want : 4711);
}

TEST(test_parse_port) {
        check_port("0", 0, 0);
        check_port("80", 0, 80);
        check_port("08080", 0, 8080);
        check_port("65535", 0, 65535);

        check_port("65536", -EINVAL, 0);
        check_port("18446744073709551616", -EINVAL, 0);
        check_port(NULL, -EINVAL, 0);
        check_port("", -EINVAL, 0);
        check_port("-1", -EINVAL, 0);
        check_port("+80", -EINVAL, 0);
        check_port(" 80", -EINVAL, 0);
        check_port("80 ", -EINVAL, 0);
        check_port("80x", -EINVAL, 0);
        check_port("0x50", -EINVAL, 0);
        check_port("8K", -EINVAL, 0);
}

int main(void) {
        RUN(test_parse_uint);
        RUN(test_parse_size);
        RUN(test_parse_percent);
        RUN(test_parse_port);
        return 0;
}
