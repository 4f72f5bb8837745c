/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The warm pool's decisions, apart from systemd and the event loop: when a
 * replacement may start, when short runs outpace the pool (and the units
 * still importing are held to a few percent of a CPU), and when that ends.
 * pool.c feeds it what happens and does what it answers; a unit test drives
 * it through the sequences the benchmark tuned it on (pool.h says why). */

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

/* Outpaced: a run found warm units only still importing, and the runs are
 * short next to an import (the last cold one took less than this part of
 * the last import). Beside long runs refills keep up and pay: a hit saves
 * more than the import takes from the runs beside it. */
#define POOL_OUTPACED_RUN_DIVISOR 4
/* Outpaced, no replacement until no run was in flight for this long.
 * Callers back to back leave gaps of milliseconds between their calls,
 * agents between thoughts far longer. */
#define POOL_QUIET_USEC (500 * USEC_PER_MSEC)
/* Meanwhile a warm unit still importing may use this much of a CPU (its
 * CPUQuota=, in percent): its imports would slow every run beside it, even
 * at the lowest weight (two vCPUs are often one core's two threads). */
#define POOL_OUTPACED_QUOTA_PERCENT 5

typedef struct PoolPolicy {
        unsigned size;                  /* warm units to keep */
        bool busy;                      /* every slot taken, runs waiting, a run's unit starting */
        bool paused;                    /* a start failed, or units were stopped by others: until a run asks */
        bool broken;                    /* warm units kept failing: cold path only */
        bool outpaced;
        bool quiet_armed;               /* the POOL_QUIET_USEC timer runs */
        unsigned n_runs;                /* runs in flight */
        uint64_t import_usec;           /* the last unit's start to imported, not held; 0: none yet */
        uint64_t cold_run_usec;         /* the last cold run's own time */
} PoolPolicy;

typedef enum PoolEvent {
        POOL_EVENT_TAKE_MISS,           /* a run found no ready unit */
        POOL_EVENT_COLD_RUN,            /* a run on a cold unit ended; arg: its time in usec */
        POOL_EVENT_RUNS,                /* the runs in flight changed; arg: how many now */
        POOL_EVENT_QUIET,               /* the quiet timer fired */
} PoolEvent;

/* What the caller does, any combination. */
typedef enum PoolAction {
        POOL_ACTION_HOLD = 1 << 0,              /* outpaced now: hold the importing units, say so */
        POOL_ACTION_RELEASE = 1 << 1,           /* no longer: a run's quota back, refill */
        POOL_ACTION_ARM_QUIET = 1 << 2,         /* start the quiet timer (POOL_QUIET_USEC) */
        POOL_ACTION_DISARM_QUIET = 1 << 3,
} PoolAction;

/* Applies event to the state; n_warm counts the warm units started and not
 * yet taken (ready or still importing). Returns PoolAction flags. */
unsigned pool_policy_step(PoolPolicy *p, PoolEvent event, uint64_t arg, unsigned n_warm);

/* Whether one more warm unit may start now. */
bool pool_policy_may_start(const PoolPolicy *p, unsigned n_warm);
