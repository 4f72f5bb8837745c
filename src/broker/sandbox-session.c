/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sandbox-session.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/socket.h>

#include "broker-proto.h"
#include "json-util.h"
#include "log.h"
#include "packages.h"
#include "run.h"
#include "util.h"

/* From the start of the unit to the interpreter's "ready". */
#define SANDBOX_SESSION_START_TIMEOUT_USEC (60 * USEC_PER_SEC)

static const char *const end_names[_SANDBOX_SESSION_END_MAX] = {
        [SANDBOX_SESSION_END_CLOSED] = "closed",
        [SANDBOX_SESSION_END_SCOPE] = "scope-ended",
        [SANDBOX_SESSION_END_IDLE] = "idle",
        [SANDBOX_SESSION_END_LIFETIME] = "lifetime",
        [SANDBOX_SESSION_END_LOST] = "lost",
        [SANDBOX_SESSION_END_FRONTEND] = "frontend-exited",
        [SANDBOX_SESSION_END_STOPPED] = "stopped",
        [SANDBOX_SESSION_END_START_FAILED] = "start-failed",
        [SANDBOX_SESSION_END_SHUTDOWN] = "shutdown",
};

const char *sandbox_session_end_to_string(SandboxSessionEnd e) {
        return e >= 0 && e < _SANDBOX_SESSION_END_MAX ? end_names[e] : NULL;
}

const char *sandbox_session_unit(const SandboxSession *s) {
        assert(s);
        return s->run ? run_unit(s->run) : "";
}

bool sandbox_session_has_caller(const SandboxSession *s, const char *caller) {
        assert(s);
        return streq_ptr(s->caller, caller);
}

bool sandbox_session_in_scope(const SandboxSession *s, const char *caller, const char *scope) {
        assert(s);
        return sandbox_session_has_caller(s, caller) && streq_ptr(s->scope, scope);
}

bool sandbox_session_owned_by(const SandboxSession *s, const char *caller, const char *scope, pid_t pid) {
        assert(s);
        /* A front end's session is that process's: a new front end (after a
         * restart) has none, even for the same caller. */
        return sandbox_session_in_scope(s, caller, scope) && (s->frontend_pid <= 0 || s->frontend_pid == pid);
}

SandboxSession *sandbox_session_free(SandboxSession *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->control_io);
        sd_event_source_disable_unref(s->pidfd_io);
        sd_event_source_disable_unref(s->idle_timer);
        sd_event_source_disable_unref(s->life_timer);
        sd_event_source_disable_unref(s->call_timer);
        sd_event_source_disable_unref(s->defer_end);
        /* A unit still running is stopped with its run. */
        run_free(s->run);
        /* egressd cuts the session's connections now. */
        egress_link_free(s->egress);
        /* The gateway cancels the session's calls now. */
        tools_link_free(s->tools);
        free(s->network);
        json_object_put(s->packages);
        safe_close(s->control);
        safe_close(s->pidfd);
        sd_event_unref(s->event);
        free(s->caller);
        free(s->scope);
        free(s);
        return NULL;
}

static void send_gone(SandboxSession *s) {
        if (s->gone_sent)
                return;
        s->gone_sent = true;
        bool bad = s->end == SANDBOX_SESSION_END_LOST || s->end == SANDBOX_SESSION_END_START_FAILED;

        log_struct(bad ? LOG_WARNING : LOG_INFO,
                   "MESSAGE=Session %s ended: %s", sandbox_session_unit(s), sandbox_session_end_to_string(s->end),
                   "MCP_UNIT=%s", sandbox_session_unit(s),
                   "MCP_SESSION_END=%s", sandbox_session_end_to_string(s->end),
                   "MCP_SESSION_CALLS=%" PRIu64, s->n_calls,
                   "MCP_SESSION_AGE_S=%" PRIu64, (now_usec() - s->created_usec) / USEC_PER_SEC);
        /* The callee frees us: nothing after this. */
        s->cb.gone(s, s->end, s->userdata);
}

static int on_defer_end(sd_event_source *es, void *userdata) {
        send_gone(userdata);
        return 0;
}

void sandbox_session_end(SandboxSession *s, SandboxSessionEnd why) {
        assert(s);
        assert(why >= 0 && why < _SANDBOX_SESSION_END_MAX);

        if (s->ending)
                return;
        s->ending = true;
        s->end = why;
        s->idle_timer = sd_event_source_disable_unref(s->idle_timer);
        s->life_timer = sd_event_source_disable_unref(s->life_timer);
        s->pidfd_io = sd_event_source_disable_unref(s->pidfd_io);
        /* The unit goes with SIGKILL; its run reports when it is gone, and
         * then so do we (on_run_done()). */
        if (s->run && !run_is_done(s->run) && run_cancel(s->run) >= 0)
                return;
        if (sd_event_add_defer(s->event, &s->defer_end, on_defer_end, s) < 0)
                send_gone(s);   /* out of memory: at once, then */
}

static int on_idle(sd_event_source *es, uint64_t usec, void *userdata) {
        sandbox_session_end(userdata, SANDBOX_SESSION_END_IDLE);
        return 0;
}

static int on_lifetime(sd_event_source *es, uint64_t usec, void *userdata) {
        sandbox_session_end(userdata, SANDBOX_SESSION_END_LIFETIME);
        return 0;
}

/* A call that outlived its timeout, the launcher's grace and our slack; or
 * an interpreter that never became ready. */
static int on_call_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        SandboxSession *s = userdata;

        s->call_timer = sd_event_source_disable_unref(s->call_timer);
        sandbox_session_end(s, s->ready ? SANDBOX_SESSION_END_LOST : SANDBOX_SESSION_END_START_FAILED);
        return 0;
}

static int on_frontend_exit(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        sandbox_session_end(userdata, SANDBOX_SESSION_END_FRONTEND);
        return 0;
}

static void arm_idle(SandboxSession *s) {
        if (s->ending)
                return;
        s->idle_timer = sd_event_source_disable_unref(s->idle_timer);
        if (sd_event_add_time_relative(s->event, &s->idle_timer, CLOCK_MONOTONIC, s->idle_usec, USEC_PER_SEC,
                                       on_idle, s) < 0)
                log_warning("Cannot arm the idle timer of session %s; its lifetime still ends it.",
                            sandbox_session_unit(s));
}

static void call_finished(SandboxSession *s, const SandboxSessionCallResult *res) {
        s->busy = false;
        s->call_timer = sd_event_source_disable_unref(s->call_timer);
        arm_idle(s);
        s->cb.call_done(s, res, s->userdata);
}

static void on_run_done(Run *run, const RunResult *res, void *userdata) {
        SandboxSession *s = userdata;

        bool running = s->busy && !s->counting;        /* a call whose code had not ended */

        if (!s->ending) {
                s->ending = true;
                s->end = !s->ready && !s->busy                                 ? SANDBOX_SESSION_END_START_FAILED
                         : res->oom_killed                                     ? SANDBOX_SESSION_END_LOST
                         : res->timed_out                                      ? SANDBOX_SESSION_END_LIFETIME
                         : res->exit_code != 0 || res->signal != 0 || running  ? SANDBOX_SESSION_END_LOST
                                                                               : SANDBOX_SESSION_END_STOPPED;
        }
        /* A call that was over: its result as it was, without its counts. */
        if (s->counting) {
                s->counting = false;
                call_finished(s, &s->counted);
        }
        if (s->busy) {
                SandboxSessionCallResult r = {
                        .exit_code = res->exit_code,
                        .signal = res->signal,
                        .lost = true,
                        .oom_killed = res->oom_killed,
                };
                call_finished(s, &r);
        }
        if (!s->ready && s->cb.ready) {
                s->cb.ready(s, false, s->userdata);
                s->cb.ready = NULL;
        }
        s->control_io = sd_event_source_disable_unref(s->control_io);
        send_gone(s);
}

static void on_call_counted(ToolsLink *l, json_object *since, void *userdata) {
        SandboxSession *s = userdata;
        SandboxSessionCallResult r;

        if (!s->counting)
                return;         /* the unit's end finished the call first */
        s->counting = false;
        r = s->counted;
        r.tool_calls = since;
        call_finished(s, &r);
}

static void handle_done(SandboxSession *s, json_object *m) {
        SandboxSessionCallResult r = {
                .exit_code = (int) json_get_int64(m, "exit_code", -1),
                .signal = (int) json_get_int64(m, "signal", 0),
                .timed_out = json_get_bool(m, "timed_out"),
                .interrupted = json_get_bool(m, "interrupted"),
                .lost = json_get_bool(m, "lost"),
                .duration_usec = (uint64_t) MAX(json_get_int64(m, "duration_us", 0), (int64_t) 0),
        };

        if (r.signal > 0)
                r.exit_code = -1;
        /* Code mode: the result waits (briefly) for the calls' counts. */
        if (!r.lost && s->tools && tools_link_query(s->tools, TOOLS_LINK_QUERY_TIMEOUT_USEC, on_call_counted, s) > 0) {
                s->counting = true;
                s->counted = r;
                s->call_timer = sd_event_source_disable_unref(s->call_timer);
                return;
        }
        call_finished(s, &r);
        /* The launcher exits after a lost call; the unit's end follows. */
        if (r.lost)
                sandbox_session_end(s, SANDBOX_SESSION_END_LOST);
}

/* An egress session's network cannot be had: it never becomes ready. */
static void session_egress_failed(SandboxSession *s, const char *message) {
        assert(s);

        (void) snprintf(s->egress_failure, sizeof s->egress_failure, "%s", message);
        log_struct(LOG_WARNING, "MESSAGE=Session %s gets no network: %s", sandbox_session_unit(s), message,
                   "MCP_UNIT=%s", sandbox_session_unit(s),
                   "MCP_EGRESS_POLICY=%s", s->network ?: "");
        sandbox_session_end(s, SANDBOX_SESSION_END_START_FAILED);
}

/* Ready for calls: the launcher said so, and an egress session's launcher
 * has the feed, in a unit whose IP firewall is attached (fail closed, as a
 * run's: client.c). */
static void session_maybe_ready(SandboxSession *s) {
        _cleanup_json_ json_object *m = NULL;
        _cleanup_close_ int feed = -EBADF, tools = -EBADF;

        assert(s);

        if (s->ready || s->ending || !s->launcher_ready || (s->tools && !tools_link_is_settled(s->tools)))
                return;
        if (s->network) {
                if (!run_is_started(s->run) || !egress_link_is_ready(s->egress))
                        return;
                if (!run_ip_firewall_attached(s->run))
                        return session_egress_failed(s, "the sandbox's IP firewall (IPAddressDeny=) is not in effect "
                                                        "on this host: systemd has no cgroup BPF here; sessions with "
                                                        "a network are refused");
                feed = egress_link_take_feed(s->egress);
                if (feed < 0 || json_build(&m, JB_STR("op", "egress"), JB_END) < 0 ||
                    packet_send(s->control, m, &feed, 1) < 0)
                        return session_egress_failed(s, "the feed could not be handed to the session's launcher");
        }
        if (s->tools && (tools = tools_link_take_run_fd(s->tools)) >= 0) {
                _cleanup_json_ json_object *t = NULL;

                if (json_build(&t, JB_STR("op", "tools"), JB_END) < 0 || packet_send(s->control, t, &tools, 1) < 0)
                        log_warning("Session %s gets no tools: its launcher could not be given the connection.",
                                    sandbox_session_unit(s));
        }
        s->ready = true;
        s->call_timer = sd_event_source_disable_unref(s->call_timer);
        arm_idle(s);
        if (s->cb.ready) {
                s->cb.ready(s, true, s->userdata);
                s->cb.ready = NULL;
        }
}

static void on_run_started(Run *run, void *userdata) {
        session_maybe_ready(userdata);
}

static void on_egress_ready(EgressLink *l, int error, const char *message, void *userdata) {
        SandboxSession *s = userdata;

        if (error < 0)
                session_egress_failed(s, message);
        else
                session_maybe_ready(s);
}

static void on_tools_ready(ToolsLink *l, int error, const char *message, void *userdata) {
        SandboxSession *s = userdata;

        if (error < 0)
                log_struct(LOG_WARNING, "MESSAGE=Session %s gets no tools: %s", sandbox_session_unit(s), message,
                           "MCP_UNIT=%s", sandbox_session_unit(s));
        session_maybe_ready(s);
}

void sandbox_session_offer_tools(SandboxSession *s, const char *socket_path, const char *caller,
                                 ToolStats *totals) {
        int r;

        assert(s);
        assert(!s->tools);

        r = tools_link_start(s->event, socket_path, run_id(s->run), caller, TOOLS_LINK_TIMEOUT_USEC, on_tools_ready,
                             s, &s->tools);
        if (r < 0)
                log_struct(LOG_WARNING, "MESSAGE=Session %s gets no tools: cannot reach %s: %s",
                           sandbox_session_unit(s), socket_path, strerror(-r), "MCP_UNIT=%s", sandbox_session_unit(s));
        else
                tools_link_count_into(s->tools, totals);
}

static int on_control(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        _cleanup_json_ json_object *m = NULL;
        SandboxSession *s = userdata;
        const char *event;
        int r;

        r = packet_recv(fd, &m, NULL, 0, NULL);
        if (r == -EAGAIN || r == -EINTR)
                return 0;
        if (r <= 0) {
                /* The launcher is gone or broken: its unit's end says the rest. */
                s->control_io = sd_event_source_disable_unref(s->control_io);
                if (r < 0 || !s->ending)
                        sandbox_session_end(s, s->ready ? SANDBOX_SESSION_END_LOST : SANDBOX_SESSION_END_START_FAILED);
                return 0;
        }
        event = json_get_string(m, "event");
        if (streq_ptr(event, "ready") && !s->launcher_ready) {
                s->launcher_ready = true;
                session_maybe_ready(s);
        } else if (streq_ptr(event, "done") && s->busy && !s->counting)
                handle_done(s, m);
        else
                /* The launcher is ours, so this is a bug or an attack on it. */
                sandbox_session_end(s, SANDBOX_SESSION_END_LOST);
        return 0;
}

int sandbox_session_new(sd_event *e, sd_bus *bus, const SandboxSpec *spec_in, const SandboxOwner *owner,
                        pid_t frontend_pid, uint64_t idle_usec, uint64_t max_usec, const EgressLinkRequest *egress,
                        const SandboxSessionCallbacks *cb, void *userdata, SandboxSession **ret) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        _cleanup_(sandbox_session_freep) SandboxSession *s = NULL;
        SandboxSpec spec = *spec_in;
        int r;

        assert(e);
        assert(bus);
        assert(owner && owner->caller && owner->scope);
        assert(cb && cb->call_done && cb->gone);
        assert(ret);

        if (strlen(owner->caller) > SANDBOX_SESSION_OWNER_MAX || strlen(owner->scope) > SANDBOX_SESSION_OWNER_MAX)
                return -EINVAL;
        s = new0(SandboxSession, 1);
        if (!s)
                return -ENOMEM;
        *s = (SandboxSession) {
                .event = sd_event_ref(e),
                .control = -EBADF,
                .pidfd = -EBADF,
                .frontend_pid = frontend_pid,
                .idle_usec = idle_usec,
                .created_usec = now_usec(),
                .cb = *cb,
                .userdata = userdata,
        };
        s->caller = strdup(owner->caller);
        s->scope = strdup(owner->scope);
        if (!s->caller || !s->scope)
                return -ENOMEM;
        r = random_hex128(s->id);
        if (r < 0)
                return r;

        if (frontend_pid > 0) {
                /* Its front end's end is the session's: handles die with the
                 * process that gave them out. */
                s->pidfd = pidfd_open(frontend_pid, 0);
                if (s->pidfd < 0)
                        return -errno;
                r = sd_event_add_io(e, &s->pidfd_io, s->pidfd, EPOLLIN, on_frontend_exit, s);
                if (r < 0)
                        return r;
        }

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return -errno;
        s->language = spec.language;
        spec.session = true;
        spec.description = SANDBOX_DESCRIPTION_SESSION;
        spec.timeout_usec = max_usec;   /* RuntimeMaxSec=: the absolute cap, whatever happens to us */
        spec.preload = NULL;            /* MemoryMax= is the code's, all of it */
        spec.egress = egress != NULL;
        r = run_start(bus, &spec, sp[1], egress ? on_run_started : NULL, on_run_done, s, &s->run);
        if (r < 0)
                return r;
        if (egress) {
                EgressLinkRequest req = *egress;

                s->network = strdup(egress->policy);
                if (!s->network)
                        return -ENOMEM;
                req.run_id = run_id(s->run);
                r = egress_link_start(e, &req, on_egress_ready, s, &s->egress);
                if (r < 0) {
                        char m[256];
                        /* Not our failure: the session ends, and its
                         * creator hears why (egress-unavailable). */
                        (void) snprintf(m, sizeof m, "mcp-exec-egressd is not reachable at %s (%s)",
                                        req.socket_path, strerror(-r));
                        session_egress_failed(s, m);
                }
        }
        r = sd_event_add_io(e, &s->control_io, sp[0], EPOLLIN, on_control, s);
        if (r < 0)
                return r;
        s->control = TAKE_FD(sp[0]);
        r = sd_event_add_time_relative(e, &s->life_timer, CLOCK_MONOTONIC, max_usec, USEC_PER_SEC, on_lifetime, s);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &s->call_timer, CLOCK_MONOTONIC, SANDBOX_SESSION_START_TIMEOUT_USEC,
                                       USEC_PER_SEC, on_call_timer, s);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}

int sandbox_session_packages(const SandboxSession *s, json_object *own, json_object **ret) {
        assert(s);
        assert(ret);

        return packages_merge(s->packages, own, ret);
}

int sandbox_session_call(SandboxSession *s, json_object *limits, json_object *packages, uint64_t packages_max_bytes,
                         uint64_t timeout_usec, const int *fds, size_t n_fds) {
        _cleanup_json_ json_object *m = NULL;
        int r;

        assert(s);
        assert(fds);
        assert(n_fds >= 3 && n_fds <= PACKET_MAX_FDS);

        if (s->ending)
                return -ESHUTDOWN;
        if (!s->ready || s->busy)
                return -EBUSY;
        r = json_build(&m,
                       JB_STR("op", "run"),
                       JB_OBJ("limits", limits ? json_object_get(limits) : json_object_new_object()),
                       JB_INT("timeout_ms", timeout_usec / USEC_PER_MSEC),
                       JB_END);
        /* Not Python's: the launcher checks it is its own (launch-lang.h). */
        if (r >= 0 && s->language != LANGUAGE_PYTHON)
                r = json_add_string(m, "language", language_to_string(s->language));
        if (r >= 0)
                r = packages_add_to_run(m, packages, packages_max_bytes);
        if (r < 0)
                return r;
        r = packet_send(s->control, m, fds, n_fds);
        if (r < 0)
                return r;
        if (s->egress)
                egress_link_mark(s->egress);
        s->busy = true;
        s->n_calls++;
        s->idle_timer = sd_event_source_disable_unref(s->idle_timer);
        s->call_timer = sd_event_source_disable_unref(s->call_timer);
        if (sd_event_add_time_relative(s->event, &s->call_timer, CLOCK_MONOTONIC,
                                       timeout_usec + SANDBOX_SESSION_CALL_SLACK_USEC, USEC_PER_SEC, on_call_timer,
                                       s) < 0)
                log_warning("Cannot arm the deadline of a call in session %s; its lifetime still ends it.",
                            sandbox_session_unit(s));
        return 0;
}

void sandbox_session_interrupt(SandboxSession *s) {
        _cleanup_json_ json_object *m = NULL;

        assert(s);
        if (!s->busy || s->counting || s->ending)
                return;
        if (json_build(&m, JB_STR("op", "interrupt"), JB_END) < 0)
                return (void) log_oom();
        (void) packet_send(s->control, m, NULL, 0);
}
