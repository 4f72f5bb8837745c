/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "call-queue.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "macro.h"

struct CallQueue {
        uint64_t max_running, max_waiting;
        unsigned n_running, n_waiting;
        /* Newest first: a slot joins at the head and leaves from the tail
         * (oldest), both in O(1) however long the line. */
        QueueSlot *waiting, *oldest;
        bool dispatching;
};

int call_queue_new(uint64_t max_running, uint64_t max_waiting, CallQueue **ret) {
        _cleanup_(call_queue_freep) CallQueue *q = NULL;

        assert(ret);

        if (max_running == 0)
                return -EINVAL;
        q = calloc(1, sizeof *q);
        if (!q)
                return -ENOMEM;
        q->max_running = max_running;
        q->max_waiting = max_waiting;
        *ret = TAKE_PTR(q);
        return 0;
}

static void unlink_waiting(CallQueue *q, QueueSlot *slot) {
        assert(q);
        assert(slot);

        if (q->oldest == slot)
                q->oldest = slot->wait_prev;
        LIST_REMOVE(wait, q->waiting, slot);
        q->n_waiting--;
}

void call_queue_drop_waiting(CallQueue *q) {
        assert(q);

        while (q->oldest) {
                QueueSlot *s = q->oldest;
                unlink_waiting(q, s);
                *s = (QueueSlot) {};
        }
}

CallQueue *call_queue_free(CallQueue *q) {
        if (!q)
                return NULL;
        call_queue_drop_waiting(q);
        return mfree(q);
}

/* Starts waiting slots while there is room. A start callback may release
 * slots and so come back here: the flag keeps that from recursing, the outer
 * loop picks up the freed room. */
static void dispatch(CallQueue *q) {
        assert(q);

        if (q->dispatching)
                return;
        q->dispatching = true;
        while (q->oldest && q->n_running < q->max_running) {
                QueueSlot *s = q->oldest;
                unlink_waiting(q, s);
                s->state = QUEUE_SLOT_RUNNING;
                q->n_running++;
                s->start(s, s->userdata);      /* may free s */
        }
        q->dispatching = false;
}

int call_queue_submit(CallQueue *q, QueueSlot *slot, queue_start_t start, void *userdata) {
        assert(q);
        assert(slot);

        if (slot->state != QUEUE_SLOT_IDLE || !start)
                return -EINVAL;

        *slot = (QueueSlot) { .queue = q, .start = start, .userdata = userdata };
        /* FIFO: nobody overtakes a waiting slot. */
        if (!q->waiting && q->n_running < q->max_running) {
                slot->state = QUEUE_SLOT_RUNNING;
                q->n_running++;
                return 1;
        }
        if (q->n_waiting >= q->max_waiting) {
                *slot = (QueueSlot) {};
                return -EBUSY;
        }
        slot->state = QUEUE_SLOT_WAITING;
        LIST_PREPEND(wait, q->waiting, slot);
        if (!q->oldest)
                q->oldest = slot;
        q->n_waiting++;
        return 0;
}

void call_queue_release(QueueSlot *slot) {
        CallQueue *q;

        if (!slot || !slot->queue)
                return;
        q = slot->queue;
        if (slot->state == QUEUE_SLOT_WAITING)
                unlink_waiting(q, slot);
        else if (slot->state == QUEUE_SLOT_RUNNING)
                q->n_running--;
        *slot = (QueueSlot) {};
        dispatch(q);
}

unsigned call_queue_running(const CallQueue *q) {
        assert(q);
        return q->n_running;
}

unsigned call_queue_waiting(const CallQueue *q) {
        assert(q);
        return q->n_waiting;
}

uint64_t call_queue_max_running(const CallQueue *q) {
        assert(q);
        return q->max_running;
}

uint64_t call_queue_max_waiting(const CallQueue *q) {
        assert(q);
        return q->max_waiting;
}

unsigned call_queue_position(const QueueSlot *slot) {
        unsigned n = 1;

        assert(slot);

        if (slot->state != QUEUE_SLOT_WAITING)
                return 0;
        /* Those after it in the list came before it. */
        LIST_FOREACH(wait, s, slot->wait_next)
                n++;
        return n;
}
