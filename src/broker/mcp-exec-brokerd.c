/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-brokerd: the small root broker. Socket-activated on
 * /run/mcp-exec/broker.sock, it accepts only root and the front end's user,
 * and does exactly one thing: run a piece of code in a transient service with
 * the fixed sandbox property set, limits clamped to the configured maxima;
 * or, for a session, many pieces one after the other in one such service.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "build-config.h"
#include "config.h"
#include "discover.h"
#include "json-util.h"
#include "event-util.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "main-func.h"
#include "parse-util.h"
#include "pool.h"
#include "probe.h"
#include "run.h"
#include "run-stats.h"
#include "sandbox-session.h"
#include "broker-proto.h"
#include "socket-util.h"
#include "stats.h"
#include "tmpfs-client.h"
#include "tmpfs-proto.h"
#include "util.h"

#define FRONTEND_USER "mcp-exec"
#define REQUEST_TIMEOUT_USEC (10 * USEC_PER_SEC)
/* A cold run's RuntimeMaxSec= is its timeout; our own deadline follows a
 * little later, as a backstop. A warm run's timeout is ours alone. */
#define COLD_DEADLINE_SLACK_USEC (5 * USEC_PER_SEC)
/* Preloaded when MCP_EXEC_PRELOAD is unset: the data stack the Go server's
 * image shipped, those of it that are installed. */
#define PRELOAD_DEFAULT "numpy,pandas,matplotlib,matplotlib.pyplot,PIL,PIL.Image,yaml,jinja2"

typedef struct Server Server;

typedef struct Client Client;
struct Client {
        Server *server;
        LIST_FIELDS(Client, clients);
        int fd;
        sd_event_source *io, *timer;
        pid_t pid;
        uid_t uid;
        Run *run;
        bool gone;
        bool counted;                   /* holds one of max_concurrent */
        /* Waiting for a free slot, in arrival order (its pipes kept meanwhile). */
        LIST_FIELDS(Client, wait);
        bool waiting;
        /* The caller's stdin, stdout, stderr and maybe result channel, until
         * they are handed to the launcher. */
        int run_fds[BROKER_MAX_FDS];
        size_t n_run_fds;
        int control;                    /* ours of the launcher's control socket */
        bool handed_off, warm;
        bool detached;                  /* the caller has its result: the run ends on its own */
        bool info_pending;              /* answered once the sandbox is known */
        SandboxSession *session;        /* the session it creates, or calls in */
        bool session_creating, session_calling;
        uint64_t timeout_s;
        char tag[65];
};

struct Server {
        sd_event *event;
        sd_bus *bus;
        Config config;
        char *python;
        char *own_unit;
        int listen_fd;
        bool socket_activated;
        sd_event_source *listen_io, *idle_timer;
        uid_t frontend_uid;
        bool have_frontend_uid;
        LIST_HEAD(Client, clients);
        unsigned n_clients, n_runs;
        LIST_HEAD(Client, wait_list);   /* runs waiting for a slot, first come first served */
        sd_event_source *dispatch;      /* starts waiting runs once slots are free */
        Probe *probe;
        Discovery *discovery;
        json_object *sandbox_info;      /* python version and modules, once discovered */
        bool discovering;
        SelfCheckState probe_state;     /* the sandbox self-check's (probe.h) */
        char *probe_failure;
        uint64_t idle_usec;
        Pool *pool;
        char *preload;                  /* what warm units import: MCP_EXEC_PRELOAD, or the default, installed */
        char *mpl_cache;                /* the matplotlib font cache discovery made, or NULL */
        char *stamp;                    /* what the discovery depended on (discovery_stamp()) */
        sd_event_source *reload_timer;  /* looks for daemon-reload while there is a pool */
        sd_bus_slot *slot_reload;
        uint64_t units_loaded;          /* the manager's UnitsLoadTimestampMonotonic */
        LIST_HEAD(SandboxSession, sessions);
        unsigned n_sessions;
        RunStats stats;                 /* {"op":"stats"} */
        TmpfsClient *tmpfs;             /* mounts each run's /tmp (mcp-exec-tmpfsd) */
};

static const char *arg_listen;
static uint64_t arg_idle_sec = 30;
static const char *arg_launcher = LIBEXECDIR "/mcp-exec-launch";
static const char *arg_bootstrap = LIBEXECDIR "/mcp-exec-bootstrap.py";

static void server_fill_spec(Server *s, uint64_t timeout_s, SandboxSpec *ret) {
        assert(s);
        assert(ret);

        *ret = (SandboxSpec) {
                .launcher = arg_launcher,
                .bootstrap = arg_bootstrap,
                .mpl_cache = s->mpl_cache,
                .tmpfs = s->tmpfs,
                .python = s->python,
                .max_code_bytes = s->config.max_code_bytes,
                .timeout_usec = timeout_s * USEC_PER_SEC,
                .memory_max = s->config.memory_max,
                .tasks_max = s->config.tasks_max,
                .cpu_quota_percent = s->config.cpu_quota_percent,
                .file_size_max = s->config.file_size_max,
                .tmp_size_max = s->config.tmp_size_max,
                .slice = "mcp-exec.slice",
                .binds_to = s->own_unit,
        };
}

static void server_update_idle(Server *s);

/* A warm unit: the preload, room for what it took (the pool lowers the limit
 * to MemoryMax= plus that once it is ready), and a cap on its whole life. */
static void server_fill_warm_spec(void *userdata, SandboxSpec *ret) {
        Server *s = userdata;

        server_fill_spec(s, s->config.pool_idle_s + s->config.max_timeout_s + 60, ret);
        ret->preload = s->preload;
        ret->memory_max = s->config.memory_max + (UINT64_C(512) << 20);
        ret->cpu_weight = SANDBOX_CPU_WEIGHT_IDLE;
        ret->description = SANDBOX_DESCRIPTION_WARM;
}

/* Whether a run's unit is being started: systemd starts one unit at a time,
 * and a warm unit's start would come before it. */
static bool server_run_starting(Server *s) {
        LIST_FOREACH(clients, c, s->clients)
                if (c->run && !run_is_started(c->run))
                        return true;
        return false;
}

static void server_update_pool(Server *s) {
        /* No replacement while the runs need systemd or the CPU: saturated,
         * a unit of a run (or the self-check) starting. Once started, a
         * warm unit's imports yield to the runs by its CPUWeight=. */
        pool_set_busy(s->pool, s->n_runs >= s->config.max_concurrent || s->wait_list || s->probe_state == SELF_CHECK_PENDING ||
                                       server_run_starting(s));
        pool_set_runs(s->pool, s->n_runs);
}

static void server_slot_freed(Server *s) {
        assert(s);

        if (s->wait_list && s->dispatch)
                (void) sd_event_source_set_enabled(s->dispatch, SD_EVENT_ONESHOT);
}

static void client_close_run_fds(Client *c) {
        for (size_t i = 0; i < c->n_run_fds; i++)
                c->run_fds[i] = safe_close(c->run_fds[i]);
        c->n_run_fds = 0;
}

static void client_unwait(Client *c) {
        assert(c);

        if (!c->waiting)
                return;
        LIST_REMOVE(wait, c->server->wait_list, c);
        c->waiting = false;
}

static Client *client_free(Client *c) {
        Server *s;

        if (!c)
                return NULL;
        s = c->server;
        client_unwait(c);
        client_close_run_fds(c);
        if (c->session && c->session_creating)
                /* Nobody will ever know its handle. */
                sandbox_session_end(c->session, SANDBOX_SESSION_END_CLOSED);
        else if (c->session && c->session_calling)
                sandbox_session_interrupt(c->session);
        /* run_free() stops a live unit; its last reference goes with it. */
        c->run = run_free(c->run);
        c->control = safe_close(c->control);
        if (c->counted) {
                s->n_runs--;
                server_slot_freed(s);
        }
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        LIST_REMOVE(clients, s->clients, c);
        s->n_clients--;
        free(c);
        server_update_idle(s);
        server_update_pool(s);
        return NULL;
}

static int client_send_error(Client *c, BrokerError error, const char *message) {
        assert(c);

        return broker_send_error(c->fd, error, message);
}

/* A reply that could not be built: the caller hears why, rather than
 * nothing or a message with a member missing. */
static int client_send_oom(Client *c) {
        assert(c);

        log_oom();
        return client_send_error(c, BROKER_ERROR_INTERNAL, "out of memory");
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Client *, client_free);

static int on_deadline(sd_event_source *es, uint64_t usec, void *userdata) {
        Client *c = userdata;

        c->timer = sd_event_source_disable_unref(c->timer);
        if (c->run)
                (void) run_expire(c->run);
        return 0;
}

/* The configured limits of what comes back and goes in, for the launcher:
 * the same for runs and session calls. */
static int server_result_limits(Server *s, json_object **ret) {
        assert(s);
        assert(ret);

        return json_build(ret,
                          JB_INT("max_images", s->config.max_images),
                          JB_INT("max_image_bytes", s->config.max_image_bytes),
                          JB_INT("max_files", s->config.max_files_out),
                          JB_INT("max_result_bytes", s->config.max_result_bytes),
                          JB_INT("max_input_bytes", s->config.max_input_bytes),
                          JB_END);
}

/* The caller's run goes to the launcher, once the unit runs (and its OOM
 * watch is in place) and the self-check passed: its stdin, stdout, stderr
 * and result channel, and the limits of what comes back. From then on the
 * run's time counts. */
static void client_try_handoff(Client *c) {
        _cleanup_json_ json_object *msg = NULL, *limits = NULL, *started = NULL;
        Server *s = c->server;
        uint64_t deadline;
        int r;

        if (c->handed_off || !c->run || c->server->probe_state != SELF_CHECK_PASSED || !run_is_started(c->run) || c->gone)
                return;
        r = server_result_limits(s, &limits);
        if (r >= 0)
                r = json_build(&msg, JB_STR("op", "run"), JB_OBJ("limits", TAKE_PTR(limits)), JB_END);
        if (r >= 0)
                r = broker_event_started(run_id(c->run), run_unit(c->run), &started);
        if (r >= 0)
                r = json_build_into(started, JB_BOOL("warm", c->warm), JB_END);
        if (r < 0) {
                log_oom();
                return (void) run_cancel(c->run);
        }
        r = broker_send(c->control, msg, c->run_fds, c->n_run_fds);
        client_close_run_fds(c);
        if (r < 0) {
                log_warning_errno(r, "Cannot hand run %s to its launcher: %m", run_id(c->run));
                (void) run_cancel(c->run);
                return;
        }
        c->handed_off = true;
        run_handed_off(c->run);

        deadline = c->timeout_s * USEC_PER_SEC + (c->warm ? 0 : COLD_DEADLINE_SLACK_USEC);
        c->timer = sd_event_source_disable_unref(c->timer);
        if (sd_event_add_time_relative(s->event, &c->timer, CLOCK_MONOTONIC, deadline, 10 * USEC_PER_MSEC,
                                       on_deadline, c) < 0)
                log_warning("Cannot arm the deadline of run %s; systemd's RuntimeMaxSec= still ends it.",
                            run_id(c->run));

        (void) broker_send(c->fd, started, NULL, 0);
}

static void on_run_started(Run *run, void *userdata) {
        Client *c = userdata;

        client_try_handoff(c);
        server_update_pool(c->server);
}

/* A run's "exit": what a session's call has, and its accounting (null when
 * systemd did not say). */
static int run_exit_event(Client *c, Run *run, const RunResult *res, const char *sig, json_object **ret) {
        _cleanup_json_ json_object *j = NULL;
        BrokerExit x = {
                .run_id = run_id(run),
                .exit_code = res->exit_code,
                .signal = sig,
                .timed_out = res->timed_out,
                .oom_killed = res->oom_killed,
                .cancelled = res->cancelled,
                .duration_usec = res->duration_usec,
        };
        int r;

        assert(c);
        assert(res);
        assert(ret);

        r = broker_event_exit(&x, &j);
        if (r >= 0)
                r = res->cpu_usec == UINT64_MAX ? json_add_null(j, "cpu_ms")
                                                : json_add_int(j, "cpu_ms", (int64_t) (res->cpu_usec / 1000));
        if (r >= 0)
                r = res->memory_peak == UINT64_MAX ? json_add_null(j, "memory_peak_bytes")
                                                   : json_add_int(j, "memory_peak_bytes", (int64_t) res->memory_peak);
        if (r >= 0)
                r = json_build_into(j, JB_STR("result", res->unit_result ?: ""), JB_BOOL("warm", c->warm), JB_END);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

static void on_run_done(Run *run, const RunResult *res, void *userdata) {
        Client *c = userdata;
        _cleanup_json_ json_object *j = NULL;
        const char *sig = res->signal > 0 ? signal_to_name(res->signal) : NULL;
        char cpu[32] = "", peak[32] = "";

        if (res->cpu_usec != UINT64_MAX)
                (void) snprintf(cpu, sizeof cpu, "%" PRIu64, res->cpu_usec / 1000);
        if (res->memory_peak != UINT64_MAX)
                (void) snprintf(peak, sizeof peak, "%" PRIu64, res->memory_peak);

        log_struct(res->error ? LOG_ERR : LOG_INFO,
                   "MESSAGE=Run %s finished: %s", run_id(run),
                           res->error ?: res->cancelled ? "cancelled" : res->unit_result ?: "unknown",
                   "MCP_RUN_ID=%s", run_id(run),
                   "MCP_UNIT=%s", run_unit(run),
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_TAG=%s", c->tag,
                   "MCP_TIMEOUT_S=%" PRIu64, c->timeout_s,
                   "MCP_RESULT=%s", res->error ? "error" : res->unit_result ?: "unknown",
                   "MCP_EXIT_CODE=%i", res->exit_code,
                   "MCP_SIGNAL=%s", sig ?: "",
                   "MCP_TIMED_OUT=%i", res->timed_out,
                   "MCP_OOM_KILLED=%i", res->oom_killed,
                   "MCP_CANCELLED=%i", res->cancelled,
                   "MCP_DURATION_MS=%" PRIu64, res->duration_usec / 1000,
                   "MCP_CPU_MS=%s", cpu,
                   "MCP_WARM=%i", c->warm);
        stats_run_done(&c->server->stats, res);
        if (!c->warm && c->handed_off && !res->error)
                pool_note_cold_run(c->server->pool, res->duration_usec);

        if (!c->gone) {
                if (res->error)
                        (void) client_send_error(c, BROKER_ERROR_START_FAILED, res->error);
                else if (run_exit_event(c, run, res, sig, &j) < 0)
                        (void) client_send_oom(c);
                else
                        (void) broker_send(c->fd, j, NULL, 0);
        }
        /* One connection, one run. */
        client_free(c);
}

static bool fd_is_stream(int fd) {
        struct stat st;
        return fstat(fd, &st) >= 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* Before a warm unit is ready, "info" says what they will import. */
static int preload_list(const char *preload, json_object **ret) {
        _cleanup_json_ json_object *l = json_object_new_array();
        _cleanup_free_ char *copy = strdup(preload);
        char *save = NULL;
        int r;

        assert(preload);
        assert(ret);

        if (!l || !copy)
                return -ENOMEM;
        for (char *m = strtok_r(copy, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
                r = json_append(l, json_object_new_string(m));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static void client_handle_info(Client *c) {
        _cleanup_json_ json_object *j = NULL, *planned = NULL;
        BrokerInfoReply info;
        Server *s;
        int r = 0;

        assert(c);

        s = c->server;
        /* With the sandbox known (the discovery cache), the front end is
         * answered at once, "probing": its first run starts beside the
         * self-check and is held until it passed. */
        if (s->discovering || (s->probe_state == SELF_CHECK_PENDING && !s->sandbox_info)) {
                c->info_pending = true;
                return;
        }
        c->info_pending = false;
        if (!pool_preloaded(s->pool) && s->pool && !pool_broken(s->pool) && s->preload)
                r = preload_list(s->preload, &planned);
        info = (BrokerInfoReply) {
                .version = PACKAGE_VERSION,
                .python = s->python,
                .sandbox = s->probe_state == SELF_CHECK_PASSED ? "ok" :
                           s->probe_state == SELF_CHECK_FAILED ? "failed" : "probing",
                .sandbox_failure = s->probe_failure,
                .default_timeout_s = s->config.default_timeout_s,
                .max_timeout_s = s->config.max_timeout_s,
                .max_code_bytes = s->config.max_code_bytes,
                .memory_max_bytes = s->config.memory_max,
                .tasks_max = s->config.tasks_max,
                .cpu_quota_percent = s->config.cpu_quota_percent,
                .file_size_max_bytes = s->config.file_size_max,
                .tmp_size_max_bytes = s->config.tmp_size_max,
                .max_concurrent = s->config.max_concurrent,
                .python_version = json_get(s->sandbox_info, "python"),
                .modules = json_get(s->sandbox_info, "modules"),
                .pool_size = pool_broken(s->pool) ? 0 : s->config.pool_size,
                .pool_ready = pool_n_ready(s->pool),
                .pool_hits = pool_n_hits(s->pool),
                .preloaded = pool_preloaded(s->pool) ?: planned,
                .max_sessions = s->config.max_sessions,
                .max_sessions_per_caller = s->config.max_sessions_per_caller,
                .max_sessions_per_scope = s->config.max_sessions_per_scope,
                .session_idle_s = s->config.session_idle_s,
                .session_max_s = s->config.session_max_s,
                .sessions = s->n_sessions,
        };
        if (r >= 0)
                r = broker_event_info(&info, &j);
        if (r < 0)
                (void) client_send_oom(c);
        else
                (void) broker_send(c->fd, j, NULL, 0);
}

/* Counters and gauges for the front end's /metrics and /healthz; answered
 * at once, also while the self-check is under way. */
static void client_handle_stats(Client *c) {
        _cleanup_json_ json_object *j = NULL;
        unsigned queued = 0;

        LIST_FOREACH(wait, w, c->server->wait_list)
                queued++;
        stats_set_pool(&c->server->stats, pool_broken(c->server->pool) ? 0 : c->server->config.pool_size,
                       pool_n_ready(c->server->pool), pool_n_hits(c->server->pool));
        stats_set_sessions(&c->server->stats, c->server->n_sessions, c->server->config.max_sessions);
        if (stats_reply(&c->server->stats, c->server->n_runs, queued, c->server->probe_state, &j) < 0)
                (void) client_send_oom(c);
        else
                (void) broker_send(c->fd, j, NULL, 0);
}

static void on_discovery_done(json_object *info, void *userdata);

/* Warm units imported what was installed when they started: after a package
 * was installed, upgraded or removed, none of them may serve (no stale numpy
 * after an upgrade). Cheap: a stat() of the interpreter and each directory of
 * its path, before each run. */
static void server_check_packages(Server *s) {
        _cleanup_free_ char *now = NULL;
        SandboxSpec spec;

        if (!s->pool || !s->stamp || s->discovering)
                return;
        now = discovery_stamp(s->python, json_get(s->sandbox_info, "path"));
        if (!now || streq(now, s->stamp))
                return;
        log_struct(LOG_NOTICE, "MESSAGE=Python or its packages changed; replacing the warm units and discovering again.",
                   "MCP_POOL=%s", "recycled");
        free(s->stamp);
        s->stamp = TAKE_PTR(now);
        pool_recycle(s->pool);
        server_fill_spec(s, 60, &spec);
        spec.mpl_cache = NULL;
        if (discovery_start(s->event, s->bus, &spec, on_discovery_done, s, &s->discovery) >= 0)
                s->discovering = true;
}

/* A warm unit if one is ready, else a cold one; the run is handed over as
 * soon as the unit runs and the self-check passed. */
static int client_start_run(Client *c) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        SandboxSpec spec;
        Server *s;
        int r;

        assert(c);

        s = c->server;
        server_check_packages(s);
        if (pool_take(s->pool, &c->run, &c->control) >= 0) {
                c->warm = true;
                run_set_callbacks(c->run, on_run_started, on_run_done, c);
        } else {
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                        r = negative_errno();
                else {
                        server_fill_spec(s, c->timeout_s, &spec);
                        r = run_start(s->bus, &spec, sp[1], on_run_started, on_run_done, c, &c->run);
                }
                if (r < 0) {
                        log_error_errno(r, "Failed to start a run: %m");
                        stats_start_failed(&s->stats);
                        return client_send_error(c, BROKER_ERROR_START_FAILED,
                                                 "could not ask systemd for a sandbox unit");
                }
                c->control = TAKE_FD(sp[0]);
        }
        s->n_runs++;
        c->counted = true;
        c->timer = sd_event_source_disable_unref(c->timer);
        server_update_pool(s);
        log_struct(LOG_INFO, "MESSAGE=Run %s requested", run_id(c->run),
                   "MCP_RUN_ID=%s", run_id(c->run),
                   "MCP_UNIT=%s", run_unit(c->run),
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_TAG=%s", c->tag,
                   "MCP_TIMEOUT_S=%" PRIu64, c->timeout_s,
                   "MCP_WARM=%i", c->warm);
        client_try_handoff(c);
        return 0;
}

/* Starts waiting runs, oldest first, while slots are free. Deferred from
 * wherever a slot frees, so no list changes under a caller's feet. */
static int on_dispatch(sd_event_source *es, void *userdata) {
        Server *s = userdata;

        while (s->wait_list && s->n_runs < s->config.max_concurrent) {
                Client *c = s->wait_list;

                client_unwait(c);
                if (s->probe_state == SELF_CHECK_FAILED) {
                        stats_refused(&s->stats);
                        (void) client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE,
                                                 s->probe_failure ?: "the sandbox self-check failed");
                } else
                        (void) client_start_run(c);
                if (!c->run)
                        client_free(c);
        }
        server_update_pool(s);
        return 0;
}

static int client_handle_run(Client *c, json_object *req, int fds[], size_t n_fds) {
        const char *tag;
        json_object *v;
        Server *s;

        assert(c);
        assert(req);
        assert(fds);

        s = c->server;
        if (n_fds < 3 || n_fds > 4)
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST,
                                         "a run needs three or four pipe or socket fds: stdin, stdout, stderr "
                                         "and the result channel");
        for (size_t i = 0; i < n_fds; i++)
                if (!fd_is_stream(fds[i]))
                        return client_send_error(c, BROKER_ERROR_BAD_REQUEST, "a run's fds must be pipes or sockets");

        c->timeout_s = s->config.default_timeout_s;
        if (json_object_object_get_ex(req, "timeout_s", &v)) {
                int64_t t;
                if (!json_object_is_type(v, json_type_int) || (t = json_object_get_int64(v)) < 0)
                        return client_send_error(c, BROKER_ERROR_BAD_REQUEST, "timeout_s must be a non-negative integer");
                /* 0 means the default; anything else is clamped to [1, max]. */
                if (t > 0)
                        c->timeout_s = CLAMP((uint64_t) t, 1, s->config.max_timeout_s);
        }
        if ((tag = json_get_string(req, "tag"))) {
                /* Metadata for the journal only: keep it short and printable. */
                size_t i;
                for (i = 0; tag[i] && i < sizeof c->tag - 1; i++)
                        c->tag[i] = (tag[i] >= 0x21 && tag[i] < 0x7f) ? tag[i] : '_';
                c->tag[i] = 0;
        }

        if (s->probe_state == SELF_CHECK_FAILED) {
                stats_refused(&s->stats);
                return client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE, s->probe_failure ?: "the sandbox self-check failed");
        }
        for (size_t i = 0; i < n_fds; i++) {
                c->run_fds[i] = fds[i];
                fds[i] = -EBADF;
        }
        c->n_run_fds = n_fds;
        if (s->n_runs >= s->config.max_concurrent || s->wait_list) {
                /* Both front ends (and root) share the slots: wait in line
                 * rather than refuse, so that neither starves the other. The
                 * line is bounded by the connection limit; its caller's own
                 * timeout covers the wait, and hanging up leaves the line. */
                c->waiting = true;
                LIST_APPEND(wait, s->wait_list, c);
                c->timer = sd_event_source_disable_unref(c->timer);
                server_update_pool(s);
                return 0;
        }
        return client_start_run(c);
}

/* ---- Sessions ---------------------------------------------------------- */

/* Owner strings from the front end: short, printable, for comparison only. */
static int parse_owner(json_object *req, const char **ret_caller, const char **ret_scope) {
        const char *caller = json_get_string(req, "caller"), *scope = json_get_string(req, "scope") ?: "";

        if (!caller || isempty(caller) || strlen(caller) > SANDBOX_SESSION_OWNER_MAX || strlen(scope) > SANDBOX_SESSION_OWNER_MAX)
                return -EINVAL;
        for (const char *p = caller; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return -EINVAL;
        for (const char *p = scope; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return -EINVAL;
        *ret_caller = caller;
        *ret_scope = scope;
        return 0;
}

/* Root's sessions are root's; the front end's die with its process. */
static pid_t client_frontend_pid(const Client *c) {
        return c->uid == 0 ? 0 : c->pid;
}

/* The id is the handle's secret: compared in constant time. */
static bool id_equal(const char *a, const char *b) {
        unsigned char d = 0;

        if (strlen(a) != SANDBOX_SESSION_ID_LEN || strlen(b) != SANDBOX_SESSION_ID_LEN)
                return false;
        for (size_t i = 0; i < SANDBOX_SESSION_ID_LEN; i++)
                d |= (unsigned char) (a[i] ^ b[i]);
        return d == 0;
}

/* The caller's live session of that id; NULL for any other, so that a guessed
 * or another caller's handle looks exactly like one that never was. */
static SandboxSession *client_find_session(Client *c, json_object *req) {
        const char *id = json_get_string(req, "session"), *caller, *scope;
        SandboxSession *found = NULL;

        if (!id || parse_owner(req, &caller, &scope) < 0)
                return NULL;
        LIST_FOREACH(sessions, se, c->server->sessions)
                if (id_equal(se->id, id) && !se->ending &&
                    sandbox_session_owned_by(se, caller, scope, client_frontend_pid(c)))
                        found = se;
        return found;
}

static void client_detach_session(Client *c) {
        c->session = NULL;
        c->session_creating = c->session_calling = false;
}

/* The creator learns its handle once the interpreter is up and the sandbox
 * self-check has passed. */
static void client_answer_session(Client *c) {
        _cleanup_json_ json_object *j = NULL;
        Server *s = c->server;
        SandboxSession *se = c->session;

        assert(se && c->session_creating);
        if (!se->ready || s->probe_state != SELF_CHECK_PASSED)
                return;
        if (broker_event_session(se->id, sandbox_session_unit(se), s->config.session_idle_s, s->config.session_max_s,
                                 s->config.memory_max, &j) < 0) {
                (void) client_send_error(c, BROKER_ERROR_INTERNAL, "out of memory");
                client_free(c);         /* ends the session: nobody has its handle */
                return;
        }
        log_struct(LOG_INFO, "MESSAGE=Session %s created", sandbox_session_unit(se),
                   "MCP_UNIT=%s", sandbox_session_unit(se),
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_SESSIONS=%u", s->n_sessions);
        if (broker_send(c->fd, j, NULL, 0) < 0) {
                client_free(c);
                return;
        }
        s->stats.sessions_created++;
        client_detach_session(c);
        client_free(c);
}

static void on_session_ready(SandboxSession *se, bool ready, void *userdata) {
        Server *s = userdata;

        LIST_FOREACH_SAFE(clients, c, n, s->clients)
                if (c->session == se && c->session_creating) {
                        if (ready)
                                client_answer_session(c);
                        else {
                                (void) client_send_error(c, BROKER_ERROR_START_FAILED,
                                                         "the session's interpreter did not start");
                                client_detach_session(c);
                                client_free(c);
                        }
                }
}

static void on_session_call_done(SandboxSession *se, const SandboxSessionCallResult *r, void *userdata) {
        const char *sig = r->signal > 0 ? signal_to_name(r->signal) : NULL;
        Server *s = userdata;

        log_struct(r->lost ? LOG_WARNING : LOG_INFO,
                   "MESSAGE=Call in session %s finished%s", sandbox_session_unit(se), r->lost ? "; the session is lost" : "",
                   "MCP_UNIT=%s", sandbox_session_unit(se),
                   "MCP_EXIT_CODE=%i", r->exit_code,
                   "MCP_SIGNAL=%s", sig ?: "",
                   "MCP_TIMED_OUT=%i", r->timed_out,
                   "MCP_OOM_KILLED=%i", r->oom_killed,
                   "MCP_SESSION_LOST=%i", r->lost,
                   "MCP_DURATION_MS=%" PRIu64, r->duration_usec / 1000);
        s->stats.session_calls++;

        LIST_FOREACH_SAFE(clients, c, n, s->clients) {
                _cleanup_json_ json_object *j = NULL;
                BrokerExit x = {
                        .run_id = sandbox_session_unit(se),
                        .exit_code = r->exit_code,
                        .signal = sig,
                        .timed_out = r->timed_out,
                        .oom_killed = r->oom_killed,
                        .cancelled = r->interrupted,
                        .duration_usec = r->duration_usec,
                };

                if (c->session != se || !c->session_calling)
                        continue;
                client_detach_session(c);
                if (!c->gone) {
                        if (broker_event_exit(&x, &j) < 0 || json_add_bool(j, "session_lost", r->lost) < 0)
                                (void) client_send_oom(c);
                        else
                                (void) broker_send(c->fd, j, NULL, 0);
                }
                client_free(c);
        }
}

static void on_session_gone(SandboxSession *se, SandboxSessionEnd why, void *userdata) {
        Server *s = userdata;

        /* Whoever still waits on it hears why. */
        LIST_FOREACH_SAFE(clients, c, n, s->clients)
                if (c->session == se) {
                        bool creating = c->session_creating;

                        client_detach_session(c);
                        (void) client_send_error(c, creating ? BROKER_ERROR_START_FAILED : BROKER_ERROR_SESSION_NOT_FOUND,
                                                 creating ? "the session's unit did not start"
                                                          : "the session ended");
                        client_free(c);
                }
        if (why == SANDBOX_SESSION_END_LOST)
                s->stats.sessions_lost++;
        LIST_REMOVE(sessions, s->sessions, se);
        assert(s->n_sessions > 0);
        s->n_sessions--;
        sandbox_session_free(se);
        server_update_idle(s);
}

static const SandboxSessionCallbacks session_callbacks = {
        .ready = on_session_ready,
        .call_done = on_session_call_done,
        .gone = on_session_gone,
};

static int client_handle_session_create(Client *c, json_object *req) {
        const char *caller, *scope;
        Server *s = c->server;
        SandboxSessionOwner owner;
        SandboxSpec spec;
        unsigned mine = 0, in_scope = 0;
        SandboxSession *se;
        int r;

        if (parse_owner(req, &caller, &scope) < 0)
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST,
                                         "a session needs a caller (and may have a scope): printable, at most 256 bytes");
        if (s->probe_state == SELF_CHECK_FAILED)
                return client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE, s->probe_failure ?: "the sandbox self-check failed");
        if (s->config.max_sessions == 0)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT, "sessions are turned off (MCP_EXEC_MAX_SESSIONS=0)");
        if (s->n_sessions >= s->config.max_sessions)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT,
                                         "the server holds as many sessions as it may (MCP_EXEC_MAX_SESSIONS); "
                                         "close one or wait for one to expire");
        LIST_FOREACH(sessions, x, s->sessions)
                if (sandbox_session_has_caller(x, caller)) {
                        mine++;
                        in_scope += !isempty(scope) && sandbox_session_in_scope(x, caller, scope);
                }
        if (mine >= s->config.max_sessions_per_caller)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT,
                                         "this caller holds as many sessions as it may "
                                         "(MCP_EXEC_MAX_SESSIONS_PER_CALLER); close one first");
        /* One MCP session of a caller (one HTTP client of a shared token)
         * gets only its share, so that it cannot shut the caller's other
         * clients out. The unscoped (stdio: the uid's own) have no share. */
        if (in_scope >= s->config.max_sessions_per_scope)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT,
                                         "this MCP session holds as many sessions as one may "
                                         "(MCP_EXEC_MAX_SESSIONS_PER_SCOPE); close one first");

        owner = (SandboxSessionOwner) { .caller = caller, .scope = scope, .frontend_pid = client_frontend_pid(c) };
        server_fill_spec(s, 0, &spec);
        r = sandbox_session_new(s->event, s->bus, &spec, &owner, s->config.session_idle_s * USEC_PER_SEC,
                        s->config.session_max_s * USEC_PER_SEC, &session_callbacks, s, &se);
        if (r < 0) {
                log_error_errno(r, "Failed to start a session: %m");
                return client_send_error(c, BROKER_ERROR_START_FAILED, "could not ask systemd for a session unit");
        }
        LIST_PREPEND(sessions, s->sessions, se);
        s->n_sessions++;
        c->session = se;
        c->session_creating = true;
        c->timer = sd_event_source_disable_unref(c->timer);
        server_update_idle(s);
        return 0;
}

static int client_handle_session_exec(Client *c, json_object *req, int fds[], size_t n_fds) {
        _cleanup_json_ json_object *started = NULL, *limits = NULL;
        Server *s = c->server;
        uint64_t timeout_s = s->config.default_timeout_s;
        json_object *v;
        SandboxSession *se;
        int r;

        if (n_fds < 3 || n_fds > 4)
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST,
                                         "a call needs three or four pipe or socket fds: stdin, stdout, stderr "
                                         "and the result channel");
        for (size_t i = 0; i < n_fds; i++)
                if (!fd_is_stream(fds[i]))
                        return client_send_error(c, BROKER_ERROR_BAD_REQUEST, "a call's fds must be pipes or sockets");
        if (json_object_object_get_ex(req, "timeout_s", &v)) {
                int64_t t;
                if (!json_object_is_type(v, json_type_int) || (t = json_object_get_int64(v)) < 0)
                        return client_send_error(c, BROKER_ERROR_BAD_REQUEST, "timeout_s must be a non-negative integer");
                if (t > 0)
                        timeout_s = CLAMP((uint64_t) t, 1, s->config.max_timeout_s);
        }
        se = client_find_session(c, req);
        if (!se)
                return client_send_error(c, BROKER_ERROR_SESSION_NOT_FOUND,
                                         "no such session: it ended (closed, expired, or lost), or it is not yours");
        r = server_result_limits(s, &limits);
        if (r >= 0)
                r = broker_event_started(sandbox_session_unit(se), sandbox_session_unit(se), &started);
        if (r >= 0)
                r = json_build_into(started, JB_BOOL("session", true), JB_END);
        if (r < 0)
                return client_send_oom(c);
        r = sandbox_session_call(se, limits, timeout_s * USEC_PER_SEC, fds, n_fds);
        if (r == -EBUSY)
                return client_send_error(c, BROKER_ERROR_SESSION_BUSY,
                                         "another call of this session is running; a session runs one call at a time");
        if (r < 0)
                return client_send_error(c, BROKER_ERROR_SESSION_NOT_FOUND, "the session is ending");
        c->session = se;
        c->session_calling = true;
        c->timeout_s = timeout_s;
        c->timer = sd_event_source_disable_unref(c->timer);
        log_struct(LOG_INFO, "MESSAGE=Call in session %s started", sandbox_session_unit(se),
                   "MCP_UNIT=%s", sandbox_session_unit(se),
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_TIMEOUT_S=%" PRIu64, timeout_s);
        (void) broker_send(c->fd, started, NULL, 0);
        return 0;
}

static int client_send_closed(Client *c, unsigned count) {
        _cleanup_json_ json_object *j = NULL;

        assert(c);

        if (broker_event_closed(count, &j) < 0)
                return client_send_oom(c);
        return broker_send(c->fd, j, NULL, 0);
}

static int client_handle_session_close(Client *c, json_object *req) {
        SandboxSession *se = client_find_session(c, req);

        if (!se)
                return client_send_error(c, BROKER_ERROR_SESSION_NOT_FOUND,
                                         "no such session: it ended (closed, expired, or lost), or it is not yours");
        sandbox_session_end(se, SANDBOX_SESSION_END_CLOSED);
        return client_send_closed(c, 1);
}

/* The MCP session the front end gave as scope ended: so do the sessions
 * made in it. */
static int client_handle_session_close_scope(Client *c, json_object *req) {
        const char *caller, *scope;
        unsigned n = 0;

        if (parse_owner(req, &caller, &scope) < 0 || isempty(scope))
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST, "closing a scope needs a caller and a scope");
        LIST_FOREACH(sessions, se, c->server->sessions)
                if (!se->ending && sandbox_session_owned_by(se, caller, scope, client_frontend_pid(c))) {
                        sandbox_session_end(se, SANDBOX_SESSION_END_SCOPE);
                        n++;
                }
        return client_send_closed(c, n);
}

static int on_client_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Client *c = userdata;
        _cleanup_json_ json_object *req = NULL;
        int fds[BROKER_MAX_FDS];
        size_t n_fds = 0;
        const char *op;
        int r;

        r = broker_recv(fd, &req, fds, ELEMENTSOF(fds), &n_fds);
        if (r == -EAGAIN)
                return 0;
        if (r <= 0) {
                /* EOF or garbage. With a run going: the caller is gone, so the
                 * run goes too (the unit is stopped, not left behind). */
                if (r < 0 && r != -ECONNRESET)
                        (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "malformed packet");
                c->gone = true;
                if (c->detached && c->run && !run_is_done(c->run)) {
                        /* Not a cancel: the program is over, its unit goes
                         * as any run's does, and holds its slot until then. */
                        c->io = sd_event_source_disable_unref(c->io);
                        return 0;
                }
                if (c->run && !run_is_done(c->run)) {
                        c->io = sd_event_source_disable_unref(c->io);
                        (void) run_cancel(c->run);
                        /* Its unit dies with SIGKILL now; the caller, whose
                         * pipes already saw that, may start the next run
                         * before systemd reports it gone. */
                        if (c->counted) {
                                c->counted = false;
                                c->server->n_runs--;
                                server_slot_freed(c->server);
                        }
                        return 0;
                }
                client_free(c);
                return 0;
        }

        op = json_get_string(req, "op");
        if (!op) {
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "missing op");
                return 0;
        }

        if (streq(op, "session_exec") && !c->run && !c->waiting && !c->session) {
                (void) client_handle_session_exec(c, req, fds, n_fds);
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                if (!c->session)
                        client_free(c);
                return 0;
        }
        if (streq(op, "run") && !c->run && !c->waiting && !c->session) {
                (void) client_handle_run(c, req, fds, n_fds);
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                if (!c->run && !c->waiting)
                        client_free(c);
                return 0;
        }
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);

        if (streq(op, "detach") && c->run && c->handed_off) {
                c->detached = true;
                return 0;
        }
        if (streq(op, "cancel") && c->waiting) {
                client_free(c);         /* leaves the line; it never started */
                return 0;
        } else if (streq(op, "cancel") && c->run)
                (void) run_cancel(c->run);
        else if (streq(op, "session_create") && !c->run && !c->waiting && !c->session) {
                if (client_handle_session_create(c, req) < 0 || !c->session)
                        client_free(c);
        } else if (streq(op, "session_close") && !c->run && !c->waiting && !c->session) {
                (void) client_handle_session_close(c, req);
                client_free(c);
        } else if (streq(op, "session_close_scope") && !c->run && !c->waiting && !c->session) {
                (void) client_handle_session_close_scope(c, req);
                client_free(c);
        } else if (streq(op, "info")) {
                c->timer = sd_event_source_disable_unref(c->timer);
                client_handle_info(c);
        } else if (streq(op, "stats")) {
                c->timer = sd_event_source_disable_unref(c->timer);
                client_handle_stats(c);
        }
        else
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "unknown op");
        return 0;
}

static int on_client_timeout(sd_event_source *es, uint64_t usec, void *userdata) {
        Client *c = userdata;

        (void) client_send_error(c, BROKER_ERROR_REQUEST_TIMEOUT, "no request in time");
        client_free(c);
        return 0;
}

/* Answers a connection we will not serve. What it already sent is read and
 * dropped first: closing a unix socket with unread data resets it, and the
 * peer would see ECONNRESET instead of our answer. */
static void refuse(int fd, BrokerError error, const char *message) {
        assert(fd >= 0);
        assert(message);

        for (unsigned i = 0; i < 8; i++) {
                _cleanup_json_ json_object *m = NULL;
                int fds[BROKER_MAX_FDS];
                size_t n = 0;
                int r = broker_recv(fd, &m, fds, ELEMENTSOF(fds), &n);
                for (size_t k = 0; k < n && r > 0; k++)
                        safe_close(fds[k]);
                if (r <= 0 && r != -EBADMSG)
                        break;
        }
        (void) broker_send_error(fd, error, message);
        (void) shutdown(fd, SHUT_WR);
}

/* A client for the connection fd, which it owns once this succeeds. */
static int client_new(Server *s, int fd, pid_t pid, uid_t uid) {
        _cleanup_(client_freep) Client *c = NULL;
        int r;

        assert(s);
        assert(fd >= 0);

        c = new0(Client, 1);
        if (!c)
                return -ENOMEM;
        c->server = s;
        c->fd = c->control = -EBADF;
        for (size_t i = 0; i < ELEMENTSOF(c->run_fds); i++)
                c->run_fds[i] = -EBADF;
        c->pid = pid;
        c->uid = uid;
        LIST_PREPEND(clients, s->clients, c);
        s->n_clients++;
        server_update_idle(s);

        r = sd_event_add_io(s->event, &c->io, fd, EPOLLIN, on_client_io, c);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(s->event, &c->timer, CLOCK_MONOTONIC, REQUEST_TIMEOUT_USEC, 0,
                                       on_client_timeout, c);
        if (r < 0)
                return r;
        c->fd = fd;
        /* It lives on in the server's list and its event sources. */
        TAKE_PTR(c);
        return 0;
}

static int on_accept(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        _cleanup_close_ int cfd = -EBADF;
        pid_t pid;
        uid_t uid;
        int r;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        log_warning_errno(errno, "accept failed: %m");
                return 0;
        }

        r = getpeercred_fd(cfd, &pid, &uid, NULL);
        if (r < 0)
                return log_warning_errno(r, "Failed to read peer credentials, refusing: %m"), 0;
        if (uid != 0 && !(s->have_frontend_uid && uid == s->frontend_uid)) {
                log_struct(LOG_WARNING, "MESSAGE=Refused broker connection from uid %u", (unsigned) uid,
                           "MCP_CLIENT_UID=%u", (unsigned) uid, "MCP_CLIENT_PID=%i", (int) pid,
                           "MCP_DECISION=%s", "denied");
                refuse(cfd, BROKER_ERROR_ACCESS_DENIED, "only root and the mcp-exec user may use the broker");
                return 0;
        }

        /* Connections cost little, but every one is bounded. */
        if (s->n_clients >= 2 * s->config.max_concurrent + 16) {
                stats_refused(&s->stats);
                refuse(cfd, BROKER_ERROR_BUSY, "too many connections");
                return 0;
        }

        r = client_new(s, cfd, pid, uid);
        if (r < 0)
                return log_error_errno(r, "Failed to watch a client: %m"), 0;
        TAKE_FD(cfd);
        return 0;
}

static int on_idle(sd_event_source *es, uint64_t usec, void *userdata) {
        Server *s = userdata;

        if (s->n_clients > 0 || s->n_runs > 0 || s->n_sessions > 0)
                return 0;
        /* The warm units go with us (BindsTo=): the next start refills. */
        log_info("Idle for %" PRIu64 " s, exiting; socket activation starts us again.", s->idle_usec / USEC_PER_SEC);
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(s->event, 0);
}

static void server_update_idle(Server *s) {
        assert(s);

        if (!s->socket_activated || arg_idle_sec == 0)
                return;
        /* Sessions live in us: their handles die with us (BindsTo=). */
        if (s->n_clients > 0 || s->n_sessions > 0 || s->probe_state == SELF_CHECK_PENDING || s->discovering) {
                (void) sd_event_source_set_enabled(s->idle_timer, SD_EVENT_OFF);
                return;
        }
        if (!s->idle_timer) {
                if (sd_event_add_time_relative(s->event, &s->idle_timer, CLOCK_MONOTONIC, s->idle_usec, 0,
                                               on_idle, s) < 0)
                        log_warning("Failed to arm the idle timer, ignoring.");
                return;
        }
        (void) sd_event_source_set_time_relative(s->idle_timer, s->idle_usec);
        (void) sd_event_source_set_enabled(s->idle_timer, SD_EVENT_ONESHOT);
}

static void server_answer_pending_info(Server *s) {
        assert(s);

        LIST_FOREACH(clients, c, s->clients)
                if (c->info_pending)
                        client_handle_info(c);
}

static void on_pool_ready(void *userdata) {
        Server *s = userdata;
        /* "info" says which modules warm units preload. */
        server_answer_pending_info(s);
}

/* What warm units preload: MCP_EXEC_PRELOAD, or the default; only modules
 * that are installed or in the standard library (a missing one would fail in
 * every warm unit). */
static char *server_preload(Server *s) {
        _cleanup_free_ char *want = strdup(s->config.preload ?: PRELOAD_DEFAULT), *out = NULL;
        json_object *lists[] = { json_get(s->sandbox_info, "modules"), json_get(s->sandbox_info, "stdlib") };
        char *save = NULL;
        size_t len = 0;

        if (!want)
                return NULL;
        for (char *m = strtok_r(want, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
                size_t top = strcspn(m, ".");
                bool installed = false;

                for (size_t l = 0; l < ELEMENTSOF(lists) && !installed; l++)
                        for (size_t i = 0; json_object_is_type(lists[l], json_type_array) &&
                                           i < json_object_array_length(lists[l]); i++) {
                                const char *name = json_object_get_string(json_object_array_get_idx(lists[l], i));
                                if (name && strlen(name) == top && strneq(name, m, top)) {
                                        installed = true;
                                        break;
                                }
                        }
                if (!installed) {
                        if (s->config.preload)
                                log_warning("MCP_EXEC_PRELOAD names %s, which is not installed; left out.", m);
                        continue;
                }
                char *n = realloc(out, len + strlen(m) + 2);
                if (!n)
                        return NULL;
                out = n;
                len += (size_t) sprintf(out + len, "%s%s", len ? "," : "", m);
        }
        return TAKE_PTR(out);
}

/* Once the sandbox is known (discovered, or from the cache): the preload, the
 * font cache, and the pool. */
static void server_sandbox_known(Server *s, json_object *info) {
        const char *font;
        PoolConfig pc = {
                .size = (unsigned) s->config.pool_size,
                .idle_usec = s->config.pool_idle_s * USEC_PER_SEC,
                .memory_max = s->config.memory_max,
                .cpu_quota_percent = s->config.cpu_quota_percent,
        };
        int r;

        json_object_put(s->sandbox_info);
        s->sandbox_info = json_object_get(info);
        font = json_get_string(info, "mpl_fontlist");
        free(s->mpl_cache);
        s->mpl_cache = NULL;
        if (font && asprintf(&s->mpl_cache, SANDBOX_CACHE_DIR "/%s", font) < 0)
                s->mpl_cache = NULL;
        free(s->preload);
        s->preload = server_preload(s);
        free(s->stamp);
        s->stamp = discovery_stamp(s->python, json_get(info, "path"));

        if (s->pool) {
                pool_recycle(s->pool);
                return;
        }
        if (pc.size == 0)
                return;
        r = pool_new(s->event, s->bus, &pc, server_fill_warm_spec, on_pool_ready, s, &s->pool);
        if (r < 0)
                log_warning_errno(r, "Cannot start the warm pool, runs take the cold path: %m");
        else {
                log_struct(LOG_INFO, "MESSAGE=Warm pool of %u units, preloading: %s", pc.size,
                           isempty(s->preload) ? "nothing" : s->preload,
                           "MCP_POOL=%s", "started",
                           "MCP_PRELOAD=%s", s->preload ?: "");
                server_update_pool(s);
        }
}

static void on_discovery_done(json_object *info, void *userdata) {
        Server *s = userdata;
        int r;

        s->discovering = false;
        s->discovery = discovery_free(s->discovery);
        if (info) {
                r = discovery_cache_store(SANDBOX_CACHE_DIR, s->python, info);
                if (r < 0)
                        log_warning_errno(r, "Cannot keep the module discovery in " SANDBOX_CACHE_DIR ", ignoring: %m");
        }
        /* A discovery again that failed (its unit was stopped, say) keeps
         * what the last one found. */
        if (info || !s->sandbox_info)
                server_sandbox_known(s, info);
        server_answer_pending_info(s);
        server_update_idle(s);
}

static void on_probe_done(const char *failure, void *userdata) {
        Server *s = userdata;

        s->probe = probe_free(s->probe);
        if (failure) {
                s->probe_state = SELF_CHECK_FAILED;
                s->probe_failure = strdup(failure);
                log_struct(LOG_CRIT, "MESSAGE=Sandbox self-check failed, refusing to run code: %s", failure,
                           "MCP_PROBE=%s", "failed", "MCP_PROBE_FAILURE=%s", failure);
                /* Nothing was handed to a launcher yet: no code ran. */
                s->pool = pool_free(s->pool);
                LIST_FOREACH_SAFE(clients, c, n, s->clients)
                        if (c->run || c->waiting || c->session_creating) {
                                (void) client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE, failure);
                                client_free(c);
                        }
        } else {
                s->probe_state = SELF_CHECK_PASSED;
                log_struct(LOG_INFO, "MESSAGE=Sandbox self-check passed; serving.", "MCP_PROBE=%s", "passed");
                LIST_FOREACH_SAFE(clients, c, n, s->clients)
                        if (c->session_creating)
                                client_answer_session(c);
                        else
                                client_try_handoff(c);
                if (!s->sandbox_info) {
                        SandboxSpec spec;

                        /* In parallel with serving: "info" answers without the module
                         * list until this is done. */
                        server_fill_spec(s, 60, &spec);
                        spec.mpl_cache = NULL;  /* it builds one */
                        if (discovery_start(s->event, s->bus, &spec, on_discovery_done, s, &s->discovery) < 0)
                                log_warning("Cannot start module discovery, continuing without the list.");
                        else
                                s->discovering = true;
                }
        }
        (void) sd_notifyf(false, "STATUS=%s", failure ? "Refusing runs: sandbox self-check failed" : "Serving");
        server_update_pool(s);
        server_answer_pending_info(s);
        server_update_idle(s);
}

static int listen_own_socket(const char *path) {
        union sockaddr_union sa;
        _cleanup_close_ int fd = -EBADF;
        int salen;

        assert(path);

        salen = sockaddr_un_set_path(&sa.un, path);
        if (salen < 0)
                return salen;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        (void) unlink(path);
        if (bind(fd, &sa.sa, (socklen_t) salen) < 0 || chmod(path, 0600) < 0 || listen(fd, 64) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

/* The system bus went away (dbus restarted): every match and pending call of
 * the runs died with it, and systemd's answers can no longer reach us. Exit:
 * the runs stop with us (BindsTo=), their callers see the connection close,
 * and the socket starts a fresh broker, with a fresh connection, for the next
 * one. */
static int on_bus_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Server *s = userdata;

        log_struct(LOG_WARNING, "MESSAGE=Lost the connection to the system bus; exiting, socket activation starts us again.",
                   "MCP_BUS=%s", "disconnected");
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(s->event, EXIT_FAILURE);
}

static void help(void) {
        printf("mcp-exec-brokerd [OPTIONS]\n\n"
               "The mcp-exec broker: runs code in transient systemd services on request.\n"
               "Normally socket-activated by mcp-exec-broker.socket.\n\n"
               "  -h --help               Show this help\n"
               "     --listen=PATH        Listen on PATH instead of a socket-activated fd\n"
               "     --idle-exit-sec=SEC  Exit after SEC idle seconds when socket-activated (0: never)\n"
               "     --launcher=PATH      The in-sandbox launcher (default " LIBEXECDIR "/mcp-exec-launch)\n");
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "listen", required_argument, NULL, 'l' },
                { "idle-exit-sec", required_argument, NULL, 'i' },
                { "launcher", required_argument, NULL, 'L' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'l':
                        arg_listen = optarg;
                        break;
                case 'i':
                        if (parse_uint(optarg, &arg_idle_sec) < 0)
                                return log_error_errno(EINVAL, "Invalid --idle-exit-sec=%s", optarg);
                        break;
                case 'L':
                        arg_launcher = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument: %s", argv[optind]);
        return 1;
}

static Server *server_free(Server *s) {
        if (!s)
                return NULL;
        while (s->clients)
                client_free(s->clients);
        /* Session units stop with their runs too. */
        while (s->sessions) {
                SandboxSession *se = s->sessions;

                LIST_REMOVE(sessions, s->sessions, se);
                sandbox_session_free(se);
        }
        s->n_sessions = 0;
        /* The warm units stop with their runs. */
        s->pool = pool_free(s->pool);
        sd_bus_slot_unref(s->slot_reload);
        sd_event_source_disable_unref(s->reload_timer);
        probe_free(s->probe);
        discovery_free(s->discovery);
        /* After every run: it sends the removals they asked for. */
        s->tmpfs = tmpfs_client_free(s->tmpfs);
        json_object_put(s->sandbox_info);
        sd_event_source_disable_unref(s->idle_timer);
        sd_event_source_disable_unref(s->listen_io);
        sd_event_source_disable_unref(s->dispatch);
        /* Flush StopUnit/Unref calls of runs cut short before leaving. */
        if (s->bus)
                (void) sd_bus_flush(s->bus);
        sd_bus_flush_close_unref(s->bus);
        sd_event_unref(s->event);
        if (!s->socket_activated)
                safe_close(s->listen_fd);
        config_done(&s->config);
        free(s->python);
        free(s->own_unit);
        free(s->probe_failure);
        free(s->preload);
        free(s->mpl_cache);
        free(s->stamp);
        free(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Server *, server_free);

/* The configuration, who the front end is and our own unit. */
static int server_new(Server **ret) {
        _cleanup_(server_freep) Server *s = NULL;
        _cleanup_free_ char *err = NULL, *unit = NULL;
        extern char **environ;
        struct passwd *pw;
        int r;

        assert(ret);

        s = new0(Server, 1);
        if (!s)
                return log_oom();
        s->listen_fd = -EBADF;

        r = config_parse(environ, &s->config, &err);
        if (r >= 0)
                r = config_resolve_python(s->config.python, &s->python, &err);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: %s", err ?: "out of memory", "MCP_CONFIG_ERROR=%s",
                           err ?: "");
                return r;
        }
        for (char **e = environ; *e; e++)
                if (config_is_unknown_assignment(*e))
                        log_warning("Unknown setting %.*s in the environment, ignoring.", (int) strcspn(*e, "="), *e);
        /* With a pool, we stay (and the warm units with us) as long as a warm
         * unit is kept unused. */
        s->idle_usec = (s->config.pool_size > 0 ? MAX(arg_idle_sec, s->config.pool_idle_s) : arg_idle_sec) *
                       USEC_PER_SEC;

        pw = getpwnam(FRONTEND_USER);
        if (pw) {
                s->frontend_uid = pw->pw_uid;
                s->have_frontend_uid = true;
        }

        /* Our own unit (when we are a service): runs bind to it, so they stop
         * when we do. */
        if (sd_pid_get_unit(0, &unit) >= 0 && strlen(unit) > 8 && streq(unit + strlen(unit) - 8, ".service"))
                s->own_unit = TAKE_PTR(unit);

        *ret = TAKE_PTR(s);
        return 0;
}

/* The socket systemd passes us; with --listen, or without systemd, our own. */
static int server_listen(Server *s) {
        const char *path = arg_listen ?: BROKER_SOCKET_PATH;
        int n;

        assert(s);

        n = sd_listen_fds(true);
        if (n > 1)
                return log_error_errno(EINVAL, "Expected one listening socket, got %d.", n);
        if (n == 1) {
                s->listen_fd = SD_LISTEN_FDS_START;
                s->socket_activated = true;
                (void) fd_nonblock(s->listen_fd, true);
                return 0;
        }
        s->listen_fd = listen_own_socket(path);
        if (s->listen_fd < 0)
                return log_error_errno(s->listen_fd, "Failed to listen on %s: %m", path);
        return 0;
}

static int server_connect_bus(Server *s) {
        int r;

        assert(s);

        r = sd_bus_open_system(&s->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_attach_event(s->bus, s->event, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus: %m");
        r = sd_bus_match_signal(s->bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                "Disconnected", on_bus_disconnected, s);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the bus connection: %m");
        return 0;
}

/* After a daemon-reload or daemon-reexec the warm units are replaced: a unit
 * configuration, an interpreter or a library may have changed under them.
 * systemd announces a reload only to subscribers (Subscribe(), which would
 * have it send us every unit's changes), so we look at when it last loaded
 * its units instead, every few seconds while there is a pool. */
#define RELOAD_CHECK_USEC (5 * USEC_PER_SEC)

static int on_units_loaded(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Server *s = userdata;
        uint64_t t = 0;

        s->slot_reload = sd_bus_slot_unref(s->slot_reload);
        if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read(m, "v", "t", &t) < 0)
                return 0;
        if (s->units_loaded != 0 && t != s->units_loaded && s->pool) {
                log_struct(LOG_INFO, "MESSAGE=systemd reloaded; replacing the warm units.", "MCP_POOL=%s", "recycled");
                pool_recycle(s->pool);
        }
        s->units_loaded = t;
        return 0;
}

static int on_reload_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        Server *s = userdata;

        if (s->pool && !s->slot_reload)
                (void) sd_bus_call_method_async(s->bus, &s->slot_reload, "org.freedesktop.systemd1",
                                                "/org/freedesktop/systemd1", "org.freedesktop.DBus.Properties", "Get",
                                                on_units_loaded, s, "ss", "org.freedesktop.systemd1.Manager",
                                                "UnitsLoadTimestampMonotonic");
        (void) sd_event_source_set_time_relative(es, RELOAD_CHECK_USEC);
        (void) sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
        return 0;
}

static void server_start_probe(Server *s) {
        SandboxSpec spec;
        int r;

        assert(s);

        server_fill_spec(s, 30, &spec);
        r = probe_start(s->event, s->bus, &spec, on_probe_done, s, &s->probe);
        if (r < 0) {
                log_error_errno(r, "Failed to start the sandbox self-check: %m");
                on_probe_done("sandbox setup: the self-check could not be started", s);
        }
}

static int run(int argc, char *argv[]) {
        _cleanup_(server_freep) Server *s = NULL;
        int r;

        log_open("mcp-exec-brokerd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = server_new(&s);
        if (r < 0)
                return r;
        r = server_listen(s);
        if (r < 0)
                return r;
        r = event_new_daemon(&s->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        r = server_connect_bus(s);
        if (r < 0)
                return r;

        r = tmpfs_client_new(s->event, TMPFS_SOCKET_PATH, &s->tmpfs);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the mount daemon's client: %m");
        r = run_sweep_stale(s->bus);
        if (r < 0)
                log_warning_errno(r, "Sweeping leftover runs failed, continuing: %m");
        /* And their /tmp, before any run of ours asks for its own. */
        (void) tmpfs_client_sweep(s->tmpfs);
        r = sd_event_add_time_relative(s->event, &s->reload_timer, CLOCK_MONOTONIC, 0, USEC_PER_SEC,
                                       on_reload_timer, s);
        if (r < 0)
                log_warning_errno(r, "Cannot watch for daemon-reload, ignoring: %m");

        /* The runs' own matplotlib directory is mounted here. */
        if (mkdir(SANDBOX_MPL_DIR, 0755) < 0 && errno != EEXIST)
                log_warning_errno(errno, "Cannot create " SANDBOX_MPL_DIR ", ignoring: %m");
        /* A discovery that is still valid makes the next start quick: the
         * pool starts now, beside the self-check. */
        {
                _cleanup_json_ json_object *info = discovery_cache_load(SANDBOX_CACHE_DIR, s->python);
                if (info)
                        server_sandbox_known(s, info);
        }

        /* Clients are taken at once; their units start beside the self-check,
         * and get their run only once it passed. */
        r = sd_event_add_defer(s->event, &s->dispatch, on_dispatch, s);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->dispatch, SD_EVENT_OFF);
        if (r >= 0)
                r = sd_event_add_io(s->event, &s->listen_io, s->listen_fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the listening socket: %m");

        /* Ready before the self-check: the probe unit is ordered after us
         * (BindsTo=, After=), so waiting would deadlock. */
        (void) sd_notify(false, "READY=1\nSTATUS=Checking the sandbox");
        server_start_probe(s);

        r = sd_event_loop(s->event);
        (void) sd_notify(false, "STOPPING=1");
        return r;
}

DEFINE_MAIN_FUNCTION(run);
