/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "client.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "broker-proto.h"
#include "build-config.h"
#include "client-sessions.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "packages.h"
#include "stats.h"
#include "util.h"

#define REQUEST_TIMEOUT_USEC (10 * USEC_PER_SEC)
/* A cold run's RuntimeMaxSec= is its timeout; our own deadline follows a
 * little later, as a backstop. A warm or spare unit's run's timeout is ours
 * alone (their RuntimeMaxSec= only caps the unit's life). */
#define COLD_DEADLINE_SLACK_USEC (5 * USEC_PER_SEC)

void client_close_run_fds(Client *c) {
        assert(c);

        for (size_t i = 0; i < c->n_run_fds; i++)
                c->run_fds[i] = safe_close(c->run_fds[i]);
        c->n_run_fds = 0;
}

void client_unwait(Client *c) {
        assert(c);

        if (c->state != CLIENT_WAITING)
                return;
        LIST_REMOVE(wait, c->manager->wait_list, c);
        c->state = CLIENT_NEW;
}

/* Its slot is free for the next in line. */
void client_release_slot(Client *c) {
        assert(c);

        if (!c->counted)
                return;
        c->counted = false;
        c->manager->n_runs--;
        c->manager->n_long -= c->long_hold;
        manager_slot_freed(c->manager);
}

Client *client_free(Client *c) {
        Manager *m;

        if (!c)
                return NULL;
        m = c->manager;
        client_unwait(c);
        client_close_run_fds(c);
        if (c->session) {
                if (c->session->tools)
                        tools_link_confirm_close_all(c->session->tools, "the session's caller is gone");
                c->session->client = NULL;
                if (c->state == CLIENT_SESSION_CREATING)
                        /* Nobody will ever know its handle. */
                        sandbox_session_end(c->session, SANDBOX_SESSION_END_CLOSED);
                else
                        sandbox_session_interrupt(c->session);
        }
        /* run_free() stops a live unit; its last reference goes with it. */
        c->run = run_free(c->run);
        c->control = safe_close(c->control);
        /* egressd cuts the run's connections now. */
        c->egress = egress_link_free(c->egress);
        /* The gateway cancels the run's calls now. */
        c->tools = tools_link_free(c->tools);
        json_object_put(c->exit_event);
        free(c->network);
        json_object_put(c->packages);
        client_release_slot(c);
        free(c->caller);
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        LIST_REMOVE(clients, m->clients, c);
        m->n_clients--;
        free(c);
        manager_update_idle(m);
        manager_update_pool(m);
        return NULL;
}

int client_send_error(Client *c, BrokerError error, const char *message) {
        assert(c);

        return broker_send_error(c->fd, error, message);
}

/* A reply that could not be built: the caller hears why, rather than
 * nothing or a message with a member missing. */
int client_send_oom(Client *c) {
        assert(c);

        log_oom();
        return client_send_error(c, BROKER_ERROR_INTERNAL, "out of memory");
}

static int on_deadline(sd_event_source *es, uint64_t usec, void *userdata) {
        Client *c = userdata;

        c->timer = sd_event_source_disable_unref(c->timer);
        if (c->run)
                (void) run_expire(c->run);
        return 0;
}

int client_run_message(Client *c, json_object **ret) {
        _cleanup_json_ json_object *msg = NULL, *limits = NULL;
        int r;

        assert(c);
        assert(ret);

        r = manager_result_limits(c->manager, &limits);
        if (r >= 0)
                r = json_build(&msg, JB_STR("op", "run"), JB_OBJ("limits", TAKE_PTR(limits)), JB_END);
        if (r >= 0 && c->network)
                r = json_add_bool(msg, "egress", true);
        /* Not Python's: the launcher checks it is its own (launch-lang.h). */
        if (r >= 0 && c->language != LANGUAGE_PYTHON)
                r = json_add_string(msg, "language", language_to_string(c->language));
        if (r >= 0)
                r = packages_add_to_run(msg, c->packages, c->manager->config.max_install_bytes);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(msg);
        return 0;
}

/* The caller's run goes to the launcher, once the unit runs (and its OOM
 * watch is in place) and the self-check passed: its stdin, stdout, stderr
 * and result channel, and the limits of what comes back; an egress run's
 * feed as the last fd, with "egress": true. From then on the run's time
 * counts. */
void client_try_handoff(Client *c) {
        _cleanup_json_ json_object *msg = NULL, *started = NULL;
        int fds[PACKET_MAX_FDS], feed = -EBADF, tools = -EBADF;
        size_t n_fds;
        Manager *m;
        uint64_t deadline;
        int r;

        assert(c);

        m = c->manager;
        if (c->state != CLIENT_STARTING || m->probe_state != SELF_CHECK_PASSED || !run_is_started(c->run) ||
            client_is_gone(c) || !client_egress_ready(c) || (c->tools && !tools_link_is_settled(c->tools)))
                return;
        assert(c->n_run_fds + 2 <= PACKET_MAX_FDS);
        n_fds = c->n_run_fds;
        memcpy(fds, c->run_fds, n_fds * sizeof(int));
        if (c->network) {
                feed = egress_link_take_feed(c->egress);
                if (feed < 0)
                        return client_egress_failed(c, "the run's feed from mcp-exec-egressd is gone");
                fds[n_fds++] = feed;
        }
        /* Last: the run's tools connection, if the gateway took the run. */
        if (c->tools && (tools = tools_link_take_run_fd(c->tools)) >= 0)
                fds[n_fds++] = tools;
        r = client_run_message(c, &msg);
        if (r >= 0 && tools >= 0)
                r = json_add_bool(msg, "tools", true);
        if (r >= 0)
                r = broker_event_started(run_id(c->run), run_unit(c->run), &started);
        if (r >= 0)
                r = json_build_into(started, JB_BOOL("warm", c->warm), JB_END);
        /* The client then waits for the exit event, which alone has the
         * run's tool_calls (the gateway's counts come at the unit's end). */
        if (r >= 0 && tools >= 0)
                r = json_add_bool(started, "tools", true);
        if (r < 0) {
                log_oom();
                return (void) run_cancel(c->run);
        }
        r = packet_send(c->control, msg, fds, n_fds);
        client_close_run_fds(c);
        safe_close(feed);
        safe_close(tools);
        if (r < 0) {
                log_warning_errno(r, "Cannot hand run %s to its launcher: %m", run_id(c->run));
                (void) run_cancel(c->run);
                return;
        }
        c->state = CLIENT_RUNNING;
        run_handed_off(c->run);

        deadline = c->timeout_s * USEC_PER_SEC + (c->warm || c->spare ? 0 : COLD_DEADLINE_SLACK_USEC);
        c->timer = sd_event_source_disable_unref(c->timer);
        if (sd_event_add_time_relative(m->event, &c->timer, CLOCK_MONOTONIC, deadline, 10 * USEC_PER_MSEC,
                                       on_deadline, c) < 0)
                log_warning("Cannot arm the deadline of run %s; systemd's RuntimeMaxSec= still ends it.",
                            run_id(c->run));

        (void) packet_send(c->fd, started, NULL, 0);
}

static void on_run_started(Run *run, void *userdata) {
        Client *c = userdata;

        assert(c);

        client_try_handoff(c);
        manager_update_pool(c->manager);
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
        assert(run);
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

/* The run's "exit" goes out, with its egress counts. */
static void client_send_exit(Client *c, json_object *j) {
        json_object *e = NULL, *t;

        assert(c);
        assert(j);

        if (c->egress && (egress_link_stats(c->egress, false, &e) < 0 || json_add(j, "egress", e) < 0))
                (void) client_send_oom(c);
        else if ((t = tools_link_counts(c->tools)) && json_add(j, "tool_calls", t) < 0)
                (void) client_send_oom(c);
        else
                (void) packet_send(c->fd, j, NULL, 0);
}

/* egressd's or the gateway's final counts are in (or their time is up):
 * once both are, the held "exit" goes, and the client with it. */
static void client_end_counted(Client *c) {
        assert(c->ends_pending > 0);

        if (--c->ends_pending > 0)
                return;
        if (c->exit_event && !client_is_gone(c))
                client_send_exit(c, c->exit_event);
        client_free(c);
}

static void on_egress_ended(EgressLink *l, void *userdata) {
        client_end_counted(userdata);
}

static void on_tools_ended(ToolsLink *l, void *userdata) {
        client_end_counted(userdata);
}

static void on_run_done(Run *run, const RunResult *res, void *userdata);

/* systemd lost the unit's launcher before the run went to it, or did not
 * answer its start as it re-executed (run.h): none of the run ran (a unit
 * made all the same ends as our end of its control socket closes), so a new
 * unit takes it, once. 0, or -errno: the run ends with the first's error. */
static int client_restart_run(Client *c, const RunResult *res) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        _cleanup_(run_freep) Run *lost = NULL;
        Manager *m = c->manager;
        SandboxSpec spec;
        Run *run = NULL;
        int r;

        if (c->restarted || c->state != CLIENT_STARTING || client_is_gone(c))
                return -ECANCELED;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return -errno;
        manager_fill_spec(m, c->timeout_s, &spec);
        manager_spec_language(m, c->language, &spec);
        spec.egress = c->network != NULL;
        r = run_start(m->bus, &spec, sp[1], on_run_started, on_run_done, c, &run);
        if (r < 0)
                return r;
        log_struct(LOG_NOTICE, "MESSAGE=Run %s: systemd %s, run %s takes it", run_id(c->run),
                   res->pid1_away ? "did not answer its start" : "lost its launcher", run_id(run),
                   "MCP_RUN_ID=%s", run_id(run),
                   "MCP_LOST_RUN_ID=%s", run_id(c->run));
        if (c->warm)
                pool_warm_run_ended(manager_language_pool(m, c->language, false));
        c->warm = c->spare = false;
        c->restarted = true;
        lost = TAKE_PTR(c->run);
        c->run = run;
        c->control = safe_close(c->control);
        c->control = TAKE_FD(sp[0]);
        if (c->network) {
                /* egressd knows the run by its id: a link for the new one. */
                c->egress = egress_link_free(c->egress);
                if (client_start_egress(c) < 0)
                        client_egress_failed(c, "mcp-exec-egressd is not reachable");
        }
        if (c->tools) {
                /* So does the gateway. */
                c->tools = tools_link_free(c->tools);
                client_start_tools(c);
        }
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

        if ((res->lost_launcher || res->pid1_away) && client_restart_run(c, res) >= 0)
                return;
        if (!client_is_gone(c)) {
                if (res->error)
                        (void) client_send_error(c, BROKER_ERROR_START_FAILED, res->error);
                else if (run_exit_event(c, run, res, sig, &j) < 0)
                        (void) client_send_oom(c);
                else {
                        /* What the run left open is cut now and counted:
                         * the result waits for egressd's and the gateway's
                         * final counts. */
                        c->ends_pending += c->egress && egress_link_end(c->egress, EGRESS_LINK_END_TIMEOUT_USEC,
                                                                        on_egress_ended, c) > 0;
                        c->ends_pending += c->tools && tools_link_end(c->tools, TOOLS_LINK_END_TIMEOUT_USEC,
                                                                      on_tools_ended, c) > 0;
                        if (c->ends_pending > 0) {
                                c->timer = sd_event_source_disable_unref(c->timer);
                                c->exit_event = TAKE_PTR(j);
                        } else
                                client_send_exit(c, j);
                }
        }
        /* The result goes out first. A replacement's start (PID 1) and the
         * log line (journald) each take a core for a while, which the front
         * end's reply need not wait behind. */
        stats_run_done(&c->manager->stats, res);
        if (!c->warm && (c->state == CLIENT_RUNNING || c->state == CLIENT_DETACHED) && !res->error)
                pool_note_cold_run(manager_language_pool(c->manager, c->language, false), res->duration_usec);
        if (c->warm)
                pool_warm_run_ended(manager_language_pool(c->manager, c->language, false));
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
                   "MCP_EGRESS_POLICY=%s", c->network ?: "",
                   "MCP_WARM=%i", c->warm,
                   "MCP_PACKAGES=%zu", packages_count(c->packages));
        if (c->exit_event)
                return;         /* client_end_counted() frees it */
        /* One connection, one run. */
        client_free(c);
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

void client_answer_info(Client *c) {
        _cleanup_json_ json_object *j = NULL, *planned = NULL;
        BrokerInfoReply info;
        Manager *m;
        int r = 0;

        assert(c);

        m = c->manager;
        /* With the sandbox known (the discovery cache), the front end is
         * answered at once, "probing": its first run starts beside the
         * self-check and is held until it passed. */
        if (m->discovering || (m->probe_state == SELF_CHECK_PENDING && !m->sandbox_info)) {
                c->info_pending = true;
                return;
        }
        c->info_pending = false;
        if (!pool_preloaded(m->pool) && m->pool && !pool_broken(m->pool) && m->preload)
                r = preload_list(m->preload, &planned);
        info = (BrokerInfoReply) {
                .version = PACKAGE_VERSION,
                .python = m->python,
                .sandbox = m->probe_state == SELF_CHECK_PASSED ? "ok" :
                           m->probe_state == SELF_CHECK_FAILED ? "failed" : "probing",
                .sandbox_failure = m->probe_failure,
                .default_timeout_s = m->config.default_timeout_s,
                .max_timeout_s = m->config.max_timeout_s,
                .task_max_timeout_s = m->config.task_max_timeout_s,
                .max_code_bytes = m->config.max_code_bytes,
                .memory_max_bytes = m->config.memory_max,
                .tasks_max = m->config.tasks_max,
                .cpu_quota_percent = m->config.cpu_quota_percent,
                .file_size_max_bytes = m->config.file_size_max,
                .tmp_size_max_bytes = m->config.tmp_size_max,
                .max_concurrent = m->config.max_concurrent,
                .python_version = json_get(m->sandbox_info, "python"),
                .modules = json_get(m->sandbox_info, "modules"),
                .pool_size = pool_broken(m->pool) ? 0 : m->config.pool_size,
                .pool_ready = pool_n_ready(m->pool),
                .pool_hits = pool_n_hits(m->pool),
                .preloaded = pool_preloaded(m->pool) ?: planned,
                .max_sessions = m->config.max_sessions,
                .max_sessions_per_caller = m->config.max_sessions_per_caller,
                .max_sessions_per_scope = m->config.max_sessions_per_scope,
                .session_idle_s = m->config.session_idle_s,
                .session_max_s = m->config.session_max_s,
                .sessions = m->sessions.n,
                .languages = manager_languages(m),
        };
        if (r >= 0)
                r = broker_event_info(&info, &j);
        if (r < 0)
                (void) client_send_oom(c);
        else
                (void) packet_send(c->fd, j, NULL, 0);
}

/* Counters and gauges for the front end's /metrics and /healthz; answered
 * at once, also while the self-check is under way. */
static int client_op_stats(Client *c, json_object *req, int fds[], size_t n_fds) {
        _cleanup_json_ json_object *j = NULL;
        Manager *m;
        unsigned queued = 0;

        assert(c);

        m = c->manager;
        c->timer = sd_event_source_disable_unref(c->timer);
        LIST_FOREACH(wait, w, m->wait_list)
                queued++;
        stats_set_pool(&m->stats, pool_broken(m->pool) ? 0 : m->config.pool_size, pool_n_ready(m->pool),
                       pool_n_hits(m->pool));
        stats_set_sessions(&m->stats, m->sessions.n, m->config.max_sessions);
        /* Egress counts only where there is egress: /metrics stays as it was. */
        m->stats.has_egress = m->egress.n_policies > 0;
        memcpy(m->stats.egress_connections, m->egress_totals.connections, sizeof m->stats.egress_connections);
        m->stats.egress_bytes_up = m->egress_totals.bytes_up;
        m->stats.egress_bytes_down = m->egress_totals.bytes_down;
        /* Tool calls only where code mode is (or was) set up: the same. */
        m->stats.has_tools = m->tools_totals.n > 0 ||
                              (m->tools_servers_dir && tools_configured(m->tools_servers_dir));
        m->stats.tools = m->tools_totals;
        if (stats_reply(&m->stats, m->n_runs, queued, m->probe_state, &j) < 0)
                return client_send_oom(c);
        return packet_send(c->fd, j, NULL, 0);
}

static int client_op_info(Client *c, json_object *req, int fds[], size_t n_fds) {
        assert(c);

        c->timer = sd_event_source_disable_unref(c->timer);
        client_answer_info(c);
        return 0;
}

/* A warm unit if one is ready, else a cold one; the run is handed over as
 * soon as the unit runs and the self-check passed. */
int client_start_run(Client *c) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        SandboxSpec spec;
        Pool *pool;
        Manager *m;
        int r;

        assert(c);

        m = c->manager;
        manager_check_packages(m);
        /* A warm unit's RuntimeMaxSec= backstop is sized for MCP_EXEC_MAX_TIMEOUT_S:
         * a longer run (a task's) gets a unit of its own with its own. A run
         * with a network too: warm units have no AF_INET. */
        pool = manager_language_pool(m, c->language, true);
        if (!c->network && c->timeout_s <= m->config.max_timeout_s &&
            pool_take(pool, &c->run, &c->control) >= 0) {
                c->warm = true;
                run_set_callbacks(c->run, on_run_started, on_run_done, c);
        } else if (!c->network && c->timeout_s <= m->config.max_timeout_s && c->language == LANGUAGE_PYTHON &&
                   pool_take_spare(m->pool, &c->run, &c->control) >= 0) {
                /* A cold run on a unit asked for a moment ago (pool.h). */
                c->spare = true;
                run_set_callbacks(c->run, on_run_started, on_run_done, c);
        } else {
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                        r = negative_errno();
                else {
                        manager_fill_spec(m, c->timeout_s, &spec);
                        manager_spec_language(m, c->language, &spec);
                        spec.egress = c->network != NULL;
                        r = run_start(m->bus, &spec, sp[1], on_run_started, on_run_done, c, &c->run);
                }
                if (r < 0) {
                        log_error_errno(r, "Failed to start a run: %m");
                        stats_start_failed(&m->stats);
                        return client_send_error(c, BROKER_ERROR_START_FAILED,
                                                 "could not ask systemd for a sandbox unit");
                }
                c->control = TAKE_FD(sp[0]);
        }
        if (c->network) {
                r = client_start_egress(c);
                if (r < 0) {
                        char message[256];
                        log_warning_errno(r, "Cannot reach mcp-exec-egressd for run %s: %m", run_id(c->run));
                        c->run = run_free(c->run);
                        c->control = safe_close(c->control);
                        stats_refused(&m->stats);
                        (void) snprintf(message, sizeof message, "mcp-exec-egressd is not reachable at %s (%s)",
                                        m->egress_socket, strerror(-r));
                        return client_send_error(c, BROKER_ERROR_EGRESS_UNAVAILABLE, message);
                }
        }
        /* Code mode's mcp_servers is a Python module. */
        if (c->language == LANGUAGE_PYTHON)
                client_start_tools(c);
        c->state = CLIENT_STARTING;
        m->n_runs++;
        m->n_long += c->long_hold;
        c->counted = true;
        c->timer = sd_event_source_disable_unref(c->timer);
        manager_update_pool(m);
        /* A warm unit gets its run here and now; PID 1 and the journal,
         * which take a core for a while, are woken after its launcher. */
        client_try_handoff(c);
        /* Admins see it as a run from now on (systemctl list-units; the
         * tests' harness waits for a unit described as idle). Asked for at
         * the take, not waited for: deferring it by 100 ms (tried) left a
         * taken unit described as idle, which is a lie to the admin and
         * made the harness take runs to cold units. A spare's start may
         * not even be sent yet (its /tmp first): then right after it
         * (run_describe()). */
        if (c->warm || c->spare)
                (void) run_describe(c->run, SANDBOX_DESCRIPTION_RUN);
        log_struct(LOG_INFO, "MESSAGE=Run %s requested", run_id(c->run),
                   "MCP_RUN_ID=%s", run_id(c->run),
                   "MCP_UNIT=%s", run_unit(c->run),
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_TAG=%s", c->tag,
                   "MCP_TIMEOUT_S=%" PRIu64, c->timeout_s,
                   "MCP_WARM=%i", c->warm,
                   "MCP_SPARE=%i", c->spare,
                   "MCP_LANGUAGE=%s", language_to_string(c->language),
                   "MCP_PACKAGES=%zu", packages_count(c->packages));
        return 0;
}

static int client_op_run(Client *c, json_object *req, int fds[], size_t n_fds) {
        const char *tag;
        Manager *m;
        int r;

        assert(c);
        assert(req);

        m = c->manager;
        r = client_take_fds(c, "run", fds, n_fds);
        if (r < 0)
                return r;
        r = client_parse_timeout(c, req, &c->timeout_s);
        if (r < 0)
                return r;
        c->long_hold = c->timeout_s > m->config.max_timeout_s;
        r = client_parse_caller(c, req);
        if (r < 0)
                return r;
        r = client_parse_network(c, req);
        if (r < 0)
                return r;
        r = client_parse_packages(c, req);
        if (r < 0)
                return r;
        c->confirm = json_get_bool(req, "confirm");
        r = client_parse_language(c, req);
        if (r < 0)
                return r;
        if ((tag = json_get_string(req, "tag"))) {
                /* Metadata for the journal only: keep it short and printable. */
                size_t i;
                for (i = 0; tag[i] && i < sizeof c->tag - 1; i++)
                        c->tag[i] = (tag[i] >= 0x21 && tag[i] < 0x7f) ? tag[i] : '_';
                c->tag[i] = 0;
        }

        if (m->probe_state == SELF_CHECK_FAILED) {
                stats_refused(&m->stats);
                return client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE,
                                         m->probe_failure ?: "the sandbox self-check failed");
        }
        if (!manager_run_has_room(m, c) || manager_next_waiter(m)) {
                /* Both front ends (and root) share the slots: wait in line
                 * rather than refuse, so that neither starves the other; who
                 * goes next is decided by fair shares (manager.h). The
                 * line is bounded by the connection limit; its caller's own
                 * timeout covers the wait, and hanging up leaves the line. */
                c->state = CLIENT_WAITING;
                LIST_APPEND(wait, m->wait_list, c);
                c->timer = sd_event_source_disable_unref(c->timer);
                manager_update_pool(m);
                return 0;
        }
        return client_start_run(c);
}

/* After "started": the caller has its result (the launcher's report). */
static int client_op_detach(Client *c, json_object *req, int fds[], size_t n_fds) {
        assert(c);

        c->state = CLIENT_DETACHED;
        return 0;
}

/* The answer to a "confirm" event: to the gateway if it answers an open
 * question of this run's, else dropped. */
static int client_op_confirm_answer(Client *c, json_object *req, int fds[], size_t n_fds) {
        BrokerConfirmAnswer a;
        ToolsLink *l;

        assert(c);

        l = c->tools ?: c->session ? c->session->tools : NULL;
        if (broker_confirm_answer_parse(req, &a) < 0 || !l || tools_link_confirm_answer(l, &a) < 0)
                log_debug("Run %s: an answer to no open question; dropped.", c->run ? run_id(c->run) : "-");
        return 0;
}

static int client_op_cancel(Client *c, json_object *req, int fds[], size_t n_fds) {
        assert(c);

        if (c->state == CLIENT_WAITING) {
                /* Leaves the line; it never started, and the connection ends. */
                client_unwait(c);
                return 0;
        }
        return run_cancel(c->run);
}

#define IN(s) (1U << (s))
#define IN_ANY ((1U << _CLIENT_STATE_MAX) - 1)

/* The requests, as dbus-broker's controller methods: a name, the states it
 * is valid in (elsewhere it is an "unknown op"), and whether it is the
 * connection's one request, so that the connection ends unless the op left
 * it something to wait for (a state other than CLIENT_NEW). */
typedef struct ClientOp {
        const char *name;
        int (*handle)(Client *c, json_object *req, int fds[], size_t n_fds);
        unsigned in;
        bool once;
} ClientOp;

static const ClientOp client_ops[] = {
        { "run",                 client_op_run,                 .in = IN(CLIENT_NEW), .once = true },
        { "session_exec",        client_op_session_exec,        .in = IN(CLIENT_NEW), .once = true },
        { "session_create",      client_op_session_create,      .in = IN(CLIENT_NEW), .once = true },
        { "session_close",       client_op_session_close,       .in = IN(CLIENT_NEW), .once = true },
        { "session_close_scope", client_op_session_close_scope, .in = IN(CLIENT_NEW), .once = true },
        { "detach",              client_op_detach,              .in = IN(CLIENT_RUNNING) | IN(CLIENT_DETACHED) },
        { "confirm_answer",      client_op_confirm_answer,      .in = IN_ANY },
        { "cancel",              client_op_cancel,
          .in = IN(CLIENT_WAITING) | IN(CLIENT_STARTING) | IN(CLIENT_RUNNING) | IN(CLIENT_DETACHED), .once = true },
        { "info",                client_op_info,                .in = IN_ANY },
        { "stats",               client_op_stats,               .in = IN_ANY },
};

/* The fds that came with req are the caller's to close; an op takes what it
 * keeps (client_take_fds()). */
static void client_dispatch(Client *c, json_object *req, int fds[], size_t n_fds) {
        const char *name;

        assert(c);
        assert(req);

        name = json_get_string(req, "op");
        if (!name) {
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "missing op");
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(client_ops); i++) {
                const ClientOp *op = &client_ops[i];

                if (!streq(op->name, name) || !(op->in & IN(c->state)))
                        continue;
                (void) op->handle(c, req, fds, n_fds);
                if (op->once && c->state == CLIENT_NEW)
                        client_free(c);
                return;
        }
        (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "unknown op");
}

/* EOF or garbage. With a run going: the caller is gone, so the run goes too
 * (the unit is stopped, not left behind). */
static void client_hang_up(Client *c, int error) {
        assert(c);

        if (error < 0 && error != -ECONNRESET)
                (void) client_send_error(c, BROKER_ERROR_BAD_REQUEST, "malformed packet");
        if (!c->run || run_is_done(c->run)) {
                client_free(c);
                return;
        }
        c->io = sd_event_source_disable_unref(c->io);
        if (c->state == CLIENT_DETACHED)
                /* Not a cancel: the program is over, its unit goes as any
                 * run's does, and holds its slot until then. */
                return;
        (void) run_cancel(c->run);
        /* Its unit dies with SIGKILL now; the caller, whose pipes already saw
         * that, may start the next run before systemd reports it gone. */
        client_release_slot(c);
}

static int on_client_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        _cleanup_json_ json_object *req = NULL;
        Client *c = userdata;
        int fds[PACKET_MAX_FDS];
        size_t n_fds = 0;
        int r;

        r = packet_recv(fd, &req, fds, ELEMENTSOF(fds), &n_fds);
        if (r == -EAGAIN)
                return 0;
        if (r <= 0) {
                client_hang_up(c, r);
                return 0;
        }
        /* c may be gone after this: only the fds are touched. */
        client_dispatch(c, req, fds, n_fds);
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);
        return 0;
}
static int on_client_timeout(sd_event_source *es, uint64_t usec, void *userdata) {
        Client *c = userdata;

        (void) client_send_error(c, BROKER_ERROR_REQUEST_TIMEOUT, "no request in time");
        client_free(c);
        return 0;
}

/* A client for the connection fd, which it owns once this succeeds. */
int client_new(Manager *m, int fd, pid_t pid, uid_t uid) {
        _cleanup_(client_freep) Client *c = NULL;
        int r;

        assert(m);
        assert(fd >= 0);

        c = new0(Client, 1);
        if (!c)
                return -ENOMEM;
        c->manager = m;
        c->fd = c->control = -EBADF;
        for (size_t i = 0; i < ELEMENTSOF(c->run_fds); i++)
                c->run_fds[i] = -EBADF;
        c->pid = pid;
        c->uid = uid;
        LIST_PREPEND(clients, m->clients, c);
        m->n_clients++;
        manager_update_idle(m);

        r = sd_event_add_io(m->event, &c->io, fd, EPOLLIN, on_client_io, c);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(m->event, &c->timer, CLOCK_MONOTONIC, REQUEST_TIMEOUT_USEC, 0,
                                       on_client_timeout, c);
        if (r < 0)
                return r;
        c->fd = fd;
        /* It lives on in the manager's list and its event sources. */
        TAKE_PTR(c);
        return 0;
}
