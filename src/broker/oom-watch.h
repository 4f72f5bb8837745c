/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* OOM detection where systemd cannot do it. On cgroup v2 systemd reports an
 * OOM kill itself (Result=oom-kill). With the memory controller on a v1
 * hierarchy (legacy and hybrid hosts) systemd 252 never notices and reports
 * a plain SIGKILL, so there we register for the v1 memcg OOM notification
 * (memory.oom_control through cgroup.event_control) when the run starts. */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "macro.h"

typedef struct OomWatch OomWatch;

/* -EOPNOTSUPP when the memory controller is not on a v1 hierarchy: then
 * systemd's own Result=oom-kill is authoritative. */
int oom_watch_start(sd_event *e, const char *control_group, OomWatch **ret);
/* The same with the v1 memory hierarchy at memory_root (for tests). */
int oom_watch_start_at(sd_event *e, const char *memory_root, const char *control_group, OomWatch **ret);

/* 1: an OOM kill happened in the run's cgroup; 0: none seen; -EAGAIN: a
 * notification came only after the cgroup was gone, so it was either an OOM
 * kill or the removal; the caller decides with the exit signal. */
int oom_watch_result(OomWatch *w);

OomWatch *oom_watch_free(OomWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(OomWatch *, oom_watch_free);
