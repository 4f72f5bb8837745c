/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mem-budget.h"
#include "test-helpers.h"

#include <errno.h>

static void test_input(void) {
        MemBudget b = { .max = 3 * MEM_BUDGET_FREE };
        const size_t F = MEM_BUDGET_FREE;

        /* Small holdings are free, however many. */
        for (int i = 0; i < 1000; i++)
                ASSERT_TRUE(mem_budget_grow_input(&b, 0, F));
        ASSERT_EQ_U64(b.used, 0);

        /* Growing past the free part draws the difference, step by step. */
        ASSERT_TRUE(mem_budget_grow_input(&b, F, 2 * F));
        ASSERT_EQ_U64(b.used, F);
        ASSERT_TRUE(mem_budget_grow_input(&b, 2 * F, 3 * F));
        ASSERT_EQ_U64(b.used, 2 * F);

        /* Over the budget: refused, nothing taken. */
        ASSERT_FALSE(mem_budget_grow_input(&b, 0, 3 * F));
        ASSERT_EQ_U64(b.used, 2 * F);
        ASSERT_TRUE(mem_budget_grow_input(&b, 0, 2 * F));
        ASSERT_EQ_U64(b.used, 3 * F);
        ASSERT_FALSE(mem_budget_grow_input(&b, 2 * F, 2 * F + 1));

        /* Shrinking never fails and gives back; so does release. */
        ASSERT_TRUE(mem_budget_grow_input(&b, 3 * F, F));
        ASSERT_EQ_U64(b.used, F);
        mem_budget_release_input(&b, F);
        ASSERT_EQ_U64(b.used, F);
        mem_budget_release_input(&b, 2 * F);
        ASSERT_EQ_U64(b.used, 0);

        /* No budget: unlimited. */
        ASSERT_TRUE(mem_budget_grow_input(NULL, 0, SIZE_MAX));
        mem_budget_release_input(NULL, SIZE_MAX);
}

/* Charges of callers: the budget and each caller's share bound them; what is
 * refused changes nothing; release gives back and forgets the caller. */
static void test_charges(void) {
        MemBudget b = { .max = 1000 };
        MemCharge a1 = {}, a2 = {}, x = {}, y = {};

        ASSERT_EQ_U64(mem_budget_caller_max(&b), 1000 / MEM_BUDGET_CALLER_SHARE);
        ASSERT_EQ_INT(mem_charge_init(&a1, &b, "http:a"), 0);
        ASSERT_EQ_INT(mem_charge_init(&a2, &b, "http:a"), 0);
        ASSERT_EQ_INT(mem_charge_init(&x, &b, "uid:1"), 0);
        ASSERT_EQ_INT(mem_charge_init(&y, &b, "uid:2"), 0);

        /* One caller gets its share, over any number of charges, and no more. */
        ASSERT_EQ_INT(mem_charge_set(&a1, 300), 0);
        ASSERT_EQ_INT(mem_charge_set(&a2, 200), 0);
        ASSERT_EQ_U64(mem_budget_caller_used(&b, "http:a"), 500);
        ASSERT_EQ_INT(mem_charge_set(&a2, 201), -EBUSY);
        ASSERT_EQ_U64(a2.bytes, 200);
        ASSERT_EQ_U64(b.used, 500);

        /* Others are not starved by it: they still get theirs. */
        ASSERT_EQ_INT(mem_charge_set(&x, 450), 0);
        /* The whole budget bounds all callers together. */
        ASSERT_EQ_INT(mem_charge_set(&y, 51), -EBUSY);
        ASSERT_EQ_INT(mem_charge_set(&y, 50), 0);
        ASSERT_EQ_U64(b.used, 1000);
        ASSERT_EQ_INT(mem_charge_set(&y, 51), -EBUSY);

        /* Shrinking always works and makes room. */
        ASSERT_EQ_INT(mem_charge_set(&a1, 100), 0);
        ASSERT_EQ_U64(b.used, 800);
        ASSERT_EQ_INT(mem_charge_set(&y, 250), 0);

        /* Forced: counted past the limit; what comes next is refused until
         * it is given back. */
        mem_charge_force(&x, 900);
        ASSERT_EQ_U64(b.used, 1450);
        ASSERT_EQ_INT(mem_charge_set(&a1, 101), -EBUSY);
        ASSERT_FALSE(mem_budget_grow_input(&b, 0, MEM_BUDGET_FREE + 1));
        ASSERT_EQ_INT(mem_charge_set(&x, 901), -EBUSY);
        ASSERT_EQ_INT(mem_charge_set(&x, 0), 0);

        /* A move keeps the count, only the holder changes. */
        {
                MemCharge held = {};
                mem_charge_move(&held, &a2);
                ASSERT_EQ_U64(held.bytes, 200);
                ASSERT_EQ_U64(a2.bytes, 0);
                ASSERT_TRUE(a2.budget == NULL);
                ASSERT_EQ_U64(mem_budget_caller_used(&b, "http:a"), 300);
                ASSERT_EQ_INT(mem_charge_init(&a2, &b, "http:a"), 0);
                ASSERT_EQ_INT(mem_charge_set(&a2, 50), 0);
                mem_charge_move(&held, &a2);
                ASSERT_EQ_U64(held.bytes, 250);
                ASSERT_EQ_U64(mem_budget_caller_used(&b, "http:a"), 350);
                mem_charge_done(&held);
        }
        ASSERT_EQ_U64(mem_budget_caller_used(&b, "http:a"), 100);

        mem_charge_done(&a1);
        mem_charge_done(&x);
        mem_charge_done(&y);
        mem_charge_done(&y);            /* idempotent */
        ASSERT_EQ_U64(b.used, 0);
        ASSERT_TRUE(b.callers == NULL);

        /* No budget: unlimited. */
        ASSERT_EQ_INT(mem_charge_init(&x, NULL, "uid:1"), 0);
        ASSERT_EQ_INT(mem_charge_set(&x, UINT64_MAX), 0);
        mem_charge_done(&x);
}

int main(void) {
        test_input();
        test_charges();
        return 0;
}
