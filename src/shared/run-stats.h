/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the runs came to: the broker counts every run of every front end and
 * answers {"op":"stats"} with this; the front end turns it into metrics and
 * its health answer. Counters start at zero with each broker process.
 *
 *   {"event":"stats","runs":{"ok":N,"nonzero_exit":N,…},
 *    "duration":{"le_ms":[…],"counts":[…],"sum_us":N},
 *    "in_flight":N,"queued":N,"self_check":"pending|passed|failed",
 *    "pool":{"size":N,"ready":N,"hits":N},
 *    "sessions":{"live":N,"max":N,"created":N,"lost":N,"calls":N},
 *    "egress":{"connections":{"<verdict>":N,…},"bytes_up":N,"bytes_down":N},
 *    "tool_calls":{"<server>":{"calls":N,"errors":N,"refused":N,"ms":N},…}}
 *
 * "egress" (issue 22) only from a broker with egress policies: what
 * mcp-exec-egressd reported of the runs' connections (egress-proto.h).
 * "tool_calls" (issue 40) only from a broker with code mode (servers.d has a
 * server): what mcp-exec-toolsd counted of the runs' and sessions' tool
 * calls, per server (tools-proto.h), at most TOOL_STATS_SERVERS_MAX names.
 *
 * "counts" has one entry per bound of "le_ms" (runs that took at most it and
 * more than the bound before) and one more for those above the last. */

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "egress-proto.h"

typedef enum RunOutcome {
        RUN_OUTCOME_OK,                 /* "ok": exit status 0 */
        RUN_OUTCOME_NONZERO_EXIT,       /* "nonzero_exit": another status, or a signal of its own */
        RUN_OUTCOME_TIMEOUT,            /* "timeout": killed at its timeout */
        RUN_OUTCOME_OOM,                /* "oom": killed at the memory limit */
        RUN_OUTCOME_REFUSED,            /* "refused": not started (self-check failed, broker busy) */
        RUN_OUTCOME_ERROR,              /* "error": systemd did not start it */
        RUN_OUTCOME_CANCELLED,          /* "cancelled": its caller cancelled it or went away */
        _RUN_OUTCOME_MAX,
        _RUN_OUTCOME_INVALID = -EINVAL,
} RunOutcome;

const char *run_outcome_to_string(RunOutcome o);

typedef enum SelfCheckState {
        SELF_CHECK_PENDING,
        SELF_CHECK_PASSED,
        SELF_CHECK_FAILED,
        _SELF_CHECK_MAX,
        _SELF_CHECK_INVALID = -EINVAL,
} SelfCheckState;

const char *self_check_state_to_string(SelfCheckState s);
SelfCheckState self_check_state_from_string(const char *s);

/* Upper bounds of the duration histogram's buckets, in milliseconds; a last
 * bucket (+Inf) follows. From a pure `pass` (~50 ms) to the longest timeout. */
#define RUN_DURATION_BUCKETS 11
extern const uint64_t run_duration_bounds_ms[RUN_DURATION_BUCKETS];

/* Tool calls per server (code mode), summed over runs: as many names as
 * servers.d allows, each as it allows; a name past them is not kept. */
#define TOOL_STATS_SERVERS_MAX 64
#define TOOL_STATS_NAME_MAX 32

typedef struct ToolServerStats {
        char name[TOOL_STATS_NAME_MAX + 1];
        uint64_t calls;                 /* every call naming the server */
        uint64_t errors;                /* of them: failed (timeout, upstream, isError, ...) */
        uint64_t refused;               /* of them: refused by policy or a cap */
        uint64_t ms;                    /* the time they took */
} ToolServerStats;

typedef struct ToolStats {
        size_t n;
        ToolServerStats servers[TOOL_STATS_SERVERS_MAX];
} ToolStats;

/* True if name is one servers.d could have ([a-z][a-z0-9_]*, at most 32). */
bool tool_stats_name_valid(const char *name);

/* Adds one server's counts; -EINVAL for a name servers.d could not have,
 * -ENOSPC for a new name past TOOL_STATS_SERVERS_MAX (not kept). */
int tool_stats_add(ToolStats *t, const char *name, const ToolServerStats *add);

typedef struct RunStats {
        uint64_t runs[_RUN_OUTCOME_MAX];
        bool has_duration;              /* run_stats_from_json(): false if the bounds on the wire were not ours */
        uint64_t duration_counts[RUN_DURATION_BUCKETS + 1];     /* per bucket, not cumulative */
        uint64_t duration_sum_usec;
        uint64_t in_flight;             /* runs going (units started) */
        uint64_t queued;                /* runs waiting for a slot */
        SelfCheckState self_check;
        bool has_pool;                  /* the warm pool's numbers are known */
        uint64_t pool_size;             /* warm units to keep (0: none, or the pool gave up) */
        uint64_t pool_ready;            /* warm units ready now */
        uint64_t pool_hits;             /* runs that took a warm unit */
        bool has_sessions;              /* the sessions' numbers are known */
        uint64_t sessions_live;         /* sessions now (starting ones too) */
        uint64_t sessions_max;          /* MCP_EXEC_MAX_SESSIONS */
        uint64_t sessions_created;      /* handed to a caller */
        uint64_t sessions_lost;         /* ended by their interpreter's end (OOM, crash, a kill after a timeout) */
        uint64_t session_calls;         /* calls run in sessions */
        bool has_egress;                /* egress policies are configured: the counts are known */
        uint64_t egress_connections[_EGRESS_VERDICT_MAX];       /* ended connections, by verdict */
        uint64_t egress_bytes_up, egress_bytes_down;
        bool has_tools;                 /* code mode is configured: the tool counts are known */
        ToolStats tools;
} RunStats;

/* Counts a run that ended (not a refused one) and its duration. */
void run_stats_count(RunStats *s, RunOutcome o, uint64_t duration_usec);

/* The wire form above; the counters as they are, in_flight, queued and
 * self_check as filled in by the caller. */
int run_stats_to_json(const RunStats *s, json_object **ret);

/* The reverse, for the front end: -EBADMSG if it is no stats event. */
int run_stats_from_json(json_object *j, RunStats *ret);
