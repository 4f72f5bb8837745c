/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/call-queue.[ch]: admission, FIFO order, the bound,
 * release from inside a start callback, fair shares by caller and the cap on
 * long holds (issue 37). */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

static int submit(CallQueue *q, Job *j, int id, const char *caller, bool long_hold) {
        j->id = id;
        return call_queue_submit(q, &j->slot, caller, long_hold, on_start, j);
}

/* The next free slot goes to the waiter whose caller holds the fewest, not
 * to the oldest: one caller's line does not keep another out. */
TEST(test_fewest_held_first) {
        _cleanup_(call_queue_freep) CallQueue *q = NULL;
        Job a[5] = {}, b[2] = {}, c = {};

        n_order = 0;
        ASSERT_EQ_INT(call_queue_new(3, 8, &q), 0);
        /* A alone takes every slot (work-conserving). */
        for (int i = 0; i < 3; i++)
                ASSERT_EQ_INT(submit(q, &a[i], i, "http:token:a", false), 1);
        ASSERT_EQ_INT(call_queue_held(q, "http:token:a"), 3);
        ASSERT_EQ_INT(submit(q, &a[3], 3, "http:token:a", false), 0);
        ASSERT_EQ_INT(submit(q, &a[4], 4, "http:token:a", false), 0);
        ASSERT_EQ_INT(submit(q, &b[0], 10, "uid:1000", false), 0);
        ASSERT_EQ_INT(submit(q, &b[1], 11, "uid:1000", false), 0);

        /* B holds none, A three: B's oldest goes first though A's came first. */
        call_queue_release(&a[0].slot);
        ASSERT_EQ_INT(n_order, 1);
        ASSERT_EQ_INT(order[0], 10);
        ASSERT_EQ_INT(call_queue_held(q, "uid:1000"), 1);
        /* Even (A one, B one): the oldest, A's. */
        call_queue_release(&a[1].slot);
        ASSERT_EQ_INT(order[1], 3);
        /* A holds two, B none: B's, though A's last came first. */
        call_queue_release(&b[0].slot);
        ASSERT_EQ_INT(order[2], 11);
        /* A newcomer C holds none: it goes before A's last waiter. */
        ASSERT_EQ_INT(submit(q, &c, 20, "http:token:c", false), 0);
        call_queue_release(&b[1].slot);
        ASSERT_EQ_INT(order[3], 20);
        ASSERT_FALSE(a[4].started);
        /* A alone waits: it gets the slot even over its share. */
        call_queue_release(&c.slot);
        ASSERT_EQ_INT(order[4], 4);
        ASSERT_EQ_INT(call_queue_held(q, "http:token:a"), 3);
        ASSERT_EQ_INT(call_queue_waiting(q), 0);
        for (int i = 2; i < 5; i++)
                call_queue_release(&a[i].slot);
        ASSERT_EQ_INT(call_queue_running(q), 0);
}

/* Issue 37's case: one caller's tasks (long holds) take every slot but one,
 * so that another caller's short call runs at once. */
TEST(test_long_holds) {
        _cleanup_(call_queue_freep) CallQueue *q = NULL;
        Job a[4] = {}, b = {}, b2 = {}, c = {};

        n_order = 0;
        ASSERT_EQ_INT(call_queue_new(3, 8, &q), 0);
        ASSERT_EQ_INT(submit(q, &a[0], 0, "http:token:a", true), 1);
        ASSERT_EQ_INT(submit(q, &a[1], 1, "http:token:a", true), 1);
        ASSERT_EQ_INT(submit(q, &a[2], 2, "http:token:a", true), 0);   /* the cap: 3 - 1 */
        ASSERT_EQ_INT(call_queue_running_long(q), 2);
        ASSERT_EQ_INT(call_queue_running(q), 2);

        /* The free slot is for what ends within the call maximum: B's
         * print(6*7) runs at once, past A's waiting task. */
        ASSERT_EQ_INT(submit(q, &b, 10, "http:token:b", false), 1);
        ASSERT_EQ_INT(submit(q, &b2, 11, "http:token:b", false), 0);
        ASSERT_EQ_INT(submit(q, &a[3], 3, "http:token:a", false), 0);
        /* B's call ends: A holds two, B none: B's second goes first. */
        call_queue_release(&b.slot);
        ASSERT_EQ_INT(n_order, 1);
        ASSERT_EQ_INT(order[0], 11);
        /* Then A's short one; its task still may not start. */
        call_queue_release(&b2.slot);
        ASSERT_EQ_INT(order[1], 3);
        ASSERT_FALSE(a[2].started);
        call_queue_release(&a[3].slot);
        ASSERT_EQ_INT(n_order, 2);
        ASSERT_EQ_INT(call_queue_running(q), 2);
        ASSERT_EQ_INT(call_queue_waiting(q), 1);
        /* A newcomer that may take the slot does, past the long waiter. */
        ASSERT_EQ_INT(submit(q, &c, 20, "uid:0", false), 1);
        call_queue_release(&c.slot);
        /* A task ends: the waiting one starts in its place. */
        call_queue_release(&a[0].slot);
        ASSERT_EQ_INT(order[2], 2);
        ASSERT_EQ_INT(call_queue_running_long(q), 2);
        call_queue_release(&a[1].slot);
        call_queue_release(&a[2].slot);
        ASSERT_EQ_INT(call_queue_running_long(q), 0);
        ASSERT_EQ_INT(call_queue_running(q), 0);
}

/* One slot: nothing to share, a long hold may take it. */
TEST(test_one_slot_long) {
        _cleanup_(call_queue_freep) CallQueue *q = NULL;
        Job a = {}, b = {};

        n_order = 0;
        ASSERT_EQ_INT(call_queue_new(1, 1, &q), 0);
        ASSERT_EQ_INT(submit(q, &a, 0, "x", true), 1);
        ASSERT_EQ_INT(submit(q, &b, 1, "y", true), 0);
        call_queue_release(&a.slot);
        ASSERT_TRUE(b.started);
        call_queue_release(&b.slot);
}

/* Names are copied and cut alike: no owner's lifetime matters, and a long
 * name is counted as its cut self. */
TEST(test_caller_copied) {
        _cleanup_(call_queue_freep) CallQueue *q = NULL;
        char name[128], other[128];
        Job a = {}, b = {};

        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = 0;
        memcpy(other, name, sizeof other);
        other[100] = 'o';
        ASSERT_EQ_INT(call_queue_new(2, 1, &q), 0);
        ASSERT_EQ_INT(submit(q, &a, 0, name, false), 1);
        ASSERT_EQ_INT(submit(q, &b, 1, NULL, false), 1);
        name[0] = 'x';
        ASSERT_EQ_INT(call_queue_held(q, other), 1);
        ASSERT_EQ_INT(call_queue_held(q, ""), 1);
        ASSERT_EQ_INT(call_queue_held(q, NULL), 1);
        call_queue_release(&a.slot);
        call_queue_release(&b.slot);
        ASSERT_EQ_INT(call_queue_held(q, other), 0);
}

int main(void) {
        RUN(test_admission);
        RUN(test_release_in_start);
        RUN(test_no_waiting);
        RUN(test_drop_waiting);
        RUN(test_fifo);
        RUN(test_fewest_held_first);
        RUN(test_long_holds);
        RUN(test_one_slot_long);
        RUN(test_caller_copied);
        return 0;
}
