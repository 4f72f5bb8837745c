/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mem-budget.h"
#include "macro.h"
#include "test-helpers.h"

#include <errno.h>
#include <stdio.h>

static void test_input(void) {
        const size_t F = MEM_BUDGET_FREE;
        MemBudget b = { .max = 4 * F };

        /* Input may take the budget less its reserve: 3.5 F here. */
        ASSERT_EQ_U64(mem_budget_reserve(&b), F / 2);

        /* Small holdings are free, however many. */
        for (int i = 0; i < 1000; i++)
                ASSERT_TRUE(mem_budget_grow_input(&b, 0, F));
        ASSERT_EQ_U64(b.used, 0);

        /* Growing past the free part draws the difference, step by step. */
        ASSERT_TRUE(mem_budget_grow_input(&b, F, 2 * F));
        ASSERT_EQ_U64(b.used, F);
        ASSERT_TRUE(mem_budget_grow_input(&b, 2 * F, 3 * F));
        ASSERT_EQ_U64(b.used, 2 * F);

        /* Over the budget less its reserve: refused, nothing taken. */
        ASSERT_FALSE(mem_budget_grow_input(&b, 0, 3 * F));
        ASSERT_EQ_U64(b.used, 2 * F);
        ASSERT_TRUE(mem_budget_grow_input(&b, 0, 2 * F));
        ASSERT_EQ_U64(b.used, 3 * F);
        ASSERT_TRUE(mem_budget_grow_input(&b, 2 * F, 2 * F + F / 2));
        ASSERT_EQ_U64(b.used, 3 * F + F / 2);
        ASSERT_FALSE(mem_budget_grow_input(&b, 2 * F + F / 2, 2 * F + F / 2 + 1));

        /* Shrinking never fails and gives back; so does release. */
        ASSERT_TRUE(mem_budget_grow_input(&b, 2 * F + F / 2, 2 * F));
        ASSERT_EQ_U64(b.used, 3 * F);
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

        /* Others are not starved by it: they still get theirs. The budget
         * less its reserve (1000 - 125) bounds the large holders together. */
        ASSERT_EQ_INT(mem_charge_set(&x, 376), -EBUSY);
        ASSERT_EQ_INT(mem_charge_set(&x, 375), 0);
        ASSERT_EQ_U64(b.used, 875);
        /* The reserve is for a caller holding little (1000 / 64 = 15). */
        ASSERT_EQ_INT(mem_charge_set(&y, 16), -EBUSY);
        ASSERT_EQ_INT(mem_charge_set(&y, 15), 0);
        ASSERT_EQ_U64(b.used, 890);
        ASSERT_EQ_INT(mem_charge_set(&y, 16), -EBUSY);
        /* A large holder never takes the reserve, not even a byte. */
        ASSERT_EQ_INT(mem_charge_set(&x, 376), -EBUSY);
        ASSERT_EQ_U64(mem_charge_room(&x), 0);
        ASSERT_EQ_U64(mem_charge_room(&y), 0);

        /* Shrinking always works and makes room. */
        ASSERT_EQ_INT(mem_charge_set(&a1, 100), 0);
        ASSERT_EQ_U64(b.used, 690);
        ASSERT_EQ_U64(mem_charge_room(&y), 185);
        ASSERT_EQ_INT(mem_charge_set(&y, 201), -EBUSY);
        ASSERT_EQ_INT(mem_charge_set(&y, 200), 0);
        ASSERT_EQ_U64(b.used, 875);

        /* At the limit: more is refused, for charges and input alike,
         * until something is given back. */
        ASSERT_EQ_INT(mem_charge_set(&a1, 101), -EBUSY);
        ASSERT_FALSE(mem_budget_grow_input(&b, 0, MEM_BUDGET_FREE + 1));
        ASSERT_EQ_INT(mem_charge_set(&x, 376), -EBUSY);
        ASSERT_EQ_INT(mem_charge_set(&x, 0), 0);
        ASSERT_TRUE(mem_budget_grow_input(&b, 0, MEM_BUDGET_FREE + 1));
        mem_budget_release_input(&b, MEM_BUDGET_FREE + 1);

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

/* However many callers fill the budget with large holdings, a caller
 * holding little still gets a small charge, until the reserve is spent by
 * callers holding little each. */
static void test_reserve(void) {
        MemBudget b = { .max = 64000 };
        MemCharge big[2] = {}, small[9] = {};
        char name[32];

        for (size_t i = 0; i < ELEMENTSOF(big); i++) {
                snprintf(name, sizeof name, "http:big%zu", i);
                ASSERT_EQ_INT(mem_charge_init(&big[i], &b, name), 0);
                (void) mem_charge_set(&big[i], 32000);
                (void) mem_charge_grow(&big[i], mem_charge_room(&big[i]));
        }
        ASSERT_EQ_U64(b.used, 64000 - 8000);
        for (size_t i = 0; i < ELEMENTSOF(small); i++) {
                snprintf(name, sizeof name, "uid:%zu", i);
                ASSERT_EQ_INT(mem_charge_init(&small[i], &b, name), 0);
        }
        /* Eight callers of 1000 bytes (the small part) spend the reserve;
         * the ninth is refused then, and served once one gives back. */
        for (size_t i = 0; i < 8; i++)
                ASSERT_EQ_INT(mem_charge_set(&small[i], 1000), 0);
        ASSERT_EQ_U64(b.used, 64000);
        ASSERT_EQ_INT(mem_charge_set(&small[8], 1), -EBUSY);
        mem_charge_done(&small[0]);
        ASSERT_EQ_INT(mem_charge_set(&small[8], 1000), 0);
        /* A large holder that gives back a little cannot take the reserve:
         * what all hold together counts, so the room it left goes to small
         * callers first. */
        mem_charge_shrink(&big[0], 500);
        ASSERT_EQ_INT(mem_charge_grow(&big[0], 1), -EBUSY);
        for (size_t i = 1; i < ELEMENTSOF(small); i++)
                mem_charge_done(&small[i]);
        ASSERT_EQ_U64(b.used, 55500);
        ASSERT_EQ_INT(mem_charge_grow(&big[0], 501), -EBUSY);
        ASSERT_EQ_INT(mem_charge_grow(&big[0], 500), 0);
        for (size_t i = 0; i < ELEMENTSOF(big); i++)
                mem_charge_done(&big[i]);
        for (size_t i = 0; i < ELEMENTSOF(small); i++)
                mem_charge_done(&small[i]);
        ASSERT_EQ_U64(b.used, 0);
        ASSERT_TRUE(b.callers == NULL);
}

int main(void) {
        test_input();
        test_charges();
        test_reserve();
        return 0;
}
