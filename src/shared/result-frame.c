/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "result-frame.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "unaligned.h"

void result_frame_header(ResultFrameType type, uint32_t meta_len, uint64_t data_len,
                         uint8_t ret[static RESULT_FRAME_HEADER_SIZE]) {
        assert(type > 0 && type < _RESULT_FRAME_TYPE_MAX);
        memcpy(ret, RESULT_FRAME_MAGIC, 4);
        ret[4] = (uint8_t) type;
        ret[5] = ret[6] = ret[7] = 0;
        unaligned_write_le(ret + 8, meta_len, 4);
        unaligned_write_le(ret + 12, data_len, 8);
}

int result_frame_parse(const uint8_t *buf, size_t n, uint64_t max_data, ResultFrameHeader *ret) {
        ResultFrameHeader h;

        assert(buf || n == 0);
        assert(ret);

        if (n < RESULT_FRAME_HEADER_SIZE || memcmp(buf, RESULT_FRAME_MAGIC, 4) != 0 || buf[5] || buf[6] || buf[7] ||
            buf[4] == 0 || buf[4] >= _RESULT_FRAME_TYPE_MAX)
                return -EBADMSG;
        h = (ResultFrameHeader) {
                .type = (ResultFrameType) buf[4],
                .meta_len = (uint32_t) unaligned_read_le(buf + 8, 4),
                .data_len = unaligned_read_le(buf + 12, 8),
        };
        if (h.meta_len > RESULT_FRAME_META_MAX)
                return -EBADMSG;
        /* Only images, files and the install log carry data; only the end
         * carries no meta. */
        if (h.data_len > 0 && h.type != RESULT_FRAME_IMAGE && h.type != RESULT_FRAME_FILE &&
            h.type != RESULT_FRAME_PACKAGES)
                return -EBADMSG;
        if (h.type == RESULT_FRAME_PACKAGES && h.data_len > RESULT_PACKAGES_LOG_MAX)
                return -EFBIG;
        if ((h.type == RESULT_FRAME_END) != (h.meta_len == 0))
                return -EBADMSG;
        if (h.data_len > max_data)
                return -EFBIG;
        *ret = h;
        return 0;
}
