/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: launch_frame_parse on arbitrary bytes, and the round
 * trip parse(header(len)) == len for a length taken from the input. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launch-frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t get_u64(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = (v << 8) | p[i];
        return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint64_t max = UINT64_MAX, len = 0;
        uint8_t *copy;
        int r;

        /* The first 8 bytes pick the maximum; the rest is the buffer. */
        if (size >= 8) {
                max = get_u64(data);
                data += 8;
                size -= 8;
        }

        copy = malloc(size ? size : 1);
        if (!copy)
                abort();
        memcpy(copy, data, size);
        r = launch_frame_parse(copy, size, max, &len);
        if (r >= 0) {
                /* Accepted: must be a full header with our magic and a sane length. */
                if (size < LAUNCH_FRAME_HEADER_SIZE || memcmp(copy, LAUNCH_FRAME_MAGIC, 4) != 0)
                        abort();
                if (len == 0 || len > max)
                        abort();
                if (copy[4] != 1 || copy[5] || copy[6] || copy[7])
                        abort();
                if (len != get_u64(copy + 8))
                        abort();
        } else if (r != -EBADMSG && r != -EINVAL && r != -EFBIG && r != -EAGAIN && r != -ENODATA)
                abort();
        free(copy);

        /* Round trip. */
        if (size >= 8) {
                uint8_t h[LAUNCH_FRAME_HEADER_SIZE];
                uint64_t want = get_u64(data), got = 0;

                launch_frame_header(want, h);
                if (memcmp(h, LAUNCH_FRAME_MAGIC, 4) != 0)
                        abort();
                r = launch_frame_parse(h, sizeof h, UINT64_MAX, &got);
                if (want == 0) {
                        if (r != -EINVAL)
                                abort();
                } else if (r < 0 || got != want)
                        abort();
                if (want > 1) {
                        r = launch_frame_parse(h, sizeof h, want - 1, &got);
                        if (r != -EFBIG)
                                abort();
                }
        }
        return 0;
}
