/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/launch-frame.[ch]: the header on the sandbox's
 * stdin that says how long the code is. */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "launch-frame.h"
#include "test-helpers.h"

TEST(test_header_layout) {
        uint8_t h[LAUNCH_FRAME_HEADER_SIZE];
        static const uint8_t want[LAUNCH_FRAME_HEADER_SIZE] = {
                'M', 'C', 'P', 'X',                             /* magic */
                0x01, 0x00, 0x00, 0x00,                         /* version 1, little endian */
                0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* length, little endian */
        };

        ASSERT_EQ_INT(LAUNCH_FRAME_HEADER_SIZE, 16);
        memset(h, 0xAA, sizeof h);
        launch_frame_header(UINT64_C(0x0102030405060708), h);
        ASSERT_MEMEQ(h, want, sizeof want);

        launch_frame_header(1, h);
        ASSERT_MEMEQ(h + 8, "\x01\0\0\0\0\0\0\0", 8);
        launch_frame_header(UINT64_MAX, h);
        ASSERT_MEMEQ(h + 8, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
}

TEST(test_round_trip) {
        static const uint64_t lens[] = {
                1, 2, 255, 256, 4096, 65535, 65536, UINT64_C(1) << 20, UINT64_C(0xffffffff), UINT64_C(0x100000000),
                UINT64_C(0x0123456789abcdef), UINT64_MAX - 1, UINT64_MAX,
        };

        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
                uint8_t buf[LAUNCH_FRAME_HEADER_SIZE + 8];
                uint64_t got = 0;

                launch_frame_header(lens[i], buf);
                ASSERT_EQ_INT(launch_frame_parse(buf, LAUNCH_FRAME_HEADER_SIZE, UINT64_MAX, &got), 0);
                ASSERT_EQ_U64(got, lens[i]);

                /* The limit itself is allowed. */
                got = 0;
                ASSERT_EQ_INT(launch_frame_parse(buf, LAUNCH_FRAME_HEADER_SIZE, lens[i], &got), 0);
                ASSERT_EQ_U64(got, lens[i]);

                /* Bytes after the header (the code) do not matter. */
                memset(buf + LAUNCH_FRAME_HEADER_SIZE, 'x', 8);
                got = 0;
                ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, UINT64_MAX, &got), 0);
                ASSERT_EQ_U64(got, lens[i]);
        }
}

TEST(test_bad_magic) {
        static const char *const magics[] = { "MCPY", "mcpx", "XPCM", "\0CPX", "MCP\0", "NCPX" };
        uint8_t buf[LAUNCH_FRAME_HEADER_SIZE];
        uint64_t got = 12345;

        for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++) {
                launch_frame_header(10, buf);
                memcpy(buf, magics[i], 4);
                ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 100, &got), -EBADMSG);
        }
        /* Each single bit flipped in the magic. */
        for (size_t bit = 0; bit < 32; bit++) {
                launch_frame_header(10, buf);
                buf[bit / 8] ^= (uint8_t) (1u << (bit % 8));
                ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 100, &got), -EBADMSG);
        }
        ASSERT_EQ_U64(got, 12345);
}

TEST(test_wrong_version) {
        static const uint8_t versions[][4] = {
                { 0, 0, 0, 0 },         /* 0 */
                { 2, 0, 0, 0 },         /* 2 */
                { 0, 0, 0, 1 },         /* 1 big endian */
                { 1, 1, 0, 0 },         /* 257 */
                { 1, 0, 0, 0x80 },      /* high bit set */
                { 0xff, 0xff, 0xff, 0xff },
        };
        uint8_t buf[LAUNCH_FRAME_HEADER_SIZE];
        uint64_t got = 12345;

        for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
                launch_frame_header(10, buf);
                memcpy(buf + 4, versions[i], 4);
                ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 100, &got), -EBADMSG);
        }
        ASSERT_EQ_U64(got, 12345);
}

TEST(test_zero_length) {
        uint8_t buf[LAUNCH_FRAME_HEADER_SIZE];
        uint64_t got = 12345;

        launch_frame_header(0, buf);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 100, &got), -EINVAL);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 0, &got), -EINVAL);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, UINT64_MAX, &got), -EINVAL);
        ASSERT_EQ_U64(got, 12345);

        /* Magic and version are checked first. */
        buf[0] = 'X';
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 100, &got), -EBADMSG);
}

TEST(test_over_max) {
        uint8_t buf[LAUNCH_FRAME_HEADER_SIZE];
        uint64_t got = 12345;

        launch_frame_header(101, buf);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 100, &got), -EFBIG);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 101, &got), 0);
        ASSERT_EQ_U64(got, 101);
        got = 12345;

        launch_frame_header(UINT64_MAX, buf);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, UINT64_MAX - 1, &got), -EFBIG);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 1, &got), -EFBIG);

        /* Only the high byte set: a length that a 32-bit read would see as 0. */
        launch_frame_header(UINT64_C(1) << 56, buf);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, UINT64_C(1) << 20, &got), -EFBIG);
        launch_frame_header(UINT64_C(1) << 32, buf);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, UINT64_C(0xffffffff), &got), -EFBIG);

        /* max 0: nothing is small enough. */
        launch_frame_header(1, buf);
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 0, &got), -EFBIG);
        ASSERT_EQ_U64(got, 12345);
}

TEST(test_short_buffer) {
        uint8_t buf[LAUNCH_FRAME_HEADER_SIZE];
        uint64_t got = 12345;

        launch_frame_header(10, buf);
        for (size_t n = 0; n < LAUNCH_FRAME_HEADER_SIZE; n++)
                ASSERT_EQ_INT(launch_frame_parse(buf, n, 100, &got), -EBADMSG);
        ASSERT_EQ_INT(launch_frame_parse(NULL, 0, 100, &got), -EBADMSG);
        ASSERT_EQ_U64(got, 12345);
        ASSERT_EQ_INT(launch_frame_parse(buf, LAUNCH_FRAME_HEADER_SIZE, 100, &got), 0);
        ASSERT_EQ_U64(got, 10);
}

TEST(test_version_files) {
        uint8_t buf[LAUNCH_FRAME_HEADER_SIZE];
        uint64_t got = 0;
        uint32_t v = 0;

        launch_frame_header_version(LAUNCH_FRAME_VERSION_FILES, 42, buf);
        ASSERT_EQ_INT(launch_frame_parse_version(buf, sizeof buf, 100, &got, &v), 0);
        ASSERT_EQ_U64(got, 42);
        ASSERT_EQ_INT(v, LAUNCH_FRAME_VERSION_FILES);
        /* The version-1 parser refuses what it cannot read. */
        ASSERT_EQ_INT(launch_frame_parse(buf, sizeof buf, 100, &got), -EBADMSG);
        launch_frame_header(42, buf);
        ASSERT_EQ_INT(launch_frame_parse_version(buf, sizeof buf, 100, &got, &v), 0);
        ASSERT_EQ_INT(v, LAUNCH_FRAME_VERSION);
        /* Version 3 does not exist. */
        buf[4] = 3;
        ASSERT_EQ_INT(launch_frame_parse_version(buf, sizeof buf, 100, &got, &v), -EBADMSG);
}

TEST(test_file_entries) {
        uint8_t h[LAUNCH_FILE_ENTRY_HEADER_SIZE], c[LAUNCH_FILES_HEADER_SIZE];
        uint16_t nl = 0;
        uint64_t dl = 0;
        uint32_t n = 0;

        launch_files_header(LAUNCH_FILES_MAX, c);
        ASSERT_EQ_INT(launch_files_parse(c, &n), 0);
        ASSERT_EQ_INT(n, LAUNCH_FILES_MAX);
        launch_files_header(LAUNCH_FILES_MAX + 1, c);
        ASSERT_EQ_INT(launch_files_parse(c, &n), -EBADMSG);
        launch_files_header(UINT32_MAX, c);
        ASSERT_EQ_INT(launch_files_parse(c, &n), -EBADMSG);

        launch_file_entry_header(8, 1000, h);
        ASSERT_MEMEQ(h, "\x08\x00\xe8\x03\0\0\0\0\0\0", sizeof h);
        ASSERT_EQ_INT(launch_file_entry_parse(h, 1000, &nl, &dl), 0);
        ASSERT_EQ_INT(nl, 8);
        ASSERT_EQ_U64(dl, 1000);
        ASSERT_EQ_INT(launch_file_entry_parse(h, 999, &nl, &dl), -EFBIG);
        launch_file_entry_header(0, 1, h);
        ASSERT_EQ_INT(launch_file_entry_parse(h, 10, &nl, &dl), -EBADMSG);
        launch_file_entry_header(LAUNCH_FILE_NAME_MAX + 1, 1, h);
        ASSERT_EQ_INT(launch_file_entry_parse(h, 10, &nl, &dl), -EBADMSG);
        launch_file_entry_header(LAUNCH_FILE_NAME_MAX, 0, h);
        ASSERT_EQ_INT(launch_file_entry_parse(h, 0, &nl, &dl), 0);
}

TEST(test_file_names) {
        char longest[LAUNCH_FILE_NAME_MAX + 1];

        ASSERT_TRUE(launch_file_name_valid("data.csv", 8));
        ASSERT_TRUE(launch_file_name_valid(".hidden", 7));
        ASSERT_TRUE(launch_file_name_valid("..x", 3));
        ASSERT_TRUE(launch_file_name_valid("Gr\xc3\xbc\xc3\x9f" "e.txt", 11));
        ASSERT_FALSE(launch_file_name_valid("", 0));
        ASSERT_FALSE(launch_file_name_valid(NULL, 3));
        ASSERT_FALSE(launch_file_name_valid(".", 1));
        ASSERT_FALSE(launch_file_name_valid("..", 2));
        ASSERT_FALSE(launch_file_name_valid("../x", 4));
        ASSERT_FALSE(launch_file_name_valid("a/b", 3));
        ASSERT_FALSE(launch_file_name_valid("a\nb", 3));
        ASSERT_FALSE(launch_file_name_valid("a\0b", 3));
        ASSERT_FALSE(launch_file_name_valid("a\x7f", 2));
        ASSERT_FALSE(launch_file_name_valid("\x1b" "[31m", 5));
        ASSERT_FALSE(launch_file_name_valid("bad\xff.txt", 8));
        ASSERT_FALSE(launch_file_name_valid("\xc0\xaf", 2));      /* an overlong '/' */
        memset(longest, 'a', sizeof longest);
        ASSERT_TRUE(launch_file_name_valid(longest, LAUNCH_FILE_NAME_MAX));
        ASSERT_FALSE(launch_file_name_valid(longest, LAUNCH_FILE_NAME_MAX + 1));
}

int main(void) {
        RUN(test_header_layout);
        RUN(test_round_trip);
        RUN(test_bad_magic);
        RUN(test_wrong_version);
        RUN(test_zero_length);
        RUN(test_over_max);
        RUN(test_short_buffer);
        RUN(test_version_files);
        RUN(test_file_entries);
        RUN(test_file_names);
        return 0;
}
