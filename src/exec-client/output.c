/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "output.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

void output_capture_init(OutputCapture *c, uint64_t limit, MemCharge *charge) {
        assert(c);

        *c = (OutputCapture) { .limit = limit, .charge = charge };
}

void output_capture_done(OutputCapture *c) {
        for (size_t i = 0; i < _OUTPUT_STREAM_MAX; i++) {
                free(c->data[i]);
                c->data[i] = NULL;
                c->size[i] = c->allocated[i] = 0;
        }
        mem_charge_shrink(c->charge, c->charged);
        c->charged = 0;
}

/* A buffer grows from have to want bytes: charged first. */
static int charge_grow(OutputCapture *c, size_t have, size_t want) {
        if (want <= have)
                return 0;
        if (mem_charge_grow(c->charge, want - have) < 0)
                return -EBUSY;
        c->charged += want - have;
        return 0;
}

static void charge_shrink(OutputCapture *c, size_t have, size_t now) {
        if (now >= have)
                return;
        mem_charge_shrink(c->charge, MIN((uint64_t) (have - now), c->charged));
        c->charged -= MIN((uint64_t) (have - now), c->charged);
}

uint64_t output_capture_kept(const OutputCapture *c) {
        assert(c);

        return (uint64_t) c->size[OUTPUT_STDOUT] + c->size[OUTPUT_STDERR];
}

/* Gives back a buffer's spare capacity. */
static void output_capture_trim(OutputCapture *c, OutputStream s) {
        if (c->size[s] == 0) {
                c->data[s] = mfree(c->data[s]);
                charge_shrink(c, c->allocated[s], 0);
                c->allocated[s] = 0;
        } else if (c->allocated[s] > c->size[s]) {
                char *p = realloc(c->data[s], c->size[s]);
                if (p) {
                        charge_shrink(c, c->allocated[s], c->size[s]);
                        c->data[s] = p;
                        c->allocated[s] = c->size[s];
                }
        }
}

/* Room in stream s for *keep more bytes: its buffer grows within the limit
 * (both buffers together) and the memory budget. Past the budget, *keep
 * shrinks to what the buffer can take and the limit closes behind it, so
 * that nothing more is taken from then on and the output has no holes.
 * 0 (then *keep bytes fit, maybe none), or -ENOMEM. */
static int make_room(OutputCapture *c, OutputStream s, OutputStream other, size_t *keep) {
        /* need <= limit - size[other], since keep <= room. */
        size_t need = c->size[s] + *keep, want;
        char *p;

        if (need <= c->allocated[s])
                return 0;
        /* If the other stream's spare capacity is in the way, give it back first. */
        if ((uint64_t) need + c->allocated[other] > c->limit)
                output_capture_trim(c, other);
        want = MAX(need, MAX(c->allocated[s] * 2, (size_t) 4096));
        want = (size_t) MIN((uint64_t) want, c->limit - MIN(c->limit, (uint64_t) c->allocated[other]));
        want = MAX(want, need); /* only if trimming failed */
        if (charge_grow(c, c->allocated[s], want) < 0) {
                want = need;
                if (charge_grow(c, c->allocated[s], want) < 0) {
                        /* As much as the budget still gives, the rest dropped
                         * like output past the limit. */
                        want = c->allocated[s] + (size_t) MIN(mem_charge_room(c->charge), (uint64_t) *keep);
                        assert(want < need);
                        *keep = want - c->size[s];
                        c->limit = output_capture_kept(c) + *keep;
                        c->truncated = true;
                        if (*keep == 0 || want == c->allocated[s])
                                return 0;
                        if (charge_grow(c, c->allocated[s], want) < 0) {
                                *keep = 0;      /* not reached: room said so */
                                return 0;
                        }
                }
        }
        p = realloc(c->data[s], want);
        if (!p) {
                charge_shrink(c, want, c->allocated[s]);
                return -ENOMEM;
        }
        c->data[s] = p;
        c->allocated[s] = want;
        return 0;
}

int output_capture_append(OutputCapture *c, OutputStream s, const void *data, size_t n) {
        OutputStream other = s == OUTPUT_STDOUT ? OUTPUT_STDERR : OUTPUT_STDOUT;
        uint64_t room = c->limit - MIN(c->limit, output_capture_kept(c));
        size_t keep = (size_t) MIN((uint64_t) n, room);
        int r;

        assert(c);
        assert(data || n == 0);

        c->seen += n;
        if (keep < n)
                c->truncated = true;
        if (keep == 0)
                return 0;
        r = make_room(c, s, other, &keep);
        if (r < 0)
                return r;
        if (keep == 0)
                return 0;
        memcpy(c->data[s] + c->size[s], data, keep);
        c->size[s] += keep;
        return 0;
}
