/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "list.h"
#include "test-helpers.h"

typedef struct Item Item;
struct Item {
        int v;
        LIST_FIELDS(Item, all);
        LIST_FIELDS(Item, odd);
};

static int sum(Item *head) {
        int s = 0;
        LIST_FOREACH(all, i, head)
                s = s * 10 + i->v;
        return s;
}

int main(void) {
        Item it[5] = {};
        Item *head = NULL, *odd = NULL;

        for (int k = 0; k < 5; k++) {
                it[k].v = k + 1;
                LIST_APPEND(all, head, &it[k]);
                if (it[k].v % 2)
                        LIST_PREPEND(odd, odd, &it[k]);
        }
        ASSERT_EQ_INT(sum(head), 12345);
        ASSERT_TRUE(odd == &it[4] && odd->odd_next == &it[2] && it[2].odd_next == &it[0] && !it[0].odd_next);

        /* Middle, head and tail, while iterating. */
        LIST_FOREACH_SAFE(all, i, n, head)
                if (i->v == 3 || i->v == 1 || i->v == 5)
                        LIST_REMOVE(all, head, i);
        ASSERT_EQ_INT(sum(head), 24);
        ASSERT_TRUE(!it[2].all_next && !it[2].all_prev);
        ASSERT_TRUE(head->all_prev == NULL && head->all_next->all_prev == head);

        /* The other list is untouched. */
        ASSERT_TRUE(odd == &it[4] && it[2].odd_prev == &it[4]);
        LIST_REMOVE(odd, odd, &it[2]);
        ASSERT_TRUE(odd->odd_next == &it[0] && it[0].odd_prev == odd);

        LIST_REMOVE(all, head, &it[1]);
        LIST_REMOVE(all, head, &it[3]);
        ASSERT_TRUE(LIST_IS_EMPTY(head));
        return 0;
}
