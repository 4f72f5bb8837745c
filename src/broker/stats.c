/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "stats.h"

#include <assert.h>

RunOutcome stats_outcome(const RunResult *res) {
        assert(res);

        /* The first that applies: why it ended says more than how. */
        if (res->error)
                return RUN_OUTCOME_ERROR;
        if (res->cancelled)
                return RUN_OUTCOME_CANCELLED;
        if (res->timed_out)
                return RUN_OUTCOME_TIMEOUT;
        if (res->oom_killed)
                return RUN_OUTCOME_OOM;
        if (res->exit_code == 0 && res->signal == 0)
                return RUN_OUTCOME_OK;
        return RUN_OUTCOME_NONZERO_EXIT;
}

void stats_run_done(RunStats *s, const RunResult *res) {
        assert(s);
        assert(res);

        run_stats_count(s, stats_outcome(res), res->duration_usec);
}

void stats_refused(RunStats *s) {
        assert(s);

        run_stats_count(s, RUN_OUTCOME_REFUSED, 0);
}

void stats_start_failed(RunStats *s) {
        assert(s);

        run_stats_count(s, RUN_OUTCOME_ERROR, 0);
}

void stats_set_pool(RunStats *s, uint64_t size, uint64_t ready, uint64_t hits) {
        assert(s);

        s->has_pool = true;
        s->pool_size = size;
        s->pool_ready = ready;
        s->pool_hits = hits;
}

void stats_set_sessions(RunStats *s, uint64_t live, uint64_t max) {
        assert(s);

        s->has_sessions = true;
        s->sessions_live = live;
        s->sessions_max = max;
}

int stats_reply(RunStats *s, unsigned in_flight, unsigned queued, SelfCheckState self_check, json_object **ret) {
        assert(s);
        assert(ret);

        s->in_flight = in_flight;
        s->queued = queued;
        assert(self_check >= 0 && self_check < _SELF_CHECK_MAX);

        s->self_check = self_check;
        return run_stats_to_json(s, ret);
}
