/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-frame.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

static void put_le(uint8_t *p, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n) {
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

void launch_frame_header(uint64_t code_len, uint8_t ret[static LAUNCH_FRAME_HEADER_SIZE]) {
        memcpy(ret, LAUNCH_FRAME_MAGIC, 4);
        put_le(ret + 4, LAUNCH_FRAME_VERSION, 4);
        put_le(ret + 8, code_len, 8);
}

int launch_frame_parse(const uint8_t *buf, size_t n, uint64_t max_code_len, uint64_t *ret_code_len) {
        uint64_t len;

        assert(buf || n == 0);
        assert(ret_code_len);

        if (n < LAUNCH_FRAME_HEADER_SIZE || memcmp(buf, LAUNCH_FRAME_MAGIC, 4) != 0 ||
            get_le(buf + 4, 4) != LAUNCH_FRAME_VERSION)
                return -EBADMSG;
        len = get_le(buf + 8, 8);
        if (len == 0)
                return -EINVAL;
        if (len > max_code_len)
                return -EFBIG;
        *ret_code_len = len;
        return 0;
}
