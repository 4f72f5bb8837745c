/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-session.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "packet.h"
#include "json-util.h"
#include "launch-collect.h"
#include "launch-egress.h"
#include "launch-input.h"
#include "launch-interp.h"
#include "launch-packages.h"
#include "strv.h"
#include "macro.h"
#include "util.h"

#define CONTROL_FD STDIN_FILENO         /* the broker's end: the unit's stdin */
#define COLLECT_BUDGET_USEC (2 * USEC_PER_SEC)

/* The launcher's side of a sandbox session: the one interpreter that keeps
 * the program's globals from call to call, and how it ended. */
typedef struct LaunchSession {
        const LaunchArgs *args;
        int child;                      /* our end of the interpreter's control socket */
        int pidfd;
        pid_t pid;
        int status;                     /* the interpreter's wait status, once it is gone */
        bool gone;
        /* --egress: our listener, and the feed once the broker sent it
         * ({"op":"egress"} + 1 fd); connections wait in the backlog until
         * then (launch-egress.h). All -EBADF: none. */
        LaunchEgress egress;
        /* Packages (launch-packages.h): the specs installed so far, and
         * whether any code ran (then nothing may be shadowed any more: the
         * interpreter may have imported the old version). */
        char **specs;
        bool ran_code;
} LaunchSession;

/* The broker's {"op":"egress"} with the session's feed: 1 if msg was it. */
static int take_feed(LaunchSession *s, json_object *msg, int fds[], size_t n_fds) {
        assert(s);

        if (!streq_ptr(json_get_string(msg, "op"), "egress"))
                return 0;
        if (s->args->egress && s->egress.feed < 0 && n_fds == 1 && fd_nonblock(fds[0], true) >= 0)
                s->egress.feed = TAKE_FD(fds[0]);
        return 1;
}

/* The broker's {"op":"tools"} with the session's connection to the code-mode
 * gateway, before the first call: it goes on to the interpreter, which keeps
 * it for every call (MCP_EXEC_TOOLS_FD). 1 if msg was it. */
static int take_tools(LaunchSession *s, json_object *msg, int fds[], size_t n_fds) {
        int type = 0;
        socklen_t len = sizeof type;

        assert(s);

        if (!streq_ptr(json_get_string(msg, "op"), "tools"))
                return 0;
        /* If it cannot be passed on, the code's mcp_servers says the
         * session has no tools. */
        if (n_fds == 1 && getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &len) >= 0 && type == SOCK_STREAM)
                (void) launch_send_fds(s->child, "tools", fds, 1);
        return 1;
}

/* One call in the session, from the broker's "run" to our "done". */
typedef struct LaunchCall {
        ResultWriter w;
        uint64_t deadline;              /* CLOCK_MONOTONIC µs: SIGINT, then SIGKILL */
        bool interrupted, timed_out, lost, broker_gone;
        int exit_code, signal;
        FigureInbox figs;
        uint64_t t0, t1;
} LaunchCall;

static void launch_session_done(LaunchSession *s) {
        s->specs = strv_free(s->specs);
        launch_egress_done(&s->egress);
}

static void launch_session_reap(LaunchSession *s) {
        assert(s);

        if (s->gone)
                return;
        while (waitpid(s->pid, &s->status, 0) < 0)
                if (errno != EINTR) {
                        s->status = W_EXITCODE(LAUNCH_EXIT_FAILED, 0);
                        break;
                }
        s->gone = true;
}

static void launch_session_kill(LaunchSession *s) {
        assert(s);

        if (!s->gone)
                (void) kill(s->pid, SIGKILL);
        launch_session_reap(s);
}

/* Messages from the interpreter: figures, then "done N" (N < 0: it ended as
 * if killed by signal -N; launch_parse_done() took only 0..255 and -1..-64).
 * Returns 1 when the call is done, 0 to go on, -EPIPE when the interpreter
 * closed its end.
 *
 * The program runs in the interpreter's process: its call's end and status
 * are the interpreter's word, which the program can forge (a "done" sent
 * early, the code running on as a background thread would). What stays
 * ours: STATUS and END go out on the result channel, which it never holds;
 * the unit's limits and lifetime bound whatever runs on. */
static int read_child(LaunchSession *s, LaunchCall *c) {
        int r, n;

        assert(s);
        assert(c);

        for (;;) {
                r = figure_inbox_read(&c->figs, s->child, c->w.limits.max_images, &n);
                if (r == -EAGAIN)
                        return 0;
                if (r < 0)
                        return r;
                if (r == 1)
                        break;
        }
        if (n < 0) {
                c->signal = -n;
                c->exit_code = -1;
        } else
                c->exit_code = n & 0xFF;
        return 1;
}

/* The broker, during a call: "interrupt", or EOF (the session is closed). */
static void read_broker(LaunchSession *s, LaunchCall *c) {
        _cleanup_json_ json_object *m = NULL;
        int fds[PACKET_MAX_FDS];
        size_t n_fds = 0;
        int r;

        assert(s);
        assert(c);

        r = packet_recv(CONTROL_FD, &m, fds, ELEMENTSOF(fds), &n_fds);
        if (r > 0)
                (void) take_feed(s, m, fds, n_fds);
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);
        if (r == -EAGAIN || r == -EINTR)
                return;
        if (r <= 0) {
                c->broker_gone = true;
                return;
        }
        if (streq_ptr(json_get_string(m, "op"), "interrupt") && !c->interrupted) {
                (void) kill(s->pid, SIGINT);
                c->interrupted = true;
                c->deadline = now_usec() + LAUNCH_SESSION_GRACE_USEC;
        }
}

/* Waits for the end of the call: the interpreter's "done", its death, the
 * deadline (SIGINT, then after the grace SIGKILL), or the broker leaving. */
static void wait_call(LaunchSession *s, LaunchCall *c) {
        assert(s);
        assert(c);

        for (;;) {
                struct pollfd p[] = {
                        { .fd = s->child, .events = POLLIN },
                        { .fd = s->pidfd, .events = POLLIN },
                        { .fd = CONTROL_FD, .events = POLLIN },
                        launch_egress_pollfd(&s->egress),
                };
                uint64_t now = now_usec();
                int r, timeout_ms;

                if (now >= c->deadline) {
                        if (c->interrupted) {
                                launch_session_kill(s);
                                c->lost = true;
                                return;
                        }
                        (void) kill(s->pid, SIGINT);
                        c->interrupted = c->timed_out = true;
                        c->deadline = now + LAUNCH_SESSION_GRACE_USEC;
                        continue;
                }
                timeout_ms = (int) MIN((c->deadline - now + 999) / 1000, (uint64_t) INT32_MAX);
                r = poll(p, ELEMENTSOF(p), timeout_ms);
                if (r < 0 && errno != EINTR) {
                        launch_session_kill(s);
                        c->lost = true;
                        return;
                }
                if (r <= 0)
                        continue;
                if (p[3].revents)
                        launch_egress_dispatch(&s->egress);
                if (p[0].revents) {
                        r = read_child(s, c);
                        if (r == 1)
                                return;
                        if (r < 0) {
                                /* It closed its end: it is dying, or the program
                                 * closed fds it should not have. Either way. */
                                launch_session_kill(s);
                                c->lost = true;
                                return;
                        }
                        continue;
                }
                if (p[1].revents) {
                        launch_session_reap(s);
                        c->lost = true;
                        return;
                }
                if (p[2].revents) {
                        read_broker(s, c);
                        if (c->broker_gone) {
                                launch_session_kill(s);
                                c->lost = true;
                                return;
                        }
                }
        }
}

/* The call's STATUS frame on the result channel. */
static int send_status(LaunchCall *c, int status_signal, int status_code) {
        _cleanup_json_ json_object *m = NULL;
        int r;

        assert(c);

        r = status_signal > 0 ? json_build(&m, JB_INT("signal", status_signal), JB_END)
                              : json_build(&m, JB_INT("exit_code", status_code), JB_END);
        if (r >= 0)
                r = json_build_into(m,
                                    JB_INT("duration_us", c->t1 - c->t0),
                                    JB_BOOL("session_lost", c->lost),
                                    JB_END);
        if (r < 0)
                return r;
        return result_send(&c->w, RESULT_FRAME_STATUS, TAKE_PTR(m), NULL, 0);
}

static void report(LaunchSession *s, LaunchCall *c) {
        _cleanup_json_ json_object *done = NULL;
        int status_signal = c->signal, status_code = c->exit_code;
        int r;

        assert(s);
        assert(c);

        if (c->lost && s->gone) {
                status_signal = WIFSIGNALED(s->status) ? WTERMSIG(s->status) : 0;
                status_code = WIFEXITED(s->status) ? WEXITSTATUS(s->status) : -1;
        }

        if (c->w.fd >= 0) {
                c->w.deadline = now_usec() + COLLECT_BUDGET_USEC;
                figure_inbox_send(&c->figs, &c->w);
                collect_outputs(&c->w);
                (void) send_status(c, status_signal, status_code);
                (void) result_send(&c->w, RESULT_FRAME_END, NULL, NULL, 0);
        }
        figure_inbox_clear(&c->figs);
        c->w.fd = safe_close(c->w.fd);

        if (c->broker_gone)
                return;
        r = json_build(&done, JB_STR("event", "done"), JB_END);
        if (r >= 0)
                r = status_signal > 0 ? json_build_into(done, JB_INT("signal", status_signal), JB_END)
                                      : json_build_into(done, JB_INT("exit_code", status_code), JB_END);
        if (r >= 0)
                r = json_build_into(done,
                                    JB_BOOL("timed_out", c->timed_out),
                                    JB_BOOL("interrupted", c->interrupted && !c->timed_out),
                                    JB_BOOL("lost", c->lost),
                                    JB_INT("duration_us", c->t1 - c->t0),
                                    JB_END);
        /* Out of memory. Without a "done" the broker would wait for the
         * call forever: exit instead, it then sees the control socket close
         * and ends the session as lost (the interpreter dies with us). */
        if (r < 0)
                launch_exit_like(W_EXITCODE(LAUNCH_EXIT_FAILED, 0));
        (void) packet_send(CONTROL_FD, done, NULL, 0);
}

/* The call's "packages", before its code is read; the install's time is
 * the call's. Returns true if the code may run. */
static bool call_packages(LaunchSession *s, LaunchCall *c, json_object *msg) {
        LaunchInstall i = {};
        bool ok;

        assert(s);
        assert(c);

        if (!launch_packages_wanted(msg))
                return true;
        if (launch_packages_install(s->args, msg, &s->specs, !s->ran_code && !s->args->preload, c->deadline, &i) < 0) {
                launch_install_done(&i);
                (void) launch_fail("installing the packages", -ENOMEM);
                return false;
        }
        launch_packages_send(&i, false, &c->w);
        c->timed_out = i.timed_out;
        ok = i.ok;
        launch_install_done(&i);
        return ok;
}

/* One call: the code and input files from the caller's stdin, to the
 * interpreter with the caller's stdin, stdout and stderr; then what it left
 * and how it ended. */
static void launch_session_call(LaunchSession *s, json_object *msg, int fds[], size_t n_fds) {
        LaunchCall c = { .w = { .fd = -EBADF, .limits = LAUNCH_LIMITS_DEFAULT } };
        _cleanup_close_ int code = -EBADF;
        int64_t timeout_ms;
        char go[32];
        int r, n;

        assert(s);
        assert(msg);
        assert(fds);
        assert(n_fds >= 3);
        if (n_fds == 4)
                c.w.fd = TAKE_FD(fds[3]);
        result_limits_from_json(json_get(msg, "limits"), &c.w.limits);
        timeout_ms = CLAMP(json_get_int64(msg, "timeout_ms", 0), (int64_t) 1, (int64_t) 24 * 3600 * 1000);

        /* What came between calls (a thread's figures, a "done" sent
         * after a forged one) is no call's: dropped, never this call's. */
        for (unsigned i = 0; i < 2 * FIGURE_INBOX_MAX && figure_inbox_read(&c.figs, s->child, 0, &n) >= 0; i++)
                ;
        figure_inbox_clear(&c.figs);

        launch_set_err_fd(fds[2]);
        c.t0 = now_usec();
        c.deadline = c.t0 + (uint64_t) timeout_ms * USEC_PER_MSEC;
        /* A call of another language (issue 42) is not run as Python. */
        if (!streq(json_get_string(msg, "language") ?: "python", "python"))
                r = launch_fail("a call of another language came to a Python session", 0);
        else
                r = call_packages(s, &c, msg) ? 0 : LAUNCH_EXIT_FAILED;
        if (r == 0)
                r = launch_read_input(fds[0], s->args->max_code_bytes, c.w.limits.max_input_bytes, true, &code);
        if (r == 0) {
                s->ran_code = true;
                (void) snprintf(go, sizeof go, "go %" PRIu64, c.w.limits.max_images);
                r = launch_send_fds(s->child, go, (int[]) { fds[0], fds[1], fds[2], code }, 4);
                if (r < 0)
                        (void) launch_fail("handing the call to the interpreter", r);
        }
        launch_set_err_fd(-EBADF);
        /* Only the interpreter holds them now: the caller sees EOF when it
         * is done with them. */
        for (size_t i = 0; i < 3; i++)
                fds[i] = safe_close(fds[i]);
        code = safe_close(code);

        if (r == 0) {
                wait_call(s, &c);
        } else {
                c.exit_code = LAUNCH_EXIT_FAILED;
        }
        c.t1 = now_usec();
        report(s, &c);
}

/* Serves the broker's calls until it closes the session or the interpreter is gone. */
static int serve(LaunchSession *s) {
        int r;

        assert(s);

        for (;;) {
                _cleanup_json_ json_object *msg = NULL;
                struct pollfd p[] = {
                        { .fd = CONTROL_FD, .events = POLLIN },
                        { .fd = s->pidfd, .events = POLLIN },
                        launch_egress_pollfd(&s->egress),
                };
                int fds[PACKET_MAX_FDS] = { [0 ... PACKET_MAX_FDS - 1] = -EBADF };
                size_t n_fds = 0;

                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        launch_session_kill(s);
                        return launch_fail("poll", errno);
                }
                /* Between calls a background thread may still connect. */
                if (p[2].revents)
                        launch_egress_dispatch(&s->egress);
                if (p[1].revents) {
                        /* Died between calls: a thread's os._exit(), the OOM killer. */
                        launch_session_reap(s);
                        launch_exit_like(s->status);
                }
                if (!p[0].revents)
                        continue;
                r = packet_recv(CONTROL_FD, &msg, fds, ELEMENTSOF(fds), &n_fds);
                if (r == -EAGAIN || r == -EINTR)
                        continue;
                if (r == 0) {
                        /* The broker closed the session. */
                        launch_session_kill(s);
                        return 0;
                }
                if (r < 0) {
                        launch_session_kill(s);
                        return launch_fail("reading from the broker", r);
                }
                if (take_feed(s, msg, fds, n_fds) || take_tools(s, msg, fds, n_fds) ||
                    !streq_ptr(json_get_string(msg, "op"), "run") || n_fds < 3) {
                        for (size_t i = 0; i < n_fds; i++)
                                safe_close(fds[i]);
                        continue;       /* the feed, or a late "interrupt": the call is over */
                }
                launch_session_call(s, msg, fds, n_fds);
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                if (s->gone)
                        launch_exit_like(s->status);
        }
}

int launch_session(const LaunchArgs *a) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        _cleanup_json_ json_object *ready = NULL;
        _cleanup_close_ int pidfd = -EBADF;
        /* The listener and the feed live as long as the session: the
         * launcher exits when this returns, and they go with it. */
        _cleanup_(launch_session_done) LaunchSession s = { .args = a, .egress = LAUNCH_EGRESS_NULL };
        int r;

        assert(a);
        (void) signal(SIGPIPE, SIG_IGN);

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return launch_fail("socketpair", errno);
        /* Before the interpreter exists, so that it never holds it. */
        if (a->egress && (s.egress.listener = launch_egress_listen()) < 0)
                return launch_fail("listening for the egress proxy", s.egress.listener);
        launch_seed_mpl_cache(a);
        s.pid = launch_spawn_interpreter(a, sp[1], true);
        if (s.pid < 0)
                return launch_fail("fork", s.pid);
        sp[1] = safe_close(sp[1]);
        s.child = sp[0];
        /* See launch-run.h: the program cannot reach into us. */
        (void) prctl(PR_SET_DUMPABLE, 0);
        pidfd = pidfd_open(s.pid, 0);
        if (pidfd < 0) {
                launch_session_kill(&s);
                return launch_fail("pidfd_open", errno);
        }
        s.pidfd = pidfd;

        ready = launch_wait_ready(s.child, NULL);
        if (!ready) {
                launch_session_kill(&s);
                return launch_fail("the interpreter did not start", 0);
        }
        if (a->egress) {
                const char *reason = NULL;
                /* Fail closed, before the broker hears we are ready. */
                r = launch_egress_check(s.egress.listener, &reason);
                if (r < 0) {
                        launch_session_kill(&s);
                        return launch_fail(reason, r);
                }
        }
        r = packet_send(CONTROL_FD, ready, NULL, 0);
        if (r < 0) {
                launch_session_kill(&s);
                return launch_fail("telling the broker we are ready", r);
        }

        return serve(&s);
}
