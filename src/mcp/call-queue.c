/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "call-queue.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"

struct CallQueue {
        uint64_t max_running, max_waiting;
        /* Of max_running, what long holds may take together (call-queue.h). */
        uint64_t max_long;
        unsigned n_running, n_waiting, n_long;
        /* Newest first: a slot joins at the head and leaves from wherever
         * its turn is; oldest is the tail, where the search starts. */
        QueueSlot *waiting, *oldest;
        QueueSlot *running;
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
        q->max_long = max_running > 1 ? max_running - 1 : 1;
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

/* How many running slots are caller's, counted up to limit at most. */
static unsigned held_upto(const CallQueue *q, const char *caller, unsigned limit) {
        unsigned n = 0;

        assert(q);

        LIST_FOREACH(wait, s, q->running) {
                if (n >= limit)
                        break;
                n += streq(s->caller, caller);
        }
        return n;
}

unsigned call_queue_held(const CallQueue *q, const char *caller) {
        char key[QUEUE_CALLER_MAX + 1];

        /* As the slots have it: cut. */
        (void) snprintf(key, sizeof key, "%s", caller ?: "");
        return held_upto(q, key, UINT_MAX);
}

unsigned call_queue_running_long(const CallQueue *q) {
        assert(q);
        return q->n_long;
}

/* Could slot run now, as far as the room goes? */
static bool has_room(const CallQueue *q, const QueueSlot *slot) {
        assert(q);
        assert(slot);

        return q->n_running < q->max_running && (!slot->long_hold || q->n_long < q->max_long);
}

/* The waiter that gets the next slot: of those there is room for, the one
 * whose caller holds the fewest; of those, the one waiting longest. NULL if
 * none can start. At most O(waiting × running), both bounded by the
 * configuration; a count stops as soon as it cannot win. */
static QueueSlot *pick(const CallQueue *q) {
        QueueSlot *best = NULL;
        unsigned best_held = 0;

        assert(q);

        for (QueueSlot *s = q->oldest; s; s = s->wait_prev) {
                unsigned held;

                if (!has_room(q, s))
                        continue;
                held = held_upto(q, s->caller, best ? best_held : UINT_MAX);
                if (!best || held < best_held) {
                        best = s;
                        best_held = held;
                }
                if (best_held == 0)
                        break;          /* nobody holds fewer; older ones win ties */
        }
        return best;
}

static void set_running(CallQueue *q, QueueSlot *slot) {
        assert(q);
        assert(slot);

        slot->state = QUEUE_SLOT_RUNNING;
        LIST_PREPEND(wait, q->running, slot);
        q->n_running++;
        q->n_long += slot->long_hold;
}

/* Starts waiting slots while there is room. A start callback may release
 * slots and so come back here: the flag keeps that from recursing, the outer
 * loop picks up the freed room. */
static void dispatch(CallQueue *q) {
        QueueSlot *s;

        assert(q);

        if (q->dispatching)
                return;
        q->dispatching = true;
        while ((s = pick(q))) {
                unlink_waiting(q, s);
                set_running(q, s);
                s->start(s, s->userdata);      /* may free s */
        }
        q->dispatching = false;
}

int call_queue_submit(CallQueue *q, QueueSlot *slot, const char *caller, bool long_hold, queue_start_t start,
                      void *userdata) {
        assert(q);
        assert(slot);

        if (slot->state != QUEUE_SLOT_IDLE || !start)
                return -EINVAL;

        *slot = (QueueSlot) {
                .queue = q,
                .long_hold = long_hold,
                .start = start,
                .userdata = userdata,
        };
        (void) snprintf(slot->caller, sizeof slot->caller, "%s", caller ?: "");
        /* Nobody who could take the room is overtaken: outside dispatch()
         * a waiter is only left waiting when it cannot start (a long hold
         * past its cap), and then a newcomer that can may take the slot. */
        if (has_room(q, slot) && !pick(q)) {
                set_running(q, slot);
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
        else if (slot->state == QUEUE_SLOT_RUNNING) {
                LIST_REMOVE(wait, q->running, slot);
                q->n_running--;
                q->n_long -= slot->long_hold;
        }
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
