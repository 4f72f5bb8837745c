/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "input-budget.h"
#include "test-helpers.h"

int main(void) {
        InputBudget b = { .max = 3 * INPUT_BUDGET_FREE };
        const size_t F = INPUT_BUDGET_FREE;

        /* Small holdings are free, however many. */
        for (int i = 0; i < 1000; i++)
                ASSERT_TRUE(input_budget_grow(&b, 0, F));
        ASSERT_EQ_U64(b.used, 0);

        /* Growing past the free part draws the difference, step by step. */
        ASSERT_TRUE(input_budget_grow(&b, F, 2 * F));
        ASSERT_EQ_U64(b.used, F);
        ASSERT_TRUE(input_budget_grow(&b, 2 * F, 3 * F));
        ASSERT_EQ_U64(b.used, 2 * F);

        /* Over the budget: refused, nothing taken. */
        ASSERT_FALSE(input_budget_grow(&b, 0, 3 * F));
        ASSERT_EQ_U64(b.used, 2 * F);
        ASSERT_TRUE(input_budget_grow(&b, 0, 2 * F));
        ASSERT_EQ_U64(b.used, 3 * F);
        ASSERT_FALSE(input_budget_grow(&b, 2 * F, 2 * F + 1));

        /* Shrinking never fails and gives back; so does release. */
        ASSERT_TRUE(input_budget_grow(&b, 3 * F, F));
        ASSERT_EQ_U64(b.used, F);
        input_budget_release(&b, F);
        ASSERT_EQ_U64(b.used, F);
        input_budget_release(&b, 2 * F);
        ASSERT_EQ_U64(b.used, 0);

        /* No budget: unlimited. */
        ASSERT_TRUE(input_budget_grow(NULL, 0, SIZE_MAX));
        input_budget_release(NULL, SIZE_MAX);
        return 0;
}
