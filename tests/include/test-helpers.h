/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Tiny assertion helpers for the unit tests: on failure they print
 * file:line, the expression and the values, then abort(). */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_TEST_SKIP 77

#define ASSERT_FAIL_(...)                                                       \
        do {                                                                    \
                fprintf(stderr, "%s:%d: %s: assertion failed: ", __FILE__,      \
                        __LINE__, __func__);                                    \
                fprintf(stderr, __VA_ARGS__);                                   \
                fputc('\n', stderr);                                            \
                fflush(stderr);                                                 \
                abort();                                                        \
        } while (0)

#define ASSERT_TRUE(expr)                                                       \
        do {                                                                    \
                if (!(expr))                                                    \
                        ASSERT_FAIL_("%s", #expr);                              \
        } while (0)

#define ASSERT_FALSE(expr) ASSERT_TRUE(!(expr))

#define ASSERT_EQ_INT(a, b)                                                     \
        do {                                                                    \
                intmax_t a_ = (intmax_t) (a), b_ = (intmax_t) (b);              \
                if (a_ != b_)                                                   \
                        ASSERT_FAIL_("%s == %s (%jd != %jd)", #a, #b, a_, b_);  \
        } while (0)

#define ASSERT_EQ_U64(a, b)                                                     \
        do {                                                                    \
                uint64_t a_ = (uint64_t) (a), b_ = (uint64_t) (b);              \
                if (a_ != b_)                                                   \
                        ASSERT_FAIL_("%s == %s (%" PRIu64 " != %" PRIu64 ")",   \
                                     #a, #b, a_, b_);                           \
        } while (0)

#define ASSERT_STREQ(a, b)                                                      \
        do {                                                                    \
                const char *a_ = (a), *b_ = (b);                                \
                if (!a_ || !b_ || strcmp(a_, b_) != 0)                          \
                        ASSERT_FAIL_("%s == %s (\"%s\" != \"%s\")", #a, #b,     \
                                     a_ ? a_ : "(null)", b_ ? b_ : "(null)");   \
        } while (0)

/* a contains b as a substring. */
#define ASSERT_CONTAINS(a, b)                                                   \
        do {                                                                    \
                const char *a_ = (a), *b_ = (b);                                \
                if (!a_ || !b_ || !strstr(a_, b_))                              \
                        ASSERT_FAIL_("%s contains %s (\"%s\" vs \"%s\")", #a,   \
                                     #b, a_ ? a_ : "(null)",                    \
                                     b_ ? b_ : "(null)");                       \
        } while (0)

#define ASSERT_MEMEQ(a, b, n)                                                   \
        do {                                                                    \
                if (memcmp((a), (b), (n)) != 0)                                 \
                        ASSERT_FAIL_("memcmp(%s, %s, %s) == 0", #a, #b, #n);    \
        } while (0)

#define TEST(name) static void name(void)
#define RUN(name)                                                               \
        do {                                                                    \
                fprintf(stderr, "== %s\n", #name);                              \
                name();                                                         \
        } while (0)
