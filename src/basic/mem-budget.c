/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mem-budget.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* Callers holding something, looked up by name: few at a time (one per
 * token or uid), so a list will do. */
struct MemCaller {
        LIST_FIELDS(MemCaller, callers);
        uint64_t used;
        unsigned n_charges;
        char name[];
};

bool mem_budget_grow_input(MemBudget *b, size_t have, size_t want) {
        uint64_t from = have > MEM_BUDGET_FREE ? have - MEM_BUDGET_FREE : 0;
        uint64_t to = want > MEM_BUDGET_FREE ? want - MEM_BUDGET_FREE : 0;

        if (!b)
                return true;
        if (to <= from) {
                assert(from - to <= b->used);
                b->used -= from - to;
                return true;
        }
        /* Input is not the reserve's: that is for small calls of callers
         * holding little, and input has no caller yet. */
        if (b->used > b->max - mem_budget_reserve(b) || to - from > b->max - mem_budget_reserve(b) - b->used)
                return false;
        b->used += to - from;
        return true;
}

void mem_budget_release_input(MemBudget *b, size_t have) {
        uint64_t n = have > MEM_BUDGET_FREE ? have - MEM_BUDGET_FREE : 0;

        if (!b)
                return;
        assert(n <= b->used);
        b->used -= n;
}

uint64_t mem_budget_caller_max(const MemBudget *b) {
        assert(b);
        return b->max / MEM_BUDGET_CALLER_SHARE;
}

uint64_t mem_budget_reserve(const MemBudget *b) {
        assert(b);
        return b->max / MEM_BUDGET_RESERVE_PART;
}

uint64_t mem_budget_small(const MemBudget *b) {
        assert(b);
        return b->max / MEM_BUDGET_SMALL_PART;
}

/* The most all callers together may hold when this caller would hold
 * caller_used bytes: the whole budget for one holding little, the budget
 * less its reserve for the others. */
static uint64_t budget_limit_for(const MemBudget *b, uint64_t caller_used) {
        assert(b);
        assert(mem_budget_reserve(b) <= b->max);

        return caller_used <= mem_budget_small(b) ? b->max : b->max - mem_budget_reserve(b);
}

static MemCaller *caller_find(const MemBudget *b, const char *name) {
        LIST_FOREACH(callers, i, b->callers)
                if (streq(i->name, name))
                        return i;
        return NULL;
}

uint64_t mem_budget_caller_used(const MemBudget *b, const char *caller) {
        MemCaller *m;

        assert(b);
        assert(caller);

        m = caller_find(b, caller);
        return m ? m->used : 0;
}

int mem_charge_init(MemCharge *c, MemBudget *budget, const char *caller) {
        MemCaller *m;
        size_t l;

        assert(c);
        assert(caller);
        assert(!c->budget && c->bytes == 0);

        if (!budget)
                return 0;
        m = caller_find(budget, caller);
        if (!m) {
                l = strlen(caller);
                m = calloc(1, sizeof *m + l + 1);
                if (!m)
                        return -ENOMEM;
                memcpy(m->name, caller, l + 1);
                LIST_PREPEND(callers, budget->callers, m);
        }
        m->n_charges++;
        *c = (MemCharge) { .budget = budget, .caller = m };
        return 0;
}

static void charge_apply(MemCharge *c, uint64_t bytes) {
        MemBudget *b = c->budget;

        assert(b->used >= c->bytes);
        assert(c->caller->used >= c->bytes);
        b->used = b->used - c->bytes + bytes;
        c->caller->used = c->caller->used - c->bytes + bytes;
        c->bytes = bytes;
}

int mem_charge_set(MemCharge *c, uint64_t bytes) {
        MemBudget *b;
        uint64_t more;

        assert(c);

        b = c->budget;
        if (!b) {
                c->bytes = bytes;
                return 0;
        }
        if (bytes > c->bytes) {
                uint64_t limit;

                more = bytes - c->bytes;
                if (c->caller->used > mem_budget_caller_max(b) || more > mem_budget_caller_max(b) - c->caller->used)
                        return -EBUSY;
                limit = budget_limit_for(b, c->caller->used + more);
                if (b->used > limit || more > limit - b->used)
                        return -EBUSY;
        }
        charge_apply(c, bytes);
        return 0;
}

/* Only ever to shrink: nothing outside grows a charge past its limits. */
static void charge_shrink_to(MemCharge *c, uint64_t bytes) {
        assert(c);
        assert(bytes <= c->bytes);

        if (!c->budget) {
                c->bytes = bytes;
                return;
        }
        charge_apply(c, bytes);
}

uint64_t mem_charge_room(const MemCharge *c) {
        const MemBudget *b;
        uint64_t all, mine;

        if (!c || !c->budget)
                return UINT64_MAX;
        b = c->budget;
        mine = mem_budget_caller_max(b) - MIN(c->caller->used, mem_budget_caller_max(b));
        /* What the budget less its reserve leaves; a caller holding little
         * may also take the reserve, up to its small part. */
        all = b->max - mem_budget_reserve(b) - MIN(b->used, b->max - mem_budget_reserve(b));
        if (c->caller->used < mem_budget_small(b))
                all = MAX(all, MIN(mem_budget_small(b) - c->caller->used, b->max - MIN(b->used, b->max)));
        return MIN(all, mine);
}

int mem_charge_grow(MemCharge *c, uint64_t delta) {
        if (!c)
                return 0;
        if (delta > UINT64_MAX - c->bytes)
                return -EBUSY;
        return mem_charge_set(c, c->bytes + delta);
}

void mem_charge_shrink(MemCharge *c, uint64_t delta) {
        if (!c)
                return;
        charge_shrink_to(c, c->bytes - MIN(delta, c->bytes));
}

void mem_charge_move(MemCharge *to, MemCharge *from) {
        assert(to);
        assert(from);

        if (!to->budget && to->bytes == 0) {
                *to = *from;
                *from = (MemCharge) {};
                return;
        }
        assert(to->budget == from->budget);
        assert(to->caller == from->caller);
        /* Both counted already: only the holder changes. */
        to->bytes += from->bytes;
        if (from->budget)
                from->caller->n_charges--;
        *from = (MemCharge) {};
}

void mem_charge_done(MemCharge *c) {
        MemBudget *b;

        if (!c)
                return;
        b = c->budget;
        if (b) {
                charge_apply(c, 0);
                assert(c->caller->n_charges > 0);
                if (--c->caller->n_charges == 0) {
                        assert(c->caller->used == 0);
                        LIST_REMOVE(callers, b->callers, c->caller);
                        free(c->caller);
                }
        }
        *c = (MemCharge) {};
}
