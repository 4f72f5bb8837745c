/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Server-wide admission: at most max_running runs at once; the rest wait in
 * a bounded line; past that, callers are told to come back later. Slots are
 * embedded in the caller's objects, so nothing here allocates per call.
 *
 * Fair shares by caller (issue 37): a run cannot be preempted, so fairness is
 * decided when a slot frees. The next free slot goes to the waiter whose
 * caller holds the fewest slots (ties: the one waiting longest), so a caller
 * over its share gets nothing new while someone with less waits, and a caller
 * alone still gets every slot (work-conserving). Chosen over a fixed share
 * per caller, which would leave slots idle when one caller is alone, and over
 * plain round robin, which ignores how many a caller already holds (one
 * caller's hour-long tasks count against it, however they were admitted).
 *
 * Fewest-held-first cannot help while every slot is held for an hour, so
 * long holds (runs longer than the plain call maximum: tasks) together get at
 * most max_running - 1 slots: one slot always turns over within the call
 * maximum, and the next time it frees it goes to the waiter with the fewest.
 * (With max_running 1 there is nothing to share: long holds may take it.) */

#include <stdbool.h>
#include <stdint.h>

#include "list.h"
#include "macro.h"

#define QUEUE_CALLER_MAX 63U

typedef struct CallQueue CallQueue;
typedef struct QueueSlot QueueSlot;

/* Called when a waiting slot gets its turn; the slot is running by then. It
 * may release slots (its own included) and free their owners. */
typedef void (*queue_start_t)(QueueSlot *slot, void *userdata);

typedef enum QueueSlotState {
        QUEUE_SLOT_IDLE,
        QUEUE_SLOT_WAITING,
        QUEUE_SLOT_RUNNING,
} QueueSlotState;

struct QueueSlot {
        CallQueue *queue;
        LIST_FIELDS(QueueSlot, wait);   /* in the queue's wait list, or its running list */
        QueueSlotState state;
        /* Whose it is ("uid:1000", "http:token:NAME", …; NULL is ""): a
         * copy, so that no owner's lifetime matters here. Longer names are
         * cut, which can only make two callers share (no name the front
         * end makes is that long: HTTP token names are at most 32 bytes). */
        char caller[QUEUE_CALLER_MAX + 1];
        bool long_hold;                 /* may hold its slot longer than the call maximum */
        queue_start_t start;
        void *userdata;
};

/* max_running >= 1; max_waiting may be 0 (no waiting at all). */
int call_queue_new(uint64_t max_running, uint64_t max_waiting, CallQueue **ret);
/* Waiting slots become idle; their start callbacks never run. Running slots
 * must have been released. */
CallQueue *call_queue_free(CallQueue *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(CallQueue *, call_queue_free);

/* Every waiting slot becomes idle without starting (for shutdown). */
void call_queue_drop_waiting(CallQueue *q);

/* Returns 1 if the slot is running now (the caller starts the work itself,
 * start is not called), 0 if it waits (start runs later), -EBUSY if the
 * queue is full, -EINVAL if the slot is in use. caller and long_hold as in
 * QueueSlot. */
int call_queue_submit(CallQueue *q, QueueSlot *slot, const char *caller, bool long_hold, queue_start_t start,
                      void *userdata);

/* Takes the slot out: a waiting slot is dropped, a running one frees its
 * place and the next waiting slots start. Idempotent; safe from inside a
 * start callback. */
void call_queue_release(QueueSlot *slot);

unsigned call_queue_running(const CallQueue *q);
unsigned call_queue_waiting(const CallQueue *q);
uint64_t call_queue_max_running(const CallQueue *q);
uint64_t call_queue_max_waiting(const CallQueue *q);
/* How many running slots are caller's, and how many are long holds. */
unsigned call_queue_held(const CallQueue *q, const char *caller);
unsigned call_queue_running_long(const CallQueue *q);
/* 1-based place of a waiting slot in line by arrival, 0 if it is not
 * waiting. A caller with fewer slots may still go first. */
unsigned call_queue_position(const QueueSlot *slot);
