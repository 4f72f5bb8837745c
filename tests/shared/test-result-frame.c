/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/result-frame.[ch]: the frames of the result
 * channel from the launcher's parent to the front end. */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "result-frame.h"
#include "test-helpers.h"

TEST(test_layout) {
        uint8_t h[RESULT_FRAME_HEADER_SIZE];
        static const uint8_t want[RESULT_FRAME_HEADER_SIZE] = {
                'M', 'C', 'P', 'R', 2, 0, 0, 0,                 /* magic, type IMAGE, padding */
                0x04, 0x03, 0x02, 0x01,                         /* meta length */
                0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* data length */
        };

        memset(h, 0xAA, sizeof h);
        result_frame_header(RESULT_FRAME_IMAGE, 0x01020304, UINT64_C(0x0102030405060708), h);
        ASSERT_MEMEQ(h, want, sizeof want);
}

TEST(test_round_trip) {
        static const struct {
                ResultFrameType type;
                uint32_t meta;
                uint64_t data;
        } ok[] = {
                { RESULT_FRAME_STATUS, 20, 0 },   { RESULT_FRAME_IMAGE, 40, 1 },
                { RESULT_FRAME_IMAGE, 1, 1 << 20 }, { RESULT_FRAME_FILE, RESULT_FRAME_META_MAX, 0 },
                { RESULT_FRAME_SKIPPED, 30, 0 },  { RESULT_FRAME_INFO, 2, 0 },
                { RESULT_FRAME_END, 0, 0 },
        };

        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
                uint8_t h[RESULT_FRAME_HEADER_SIZE];
                ResultFrameHeader got = {};

                result_frame_header(ok[i].type, ok[i].meta, ok[i].data, h);
                ASSERT_EQ_INT(result_frame_parse(h, sizeof h, UINT64_C(1) << 20, &got), 0);
                ASSERT_EQ_INT(got.type, ok[i].type);
                ASSERT_EQ_U64(got.meta_len, ok[i].meta);
                ASSERT_EQ_U64(got.data_len, ok[i].data);
        }
}

TEST(test_refused) {
        uint8_t h[RESULT_FRAME_HEADER_SIZE];
        ResultFrameHeader got;

        /* Short, wrong magic, padding, unknown type. */
        result_frame_header(RESULT_FRAME_STATUS, 10, 0, h);
        for (size_t n = 0; n < sizeof h; n++)
                ASSERT_EQ_INT(result_frame_parse(h, n, 0, &got), -EBADMSG);
        ASSERT_EQ_INT(result_frame_parse(NULL, 0, 0, &got), -EBADMSG);
        h[0] = 'X';
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 0, &got), -EBADMSG);
        result_frame_header(RESULT_FRAME_STATUS, 10, 0, h);
        h[6] = 1;
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 0, &got), -EBADMSG);
        for (unsigned t = 0; t < 256; t++) {
                result_frame_header(RESULT_FRAME_STATUS, 10, 0, h);
                h[4] = (uint8_t) t;
                ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 0, &got) == 0,
                              t >= RESULT_FRAME_STATUS && t < _RESULT_FRAME_TYPE_MAX && t != RESULT_FRAME_END);
        }

        /* The install log: data, but never over its own cap. */
        result_frame_header(RESULT_FRAME_PACKAGES, 10, RESULT_PACKAGES_LOG_MAX, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, UINT64_MAX, &got), 0);
        result_frame_header(RESULT_FRAME_PACKAGES, 10, RESULT_PACKAGES_LOG_MAX + 1, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, UINT64_MAX, &got), -EFBIG);

        /* Meta too long; data where none belongs; the end with meta. */
        result_frame_header(RESULT_FRAME_FILE, RESULT_FRAME_META_MAX + 1, 0, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 100, &got), -EBADMSG);
        result_frame_header(RESULT_FRAME_STATUS, 10, 1, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 100, &got), -EBADMSG);
        result_frame_header(RESULT_FRAME_END, 1, 0, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 100, &got), -EBADMSG);
        result_frame_header(RESULT_FRAME_STATUS, 0, 0, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 100, &got), -EBADMSG);

        /* Data over the caller's limit, up to the largest length. */
        result_frame_header(RESULT_FRAME_IMAGE, 10, 101, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 100, &got), -EFBIG);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, 101, &got), 0);
        result_frame_header(RESULT_FRAME_FILE, 10, UINT64_MAX, h);
        ASSERT_EQ_INT(result_frame_parse(h, sizeof h, UINT64_MAX - 1, &got), -EFBIG);
}

int main(void) {
        RUN(test_layout);
        RUN(test_round_trip);
        RUN(test_refused);
        return 0;
}
