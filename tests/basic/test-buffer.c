/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/buffer.[ch]. */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "buffer.h"
#include "test-helpers.h"

TEST(test_append_to_limit) {
        _cleanup_buffer_ Buffer b = BUFFER_INIT(10);

        ASSERT_EQ_INT(buffer_append(&b, "hello", 5), 0);
        ASSERT_EQ_INT(buffer_append(&b, "", 0), 0);
        ASSERT_EQ_INT(buffer_append(&b, "world", 5), 0);
        ASSERT_EQ_U64(b.size, 10);
        ASSERT_MEMEQ(b.data, "helloworld", 10);
        /* The spare byte: the full buffer still takes a NUL. */
        ASSERT_TRUE(b.allocated <= b.limit);
        b.data[b.size] = 0;
        ASSERT_STREQ(b.data, "helloworld");
        /* Past the limit: refused whole, nothing changed. */
        ASSERT_EQ_INT(buffer_append(&b, "x", 1), -ENOBUFS);
        ASSERT_EQ_U64(b.size, 10);
        ASSERT_EQ_INT(buffer_append(&b, NULL, 0), 0);
}

TEST(test_over_limit_at_once) {
        _cleanup_buffer_ Buffer b = BUFFER_INIT(4);

        ASSERT_EQ_INT(buffer_append(&b, "abcde", 5), -ENOBUFS);
        ASSERT_TRUE(!b.data);
        ASSERT_EQ_INT(buffer_reserve(&b, SIZE_MAX), -ENOBUFS);
        ASSERT_EQ_U64(b.size, 0);
}

TEST(test_growth) {
        _cleanup_buffer_ Buffer b = BUFFER_INIT(1000);
        char chunk[7] = "abcdefg";
        size_t grows = 0, last = 0;

        /* Doubling: 140 appends of 7 bytes grow the allocation a few times,
         * never past the limit, and buffer_grow_size() says each size first. */
        for (size_t i = 0; i < 140; i++) {
                size_t want = b.size + sizeof chunk > b.allocated || !b.data ? buffer_grow_size(&b, sizeof chunk) : b.allocated;

                ASSERT_EQ_INT(buffer_append(&b, chunk, sizeof chunk), 0);
                ASSERT_EQ_U64(b.allocated, want);
                if (b.allocated != last)
                        grows++;
                last = b.allocated;
                ASSERT_TRUE(b.allocated <= 1000);
        }
        ASSERT_EQ_U64(b.size, 980);
        ASSERT_TRUE(grows <= 10);
        for (size_t i = 0; i < b.size; i++)
                ASSERT_TRUE(b.data[i] == chunk[i % sizeof chunk]);
        /* Up to the limit exactly, then not a byte more. */
        ASSERT_EQ_INT(buffer_append(&b, chunk, sizeof chunk), 0);
        ASSERT_EQ_INT(buffer_append(&b, chunk, 6), 0);
        ASSERT_EQ_INT(buffer_append(&b, chunk, sizeof chunk), 0);
        ASSERT_EQ_U64(b.size, 1000);
        ASSERT_EQ_U64(b.allocated, 1000);
        ASSERT_EQ_INT(buffer_append(&b, chunk, 1), -ENOBUFS);
}

TEST(test_shrink_and_free) {
        _cleanup_buffer_ Buffer b = BUFFER_INIT(SIZE_MAX);
        char big[300];

        memset(big, 'x', sizeof big);
        ASSERT_EQ_INT(buffer_append(&b, big, sizeof big), 0);
        ASSERT_TRUE(b.allocated >= 300);
        /* Never below what is in use. */
        buffer_shrink(&b, 10);
        ASSERT_EQ_U64(b.allocated, 300);
        b.size = 5;
        buffer_shrink(&b, 10);
        ASSERT_EQ_U64(b.allocated, 10);
        ASSERT_MEMEQ(b.data, "xxxxx", 5);
        buffer_free(&b);
        ASSERT_TRUE(!b.data);
        ASSERT_EQ_U64(b.size, 0);
        ASSERT_EQ_U64(b.allocated, 0);
        ASSERT_EQ_U64(b.limit, SIZE_MAX);
        buffer_free(&b);        /* twice is fine */
        buffer_free(NULL);
        /* Usable again after a free. */
        ASSERT_EQ_INT(buffer_append(&b, "ok", 2), 0);
        ASSERT_MEMEQ(b.data, "ok", 2);
}

int main(void) {
        RUN(test_append_to_limit);
        RUN(test_over_limit_at_once);
        RUN(test_growth);
        RUN(test_shrink_and_free);
        return 0;
}
