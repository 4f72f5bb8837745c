/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Server-wide admission: at most max_running runs at once; the rest wait in
 * a bounded FIFO; past that, callers are told to come back later. Slots are
 * embedded in the caller's objects, so nothing here allocates per call. */

#include <stdbool.h>
#include <stdint.h>

#include "list.h"
#include "macro.h"

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
        LIST_FIELDS(QueueSlot, wait);   /* in the queue's wait list */
        QueueSlotState state;
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
 * queue is full, -EINVAL if the slot is in use. */
int call_queue_submit(CallQueue *q, QueueSlot *slot, queue_start_t start, void *userdata);

/* Takes the slot out: a waiting slot is dropped, a running one frees its
 * place and the next waiting slots start. Idempotent; safe from inside a
 * start callback. */
void call_queue_release(QueueSlot *slot);

unsigned call_queue_running(const CallQueue *q);
unsigned call_queue_waiting(const CallQueue *q);
uint64_t call_queue_max_running(const CallQueue *q);
uint64_t call_queue_max_waiting(const CallQueue *q);
/* 1-based place of a waiting slot in line, 0 if it is not waiting. */
unsigned call_queue_position(const QueueSlot *slot);
