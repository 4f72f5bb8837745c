/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/exec-client/output.[ch]: stdout and stderr captured under one
 * shared byte limit. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "test-helpers.h"

static void check_invariants(const OutputCapture *c) {
        for (size_t i = 0; i < _OUTPUT_STREAM_MAX; i++) {
                ASSERT_TRUE(c->size[i] <= c->allocated[i]);
                ASSERT_TRUE((uint64_t) c->allocated[i] <= c->limit);
                ASSERT_TRUE(c->allocated[i] == 0 || c->data[i]);
        }
        ASSERT_EQ_U64(output_capture_kept(c), (uint64_t) c->size[OUTPUT_STDOUT] + c->size[OUTPUT_STDERR]);
        ASSERT_TRUE(output_capture_kept(c) <= c->limit);
        ASSERT_TRUE(output_capture_kept(c) <= c->seen);
        /* Truncated exactly when something was dropped. */
        ASSERT_EQ_INT(c->truncated, output_capture_kept(c) < c->seen);
}

static void check_stream(const OutputCapture *c, OutputStream s, const char *want) {
        size_t n = strlen(want);

        ASSERT_EQ_U64(c->size[s], n);
        if (n > 0)
                ASSERT_MEMEQ(c->data[s], want, n);
}

TEST(test_init_done) {
        OutputCapture c;

        memset(&c, 0xAA, sizeof c);
        output_capture_init(&c, 100, NULL);
        ASSERT_EQ_U64(c.limit, 100);
        ASSERT_EQ_U64(c.seen, 0);
        ASSERT_FALSE(c.truncated);
        ASSERT_EQ_U64(output_capture_kept(&c), 0);
        for (size_t i = 0; i < _OUTPUT_STREAM_MAX; i++) {
                ASSERT_TRUE(c.data[i] == NULL);
                ASSERT_EQ_U64(c.size[i], 0);
                ASSERT_EQ_U64(c.allocated[i], 0);
        }
        check_invariants(&c);

        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "abc", 3), 0);
        output_capture_done(&c);
        for (size_t i = 0; i < _OUTPUT_STREAM_MAX; i++) {
                ASSERT_TRUE(c.data[i] == NULL);
                ASSERT_EQ_U64(c.size[i], 0);
                ASSERT_EQ_U64(c.allocated[i], 0);
        }
        output_capture_done(&c); /* twice is fine */
}

TEST(test_shared_limit) {
        OutputCapture c;

        output_capture_init(&c, 10, NULL);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "hello", 5), 0);
        check_stream(&c, OUTPUT_STDOUT, "hello");
        ASSERT_FALSE(c.truncated);
        ASSERT_EQ_U64(c.seen, 5);
        check_invariants(&c);

        /* stderr only gets what stdout left over. */
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "world!", 6), 0);
        check_stream(&c, OUTPUT_STDERR, "world");
        check_stream(&c, OUTPUT_STDOUT, "hello");
        ASSERT_TRUE(c.truncated);
        ASSERT_EQ_U64(c.seen, 11);
        ASSERT_EQ_U64(output_capture_kept(&c), 10);
        check_invariants(&c);

        /* Full: both streams drop everything, but it is still counted. */
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "more", 4), 0);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "more", 4), 0);
        check_stream(&c, OUTPUT_STDOUT, "hello");
        check_stream(&c, OUTPUT_STDERR, "world");
        ASSERT_TRUE(c.truncated);
        ASSERT_EQ_U64(c.seen, 19);
        check_invariants(&c);

        output_capture_done(&c);
}

TEST(test_exact_fit_is_not_truncated) {
        OutputCapture c;

        output_capture_init(&c, 6, NULL);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "abc", 3), 0);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "def", 3), 0);
        ASSERT_FALSE(c.truncated);
        ASSERT_EQ_U64(output_capture_kept(&c), 6);
        check_invariants(&c);

        /* Nothing appended: still not truncated. */
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "", 0), 0);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, NULL, 0), 0);
        ASSERT_FALSE(c.truncated);
        ASSERT_EQ_U64(c.seen, 6);

        /* One more byte is one too many. */
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "g", 1), 0);
        ASSERT_TRUE(c.truncated);
        ASSERT_EQ_U64(c.seen, 7);
        check_stream(&c, OUTPUT_STDERR, "abc");
        check_stream(&c, OUTPUT_STDOUT, "def");
        check_invariants(&c);

        /* Once truncated, it stays so. */
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "", 0), 0);
        ASSERT_TRUE(c.truncated);
        output_capture_done(&c);
}

TEST(test_limit_one) {
        OutputCapture c;

        output_capture_init(&c, 1, NULL);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "ab", 2), 0);
        check_stream(&c, OUTPUT_STDOUT, "a");
        ASSERT_EQ_U64(c.allocated[OUTPUT_STDOUT], 1);
        ASSERT_TRUE(c.truncated);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "c", 1), 0);
        check_stream(&c, OUTPUT_STDERR, "");
        ASSERT_EQ_U64(c.allocated[OUTPUT_STDERR], 0);
        ASSERT_TRUE(c.data[OUTPUT_STDERR] == NULL);
        ASSERT_EQ_U64(c.seen, 3);
        check_invariants(&c);
        output_capture_done(&c);

        /* The single byte may just as well go to stderr. */
        output_capture_init(&c, 1, NULL);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "x", 1), 0);
        ASSERT_FALSE(c.truncated);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "y", 1), 0);
        ASSERT_TRUE(c.truncated);
        check_stream(&c, OUTPUT_STDERR, "x");
        check_stream(&c, OUTPUT_STDOUT, "");
        check_invariants(&c);
        output_capture_done(&c);
}

TEST(test_limit_zero) {
        OutputCapture c;

        output_capture_init(&c, 0, NULL);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "", 0), 0);
        ASSERT_FALSE(c.truncated);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "a", 1), 0);
        ASSERT_TRUE(c.truncated);
        ASSERT_EQ_U64(c.seen, 1);
        ASSERT_EQ_U64(output_capture_kept(&c), 0);
        ASSERT_TRUE(c.data[OUTPUT_STDOUT] == NULL);
        check_invariants(&c);
        output_capture_done(&c);
}

TEST(test_huge_append_is_not_read_past_what_fits) {
        /* Only the bytes that fit are copied: with a limit of 3 a claimed
         * length of 1 GiB is never read past the third byte (ASan would
         * complain otherwise). */
        OutputCapture c;
        char *small = malloc(3);

        ASSERT_TRUE(small);
        memcpy(small, "xyz", 3);
        output_capture_init(&c, 3, NULL);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, small, 3), 0);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, small, (size_t) 1 << 30), 0);
        ASSERT_EQ_U64(c.seen, 3 + (UINT64_C(1) << 30));
        ASSERT_TRUE(c.truncated);
        check_stream(&c, OUTPUT_STDOUT, "xyz");
        check_invariants(&c);
        output_capture_done(&c);
        free(small);
}

/* Byte i of stream s in the pattern the big test writes. */
static char pattern(OutputStream s, uint64_t i) {
        return (char) ((s == OUTPUT_STDOUT ? 'a' : 'A') + (char) (i % 26));
}

TEST(test_big_interleaved) {
        const uint64_t limit = (UINT64_C(1) << 20) + 12345;
        uint64_t written[_OUTPUT_STREAM_MAX] = {}, total = 0;
        OutputCapture c;
        char chunk[7919];

        output_capture_init(&c, limit, NULL);
        /* Alternate streams with chunk sizes that do not divide the limit,
         * until three times the limit went by. */
        for (unsigned k = 0; total < 3 * limit; k++) {
                OutputStream s = k % 3 == 0 ? OUTPUT_STDERR : OUTPUT_STDOUT;
                size_t n = 1 + (k * 2654435761u) % sizeof chunk;

                for (size_t i = 0; i < n; i++)
                        chunk[i] = pattern(s, written[s] + i);
                ASSERT_EQ_INT(output_capture_append(&c, s, chunk, n), 0);
                total += n;
                written[s] += n;
                check_invariants(&c);
                ASSERT_EQ_U64(c.seen, total);
        }
        ASSERT_EQ_U64(output_capture_kept(&c), limit);
        ASSERT_TRUE(c.truncated);
        ASSERT_TRUE(c.size[OUTPUT_STDOUT] > 0 && c.size[OUTPUT_STDERR] > 0);
        /* What was kept of each stream is a prefix of what was written to it. */
        for (size_t s = 0; s < _OUTPUT_STREAM_MAX; s++)
                for (size_t i = 0; i < c.size[s]; i++)
                        if (c.data[s][i] != pattern((OutputStream) s, i))
                                ASSERT_FAIL_("stream %zu byte %zu is '%c', expected '%c'", s, i, c.data[s][i],
                                             pattern((OutputStream) s, i));
        output_capture_done(&c);
}

/* The header promises that memory never exceeds the limit. Each buffer stays
 * under it (checked above); this checks both together. */
TEST(test_total_allocation_within_limit) {
        OutputCapture c;

        output_capture_init(&c, 10, NULL);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "12345", 5), 0);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "67890", 5), 0);
        check_invariants(&c);
        if ((uint64_t) c.allocated[OUTPUT_STDOUT] + c.allocated[OUTPUT_STDERR] > c.limit)
                fprintf(stderr, "allocated %zu + %zu bytes for a limit of %" PRIu64 "\n", c.allocated[OUTPUT_STDOUT],
                        c.allocated[OUTPUT_STDERR], c.limit);
        ASSERT_TRUE((uint64_t) c.allocated[OUTPUT_STDOUT] + c.allocated[OUTPUT_STDERR] <= c.limit);
        output_capture_done(&c);

        output_capture_init(&c, UINT64_C(1) << 20, NULL);
        {
                char *buf = calloc(1, 600 * 1024);
                ASSERT_TRUE(buf);
                ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, buf, 600 * 1024), 0);
                ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, buf, 600 * 1024), 0);
                free(buf);
        }
        check_invariants(&c);
        if ((uint64_t) c.allocated[OUTPUT_STDOUT] + c.allocated[OUTPUT_STDERR] > c.limit)
                fprintf(stderr, "allocated %zu + %zu bytes for a limit of %" PRIu64 "\n", c.allocated[OUTPUT_STDOUT],
                        c.allocated[OUTPUT_STDERR], c.limit);
        ASSERT_TRUE((uint64_t) c.allocated[OUTPUT_STDOUT] + c.allocated[OUTPUT_STDERR] <= c.limit);
        output_capture_done(&c);
}

/* With a memory budget: the buffers are charged as they grow, and what the
 * budget cannot give is dropped as past the limit, for good (no holes), and
 * done gives everything back. */
TEST(test_budget) {
        MemBudget b = { .max = 16384 };
        MemCharge charge = {}, other = {}, third = {};
        OutputCapture c;
        char buf[8192];

        memset(buf, 'x', sizeof buf);
        ASSERT_EQ_INT(mem_charge_init(&charge, &b, "uid:1"), 0);
        ASSERT_EQ_INT(mem_charge_init(&other, &b, "uid:2"), 0);
        output_capture_init(&c, UINT64_C(1) << 20, &charge);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, "hello", 5), 0);
        ASSERT_EQ_U64(charge.bytes, c.allocated[OUTPUT_STDOUT]);
        ASSERT_FALSE(c.truncated);

        /* The caller's share is 8 KiB: what does not fit is dropped. */
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, buf, sizeof buf), 0);
        ASSERT_TRUE(c.truncated);
        ASSERT_TRUE(charge.bytes <= mem_budget_caller_max(&b));
        ASSERT_EQ_U64(charge.bytes, (uint64_t) c.allocated[OUTPUT_STDOUT] + c.allocated[OUTPUT_STDERR]);
        check_invariants(&c);

        /* Room made later does not let output in after a gap. */
        {
                size_t kept = c.size[OUTPUT_STDOUT] + c.size[OUTPUT_STDERR];
                ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDERR, "late", 4), 0);
                ASSERT_EQ_U64(c.size[OUTPUT_STDOUT] + c.size[OUTPUT_STDERR], kept);
        }
        output_capture_done(&c);
        ASSERT_EQ_U64(charge.bytes, 0);
        ASSERT_EQ_U64(b.used, 0);

        /* Another caller holding the rest of the budget leaves this one
         * what is left of the budget less its reserve (kept for callers
         * holding little), not its share. */
        ASSERT_EQ_INT(mem_charge_set(&other, 8192 + 4096), -EBUSY);
        ASSERT_EQ_INT(mem_charge_set(&other, 8192), 0);
        ASSERT_EQ_INT(mem_charge_init(&third, &b, "uid:3"), 0);
        ASSERT_EQ_INT(mem_charge_set(&third, 4096), 0);
        output_capture_init(&c, UINT64_C(1) << 20, &charge);
        ASSERT_EQ_INT(output_capture_append(&c, OUTPUT_STDOUT, buf, sizeof buf), 0);
        ASSERT_TRUE(c.truncated);
        ASSERT_TRUE(b.used <= b.max);
        ASSERT_EQ_U64(c.size[OUTPUT_STDOUT], b.max - mem_budget_reserve(&b) - 12288);
        output_capture_done(&c);
        mem_charge_done(&third);
        mem_charge_done(&other);
        mem_charge_done(&charge);
        ASSERT_EQ_U64(b.used, 0);
}

int main(int argc, char *argv[]) {
        RUN(test_budget);
        RUN(test_total_allocation_within_limit);
        RUN(test_init_done);
        RUN(test_shared_limit);
        RUN(test_exact_fit_is_not_truncated);
        RUN(test_limit_one);
        RUN(test_limit_zero);
        RUN(test_huge_append_is_not_read_past_what_fits);
        RUN(test_big_interleaved);
        return 0;
}
