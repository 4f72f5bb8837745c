/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/stats.[ch]: what each kind of run result counts
 * as, and the answer to {"op":"stats"}. */

#include <stdint.h>

#include "json-util.h"
#include "stats.h"
#include "test-helpers.h"

TEST(test_outcome) {
        RunResult ok = { .unit_result = "success" };
        RunResult nonzero = { .unit_result = "exit-code", .exit_code = 3 };
        RunResult signal = { .unit_result = "signal", .exit_code = -1, .signal = 6 };
        RunResult timeout = { .unit_result = "timeout", .exit_code = -1, .signal = 9, .timed_out = true };
        RunResult oom = { .unit_result = "oom-kill", .exit_code = -1, .signal = 9, .oom_killed = true };
        RunResult cancelled = { .unit_result = "signal", .exit_code = -1, .signal = 9, .cancelled = true };
        /* A cancel that came while the timeout struck: the caller's doing wins. */
        RunResult both = { .exit_code = -1, .signal = 9, .cancelled = true, .timed_out = true };
        RunResult error = { .error = "systemd said no", .exit_code = -1 };

        ASSERT_EQ_INT(stats_outcome(&ok), RUN_OUTCOME_OK);
        ASSERT_EQ_INT(stats_outcome(&nonzero), RUN_OUTCOME_NONZERO_EXIT);
        ASSERT_EQ_INT(stats_outcome(&signal), RUN_OUTCOME_NONZERO_EXIT);
        ASSERT_EQ_INT(stats_outcome(&timeout), RUN_OUTCOME_TIMEOUT);
        ASSERT_EQ_INT(stats_outcome(&oom), RUN_OUTCOME_OOM);
        ASSERT_EQ_INT(stats_outcome(&cancelled), RUN_OUTCOME_CANCELLED);
        ASSERT_EQ_INT(stats_outcome(&both), RUN_OUTCOME_CANCELLED);
        ASSERT_EQ_INT(stats_outcome(&error), RUN_OUTCOME_ERROR);
}

TEST(test_reply) {
        _cleanup_json_ json_object *j = NULL;
        RunResult ok = { .duration_usec = 80 * 1000 }, timeout = { .timed_out = true, .duration_usec = 2000000 };
        RunStats s = {}, t;

        stats_run_done(&s, &ok);
        stats_run_done(&s, &ok);
        stats_run_done(&s, &timeout);
        stats_refused(&s);
        stats_start_failed(&s);
        stats_set_pool(&s, 2, 1, 9);
        ASSERT_EQ_INT(stats_reply(&s, 2, 5, SELF_CHECK_FAILED, &j), 0);
        ASSERT_EQ_INT(run_stats_from_json(j, &t), 0);
        ASSERT_EQ_U64(t.runs[RUN_OUTCOME_OK], 2);
        ASSERT_EQ_U64(t.runs[RUN_OUTCOME_TIMEOUT], 1);
        ASSERT_EQ_U64(t.runs[RUN_OUTCOME_REFUSED], 1);
        ASSERT_EQ_U64(t.runs[RUN_OUTCOME_ERROR], 1);
        ASSERT_TRUE(t.has_pool && t.pool_size == 2 && t.pool_ready == 1 && t.pool_hits == 9);
        ASSERT_EQ_U64(t.duration_counts[1], 2);         /* 80 ms: (50, 100] */
        ASSERT_EQ_U64(t.duration_counts[5], 1);         /* 2 s: (1, 2.5] */
        ASSERT_EQ_U64(t.duration_sum_usec, 2160000);
        ASSERT_EQ_U64(t.in_flight, 2);
        ASSERT_EQ_U64(t.queued, 5);
        ASSERT_EQ_INT(t.self_check, SELF_CHECK_FAILED);

        json_object_put(j);
        ASSERT_EQ_INT(stats_reply(&s, 0, 0, SELF_CHECK_PENDING, &j), 0);
        ASSERT_STREQ(json_get_string(j, "self_check"), "pending");
        json_object_put(j);
        ASSERT_EQ_INT(stats_reply(&s, 0, 0, SELF_CHECK_PASSED, &j), 0);
        ASSERT_STREQ(json_get_string(j, "self_check"), "passed");
}

int main(void) {
        RUN(test_outcome);
        RUN(test_reply);
        return 0;
}
