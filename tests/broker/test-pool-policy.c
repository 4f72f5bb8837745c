/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/pool-policy.[ch]: when the warm pool refills,
 * when short runs outpace it, and what ends that, driven through the
 * sequences test-pool and the benchmark see (back-to-back short calls, a
 * long run beside importing units, an agent's pauses). */

#include "pool-policy.h"
#include "test-helpers.h"

#define MSEC USEC_PER_MSEC
#define IMPORT (4000 * MSEC)            /* a data-stack preload on two cores */

static PoolPolicy fresh(void) {
        return (PoolPolicy) { .size = 2, .import_usec = IMPORT };
}

TEST(test_may_start) {
        PoolPolicy p = fresh();

        ASSERT_TRUE(pool_policy_may_start(&p, 0));
        ASSERT_TRUE(pool_policy_may_start(&p, 1));
        ASSERT_FALSE(pool_policy_may_start(&p, 2));     /* full */
        p.busy = true;
        ASSERT_FALSE(pool_policy_may_start(&p, 0));
        p = fresh();
        p.paused = true;
        ASSERT_FALSE(pool_policy_may_start(&p, 0));
        p = fresh();
        p.broken = true;
        ASSERT_FALSE(pool_policy_may_start(&p, 0));
        p = fresh();
        p.outpaced = true;
        ASSERT_FALSE(pool_policy_may_start(&p, 0));
        p = (PoolPolicy) { .size = 0 };
        ASSERT_FALSE(pool_policy_may_start(&p, 0));     /* MCP_EXEC_POOL_SIZE=0 */
}

/* Before any unit imported there is nothing to compare runs with. */
TEST(test_no_import_yet) {
        PoolPolicy p = { .size = 2 };

        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, 50 * MSEC, 2), 0);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 2), 0);
        ASSERT_FALSE(p.outpaced);
}

/* A miss with nothing on its way (pool off, or all taken) is no sign of
 * being outpaced: there is nothing to hold. */
TEST(test_miss_without_units) {
        PoolPolicy p = fresh();

        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, 50 * MSEC, 0), 0);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 0), 0);
        ASSERT_FALSE(p.outpaced);
}

/* `pass` back to back: short cold runs, a miss while units import. */
TEST(test_back_to_back_short_runs) {
        PoolPolicy p = fresh();
        unsigned a;

        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_RUNS, 1, 2), 0);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, 100 * MSEC, 2), 0);
        /* The miss comes with a run in flight: held, no quiet timer yet. */
        a = pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 2);
        ASSERT_EQ_INT(a, POOL_ACTION_HOLD);
        ASSERT_TRUE(p.outpaced);
        ASSERT_FALSE(pool_policy_may_start(&p, 0));
        /* A second miss changes nothing. */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 2), 0);
        /* Runs end: the quiet timer counts from the last one's end... */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_RUNS, 0, 2), POOL_ACTION_ARM_QUIET);
        ASSERT_TRUE(p.quiet_armed);
        /* ...and is not re-armed by another "none in flight". */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_RUNS, 0, 2), 0);
        /* The next call milliseconds later stops it. */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_RUNS, 1, 2), POOL_ACTION_DISARM_QUIET);
        ASSERT_FALSE(p.quiet_armed);
        /* Short cold runs keep it outpaced. */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, 120 * MSEC, 2), 0);
        ASSERT_TRUE(p.outpaced);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_RUNS, 0, 2), POOL_ACTION_ARM_QUIET);
        /* The pause: refills again, units get a run's quota back. */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_QUIET, 0, 2), POOL_ACTION_RELEASE);
        ASSERT_FALSE(p.outpaced);
        ASSERT_FALSE(p.quiet_armed);
        ASSERT_TRUE(pool_policy_may_start(&p, 0));
        /* A stray timer after that does nothing. */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_QUIET, 0, 2), 0);
}

/* The miss comes when no run is in flight (the caller's own run has not
 * been counted yet): the quiet timer starts with the hold. */
TEST(test_miss_when_idle) {
        PoolPolicy p = fresh();

        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, 100 * MSEC, 1), 0);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 1), POOL_ACTION_HOLD | POOL_ACTION_ARM_QUIET);
        ASSERT_TRUE(p.outpaced);
        ASSERT_TRUE(p.quiet_armed);
}

/* The boundary: a run of a quarter of an import is long enough. */
TEST(test_divisor_boundary) {
        PoolPolicy p = fresh();

        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, IMPORT / POOL_OUTPACED_RUN_DIVISOR, 2), 0);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 2), 0);
        ASSERT_FALSE(p.outpaced);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, IMPORT / POOL_OUTPACED_RUN_DIVISOR - 1, 2), 0);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 2) & POOL_ACTION_HOLD, POOL_ACTION_HOLD);
        ASSERT_TRUE(p.outpaced);
}

/* Beside a long run the pool refills: a long cold run ends being outpaced
 * at once, without waiting for a pause, and stops the quiet timer. */
TEST(test_long_run_ends_outpaced) {
        PoolPolicy p = fresh();

        (void) pool_policy_step(&p, POOL_EVENT_COLD_RUN, 100 * MSEC, 2);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 2), POOL_ACTION_HOLD | POOL_ACTION_ARM_QUIET);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_COLD_RUN, 3000 * MSEC, 2),
                      POOL_ACTION_RELEASE | POOL_ACTION_DISARM_QUIET);
        ASSERT_FALSE(p.outpaced);
        ASSERT_FALSE(p.quiet_armed);
        /* Not outpaced: runs in flight never arm the timer. */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_RUNS, 0, 2), 0);
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_RUNS, 3, 2), 0);
        /* And a miss after a long run is no sign either. */
        ASSERT_EQ_INT(pool_policy_step(&p, POOL_EVENT_TAKE_MISS, 0, 2), 0);
}

int main(void) {
        RUN(test_may_start);
        RUN(test_no_import_yet);
        RUN(test_miss_without_units);
        RUN(test_back_to_back_short_runs);
        RUN(test_miss_when_idle);
        RUN(test_divisor_boundary);
        RUN(test_long_run_ends_outpaced);
        return 0;
}
