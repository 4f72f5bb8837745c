/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One run: a transient service started over sd-bus, watched until it is gone,
 * then released. Knows systemd, not JSON or the client protocol. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "macro.h"
#include "sandbox-properties.h"
#include "unit-names.h"

typedef struct RunResult {
        const char *error;              /* non-NULL: the sandbox did not run (start failed) */
        const char *bus_error;          /* the D-Bus error name when systemd refused to start it */
        bool pid1_away;                 /* with error: PID 1 did not answer the start (daemon-reexec) */
        /* With error: PID 1 lost the launcher before it ran anything (a
         * daemon-reexec as a PrivatePIDs= unit started, main-pid.h): a new
         * unit may take the run. */
        bool lost_launcher;
        const char *unit_result;        /* systemd's Result= */
        int exit_code;                  /* -1 when a signal ended it */
        int signal;                     /* 0 when it exited */
        bool timed_out;
        bool oom_killed;
        bool cancelled;
        uint64_t cpu_usec;              /* UINT64_MAX: unknown */
        uint64_t memory_peak;           /* UINT64_MAX: not exposed by this systemd */
        uint64_t duration_usec;
} RunResult;

typedef struct Run Run;
typedef void (*run_started_t)(Run *run, void *userdata);
typedef void (*run_done_t)(Run *run, const RunResult *result, void *userdata);

/* Starts the unit, with control_fd (the far end of the launcher's control
 * socket, or the probe's output) duplicated into the bus message: the caller
 * keeps (and should close) its own copy. Callbacks fire from the event loop;
 * started once the unit runs (and its OOM watch is in place), done exactly
 * once, after which the caller frees the run. */
int run_start(sd_bus *bus, const SandboxSpec *spec, int control_fd, run_started_t started, run_done_t done,
              void *userdata, Run **ret);

/* A warm unit changes hands: the pool's callbacks give way to its run's. */
void run_set_callbacks(Run *run, run_started_t started, run_done_t done, void *userdata);
bool run_is_started(const Run *run);
/* The run is in the unit's stdin from the start (run-capture.h), not handed
 * over once systemd's MainPID is the launcher (main-pid.h): its unit is not
 * checked for that, nor taken as lost when it ends first. */
void run_skip_main_pid_check(Run *run);

/* Description= from now on (what `systemctl` shows; description is static
 * text). Before the unit was asked for, right after: not lost. */
int run_describe(Run *run, const char *description);

/* The caller's run was handed to the unit now: its duration counts from here. */
void run_handed_off(Run *run);

/* Stops the unit because the run's time is up (a warm unit's RuntimeMaxSec=
 * is only a cap): done reports timed_out, not cancelled. */
int run_expire(Run *run);

/* Stops the whole unit (SIGKILL to its cgroup); done still fires. */
int run_cancel(Run *run);

/* Frees the run. A run that is not done yet is stopped first: its unit never
 * outlives this object, and its last reference is dropped. */
Run *run_free(Run *run);
DEFINE_TRIVIAL_CLEANUP_FUNC(Run *, run_free);

const char *run_id(const Run *run);
const char *run_unit(const Run *run);
bool run_is_done(const Run *run);
/* The unit has systemd's cgroup BPF programs (its IPIngressBytes is known,
 * which needs IPAccounting=yes): so IPAddressDeny= and IPAddressAllow= are in
 * effect. Meaningful once started. On a host without them (cgroup v1, no
 * BPF) systemd accepts those settings and does nothing. */
bool run_ip_firewall_attached(const Run *run);

/* Stops every leftover unit whose name starts with UNIT_PREFIX_RUN or
 * UNIT_PREFIX_SESSION, but those keep (if not NULL) says to leave. */
int run_sweep_stale(sd_bus *bus, bool (*keep)(const char *unit, void *userdata), void *userdata);

/* A run for the running unit UNIT_PREFIX_RUN<id>.service that an earlier
 * broker started (a warm unit kept in our fd store): watched as run_start()'s,
 * its /tmp (mounted by then) removed through tmpfs once it is gone. The
 * caller checked the unit first (pool-store.h). */
int run_adopt(sd_bus *bus, const char *id, TmpfsClient *tmpfs, run_done_t done, void *userdata, Run **ret);
/* Frees the run but leaves its unit and its /tmp as they are: a warm unit
 * whose control socket goes to our fd store across an idle exit. */
Run *run_detach(Run *run);
