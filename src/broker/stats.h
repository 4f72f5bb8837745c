/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's count of runs for {"op":"stats"} (run-stats.h): it sees every
 * run of every front end, so it is the one to count them. Knows RunResult,
 * not sockets. */

#include <json-c/json.h>

#include "run-stats.h"
#include "run.h"

/* What a finished run counts as. */
RunOutcome stats_outcome(const RunResult *res);

/* A run ended (its done callback). */
void stats_run_done(RunStats *s, const RunResult *res);

/* A run was refused before it started (self-check failed, broker busy). */
void stats_refused(RunStats *s);

/* systemd could not be asked for a run's unit at all. */
void stats_start_failed(RunStats *s);

/* The warm pool as of now: units to keep, ready ones, runs that took one. */
void stats_set_pool(RunStats *s, uint64_t size, uint64_t ready, uint64_t hits);

/* Sessions: live ones and the cap, as of now. */
void stats_set_sessions(RunStats *s, uint64_t live, uint64_t max);

/* The answer to {"op":"stats"}: the counters, and the gauges as of now. */
int stats_reply(RunStats *s, unsigned in_flight, unsigned queued, SelfCheckState self_check, json_object **ret);
