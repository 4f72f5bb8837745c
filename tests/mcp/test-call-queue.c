/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/call-queue.[ch]: admission, FIFO order, the bound,
 * release from inside a start callback. */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "call-queue.h"
#include "macro.h"
#include "test-helpers.h"

typedef struct Job {
        QueueSlot slot;
        int id;
        bool started;
        bool release_on_start;          /* finishes at once when started */
} Job;

static int order[16];
static unsigned n_order;

static void on_start(QueueSlot *slot, void *userdata) {
        Job *j = userdata;

        ASSERT_TRUE(slot == &j->slot);
        ASSERT_EQ_INT(slot->state, QUEUE_SLOT_RUNNING);
        j->started = true;
        order[n_order++] = j->id;
        if (j->release_on_start)
                call_queue_release(slot);
}

TEST(test_admission) {
        CallQueue *q;
        Job j[6] = {};

        ASSERT_EQ_INT(call_queue_new(0, 1, &q), -EINVAL);
        ASSERT_EQ_INT(call_queue_new(2, 2, &q), 0);
        for (int i = 0; i < 6; i++)
                j[i].id = i;

        ASSERT_EQ_INT(call_queue_submit(q, &j[0].slot, NULL, false, on_start, &j[0]), 1);
        ASSERT_EQ_INT(call_queue_submit(q, &j[1].slot, NULL, false, on_start, &j[1]), 1);
        ASSERT_EQ_INT(call_queue_submit(q, &j[2].slot, NULL, false, on_start, &j[2]), 0);
        ASSERT_EQ_INT(call_queue_submit(q, &j[3].slot, NULL, false, on_start, &j[3]), 0);
        ASSERT_EQ_INT(call_queue_submit(q, &j[4].slot, NULL, false, on_start, &j[4]), -EBUSY);
        ASSERT_EQ_INT(j[4].slot.state, QUEUE_SLOT_IDLE);
        ASSERT_EQ_INT(call_queue_submit(q, &j[2].slot, NULL, false, on_start, &j[2]), -EINVAL);     /* in use */
        ASSERT_EQ_INT(call_queue_running(q), 2);
        ASSERT_EQ_INT(call_queue_waiting(q), 2);
        ASSERT_EQ_INT(call_queue_position(&j[2].slot), 1);
        ASSERT_EQ_INT(call_queue_position(&j[3].slot), 2);
        ASSERT_EQ_INT(call_queue_position(&j[0].slot), 0);
        ASSERT_EQ_INT(n_order, 0);

        /* A waiting one leaves: it never starts, the line moves up. */
        call_queue_release(&j[2].slot);
        ASSERT_FALSE(j[2].started);
        ASSERT_EQ_INT(call_queue_position(&j[3].slot), 1);
        ASSERT_EQ_INT(call_queue_running(q), 2);

        /* A running one ends: the next waiting one starts. */
        call_queue_release(&j[0].slot);
        ASSERT_TRUE(j[3].started);
        ASSERT_EQ_INT(n_order, 1);
        ASSERT_EQ_INT(order[0], 3);
        ASSERT_EQ_INT(call_queue_running(q), 2);
        ASSERT_EQ_INT(call_queue_waiting(q), 0);
        call_queue_release(&j[0].slot);         /* idempotent */
        ASSERT_EQ_INT(call_queue_running(q), 2);

        /* A newcomer does not overtake anyone waiting. */
        ASSERT_EQ_INT(call_queue_submit(q, &j[4].slot, NULL, false, on_start, &j[4]), 0);
        call_queue_release(&j[1].slot);
        ASSERT_TRUE(j[4].started);
        call_queue_release(&j[3].slot);
        call_queue_release(&j[4].slot);
        ASSERT_EQ_INT(call_queue_running(q), 0);
        call_queue_free(q);
}

/* The line keeps its order whichever slots leave it: the oldest, one in
 * the middle, the newest. */
TEST(test_fifo) {
        _cleanup_(call_queue_freep) CallQueue *q = NULL;
        Job j[8] = {};

        n_order = 0;
        ASSERT_EQ_INT(call_queue_new(1, 6, &q), 0);
        for (int i = 0; i < 8; i++)
                j[i].id = i;
        ASSERT_EQ_INT(call_queue_submit(q, &j[0].slot, NULL, false, on_start, &j[0]), 1);
        for (int i = 1; i <= 6; i++)
                ASSERT_EQ_INT(call_queue_submit(q, &j[i].slot, NULL, false, on_start, &j[i]), 0);
        for (int i = 1; i <= 6; i++)
                ASSERT_EQ_INT(call_queue_position(&j[i].slot), i);

        call_queue_release(&j[1].slot);         /* the oldest */
        call_queue_release(&j[4].slot);         /* the middle */
        call_queue_release(&j[6].slot);         /* the newest */
        ASSERT_EQ_INT(call_queue_waiting(q), 3);
        ASSERT_EQ_INT(call_queue_position(&j[2].slot), 1);
        ASSERT_EQ_INT(call_queue_position(&j[3].slot), 2);
        ASSERT_EQ_INT(call_queue_position(&j[5].slot), 3);
        ASSERT_EQ_INT(call_queue_submit(q, &j[7].slot, NULL, false, on_start, &j[7]), 0);
        ASSERT_EQ_INT(call_queue_position(&j[7].slot), 4);

        /* One runs at a time: each release starts the next in line. */
        call_queue_release(&j[0].slot);
        call_queue_release(&j[2].slot);
        call_queue_release(&j[3].slot);
        call_queue_release(&j[5].slot);
        ASSERT_EQ_INT(n_order, 4);
        ASSERT_EQ_INT(order[0], 2);
        ASSERT_EQ_INT(order[1], 3);
        ASSERT_EQ_INT(order[2], 5);
        ASSERT_EQ_INT(order[3], 7);
        ASSERT_FALSE(j[1].started || j[4].started || j[6].started);
        ASSERT_EQ_INT(call_queue_waiting(q), 0);
        call_queue_release(&j[7].slot);
        ASSERT_EQ_INT(call_queue_running(q), 0);
}

TEST(test_release_in_start) {
        CallQueue *q;
        Job j[6] = {};

        n_order = 0;
        ASSERT_EQ_INT(call_queue_new(1, 5, &q), 0);
        for (int i = 0; i < 6; i++) {
                j[i].id = i;
                j[i].release_on_start = i > 0;
        }
        ASSERT_EQ_INT(call_queue_submit(q, &j[0].slot, NULL, false, on_start, &j[0]), 1);
        for (int i = 1; i < 6; i++)
                ASSERT_EQ_INT(call_queue_submit(q, &j[i].slot, NULL, false, on_start, &j[i]), 0);
        /* Each one finishes as it starts: all run, in order, without recursion. */
        call_queue_release(&j[0].slot);
        ASSERT_EQ_INT(n_order, 5);
        for (int i = 0; i < 5; i++)
                ASSERT_EQ_INT(order[i], i + 1);
        ASSERT_EQ_INT(call_queue_running(q), 0);
        ASSERT_EQ_INT(call_queue_waiting(q), 0);
        call_queue_free(q);
}

TEST(test_no_waiting) {
        CallQueue *q;
        Job a = {}, b = {};

        ASSERT_EQ_INT(call_queue_new(1, 0, &q), 0);
        ASSERT_EQ_INT(call_queue_submit(q, &a.slot, NULL, false, on_start, &a), 1);
        ASSERT_EQ_INT(call_queue_submit(q, &b.slot, NULL, false, on_start, &b), -EBUSY);
        call_queue_release(&a.slot);
        ASSERT_EQ_INT(call_queue_submit(q, &b.slot, NULL, false, on_start, &b), 1);
        call_queue_release(&b.slot);
        call_queue_free(q);
}

TEST(test_drop_waiting) {
        CallQueue *q;
        Job a = {}, b = {}, c = {};

        ASSERT_EQ_INT(call_queue_new(1, 2, &q), 0);
        ASSERT_EQ_INT(call_queue_submit(q, &a.slot, NULL, false, on_start, &a), 1);
        ASSERT_EQ_INT(call_queue_submit(q, &b.slot, NULL, false, on_start, &b), 0);
        ASSERT_EQ_INT(call_queue_submit(q, &c.slot, NULL, false, on_start, &c), 0);
        call_queue_drop_waiting(q);
        ASSERT_EQ_INT(b.slot.state, QUEUE_SLOT_IDLE);
        ASSERT_EQ_INT(c.slot.state, QUEUE_SLOT_IDLE);
        call_queue_release(&a.slot);
        ASSERT_FALSE(b.started || c.started);
        call_queue_release(&b.slot);            /* idle: nothing happens */
        ASSERT_EQ_INT(call_queue_running(q), 0);
        call_queue_free(q);
}

int main(void) {
        RUN(test_admission);
        RUN(test_release_in_start);
        RUN(test_no_waiting);
        RUN(test_drop_waiting);
        RUN(test_fifo);
        return 0;
}
