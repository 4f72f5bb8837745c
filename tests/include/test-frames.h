/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Builds result-channel frames (result-frame.h) for the tests and the fake
 * broker: good ones, and any lie about lengths a hostile launcher could
 * tell. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "result-frame.h"
#include "test-helpers.h"

typedef struct FrameBuf {
        uint8_t *data;
        size_t size, allocated;
} FrameBuf;

static inline void frame_buf_put(FrameBuf *b, const void *p, size_t n) {
        if (b->size + n > b->allocated) {
                size_t want = b->allocated * 2 > b->size + n ? b->allocated * 2 : b->size + n + 4096;
                b->data = realloc(b->data, want);
                ASSERT_TRUE(b->data);
                b->allocated = want;
        }
        if (n > 0)
                memcpy(b->data + b->size, p, n);
        b->size += n;
}

/* A frame whose header says meta_len and data_len, followed by the meta
 * and data given (which may be shorter or longer: a lie). */
static inline void frame_put_raw(FrameBuf *b, uint8_t type, uint32_t meta_len, uint64_t data_len, const char *meta,
                                 size_t meta_n, const void *data, size_t data_n) {
        uint8_t h[RESULT_FRAME_HEADER_SIZE];

        memcpy(h, RESULT_FRAME_MAGIC, 4);
        h[4] = type;
        h[5] = h[6] = h[7] = 0;
        for (size_t i = 0; i < 4; i++)
                h[8 + i] = (uint8_t) (meta_len >> (8 * i));
        for (size_t i = 0; i < 8; i++)
                h[12 + i] = (uint8_t) (data_len >> (8 * i));
        frame_buf_put(b, h, sizeof h);
        frame_buf_put(b, meta, meta_n);
        frame_buf_put(b, data, data_n);
}

/* An honest frame: meta (may be NULL) and data as they are. */
static inline void frame_put(FrameBuf *b, ResultFrameType type, const char *meta, const void *data, size_t n) {
        size_t m = meta ? strlen(meta) : 0;
        frame_put_raw(b, (uint8_t) type, (uint32_t) m, n, meta, m, data, n);
}

static inline void frame_buf_done(FrameBuf *b) {
        free(b->data);
        *b = (FrameBuf) {};
}
