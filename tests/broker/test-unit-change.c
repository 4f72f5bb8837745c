/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/unit-change.[ch], on the sequences systemd 252
 * sends for a run's unit (watched with busctl monitor): each signal of the
 * Service interface comes right before one of the Unit interface, which
 * carries ActiveState and Job. */

#include "test-helpers.h"
#include "unit-change.h"

#define SERVICE ((UnitChange) { .unit_interface = false })
#define UNIT(s, j) ((UnitChange) { .unit_interface = true, .active_state = (s), .job = (j) })

static const char START_JOB[] = "/org/freedesktop/systemd1/job/711";
static const char STOP_JOB[] = "/org/freedesktop/systemd1/job/833";

static bool needs(UnitChange change, bool running, const char *seen_state, bool seen_job) {
        UnitSeen seen = { .running = running, .active_state = seen_state, .has_job = seen_job };
        return unit_change_needs_getall(&change, &seen);
}

/* Before the unit runs, every signal is asked about, the type's too. */
TEST(test_starting) {
        ASSERT_TRUE(needs(SERVICE, false, NULL, false));
        ASSERT_TRUE(needs(UNIT("inactive", START_JOB), false, NULL, false));
        ASSERT_TRUE(needs(UNIT("activating", START_JOB), false, "activating", true));
        ASSERT_TRUE(needs(UNIT("active", NULL), false, "activating", true));
        ASSERT_TRUE(needs(UNIT("active", NULL), false, "active", false));
}

/* A warm unit's take changes its Description, nothing else: no GetAll. */
TEST(test_take) {
        ASSERT_FALSE(needs(SERVICE, true, "active", false));
        ASSERT_FALSE(needs(UNIT("active", NULL), true, "active", false));
}

/* Its end, or a stop someone asked for. */
TEST(test_end) {
        ASSERT_TRUE(needs(UNIT("deactivating", NULL), true, "active", false));
        ASSERT_TRUE(needs(UNIT("failed", NULL), true, "active", false));
        ASSERT_TRUE(needs(UNIT("inactive", NULL), true, "active", false));
        ASSERT_TRUE(needs(UNIT("active", STOP_JOB), true, "active", false));
        ASSERT_TRUE(needs(UNIT("failed", STOP_JOB), true, "active", false));
}

/* What an earlier skip of "the same state as the last GetAll" missed
 * (test-pool's preload that kills the interpreter, now and then): that
 * GetAll came while a stop job sat on the failed unit, so it could not end
 * the run; the job's removal leaves the state as it was, and only the
 * GetAll after it sees the unit done. */
TEST(test_job_gone_same_state) {
        ASSERT_TRUE(needs(UNIT("failed", NULL), true, "failed", true));
        ASSERT_TRUE(needs(UNIT("failed", NULL), true, "failed", false));
        ASSERT_TRUE(needs(UNIT("inactive", NULL), true, "inactive", false));
        ASSERT_TRUE(needs(UNIT("active", NULL), true, "active", true));
}

/* Not shown, or nothing seen yet: ask. */
TEST(test_unknown) {
        ASSERT_TRUE(needs(UNIT(NULL, NULL), true, "active", false));
        ASSERT_TRUE(needs(UNIT("active", NULL), true, NULL, false));
}

int main(void) {
        RUN(test_starting);
        RUN(test_take);
        RUN(test_end);
        RUN(test_job_gone_same_state);
        RUN(test_unknown);
        return 0;
}
