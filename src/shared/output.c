/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

void output_capture_init(OutputCapture *c, uint64_t limit) {
        *c = (OutputCapture) { .limit = limit };
}

void output_capture_done(OutputCapture *c) {
        for (size_t i = 0; i < _OUTPUT_STREAM_MAX; i++) {
                free(c->data[i]);
                c->data[i] = NULL;
                c->size[i] = c->allocated[i] = 0;
        }
}

uint64_t output_capture_kept(const OutputCapture *c) {
        return (uint64_t) c->size[OUTPUT_STDOUT] + c->size[OUTPUT_STDERR];
}

int output_capture_append(OutputCapture *c, OutputStream s, const void *data, size_t n) {
        uint64_t room = c->limit - MIN(c->limit, output_capture_kept(c));
        size_t keep = (size_t) MIN((uint64_t) n, room);

        c->seen += n;
        if (keep < n)
                c->truncated = true;
        if (keep == 0)
                return 0;

        if (c->size[s] + keep > c->allocated[s]) {
                /* Grow geometrically, never past what the limit allows. */
                size_t want = MAX(c->size[s] + keep, MAX(c->allocated[s] * 2, (size_t) 4096));
                want = (size_t) MIN((uint64_t) want, c->limit);
                char *p = realloc(c->data[s], want);
                if (!p)
                        return -ENOMEM;
                c->data[s] = p;
                c->allocated[s] = want;
        }
        memcpy(c->data[s] + c->size[s], data, keep);
        c->size[s] += keep;
        return 0;
}
