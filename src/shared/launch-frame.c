/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-frame.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "utf8.h"
#include "unaligned.h"

void launch_frame_header_version(uint32_t version, uint64_t code_len, uint8_t ret[static LAUNCH_FRAME_HEADER_SIZE]) {
        assert(version == LAUNCH_FRAME_VERSION || version == LAUNCH_FRAME_VERSION_FILES);
        memcpy(ret, LAUNCH_FRAME_MAGIC, 4);
        unaligned_write_le(ret + 4, version, 4);
        unaligned_write_le(ret + 8, code_len, 8);
}

void launch_frame_header(uint64_t code_len, uint8_t ret[static LAUNCH_FRAME_HEADER_SIZE]) {
        launch_frame_header_version(LAUNCH_FRAME_VERSION, code_len, ret);
}

int launch_frame_parse_version(const uint8_t *buf, size_t n, uint64_t max_code_len, uint64_t *ret_code_len,
                               uint32_t *ret_version) {
        uint64_t len, version;

        assert(buf || n == 0);
        assert(ret_code_len);

        if (n < LAUNCH_FRAME_HEADER_SIZE || memcmp(buf, LAUNCH_FRAME_MAGIC, 4) != 0)
                return -EBADMSG;
        version = unaligned_read_le(buf + 4, 4);
        if (version != LAUNCH_FRAME_VERSION && version != LAUNCH_FRAME_VERSION_FILES)
                return -EBADMSG;
        len = unaligned_read_le(buf + 8, 8);
        if (len == 0)
                return -EINVAL;
        if (len > max_code_len)
                return -EFBIG;
        *ret_code_len = len;
        if (ret_version)
                *ret_version = (uint32_t) version;
        return 0;
}

int launch_frame_parse(const uint8_t *buf, size_t n, uint64_t max_code_len, uint64_t *ret_code_len) {
        uint32_t version;
        uint64_t len;
        int r;

        r = launch_frame_parse_version(buf, n, max_code_len, &len, &version);
        if (r < 0)
                return r;
        if (version != LAUNCH_FRAME_VERSION)
                return -EBADMSG;
        *ret_code_len = len;
        return 0;
}

void launch_files_header(uint32_t count, uint8_t ret[static LAUNCH_FILES_HEADER_SIZE]) {
        unaligned_write_le(ret, count, 4);
}

int launch_files_parse(const uint8_t buf[static LAUNCH_FILES_HEADER_SIZE], uint32_t *ret_count) {
        uint64_t count = unaligned_read_le(buf, 4);

        assert(ret_count);
        if (count > LAUNCH_FILES_MAX)
                return -EBADMSG;
        *ret_count = (uint32_t) count;
        return 0;
}

void launch_file_entry_header(uint16_t name_len, uint64_t data_len, uint8_t ret[static LAUNCH_FILE_ENTRY_HEADER_SIZE]) {
        unaligned_write_le(ret, name_len, 2);
        unaligned_write_le(ret + 2, data_len, 8);
}

int launch_file_entry_parse(const uint8_t buf[static LAUNCH_FILE_ENTRY_HEADER_SIZE], uint64_t max_data,
                            uint16_t *ret_name_len, uint64_t *ret_data_len) {
        uint64_t name_len = unaligned_read_le(buf, 2), data_len = unaligned_read_le(buf + 2, 8);

        assert(ret_name_len);
        assert(ret_data_len);
        if (name_len == 0 || name_len > LAUNCH_FILE_NAME_MAX)
                return -EBADMSG;
        if (data_len > max_data)
                return -EFBIG;
        *ret_name_len = (uint16_t) name_len;
        *ret_data_len = data_len;
        return 0;
}

bool launch_file_name_valid(const char *name, size_t len) {
        if (!name || len == 0 || len > LAUNCH_FILE_NAME_MAX)
                return false;
        if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char ch = (unsigned char) name[i];
                if (ch < 0x20 || ch == 0x7f || ch == '/')
                        return false;
        }
        return utf8_is_valid(name, len);
}
