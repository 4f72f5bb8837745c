/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "run.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bus-properties.h"
#include "log.h"
#include "main-pid.h"
#include "oom-watch.h"
#include "macro.h"
#include "tmpfs-client.h"
#include "unit-change.h"
#include "util.h"

#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define MANAGER_IFACE "org.freedesktop.systemd1.Manager"

struct Run {
        sd_bus *bus;
        char id[33];
        char unit[MAX(sizeof(UNIT_PREFIX_RUN), sizeof(UNIT_PREFIX_SESSION)) + 32 + sizeof(".service")];
        char *path;                     /* the unit's object path */
        char *job;                      /* the start job's object path */

        sd_bus_slot *slot_changed;      /* PropertiesChanged on the unit */
        sd_bus_slot *slot_job_removed;  /* Manager.JobRemoved */
        sd_bus_slot *slot_call;         /* StartTransientUnit, then GetAll */
        sd_bus_slot *slot_stop;
        sd_event_source *getall_retry;  /* GetAll again after systemd went away (daemon-reexec) */
        unsigned n_getall_retries;

        /* PrivatePIDs=: "started" waits for systemd's MainPID to be the
         * launcher (main-pid.h), asked with GetProcesses. */
        bool check_main_pid, main_pid_seen, lost_launcher;
        const char *fail_error;         /* static text: why the run failed once its unit is gone */
        char *launcher;
        sd_bus_slot *slot_procs;
        sd_event_source *main_pid_retry;
        unsigned n_main_pid_checks;
        uint32_t main_pid;              /* from the last GetAll */

        /* The run's /tmp: mounted before the unit starts, removed once it is
         * gone (sandbox-properties.c binds it on /tmp and /var/tmp). */
        TmpfsClient *tmpfs;
        TmpfsCall *tmp_call;
        sd_bus_message *start_call;     /* StartTransientUnit, sent once the /tmp is there */
        const char *describe_later;     /* run_describe() before the start was sent (static text) */
        bool tmp_asked;
        char error[256];

        bool start_sent, start_replied, pid1_away, job_done, started_notified, done, cancelled, stop_sent, getall_again;
        bool stop_job_seen;             /* someone asked systemd to stop the unit */
        bool expired;                   /* stopped by run_expire(): the run's timeout */
        char *bus_error;                /* why systemd refused to start it */
        char *job_result;
        uint64_t start_usec;
        uint64_t handoff_usec;          /* when its caller's run was handed to it (CLOCK_MONOTONIC) */

        /* From the last GetAll. */
        char *active_state, *unit_result, *control_group;
        OomWatch *oom_watch;
        int32_t exec_main_code, exec_main_status;
        uint64_t cpu_nsec, memory_peak, main_start_usec, main_exit_usec;
        bool has_memory_peak;
        bool has_job;                   /* a job on the unit (unit-change.h) */
        /* IPIngressBytes (IPAccounting=): UINT64_MAX when systemd has no
         * cgroup BPF for the unit, so neither its IP firewall. */
        uint64_t ip_ingress_bytes;

        run_started_t on_started;
        run_done_t on_done;
        void *userdata;
};

const char *run_id(const Run *run) {
        assert(run);

        return run->id;
}

const char *run_unit(const Run *run) {
        assert(run);

        return run->unit;
}

bool run_ip_firewall_attached(const Run *run) {
        assert(run);

        return run->ip_ingress_bytes != UINT64_MAX;
}

bool run_is_done(const Run *run) {
        assert(run);

        return run->done;
}

/* The unit is gone, never came, or its owner is: its /tmp goes too. */
static void run_release_tmp(Run *run) {
        assert(run);

        run->tmp_call = tmpfs_call_cancel(run->tmp_call);
        if (!run->tmp_asked)
                return;
        run->tmp_asked = false;
        (void) tmpfs_client_umount(run->tmpfs, run->id);
}

static void run_finish(Run *run, const char *error) {
        RunResult res = {
                .error = error,
                .unit_result = run->unit_result,
                .exit_code = -1,
                .cpu_usec = UINT64_MAX,
                .memory_peak = UINT64_MAX,
                .cancelled = run->cancelled && !run->expired,
                .bus_error = run->bus_error,
                .pid1_away = run->pid1_away,
                .lost_launcher = run->lost_launcher,
        };

        if (run->done)
                return;
        run->done = true;
        run->slot_changed = sd_bus_slot_unref(run->slot_changed);
        run->slot_job_removed = sd_bus_slot_unref(run->slot_job_removed);
        run->slot_call = sd_bus_slot_unref(run->slot_call);
        run->slot_procs = sd_bus_slot_unref(run->slot_procs);
        run->main_pid_retry = sd_event_source_disable_unref(run->main_pid_retry);
        run->start_call = sd_bus_message_unref(run->start_call);
        run_release_tmp(run);

        if (!error) {
                /* ExecMainCode is a CLD_* code: 1 exited, 2 killed, 3 dumped. */
                if (run->exec_main_code == 1)
                        res.exit_code = run->exec_main_status;
                else if (run->exec_main_code == 2 || run->exec_main_code == 3)
                        res.signal = run->exec_main_status;
                res.timed_out = run->expired || (run->unit_result && streq(run->unit_result, "timeout"));
                res.oom_killed = run->unit_result && streq(run->unit_result, "oom-kill");
                if (!res.oom_killed && run->oom_watch) {
                        int o = oom_watch_result(run->oom_watch);
                        /* Ambiguous only when we woke after the cgroup was
                         * gone: then an unexplained SIGKILL (Result=signal: not
                         * a stop systemd was asked for) means the OOM killer. */
                        res.oom_killed = !run->expired &&
                                         (o > 0 || (o == -EAGAIN && res.signal == SIGKILL && !res.timed_out &&
                                                   !run->cancelled && !run->stop_job_seen && run->unit_result &&
                                                   streq(run->unit_result, "signal")));
                }
                if (res.timed_out || res.oom_killed) {
                        res.exit_code = -1;
                        if (res.signal == 0)
                                res.signal = 9;
                }
                if (run->cpu_nsec != UINT64_MAX)
                        res.cpu_usec = run->cpu_nsec / 1000;
                if (run->has_memory_peak && run->memory_peak != UINT64_MAX)
                        res.memory_peak = run->memory_peak;
        }
        /* A warm unit started long before its run: count from the hand-off. */
        if (run->handoff_usec > 0)
                res.duration_usec = (run->main_exit_usec >= run->handoff_usec ? run->main_exit_usec : now_usec()) -
                                    run->handoff_usec;
        else if (run->main_start_usec > 0 && run->main_exit_usec >= run->main_start_usec)
                res.duration_usec = run->main_exit_usec - run->main_start_usec;
        else
                res.duration_usec = now_usec() - run->start_usec;

        /* Drop our reference: CollectMode=inactive-or-failed then unloads it.
         * (No unit was asked for if its /tmp could not be had.) */
        if (run->start_replied)
                (void) sd_bus_call_method_async(run->bus, NULL, SYSTEMD_SERVICE, run->path,
                                                "org.freedesktop.systemd1.Unit", "Unref", NULL, NULL, NULL);

        run->on_done(run, &res, run->userdata);
}

typedef struct UnitProperties {
        Run *run;
        bool has_job;
} UnitProperties;

static int read_unit_property(sd_bus_message *m, const char *name, void *userdata) {
        UnitProperties *p = userdata;
        Run *run = p->run;
        int r;

        if (streq(name, "ActiveState"))
                r = bus_read_variant_string(m, &run->active_state);
        else if (streq(name, "ControlGroup"))
                r = bus_read_variant_string(m, &run->control_group);
        else if (streq(name, "Result"))
                r = bus_read_variant_string(m, &run->unit_result);
        else if (streq(name, "ExecMainCode"))
                r = sd_bus_message_read(m, "v", "i", &run->exec_main_code);
        else if (streq(name, "ExecMainStatus"))
                r = sd_bus_message_read(m, "v", "i", &run->exec_main_status);
        else if (streq(name, "MainPID"))
                r = sd_bus_message_read(m, "v", "u", &run->main_pid);
        else if (streq(name, "CPUUsageNSec"))
                r = sd_bus_message_read(m, "v", "t", &run->cpu_nsec);
        else if (streq(name, "MemoryPeak")) {
                r = sd_bus_message_read(m, "v", "t", &run->memory_peak);
                run->has_memory_peak = r >= 0;
        } else if (streq(name, "IPIngressBytes"))
                r = sd_bus_message_read(m, "v", "t", &run->ip_ingress_bytes);
        else if (streq(name, "ExecMainStartTimestampMonotonic"))
                r = sd_bus_message_read(m, "v", "t", &run->main_start_usec);
        else if (streq(name, "ExecMainExitTimestampMonotonic"))
                r = sd_bus_message_read(m, "v", "t", &run->main_exit_usec);
        else if (streq(name, "Job")) {
                const char *job;
                r = bus_read_variant_job(m, &job);
                p->has_job = r >= 0 && job;
        } else
                return 0;
        return r < 0 ? r : 1;
}

/* The unit's properties from GetAll into run; 1 if a job is queued on it. */
static int parse_properties(Run *run, sd_bus_message *m) {
        UnitProperties p = { .run = run };
        int r;

        assert(run);
        assert(m);

        r = bus_read_properties(m, read_unit_property, &p);
        if (r < 0)
                return r;
        return p.has_job;
}

static int get_all(Run *run);

static void run_notify_started(Run *run) {
        int r;

        assert(run);

        if (run->started_notified)
                return;
        run->started_notified = true;
        /* Before the caller learns that the unit runs (and only then sends the
         * code), so no OOM can happen unwatched. */
        if (!isempty(run->control_group)) {
                r = oom_watch_start(sd_bus_get_event(run->bus), run->control_group, &run->oom_watch);
                if (r < 0 && r != -EOPNOTSUPP)
                        log_warning_errno(r, "Cannot watch %s for OOM kills, ignoring: %m", run->unit);
                else
                        log_debug("OOM watch for %s: %s", run->control_group, r < 0 ? "systemd's" : "v1 memcg");
        }
        if (run->on_started)
                run->on_started(run, run->userdata);
}

static bool state_is_final(const char *s) {
        return s && (streq(s, "inactive") || streq(s, "failed"));
}

static int on_getall_retry(sd_event_source *es, uint64_t usec, void *userdata) {
        Run *run = userdata;

        run->getall_retry = sd_event_source_disable_unref(run->getall_retry);
        if (!run->done)
                (void) get_all(run);
        return 0;
}

/* The error says PID 1 was away from the bus, not that it refused anything:
 * systemd drops its bus connection while it re-executes. */
static bool run_bus_error_is_pid1_away(const sd_bus_error *e) {
        return e && (sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.NoReply") ||
                     sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.ServiceUnknown") ||
                     sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.NameHasNoOwner"));
}

/* The executor's own exit (main-pid.h): 0 once it handed the launcher
 * over, 1 if it could not (PID 1's end of the socket was gone). The launcher
 * exits with neither before it got a run (LAUNCH_EXIT_FAILED, 125). */
static bool run_lost_launcher(const Run *run) {
        return run->lost_launcher ||
               (run->check_main_pid && !run->main_pid_seen && !run->cancelled && run->exec_main_code == CLD_EXITED &&
                (run->exec_main_status == EXIT_SUCCESS || run->exec_main_status == EXIT_FAILURE));
}

/* The unit ended: how the run went. */
static void run_finish_final(Run *run) {
        if (run->fail_error)
                return run_finish(run, run->fail_error);
        if (run_lost_launcher(run)) {
                run->lost_launcher = true;
                return run_finish(run, "systemd lost the sandbox's launcher (it re-executed as the unit started)");
        }
        if (!run->cancelled && (run->main_start_usec == 0 || (run->job_result && !streq(run->job_result, "done"))))
                return run_finish(run, "the sandbox service failed to start");
        run_finish(run, NULL);
}

static int on_main_pid_retry(sd_event_source *es, uint64_t usec, void *userdata) {
        Run *run = userdata;

        run->main_pid_retry = sd_event_source_disable_unref(run->main_pid_retry);
        (void) get_all(run);
        return 0;
}

/* Not the launcher yet: PID 1 may not have read the hand-over, or lost it
 * (then the unit ends at once). Ask again shortly, for up to 5 s; then
 * systemd supervises something else for good: fail closed. */
static void run_main_pid_later(Run *run) {
        if (run->n_main_pid_checks++ < 50 &&
            sd_event_add_time_relative(sd_bus_get_event(run->bus), &run->main_pid_retry, CLOCK_MONOTONIC,
                                       100 * USEC_PER_MSEC, 0, on_main_pid_retry, run) >= 0)
                return;
        log_error("systemd's main process of %s (PID %" PRIu32 ") is not its launcher, stopping it",
                  run->unit, run->main_pid);
        (void) run_cancel(run);
        run->fail_error = "systemd does not supervise the sandbox's launcher (PrivatePIDs=)";
}

static int on_get_processes(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Run *run = userdata;
        int r;

        run->slot_procs = sd_bus_slot_unref(run->slot_procs);
        if (run->done)
                return 0;
        r = sd_bus_message_is_method_error(m, NULL) ? -EIO : main_pid_runs(m, run->main_pid, run->launcher);
        if (r > 0) {
                run->main_pid_seen = true;
                run_notify_started(run);
        } else
                run_main_pid_later(run);
        return 0;
}

/* The unit runs: "started", where systemd's MainPID is the launcher. */
static void run_check_started(Run *run) {
        int r;

        if (!run->check_main_pid || run->main_pid_seen)
                return run_notify_started(run);
        if (run->slot_procs || run->main_pid_retry || run->fail_error)
                return;
        r = sd_bus_call_method_async(run->bus, &run->slot_procs, SYSTEMD_SERVICE, run->path,
                                     "org.freedesktop.systemd1.Service", "GetProcesses", on_get_processes, run, "");
        if (r < 0)
                run_main_pid_later(run);
}

static int on_get_all(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Run *run = userdata;
        int has_job;

        run->slot_call = sd_bus_slot_unref(run->slot_call);
        if (sd_bus_message_is_method_error(m, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(m);
                /* systemd drops its bus connection while it re-executes
                 * (daemon-reexec): ask again shortly, for up to 10 s. */
                if (run_bus_error_is_pid1_away(e) && run->n_getall_retries < 50 && !run->getall_retry &&
                    sd_event_add_time_relative(sd_bus_get_event(run->bus), &run->getall_retry, CLOCK_MONOTONIC,
                                               200 * USEC_PER_MSEC, 0, on_getall_retry, run) >= 0) {
                        run->n_getall_retries++;
                        log_debug("GetAll on %s failed (%s), asking again", run->unit, e->message);
                        return 0;
                }
                log_warning("GetAll on %s failed: %s", run->unit, e->message);
                return 0;
        }
        has_job = parse_properties(run, m);
        if (has_job < 0) {
                log_warning_errno(has_job, "Failed to parse properties of %s: %m", run->unit);
                return 0;
        }
        run->has_job = has_job;

        if (run->getall_again) {
                run->getall_again = false;
                (void) get_all(run);
                return 0;
        }

        /* The start job is gone even if its JobRemoved never reached us. */
        if (!has_job && !run->job_done)
                run->job_done = true;
        if (run->job_done && run->main_start_usec > 0 && !state_is_final(run->active_state))
                run_check_started(run);

        if (run->job_done && !has_job && state_is_final(run->active_state))
                run_finish_final(run);
        return 0;
}

static int get_all(Run *run) {
        int r;

        assert(run);

        if (run->done)
                return 0;
        if (run->slot_call) {
                /* One GetAll at a time; ask again once this one returns. */
                run->getall_again = true;
                return 0;
        }
        r = sd_bus_call_method_async(run->bus, &run->slot_call, SYSTEMD_SERVICE, run->path,
                                     "org.freedesktop.DBus.Properties", "GetAll", on_get_all, run, "s", "");
        if (r < 0)
                log_warning_errno(r, "Failed to query %s: %m", run->unit);
        return r;
}

static int read_signal_property(sd_bus_message *m, const char *name, void *userdata) {
        UnitChange *change = userdata;
        const char *p;
        int r;

        if (streq(name, "Job")) {
                r = bus_read_variant_job(m, &p);
                if (r >= 0 && p)
                        change->job = p;
        } else if (streq(name, "ActiveState")) {
                r = sd_bus_message_read(m, "v", "s", &p);
                if (r >= 0)
                        change->active_state = p;
        } else
                return 0;
        return r < 0 ? r : 1;
}

/* What a PropertiesChanged shows on the unit. Its job and state only for
 * the Unit interface; the strings point into m. */
static int signal_change(sd_bus_message *m, UnitChange *ret) {
        UnitChange change = {};
        const char *iface;
        int r;

        assert(m);
        assert(ret);

        r = sd_bus_message_read(m, "s", &iface);
        if (r < 0)
                return r;
        change.unit_interface = streq(iface, "org.freedesktop.systemd1.Unit");
        if (change.unit_interface) {
                r = bus_read_properties(m, read_signal_property, &change);
                if (r < 0)
                        return r;
        }
        *ret = change;
        return 0;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Run *run = userdata;
        UnitChange change;
        UnitSeen seen;

        if (!run->start_replied)
                return 0;
        if (signal_change(m, &change) < 0) {
                /* Unreadable: GetAll tells. */
                (void) get_all(run);
                return 0;
        }
        /* A job on the unit other than our start job is a stop someone asked
         * for (the slice or the broker stopping, systemctl stop). The signal
         * carries the state of its moment: by the time a GetAll answers, that
         * job may be gone. Its SIGKILL then is no OOM kill (Result=signal
         * either way). */
        if (change.job && !(run->job && streq(change.job, run->job)))
                run->stop_job_seen = true;
        seen = (UnitSeen) {
                .running = run->started_notified,
                .active_state = run->active_state,
                .has_job = run->has_job,
        };
        if (unit_change_needs_getall(&change, &seen))
                (void) get_all(run);
        return 0;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Run *run = userdata;
        const char *path, *unit, *result;
        uint32_t id;
        char *c;

        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0 || !streq(unit, run->unit))
                return 0;
        if (run->job && !streq(path, run->job))
                return 0;

        c = strdup(result);
        if (!c)
                return 0;
        free(run->job_result);
        free(run->bus_error);
        run->job_result = c;
        run->job_done = true;
        run->slot_job_removed = sd_bus_slot_unref(run->slot_job_removed);

        if (!streq(result, "done")) {
                /* An executor that could not hand its launcher over fails
                 * the start too (main-pid.h): GetAll tells it by its exit. */
                if (run->check_main_pid && !run->cancelled && streq(result, "failed")) {
                        (void) get_all(run);
                        return 0;
                }
                /* Not even started: a sandbox property could not be set up,
                 * a dependency failed, or the start was cancelled. */
                if (run->cancelled)
                        run_finish(run, NULL);
                else
                        run_finish(run, "the sandbox service failed to start");
                return 0;
        }

        /* "started" goes out from on_get_all(), once the cgroup is known. */
        (void) get_all(run);
        return 0;
}

static int on_start_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Run *run = userdata;
        const char *job;
        int r;

        run->slot_call = sd_bus_slot_unref(run->slot_call);
        run->start_replied = true;

        if (sd_bus_message_is_method_error(m, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(m);
                bool away = run_bus_error_is_pid1_away(e);

                /* PID 1 away (daemon-reexec) is no refusal: whether it made
                 * the unit first is unknown, and if it did, its launcher
                 * exits once our end of its control socket closes. */
                log_struct(away ? LOG_NOTICE : LOG_ERR,
                           "MESSAGE=StartTransientUnit for %s failed: %s", run->unit, e->message,
                           "MCP_RUN_ID=%s", run->id,
                           "MCP_UNIT=%s", run->unit,
                           "MCP_BUS_ERROR=%s", e->name);
                run->bus_error = strdup(e->name ?: "");
                run->pid1_away = away;
                run_finish(run, away ? "systemd did not answer (it was re-executing); try again"
                                     : "systemd refused the sandbox unit");
                return 0;
        }

        r = sd_bus_message_read(m, "o", &job);
        if (r < 0) {
                run_finish(run, "unexpected reply from systemd");
                return 0;
        }
        run->job = strdup(job);
        if (!run->job) {
                run_finish(run, "out of memory");
                return 0;
        }
        if (run->cancelled && !run->stop_sent)
                (void) run_cancel(run);
        if (run->job_done) /* JobRemoved overtook the reply */
                (void) get_all(run);
        return 0;
}

/* The StartTransientUnit call: the unit's name, mode and the sandbox's
 * property set, no auxiliary units. */
static int new_start_call(Run *run, const SandboxSpec *spec, int control_fd, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(run->bus, &m, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE,
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", run->unit, "fail");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        r = sandbox_append_properties(m, spec, control_fd);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* The /tmp is there (or not): start the unit. */
static void on_tmp_mounted(int error, const char *message, void *userdata) {
        Run *run = userdata;
        int r;

        run->tmp_call = NULL;
        if (error < 0) {
                /* Fail closed: no run without its own capped /tmp. */
                log_struct(LOG_ERR, "MESSAGE=Cannot mount the /tmp of run %s: %s", run->id, message,
                           "MCP_RUN_ID=%s", run->id);
                (void) snprintf(run->error, sizeof run->error, "the run's private /tmp could not be mounted: %s",
                                message);
                run_finish(run, run->error);
                return;
        }
        if (run->cancelled) {
                /* Nothing started, nothing to stop. */
                run_finish(run, NULL);
                return;
        }

        r = sd_bus_call_async(run->bus, &run->slot_call, run->start_call, on_start_reply, run, 0);
        run->start_call = sd_bus_message_unref(run->start_call);
        run->start_sent = r >= 0;
        if (r >= 0 && run->describe_later)
                (void) run_describe(run, run->describe_later);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask systemd for %s: %m", run->unit);
                run_finish(run, "cannot ask systemd for the sandbox unit");
        }
}

/* A Run watching nothing yet, its accounting unknown until systemd says:
 * what run_start() and run_adopt() both begin with. */
static Run *run_new(sd_bus *bus, run_started_t started, run_done_t done, void *userdata) {
        Run *run = new0(Run, 1);

        if (!run)
                return NULL;
        run->bus = sd_bus_ref(bus);
        run->on_started = started;
        run->on_done = done;
        run->userdata = userdata;
        run->cpu_nsec = UINT64_MAX;
        run->ip_ingress_bytes = UINT64_MAX;
        run->start_usec = now_usec();
        return run;
}

int run_start(sd_bus *bus, const SandboxSpec *spec_in, int control_fd, run_started_t started, run_done_t done,
              void *userdata, Run **ret) {
        _cleanup_(run_freep) Run *run = NULL;
        SandboxSpec spec = *spec_in;
        int r;

        assert(bus);
        assert(spec_in);
        assert(done);
        assert(ret);

        if (!spec_in->tmpfs)
                return -EINVAL;
        run = run_new(bus, started, done, userdata);
        if (!run)
                return -ENOMEM;
        run->check_main_pid = sandbox_private_pids(&spec) && spec.launcher;
        if (run->check_main_pid) {
                run->launcher = strdup(spec.launcher);
                if (!run->launcher)
                        return -ENOMEM;
        }

        r = random_hex128(run->id);
        if (r < 0)
                return r;
        (void) snprintf(run->unit, sizeof run->unit, "%s%s.service",
                        spec.session ? UNIT_PREFIX_SESSION : UNIT_PREFIX_RUN, run->id);
        spec.run_id = run->id;
        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", run->unit, &run->path);
        if (r < 0)
                return r;

        /* Subscribe before starting so no change can slip between. */
        r = sd_bus_match_signal_async(bus, &run->slot_changed, SYSTEMD_SERVICE, run->path,
                                      "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                      on_properties_changed, NULL, run);
        if (r < 0)
                return r;
        r = sd_bus_match_signal_async(bus, &run->slot_job_removed, SYSTEMD_SERVICE, SYSTEMD_PATH,
                                      MANAGER_IFACE, "JobRemoved", on_job_removed, NULL, run);
        if (r < 0)
                return r;

        /* Built now: it holds its own copy of control_fd. */
        r = new_start_call(run, &spec, control_fd, &run->start_call);
        if (r < 0)
                return r;
        run->tmpfs = spec.tmpfs;
        r = tmpfs_client_mount(spec.tmpfs, run->id, spec.tmp_size_max, on_tmp_mounted, run, &run->tmp_call);
        if (r < 0)
                return r;
        run->tmp_asked = true;

        *ret = TAKE_PTR(run);
        return 0;
}

/* The unit of a warm run an earlier broker started (pool-store.h): the same
 * watch as after our own start, its /tmp ours to remove once it is gone, and
 * our own reference on it (the earlier one went with that broker's bus
 * connection), so that it stays loaded until we read how it ended. */
int run_adopt(sd_bus *bus, const char *id, TmpfsClient *tmpfs, run_done_t done, void *userdata, Run **ret) {
        _cleanup_(run_freep) Run *run = NULL;
        int r;

        assert(bus);
        assert(id);
        assert(done);
        assert(ret);

        if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32 || !tmpfs)
                return -EINVAL;
        run = run_new(bus, NULL, done, userdata);
        if (!run)
                return -ENOMEM;
        memcpy(run->id, id, 33);
        (void) snprintf(run->unit, sizeof run->unit, "%s%s.service", UNIT_PREFIX_RUN, run->id);
        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", run->unit, &run->path);
        if (r < 0)
                return r;
        r = sd_bus_match_signal_async(bus, &run->slot_changed, SYSTEMD_SERVICE, run->path,
                                      "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                      on_properties_changed, NULL, run);
        if (r < 0)
                return r;
        r = sd_bus_call_method_async(bus, NULL, SYSTEMD_SERVICE, run->path, "org.freedesktop.systemd1.Unit", "Ref",
                                     NULL, NULL, NULL);
        if (r < 0)
                return r;
        run->start_sent = run->start_replied = run->job_done = true;
        run->tmpfs = tmpfs;
        run->tmp_asked = true;
        r = get_all(run);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(run);
        return 0;
}

/* Our hold on the unit ends, the unit does not: not stopped, its /tmp kept. */
Run *run_detach(Run *run) {
        if (!run)
                return NULL;
        run->tmp_call = tmpfs_call_cancel(run->tmp_call);
        run->tmp_asked = false;
        run->done = true;
        return run_free(run);
}

static int on_stop_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Run *run = userdata;

        run->slot_stop = sd_bus_slot_unref(run->slot_stop);
        if (sd_bus_message_is_method_error(m, NULL))
                log_debug("StopUnit %s: %s", run->unit, sd_bus_message_get_error(m)->message);
        return 0;
}

int run_cancel(Run *run) {
        int r;

        assert(run);

        if (run->done)
                return 0;
        run->cancelled = true;
        /* Before the start reply the unit may not exist yet: stop it once the
         * reply is in (on_start_reply). StopUnit with mode "replace" also
         * cancels a still-queued start job. KillSignal=SIGKILL makes it
         * immediate for the whole cgroup. */
        if (!run->start_replied || run->stop_sent)
                return 0;
        run->stop_sent = true;
        r = sd_bus_call_method_async(run->bus, &run->slot_stop, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE,
                                     "StopUnit", on_stop_reply, run, "ss", run->unit, "replace");
        if (r < 0)
                return log_warning_errno(r, "Failed to stop %s: %m", run->unit);
        return 0;
}

int run_expire(Run *run) {
        assert(run);

        if (run->done)
                return 0;
        run->expired = true;
        return run_cancel(run);
}

int run_describe(Run *run, const char *description) {
        assert(run);
        assert(description);

        if (run->done)
                return 0;
        if (!run->start_sent) {
                run->describe_later = description;
                return 0;
        }
        run->describe_later = NULL;
        /* After the start on the same connection: PID 1 has the unit by
         * then. Not waited for: a unit that ended meanwhile is no error. */
        return sd_bus_call_method_async(run->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE,
                                        "SetUnitProperties", NULL, NULL, "sba(sv)", run->unit, 1, 1,
                                        "Description", "s", description);
}

void run_handed_off(Run *run) {
        assert(run);
        run->handoff_usec = now_usec();
}

void run_set_callbacks(Run *run, run_started_t started, run_done_t done, void *userdata) {
        assert(run);
        assert(done);
        run->on_started = started;
        run->on_done = done;
        run->userdata = userdata;
}

void run_skip_main_pid_check(Run *run) {
        assert(run);
        run->check_main_pid = false;
}

bool run_is_started(const Run *run) {
        assert(run);
        return run->started_notified;
}

Run *run_free(Run *run) {
        if (!run)
                return NULL;

        if (!run->done && run->start_sent) {
                /* Owner gone mid-run: fire-and-forget stop and unref. Our bus
                 * reference pins the unit until Unref, so order them. Before
                 * the start's reply too: PID 1 reads them after it, on the
                 * same connection, so the unit (or its queued start job) is
                 * there to stop; if the start failed, they fail as well. */
                (void) sd_bus_call_method_async(run->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE,
                                                "StopUnit", NULL, NULL, "ss", run->unit, "replace");
                (void) sd_bus_call_method_async(run->bus, NULL, SYSTEMD_SERVICE, run->path,
                                                "org.freedesktop.systemd1.Unit", "Unref", NULL, NULL, NULL);
        }

        /* Before the unit is gone: harmless, as the run's /tmp is a bind
         * mount of its own. */
        run_release_tmp(run);
        sd_bus_message_unref(run->start_call);
        sd_bus_slot_unref(run->slot_changed);
        sd_bus_slot_unref(run->slot_job_removed);
        sd_bus_slot_unref(run->slot_call);
        sd_bus_slot_unref(run->slot_stop);
        sd_event_source_disable_unref(run->getall_retry);
        sd_bus_slot_unref(run->slot_procs);
        sd_event_source_disable_unref(run->main_pid_retry);
        sd_bus_unref(run->bus);
        free(run->launcher);
        free(run->path);
        free(run->job);
        free(run->job_result);
        free(run->bus_error);
        free(run->active_state);
        free(run->unit_result);
        free(run->control_group);
        oom_watch_free(run->oom_watch);
        free(run);
        return NULL;
}
