/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "run-stats.h"

#include <assert.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

static const char *const outcome_table[_RUN_OUTCOME_MAX] = {
        [RUN_OUTCOME_OK] = "ok",
        [RUN_OUTCOME_NONZERO_EXIT] = "nonzero_exit",
        [RUN_OUTCOME_TIMEOUT] = "timeout",
        [RUN_OUTCOME_OOM] = "oom",
        [RUN_OUTCOME_REFUSED] = "refused",
        [RUN_OUTCOME_ERROR] = "error",
        [RUN_OUTCOME_CANCELLED] = "cancelled",
};

static const char *const self_check_table[_SELF_CHECK_MAX] = {
        [SELF_CHECK_PENDING] = "pending",
        [SELF_CHECK_PASSED] = "passed",
        [SELF_CHECK_FAILED] = "failed",
};

const uint64_t run_duration_bounds_ms[RUN_DURATION_BUCKETS] = {
        50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000,
};

const char *run_outcome_to_string(RunOutcome o) {
        return o >= 0 && o < _RUN_OUTCOME_MAX ? outcome_table[o] : NULL;
}

const char *self_check_state_to_string(SelfCheckState s) {
        return s >= 0 && s < _SELF_CHECK_MAX ? self_check_table[s] : NULL;
}

SelfCheckState self_check_state_from_string(const char *s) {
        if (!s)
                return _SELF_CHECK_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(self_check_table); i++)
                if (streq(self_check_table[i], s))
                        return (SelfCheckState) i;
        return _SELF_CHECK_INVALID;
}

void run_stats_count(RunStats *s, RunOutcome o, uint64_t duration_usec) {
        size_t b = 0;

        assert(s);
        assert(o >= 0 && o < _RUN_OUTCOME_MAX);

        s->runs[o]++;
        if (o == RUN_OUTCOME_REFUSED || o == RUN_OUTCOME_ERROR)
                return;         /* nothing ran */
        while (b < RUN_DURATION_BUCKETS && duration_usec > run_duration_bounds_ms[b] * USEC_PER_MSEC)
                b++;
        s->duration_counts[b]++;
        s->duration_sum_usec += duration_usec;
}

bool tool_stats_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n > TOOL_STATS_NAME_MAX || !(name[0] >= 'a' && name[0] <= 'z'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
                        return false;
        return true;
}

int tool_stats_add(ToolStats *t, const char *name, const ToolServerStats *add) {
        ToolServerStats *x = NULL;

        assert(t);
        assert(add);

        if (!tool_stats_name_valid(name))
                return -EINVAL;
        for (size_t i = 0; i < t->n && !x; i++)
                if (streq(t->servers[i].name, name))
                        x = &t->servers[i];
        if (!x) {
                if (t->n >= TOOL_STATS_SERVERS_MAX)
                        return -ENOSPC;
                x = &t->servers[t->n++];
                *x = (ToolServerStats) {};
                strcpy(x->name, name);
        }
        x->calls += add->calls;
        x->errors += add->errors;
        x->refused += add->refused;
        x->ms += add->ms;
        return 0;
}

static int tools_to_json(const ToolStats *t, json_object **ret) {
        _cleanup_json_ json_object *x = json_object_new_object();

        if (!x)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++) {
                const ToolServerStats *v = &t->servers[i];
                json_object *o = NULL;

                if (json_build(&o, JB_INT("calls", (int64_t) MIN(v->calls, (uint64_t) INT64_MAX)),
                               JB_INT("errors", (int64_t) MIN(v->errors, (uint64_t) INT64_MAX)),
                               JB_INT("refused", (int64_t) MIN(v->refused, (uint64_t) INT64_MAX)),
                               JB_INT("ms", (int64_t) MIN(v->ms, (uint64_t) INT64_MAX)), JB_END) < 0 ||
                    json_add(x, v->name, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(x);
        return 0;
}

int run_stats_to_json(const RunStats *s, json_object **ret) {
        _cleanup_json_ json_object *j = json_object_new_object(), *runs = json_object_new_object(),
                                   *dur = json_object_new_object(), *le = json_object_new_array(),
                                   *counts = json_object_new_array();
        int r = 0;

        assert(s);
        assert(ret);

        if (!j || !runs || !dur || !le || !counts)
                return -ENOMEM;
        for (size_t i = 0; i < _RUN_OUTCOME_MAX && r >= 0; i++)
                r = json_add_int(runs, outcome_table[i], (int64_t) s->runs[i]);
        for (size_t i = 0; i < RUN_DURATION_BUCKETS && r >= 0; i++)
                r = json_append(le, json_object_new_int64((int64_t) run_duration_bounds_ms[i]));
        for (size_t i = 0; i <= RUN_DURATION_BUCKETS && r >= 0; i++)
                r = json_append(counts, json_object_new_int64((int64_t) s->duration_counts[i]));
        if (r >= 0)
                r = json_add(dur, "le_ms", TAKE_PTR(le));
        if (r >= 0)
                r = json_add(dur, "counts", TAKE_PTR(counts));
        if (r >= 0)
                r = json_add_int(dur, "sum_us", (int64_t) s->duration_sum_usec);
        if (r >= 0)
                r = json_add_string(j, "event", "stats");
        if (r >= 0)
                r = json_add(j, "runs", TAKE_PTR(runs));
        if (r >= 0)
                r = json_add(j, "duration", TAKE_PTR(dur));
        if (r >= 0)
                r = json_add_int(j, "in_flight", (int64_t) s->in_flight);
        if (r >= 0)
                r = json_add_int(j, "queued", (int64_t) s->queued);
        if (r >= 0)
                r = json_add_string(j, "self_check", self_check_state_to_string(s->self_check) ?: "pending");
        if (r >= 0 && s->has_pool) {
                _cleanup_json_ json_object *pool = json_object_new_object();

                r = pool ? json_add_int(pool, "size", (int64_t) s->pool_size) : -ENOMEM;
                if (r >= 0)
                        r = json_add_int(pool, "ready", (int64_t) s->pool_ready);
                if (r >= 0)
                        r = json_add_int(pool, "hits", (int64_t) s->pool_hits);
                if (r >= 0)
                        r = json_add(j, "pool", TAKE_PTR(pool));
        }
        if (r >= 0 && s->has_sessions) {
                _cleanup_json_ json_object *x = json_object_new_object();

                r = x ? json_add_int(x, "live", (int64_t) s->sessions_live) : -ENOMEM;
                if (r >= 0)
                        r = json_add_int(x, "max", (int64_t) s->sessions_max);
                if (r >= 0)
                        r = json_add_int(x, "created", (int64_t) s->sessions_created);
                if (r >= 0)
                        r = json_add_int(x, "lost", (int64_t) s->sessions_lost);
                if (r >= 0)
                        r = json_add_int(x, "calls", (int64_t) s->session_calls);
                if (r >= 0)
                        r = json_add(j, "sessions", TAKE_PTR(x));
        }
        if (r >= 0 && s->has_egress) {
                _cleanup_json_ json_object *x = json_object_new_object(), *conns = json_object_new_object();

                r = x && conns ? 0 : -ENOMEM;
                for (EgressVerdict v = 0; r >= 0 && v < _EGRESS_VERDICT_MAX; v++)
                        r = json_add_int(conns, egress_verdict_to_string(v),
                                         (int64_t) MIN(s->egress_connections[v], (uint64_t) INT64_MAX));
                if (r >= 0)
                        r = json_add(x, "connections", TAKE_PTR(conns));
                if (r >= 0)
                        r = json_add_int(x, "bytes_up", (int64_t) MIN(s->egress_bytes_up, (uint64_t) INT64_MAX));
                if (r >= 0)
                        r = json_add_int(x, "bytes_down", (int64_t) MIN(s->egress_bytes_down, (uint64_t) INT64_MAX));
                if (r >= 0)
                        r = json_add(j, "egress", TAKE_PTR(x));
        }
        if (r >= 0 && s->has_tools) {
                json_object *x = NULL;

                r = tools_to_json(&s->tools, &x);
                if (r >= 0)
                        r = json_add(j, "tool_calls", x);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

/* A non-negative integer member (or array element). */
static bool get_u64(json_object *v, uint64_t *ret) {
        int64_t x;

        if (!json_object_is_type(v, json_type_int) || (x = json_object_get_int64(v)) < 0)
                return false;
        *ret = (uint64_t) x;
        return true;
}

/* The histogram, if its bounds are ours (a broker of another version may
 * use others): true with counts and sum filled in. */
static bool duration_from_json(json_object *dur, uint64_t counts[static RUN_DURATION_BUCKETS + 1],
                               uint64_t *ret_sum_usec) {
        json_object *le = json_get(dur, "le_ms"), *c = json_get(dur, "counts");
        uint64_t v;

        if (!json_object_is_type(le, json_type_array) || !json_object_is_type(c, json_type_array) ||
            json_object_array_length(le) != RUN_DURATION_BUCKETS ||
            json_object_array_length(c) != RUN_DURATION_BUCKETS + 1 || !get_u64(json_get(dur, "sum_us"), ret_sum_usec))
                return false;
        for (size_t i = 0; i < RUN_DURATION_BUCKETS; i++)
                if (!get_u64(json_object_array_get_idx(le, i), &v) || v != run_duration_bounds_ms[i])
                        return false;
        for (size_t i = 0; i <= RUN_DURATION_BUCKETS; i++)
                if (!get_u64(json_object_array_get_idx(c, i), &counts[i]))
                        return false;
        return true;
}

static int tools_from_json(json_object *v, ToolStats *ret) {
        if (!json_object_is_type(v, json_type_object))
                return -EBADMSG;
        json_object_object_foreach(v, name, counts) {
                ToolServerStats c = {};

                if (!get_u64(json_get(counts, "calls"), &c.calls) || !get_u64(json_get(counts, "errors"), &c.errors) ||
                    !get_u64(json_get(counts, "refused"), &c.refused) || !get_u64(json_get(counts, "ms"), &c.ms))
                        return -EBADMSG;
                /* A name twice, or past the bound: not kept. */
                for (size_t i = 0; i < ret->n; i++)
                        if (streq(ret->servers[i].name, name))
                                return -EBADMSG;
                if (tool_stats_add(ret, name, &c) < 0)
                        return -EBADMSG;
        }
        return 0;
}

int run_stats_from_json(json_object *j, RunStats *ret) {
        RunStats s = {};
        json_object *runs, *pool, *sessions, *egress;
        const char *ev;

        assert(ret);

        ev = json_get_string(j, "event");
        runs = json_get(j, "runs");
        if (!ev || !streq(ev, "stats") || !json_object_is_type(runs, json_type_object))
                return -EBADMSG;
        for (size_t i = 0; i < _RUN_OUTCOME_MAX; i++) {
                json_object *v = json_get(runs, outcome_table[i]);
                /* An outcome an older broker does not count stays 0. */
                if (v && !get_u64(v, &s.runs[i]))
                        return -EBADMSG;
        }
        if (!get_u64(json_get(j, "in_flight"), &s.in_flight) || !get_u64(json_get(j, "queued"), &s.queued))
                return -EBADMSG;
        s.self_check = self_check_state_from_string(json_get_string(j, "self_check"));
        if (s.self_check < 0)
                return -EBADMSG;
        pool = json_get(j, "pool");
        if (pool) {
                if (!get_u64(json_get(pool, "size"), &s.pool_size) ||
                    !get_u64(json_get(pool, "ready"), &s.pool_ready) || !get_u64(json_get(pool, "hits"), &s.pool_hits))
                        return -EBADMSG;
                s.has_pool = true;
        }
        sessions = json_get(j, "sessions");
        if (sessions) {
                if (!get_u64(json_get(sessions, "live"), &s.sessions_live) ||
                    !get_u64(json_get(sessions, "max"), &s.sessions_max) ||
                    !get_u64(json_get(sessions, "created"), &s.sessions_created) ||
                    !get_u64(json_get(sessions, "lost"), &s.sessions_lost) ||
                    !get_u64(json_get(sessions, "calls"), &s.session_calls))
                        return -EBADMSG;
                s.has_sessions = true;
        }
        egress = json_get(j, "egress");
        if (egress) {
                json_object *conns = json_get(egress, "connections");

                if (!json_object_is_type(conns, json_type_object) ||
                    !get_u64(json_get(egress, "bytes_up"), &s.egress_bytes_up) ||
                    !get_u64(json_get(egress, "bytes_down"), &s.egress_bytes_down))
                        return -EBADMSG;
                for (EgressVerdict v = 0; v < _EGRESS_VERDICT_MAX; v++) {
                        json_object *n = json_get(conns, egress_verdict_to_string(v));
                        /* A verdict an older broker does not know stays 0. */
                        if (n && !get_u64(n, &s.egress_connections[v]))
                                return -EBADMSG;
                }
                s.has_egress = true;
        }
        if (json_get(j, "tool_calls")) {
                if (tools_from_json(json_get(j, "tool_calls"), &s.tools) < 0)
                        return -EBADMSG;
                s.has_tools = true;
        }
        s.has_duration = duration_from_json(json_get(j, "duration"), s.duration_counts, &s.duration_sum_usec);
        if (!s.has_duration) {
                memset(s.duration_counts, 0, sizeof s.duration_counts);
                s.duration_sum_usec = 0;
        }
        *ret = s;
        return 0;
}
