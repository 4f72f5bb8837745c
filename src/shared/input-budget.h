/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Client input a daemon buffers at once, over all its connections: each
 * request or line is bounded on its own (the size limits), but a few hundred
 * clients sending large messages slowly would together pass the daemon's
 * MemoryMax= and take every session down with it. What fits in
 * INPUT_BUDGET_FREE bytes is not counted, so small messages always get
 * through; larger ones draw on the budget while they are being received. */

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INPUT_BUDGET_FREE ((size_t) 64 * 1024)
#define INPUT_BUDGET_DEFAULT ((uint64_t) 64 * 1024 * 1024)

typedef struct InputBudget {
        uint64_t used, max;
} InputBudget;

/* Moves a holding from have to want bytes; false if the budget cannot give
 * that much (nothing changes then). Shrinking always works. NULL budget:
 * unlimited. */
static inline bool input_budget_grow(InputBudget *b, size_t have, size_t want) {
        uint64_t from = have > INPUT_BUDGET_FREE ? have - INPUT_BUDGET_FREE : 0;
        uint64_t to = want > INPUT_BUDGET_FREE ? want - INPUT_BUDGET_FREE : 0;

        if (!b)
                return true;
        if (to <= from) {
                assert(from - to <= b->used);
                b->used -= from - to;
                return true;
        }
        if (to - from > b->max - b->used)
                return false;
        b->used += to - from;
        return true;
}

/* Gives back what a holding of have bytes took. */
static inline void input_budget_release(InputBudget *b, size_t have) {
        uint64_t n = have > INPUT_BUDGET_FREE ? have - INPUT_BUDGET_FREE : 0;

        if (!b)
                return;
        assert(n <= b->used);
        b->used -= n;
}
