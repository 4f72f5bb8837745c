/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pool-policy.h"

#include <assert.h>

/* Runs in flight decide the quiet timer: it counts from the last run's end,
 * and only while outpaced. */
static unsigned runs_changed(PoolPolicy *p, unsigned n_runs) {
        p->n_runs = n_runs;
        if (!p->outpaced || n_runs > 0) {
                if (!p->quiet_armed)
                        return 0;
                p->quiet_armed = false;
                return POOL_ACTION_DISARM_QUIET;
        }
        if (p->quiet_armed)
                return 0;
        p->quiet_armed = true;
        return POOL_ACTION_ARM_QUIET;
}

static unsigned end_outpaced(PoolPolicy *p) {
        unsigned a = POOL_ACTION_RELEASE;

        if (!p->outpaced)
                return 0;
        p->outpaced = false;
        if (p->quiet_armed) {
                p->quiet_armed = false;
                a |= POOL_ACTION_DISARM_QUIET;
        }
        return a;
}

static bool runs_are_short(const PoolPolicy *p) {
        return p->cold_run_usec < p->import_usec / POOL_OUTPACED_RUN_DIVISOR;
}

unsigned pool_policy_step(PoolPolicy *p, PoolEvent event, uint64_t arg, unsigned n_warm) {
        assert(p);

        switch (event) {
        case POOL_EVENT_TAKE_MISS:
                /* Warm units are on their way but none is ready, and runs are
                 * short next to an import: calls come far faster than
                 * replacements import, and each started now would only take
                 * systemd and the cores from the cold runs. */
                if (n_warm == 0 || p->outpaced || !runs_are_short(p))
                        return 0;
                p->outpaced = true;
                return POOL_ACTION_HOLD | runs_changed(p, p->n_runs);
        case POOL_EVENT_COLD_RUN:
                p->cold_run_usec = arg;
                return runs_are_short(p) ? 0 : end_outpaced(p);
        case POOL_EVENT_RUNS:
                return runs_changed(p, (unsigned) arg);
        case POOL_EVENT_QUIET:
                p->quiet_armed = false;
                return end_outpaced(p);
        }
        assert(!"unknown pool event");
        return 0;
}

bool pool_policy_may_start(const PoolPolicy *p, unsigned n_warm) {
        assert(p);

        return !p->busy && !p->paused && !p->broken && !p->outpaced && n_warm < p->size;
}
