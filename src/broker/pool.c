/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pool.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "packet.h"
#include "json-util.h"
#include "list.h"
#include "log.h"
#include "pool-policy.h"
#include "util.h"

#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define MANAGER_IFACE "org.freedesktop.systemd1.Manager"
/* Above what the preload took, on top of MemoryMax=: the interpreter's own
 * growth when the code starts. */
#define HEADROOM_SLACK ((uint64_t) 16 << 20)
/* Warm units that die before they are ready, in a row, until we give up. */
#define MAX_FAILURES 3
#define RETIRE_CHECK_USEC (30 * USEC_PER_SEC)
/* After a failure, before the next warm unit: no tight loop of doomed starts. */
#define FAILURE_BACKOFF_USEC (1 * USEC_PER_SEC)
/* Reading its memory use and raising its limit may meet systemd while it
 * reloads or re-executes (off the bus for a moment): asked again this often,
 * this far apart, before the unit counts as failed. */
#define LIMIT_TRIES 5
#define LIMIT_RETRY_USEC (300 * USEC_PER_MSEC)
/* How long a new pool waits before its first fill. The broker starts beside
 * the front end, which a call's connection just activated: that call's unit
 * goes to PID 1 first, and its interpreter gets the cores, instead of both
 * queueing behind the warm units' starts and imports. */
#define START_DELAY_USEC (1 * USEC_PER_SEC)
#define REFILL_AFTER_TAKE_USEC (100 * USEC_PER_MSEC)
typedef struct Warm Warm;

struct Warm {
        Pool *pool;
        LIST_FIELDS(Warm, warm);
        Run *run;
        int control;                    /* the broker's end */
        sd_event_source *io;
        sd_bus_slot *slot;              /* the memory query, then the new limit */
        sd_event_source *limit_retry;
        unsigned limit_tries;
        bool imported;                  /* the launcher said "ready": the preload is in */
        bool held;                      /* held to POOL_OUTPACED_QUOTA_PERCENT while importing */
        bool ready;
        bool keepable;                  /* not bound to the broker's unit (PartOf= it): may outlive its exit */
        uint64_t created;
        json_object *preloaded, *failed;
};

struct Pool {
        sd_event *event;
        sd_bus *bus;
        PoolConfig config;
        PoolPolicy policy;              /* when to refill, outpaced or not (pool-policy.h) */
        pool_spec_t spec;
        pool_ready_t on_ready;
        void *userdata;
        Warm *warm;
        unsigned n_warm;
        sd_event_source *refill, *retire;     /* refill: a timer, at once or after a failure's backoff */
        sd_event_source *quiet;                /* the policy's quiet timer */
        unsigned failures;
        uint64_t hits;
        uint64_t fill_from;             /* no refill before (CLOCK_MONOTONIC): START_DELAY_USEC */
        Run *spare;                     /* pool_start_spare(), with the broker's end of its control */
        int spare_control;
        uint64_t spare_created;
        json_object *preloaded, *failed;        /* of the last ready unit */
        json_object *failed_logged;
};

static void warm_free(Warm *w) {
        Pool *p;

        if (!w)
                return;
        p = w->pool;
        LIST_REMOVE(warm, p->warm, w);
        assert(p->n_warm > 0);
        p->n_warm--;
        sd_event_source_disable_unref(w->io);
        sd_event_source_disable_unref(w->limit_retry);
        sd_bus_slot_unref(w->slot);
        /* A unit still running is stopped with its run. */
        run_free(w->run);
        safe_close(w->control);
        json_object_put(w->preloaded);
        json_object_put(w->failed);
        free(w);
}

/* Its unit is stopped with it, whether it runs yet or not (run_free()). */
static void spare_drop(Pool *p) {
        assert(p);

        p->spare = run_free(p->spare);
        p->spare_control = safe_close(p->spare_control);
}

static void schedule_refill_in(Pool *p, uint64_t usec) {
        uint64_t now = now_usec();

        if (!p->refill)
                return;
        if (now < p->fill_from)
                usec = MAX(usec, p->fill_from - now);
        (void) sd_event_source_set_time_relative(p->refill, usec);
        (void) sd_event_source_set_enabled(p->refill, SD_EVENT_ONESHOT);
}

static void schedule_refill(Pool *p) {
        schedule_refill_in(p, 0);
}

/* The units still importing: held to POOL_OUTPACED_QUOTA_PERCENT while
 * outpaced, a run's quota after. The replies are not waited for: a unit gone
 * meanwhile is no error of ours. */
static void pool_hold_importing(Pool *p, bool hold) {
        uint64_t percent = hold ? POOL_OUTPACED_QUOTA_PERCENT : p->config.cpu_quota_percent;

        LIST_FOREACH(warm, w, p->warm)
                if (!w->imported && w->run) {
                        (void) sd_bus_call_method_async(p->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE,
                                                        "SetUnitProperties", NULL, NULL, "sba(sv)", run_unit(w->run),
                                                        1, 1, "CPUQuotaPerSecUSec", "t",
                                                        sandbox_cpu_quota_usec(percent));
                        w->held = w->held || hold;
                }
}

static void warm_failed(Warm *w, const char *why) {
        Pool *p = w->pool;

        if (!w->ready && ++p->failures >= MAX_FAILURES && !p->policy.broken) {
                p->policy.broken = true;
                log_struct(LOG_ERR,
                           "MESSAGE=Warm units failed %u times in a row (%s); the pool stops, runs take the cold path.",
                           p->failures, why,
                           "MCP_POOL=%s", "broken");
        } else
                log_struct(LOG_WARNING, "MESSAGE=A warm unit failed: %s", why, "MCP_UNIT=%s", run_unit(w->run),
                           "MCP_POOL=%s", "failed");
        warm_free(w);
        schedule_refill_in(p, FAILURE_BACKOFF_USEC);
}

static void on_warm_done(Run *run, const RunResult *res, void *userdata) {
        Warm *w = userdata;
        Pool *p = w->pool;

        /* systemd refuses a start while our slice or we are being stopped:
         * nobody wants warm units now. */
        if (w->ready || (!res->error && res->signal > 0) ||
            streq_ptr(res->bus_error, "org.freedesktop.systemd1.TransactionIsDestructive")) {
                /* Stopped by someone else while it waited or started (the
                 * slice was stopped, say): no replacement until the next run
                 * asks. (A unit that fails on its own exits, with 125.) */
                log_struct(LOG_INFO, "MESSAGE=Warm unit %s ended while waiting (%s).", run_unit(run),
                           res->error ?: res->unit_result ?: "?",
                           "MCP_UNIT=%s", run_unit(run),
                           "MCP_POOL=%s", "ended");
                p->policy.paused = true;
                warm_free(w);
                return;
        }
        /* A launcher never exits 0 before it is ready (its own failures are
         * 125): a unit that ended so, or whose launcher systemd lost, was
         * ended by systemd re-executing as it started it (PrivatePIDs=, a
         * hand-over PID 1 did not keep, main-pid.h). As with pid1_away: not
         * the unit's fault, no failure counted, another once PID 1 is back. */
        if (res->pid1_away || res->lost_launcher || (!res->error && res->exit_code == 0 && res->signal == 0)) {
                log_struct(LOG_INFO, "MESSAGE=Warm unit %s: %s (re-executing).", run_unit(run),
                           res->pid1_away ? "systemd did not answer its start" : "systemd ended it as it started",
                           "MCP_UNIT=%s", run_unit(run),
                           "MCP_POOL=%s", "pid1-away");
                warm_free(w);
                schedule_refill_in(p, FAILURE_BACKOFF_USEC);
                return;
        }
        warm_failed(w, res->error ?: "its launcher exited before it was ready");
}

static int on_memory(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

static int warm_ask_memory(Warm *w) {
        _cleanup_free_ char *path = NULL;
        int r;

        assert(w);

        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", run_unit(w->run), &path);
        if (r < 0)
                return r;
        return sd_bus_call_method_async(w->pool->bus, &w->slot, SYSTEMD_SERVICE, path,
                                        "org.freedesktop.DBus.Properties", "Get", on_memory, w, "ss",
                                        "org.freedesktop.systemd1.Service", "MemoryCurrent");
}

static int on_limit_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Warm *w = userdata;

        w->limit_retry = sd_event_source_disable_unref(w->limit_retry);
        if (warm_ask_memory(w) < 0)
                warm_failed(w, "cannot ask for its memory use");
        return 0;
}

/* The memory step (read the use, raise the limit) failed: again a little
 * later, from the read, until it has failed LIMIT_TRIES times. */
static void warm_retry_limit(Warm *w, const char *why) {
        assert(w);

        if (++w->limit_tries >= LIMIT_TRIES ||
            sd_event_add_time_relative(w->pool->event, &w->limit_retry, CLOCK_MONOTONIC, LIMIT_RETRY_USEC, 0,
                                       on_limit_retry, w) < 0) {
                warm_failed(w, why);
                return;
        }
        log_struct(LOG_DEBUG, "MESSAGE=Warm unit %s: %s, asking again", run_unit(w->run), why,
                   "MCP_UNIT=%s", run_unit(w->run));
}

static int on_limit_set(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Warm *w = userdata;
        Pool *p = w->pool;

        w->slot = sd_bus_slot_unref(w->slot);
        if (sd_bus_message_is_method_error(m, NULL)) {
                /* Fail closed: without the raise the code would have less
                 * than MemoryMax=, without the cap more. */
                warm_retry_limit(w, sd_bus_message_get_error(m)->message ?: "cannot set its memory limit");
                return 0;
        }
        w->ready = true;
        p->failures = 0;
        /* The next call is better served by this one: no second unit
         * waits in its place. */
        if (p->spare) {
                log_struct(LOG_DEBUG, "MESSAGE=Stopping spare unit %s: a warm unit is ready.", run_unit(p->spare),
                           "MCP_UNIT=%s", run_unit(p->spare),
                           "MCP_POOL=%s", "spare-unused");
                spare_drop(p);
        }
        json_object_put(p->preloaded);
        json_object_put(p->failed);
        p->preloaded = json_object_get(w->preloaded);
        p->failed = json_object_get(w->failed);
        if (p->on_ready)
                p->on_ready(p->userdata);
        return 0;
}

/* What the preload took, so that the code keeps all of MemoryMax=. */
static int on_memory(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        Warm *w = userdata;
        Pool *p = w->pool;
        uint64_t current = 0, limit;
        int r;

        w->slot = sd_bus_slot_unref(w->slot);
        if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read(m, "v", "t", &current) < 0 ||
            current == UINT64_MAX) {
                warm_retry_limit(w, "cannot read its memory use");
                return 0;
        }
        limit = p->config.memory_max + current + HEADROOM_SLACK;
        r = sd_bus_message_new_method_call(p->bus, &call, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE,
                                           "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(call, "sb", run_unit(w->run), 1 /* runtime */);
        /* And a run's CPU weight and quota, whatever it imported at: a
         * ready unit only waits, and the code it gets must not start at
         * the importing weight until PID 1 gets round to a change asked
         * for at the take (measured: about 2.5 ms of a paced warm call). */
        if (r >= 0)
                r = sd_bus_message_append(call, "a(sv)", 4, "MemoryMax", "t", limit, "CPUWeight", "t",
                                          SANDBOX_CPU_WEIGHT_RUN, "CPUQuotaPerSecUSec", "t",
                                          sandbox_cpu_quota_usec(p->config.cpu_quota_percent), "Description", "s",
                                          p->config.ready_description ?: SANDBOX_DESCRIPTION_WARM_READY);
        if (r >= 0)
                r = sd_bus_call_async(p->bus, &w->slot, call, on_limit_set, w, 0);
        if (r < 0)
                warm_failed(w, "cannot ask for its memory limit");
        else
                log_struct(LOG_DEBUG, "MESSAGE=Warm unit %s: preload took %" PRIu64 " KiB; MemoryMax=%" PRIu64,
                           run_unit(w->run), current / 1024, limit,
                           "MCP_UNIT=%s", run_unit(w->run));
        return 0;
}

static int on_control(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        _cleanup_json_ json_object *msg = NULL;
        Warm *w = userdata;
        Pool *p = w->pool;
        int r;

        r = packet_recv(fd, &msg, NULL, 0, NULL);
        if (r == -EAGAIN)
                return 0;
        w->io = sd_event_source_disable_unref(w->io);
        if (r <= 0 || !streq_ptr(json_get_string(msg, "event"), "ready")) {
                /* The launcher said something else, or went away: its run
                 * will report the rest; stop it now. */
                (void) run_cancel(w->run);
                return 0;
        }
        w->imported = true;
        if (!w->held)
                p->policy.import_usec = now_usec() - w->created;
        w->preloaded = json_object_get(json_get(msg, "preloaded"));
        w->failed = json_object_get(json_get(msg, "failed"));
        /* Once, not for every warm unit that fails the same way. */
        if (json_object_is_type(w->failed, json_type_array) && json_object_array_length(w->failed) > 0 &&
            (!p->failed_logged || !json_object_equal(p->failed_logged, w->failed))) {
                log_struct(LOG_WARNING, "MESSAGE=Modules of MCP_EXEC_PRELOAD that failed to import: %s",
                           json_object_to_json_string_ext(w->failed, JSON_C_TO_STRING_PLAIN),
                           "MCP_POOL=%s", "preload-failed");
                json_object_put(p->failed_logged);
                p->failed_logged = json_object_get(w->failed);
        }

        if (warm_ask_memory(w) < 0)
                warm_failed(w, "cannot ask for its memory use");
        return 0;
}

static int start_one(Pool *p) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        SandboxSpec spec;
        Warm *w;
        int r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return negative_errno();
        w = new0(Warm, 1);
        if (!w)
                return -ENOMEM;
        *w = (Warm) { .pool = p, .control = -EBADF, .created = now_usec() };
        LIST_PREPEND(warm, p->warm, w);
        p->n_warm++;

        p->spec(p->userdata, false, &spec);
        w->keepable = !spec.binds_to || spec.part_of;
        r = run_start(p->bus, &spec, sp[1], NULL, on_warm_done, w, &w->run);
        if (r >= 0)
                r = sd_event_add_io(p->event, &w->io, sp[0], EPOLLIN, on_control, w);
        if (r < 0) {
                warm_free(w);
                return r;
        }
        w->control = TAKE_FD(sp[0]);
        log_struct(LOG_DEBUG, "MESSAGE=Starting warm unit %s", run_unit(w->run), "MCP_UNIT=%s", run_unit(w->run),
                   "MCP_POOL=%s", "starting");
        return 0;
}

static int on_refill(sd_event_source *s, uint64_t usec, void *userdata) {
        Pool *p = userdata;

        while (pool_policy_may_start(&p->policy, p->n_warm))
                if (start_one(p) < 0) {
                        log_warning("Cannot start a warm unit; the pool waits for the next run.");
                        p->policy.paused = true;
                        break;
                }
        return 0;
}

static int on_retire(sd_event_source *s, uint64_t usec, void *userdata) {
        Pool *p = userdata;
        uint64_t now = now_usec();

        LIST_FOREACH_SAFE(warm, w, n, p->warm)
                if (w->ready && now - w->created >= p->config.idle_usec) {
                        log_struct(LOG_DEBUG, "MESSAGE=Retiring warm unit %s, unused for %" PRIu64 " s.",
                                   run_unit(w->run), (now - w->created) / USEC_PER_SEC,
                                   "MCP_UNIT=%s", run_unit(w->run));
                        warm_free(w);
                }
        if (p->spare && now - p->spare_created >= p->config.idle_usec)
                spare_drop(p);
        schedule_refill(p);
        (void) sd_event_source_set_time_relative(s, RETIRE_CHECK_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

/* Does what the policy answered to an event. */
static void pool_apply(Pool *p, unsigned actions, const char *why) {
        if (actions & POOL_ACTION_DISARM_QUIET)
                (void) sd_event_source_set_enabled(p->quiet, SD_EVENT_OFF);
        if (actions & POOL_ACTION_ARM_QUIET) {
                (void) sd_event_source_set_time_relative(p->quiet, POOL_QUIET_USEC);
                (void) sd_event_source_set_enabled(p->quiet, SD_EVENT_ONESHOT);
        }
        if (actions & POOL_ACTION_HOLD) {
                log_struct(LOG_DEBUG, "MESSAGE=Runs outpace the pool; no refill until they pause.",
                           "MCP_POOL=%s", "outpaced");
                pool_hold_importing(p, true);
        }
        if (actions & POOL_ACTION_RELEASE) {
                log_struct(LOG_DEBUG, "MESSAGE=%s; the pool refills.", why, "MCP_POOL=%s", "keeping-up");
                pool_hold_importing(p, false);
                schedule_refill(p);
        }
}

static int on_quiet(sd_event_source *s, uint64_t usec, void *userdata) {
        Pool *p = userdata;

        pool_apply(p, pool_policy_step(&p->policy, POOL_EVENT_QUIET, 0, p->n_warm), "No run for a while");
        return 0;
}

int pool_new(sd_event *e, sd_bus *bus, const PoolConfig *config, pool_spec_t spec, pool_ready_t ready,
             void *userdata, Pool **ret) {
        _cleanup_(pool_freep) Pool *p = NULL;
        int r;

        assert(e);
        assert(bus);
        assert(config);
        assert(spec);
        assert(ret);

        p = new0(Pool, 1);
        if (!p)
                return -ENOMEM;
        *p = (Pool) { .event = sd_event_ref(e), .bus = sd_bus_ref(bus), .config = *config, .spec = spec,
                      .on_ready = ready, .userdata = userdata, .policy = { .size = config->size },
                      .spare_control = -EBADF };
        r = sd_event_add_time_relative(e, &p->refill, CLOCK_MONOTONIC, 0, 1, on_refill, p);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &p->retire, CLOCK_MONOTONIC, RETIRE_CHECK_USEC, USEC_PER_SEC, on_retire, p);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &p->quiet, CLOCK_MONOTONIC, POOL_QUIET_USEC, 10 * USEC_PER_MSEC, on_quiet, p);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(p->quiet, SD_EVENT_OFF);
        p->fill_from = now_usec() + START_DELAY_USEC;
        schedule_refill(p);
        *ret = TAKE_PTR(p);
        return 0;
}

Pool *pool_free(Pool *p) {
        if (!p)
                return NULL;
        while (p->warm)
                warm_free(p->warm);
        spare_drop(p);
        sd_event_source_disable_unref(p->refill);
        sd_event_source_disable_unref(p->retire);
        sd_event_source_disable_unref(p->quiet);
        json_object_put(p->preloaded);
        json_object_put(p->failed);
        json_object_put(p->failed_logged);
        sd_bus_unref(p->bus);
        sd_event_unref(p->event);
        free(p);
        return NULL;
}

int pool_take(Pool *p, Run **ret_run, int *ret_control) {
        Warm *oldest = NULL;

        assert(ret_run);
        assert(ret_control);

        if (!p)
                return -EAGAIN;
        /* Work came: replacements may start again (once not busy). */
        p->policy.paused = false;
        LIST_FOREACH(warm, w, p->warm)
                if (w->ready && (!oldest || w->created < oldest->created))
                        oldest = w;
        if (!oldest) {
                schedule_refill(p);
                pool_apply(p, pool_policy_step(&p->policy, POOL_EVENT_TAKE_MISS, 0, p->n_warm), NULL);
                return -EAGAIN;
        }
        /* Not at once: a replacement's start is PID 1's work and its
         * imports are a core's, both beside the call that just took this
         * unit. Most calls are over before this: their end starts it
         * (pool_warm_run_ended()). */
        schedule_refill_in(p, REFILL_AFTER_TAKE_USEC);
        *ret_run = TAKE_PTR(oldest->run);
        *ret_control = TAKE_FD(oldest->control);
        oldest->control = -EBADF;
        warm_free(oldest);
        p->hits++;
        return 0;
}

/* Nothing of the pool's waits for it: it is not in the list, its "ready"
 * stays unread on its control socket, and its end, unused, is only logged. */
static void on_spare_done(Run *run, const RunResult *res, void *userdata) {
        Pool *p = userdata;

        assert(run == p->spare);
        log_struct(LOG_INFO, "MESSAGE=Spare unit %s ended before a run took it (%s).", run_unit(run),
                   res->error ?: res->unit_result ?: "?",
                   "MCP_UNIT=%s", run_unit(run),
                   "MCP_POOL=%s", "spare-ended");
        spare_drop(p);
}

int pool_start_spare(Pool *p) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        SandboxSpec spec;
        int r;

        if (!p || p->spare || p->policy.broken)
                return 0;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return negative_errno();
        p->spec(p->userdata, true, &spec);
        r = run_start(p->bus, &spec, sp[1], NULL, on_spare_done, p, &p->spare);
        if (r < 0)
                return log_warning_errno(r, "Cannot start a spare unit, continuing without: %m");
        p->spare_control = TAKE_FD(sp[0]);
        p->spare_created = now_usec();
        log_struct(LOG_DEBUG, "MESSAGE=Starting spare unit %s", run_unit(p->spare),
                   "MCP_UNIT=%s", run_unit(p->spare),
                   "MCP_POOL=%s", "spare");
        return 0;
}

int pool_take_spare(Pool *p, Run **ret_run, int *ret_control) {
        assert(ret_run);
        assert(ret_control);

        if (!p || !p->spare)
                return -EAGAIN;
        log_struct(LOG_DEBUG, "MESSAGE=Run takes spare unit %s", run_unit(p->spare),
                   "MCP_UNIT=%s", run_unit(p->spare),
                   "MCP_POOL=%s", "spare-taken");
        *ret_run = TAKE_PTR(p->spare);
        *ret_control = TAKE_FD(p->spare_control);
        return 0;
}

void pool_set_busy(Pool *p, bool busy) {
        if (!p || p->policy.busy == busy)
                return;
        p->policy.busy = busy;
        if (!busy)
                schedule_refill(p);
}

void pool_note_cold_run(Pool *p, uint64_t usec) {
        if (!p)
                return;
        pool_apply(p, pool_policy_step(&p->policy, POOL_EVENT_COLD_RUN, usec, p->n_warm),
                   "Runs take long next to an import");
}

void pool_warm_run_ended(Pool *p) {
        if (!p)
                return;
        schedule_refill(p);
}

void pool_set_runs(Pool *p, unsigned n_runs) {
        if (!p)
                return;
        pool_apply(p, pool_policy_step(&p->policy, POOL_EVENT_RUNS, n_runs, p->n_warm), NULL);
}

void pool_recycle(Pool *p) {
        if (!p)
                return;
        while (p->warm)
                warm_free(p->warm);
        spare_drop(p);
        p->policy.paused = false;
        schedule_refill(p);
}

unsigned pool_n_ready(const Pool *p) {
        unsigned n = 0;

        if (p)
                LIST_FOREACH(warm, w, p->warm)
                        n += w->ready;
        return n;
}

uint64_t pool_n_hits(const Pool *p) {
        return p ? p->hits : 0;
}

json_object *pool_preloaded(const Pool *p) {
        return p ? p->preloaded : NULL;
}

json_object *pool_failed(const Pool *p) {
        return p ? p->failed : NULL;
}

const char *pool_ready_description(const Pool *p) {
        return p && p->config.ready_description ? p->config.ready_description : SANDBOX_DESCRIPTION_WARM_READY;
}

bool pool_broken(const Pool *p) {
        return p && p->policy.broken;
}

unsigned pool_n_starting(const Pool *p) {
        unsigned n = 0;

        if (p)
                LIST_FOREACH(warm, w, p->warm)
                        n += !w->ready;
        return n;
}

/* The state pool_keep() leaves beside the control sockets: key and units. */
static int pool_keep_state(Pool *p, const char *key, unsigned max, json_object **ret) {
        _cleanup_json_ json_object *units = json_object_new_array(), *state = NULL;
        unsigned n = 0;

        if (!units)
                return -ENOMEM;
        LIST_FOREACH(warm, w, p->warm) {
                _cleanup_json_ json_object *u = NULL;

                if (!w->ready || !w->keepable || w->control < 0 || n >= max)
                        continue;
                if (json_build(&u, JB_STR("id", run_id(w->run)), JB_INT("created", (int64_t) w->created),
                               JB_OBJ("preloaded", json_object_get(w->preloaded)),
                               JB_OBJ("failed", json_object_get(w->failed)), JB_END) < 0 ||
                    json_append(units, TAKE_PTR(u)) < 0)
                        return -ENOMEM;
                n++;
        }
        if (n == 0)
                return 0;
        if (json_build(&state, JB_STR("key", key), JB_OBJ("units", TAKE_PTR(units)), JB_END) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(state);
        return (int) n;
}

/* The state in a pipe whose read end goes to the store: no file, no
 * memfd_create() (outside the broker's system call filter). */
static int pool_keep_send_state(json_object *state, const char *state_name) {
        _cleanup_close_pair_ int pfd[2] = { -EBADF, -EBADF };
        const char *text = json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN);
        size_t len = strlen(text);
        char msg[sizeof "FDSTORE=1\nFDPOLL=0\nFDNAME=" + POOL_STORE_NAME_MAX];
        ssize_t k;

        if (len > POOL_STORE_STATE_MAX)
                return -E2BIG;
        if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
                return negative_errno();
        k = write(pfd[1], text, len);
        if (k < 0)
                return negative_errno();
        if ((size_t) k != len)
                return -EAGAIN;
        /* FDPOLL=0: a pipe whose writer is gone reads as hung up, which
         * would have systemd drop it at once. (A control socket that hangs
         * up, its launcher gone, is dropped so, as it should be.) */
        (void) snprintf(msg, sizeof msg, "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", state_name);
        return sd_pid_notify_with_fds(0, false, msg, &pfd[0], 1);
}

int pool_keep(Pool *p, const char *prefix, const char *state_name, const char *key, unsigned max) {
        _cleanup_json_ json_object *state = NULL;
        unsigned kept = 0;
        int r;

        assert(prefix);
        assert(state_name);
        assert(key);

        if (!p || max == 0)
                return 0;
        if (strlen(prefix) + 32 > POOL_STORE_NAME_MAX || strlen(state_name) > POOL_STORE_NAME_MAX)
                return -ENAMETOOLONG;
        r = pool_keep_state(p, key, max, &state);
        if (r <= 0)
                return r;
        /* The state first: control sockets without it are never used. */
        r = pool_keep_send_state(state, state_name);
        if (r <= 0)
                return r < 0 ? r : -EOPNOTSUPP;
        LIST_FOREACH_SAFE(warm, w, n, p->warm) {
                char msg[sizeof "FDSTORE=1\nFDNAME=" + POOL_STORE_NAME_MAX];

                if (!w->ready || !w->keepable || w->control < 0 || kept >= max)
                        continue;
                (void) snprintf(msg, sizeof msg, "FDSTORE=1\nFDNAME=%s%s", prefix, run_id(w->run));
                r = sd_pid_notify_with_fds(0, false, msg, &w->control, 1);
                if (r <= 0)
                        continue;       /* not kept: stopped with the pool */
                log_struct(LOG_DEBUG, "MESSAGE=Warm unit %s kept across the idle exit.", run_unit(w->run),
                           "MCP_UNIT=%s", run_unit(w->run),
                           "MCP_POOL=%s", "kept");
                w->run = run_detach(w->run);
                warm_free(w);
                kept++;
        }
        /* systemd has read them before we go (else they may be dropped as a
         * dead process's). */
        (void) sd_notify_barrier(false, 5 * USEC_PER_SEC);
        return (int) kept;
}

int pool_adopt(Pool *p, const char *id, int control, uint64_t created, json_object *preloaded,
               json_object *failed) {
        SandboxSpec spec;
        Warm *w;
        int r;

        assert(p);
        assert(id);
        assert(control >= 0);

        w = new0(Warm, 1);
        if (!w)
                return -ENOMEM;
        *w = (Warm) { .pool = p, .control = -EBADF, .created = created, .imported = true, .ready = true,
                      .keepable = true, .preloaded = json_object_get(preloaded), .failed = json_object_get(failed) };
        LIST_PREPEND(warm, p->warm, w);
        p->n_warm++;
        p->spec(p->userdata, false, &spec);
        r = run_adopt(p->bus, id, spec.tmpfs, on_warm_done, w, &w->run);
        if (r < 0) {
                warm_free(w);
                return r;
        }
        w->control = control;
        json_object_put(p->preloaded);
        json_object_put(p->failed);
        p->preloaded = json_object_get(w->preloaded);
        p->failed = json_object_get(w->failed);
        log_struct(LOG_INFO, "MESSAGE=Warm unit %s, kept across the idle exit, is back in the pool.", run_unit(w->run),
                   "MCP_UNIT=%s", run_unit(w->run),
                   "MCP_POOL=%s", "restored");
        return 0;
}
