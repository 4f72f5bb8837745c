/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-run.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "packet.h"
#include "json-util.h"
#include "launch-collect.h"
#include "egress-proto.h"
#include "launch-egress.h"
#include "launch-exitwatch.h"
#include "launch-input.h"
#include "launch-interp.h"
#include "launch-packages.h"
#include "macro.h"
#include "util.h"

#define CONTROL_FD STDIN_FILENO         /* the broker's end: the unit's stdin */
#define COLLECT_BUDGET_USEC (2 * USEC_PER_SEC)

/* What the interpreter sent, without blocking, up to max messages: 1 when a
 * "done" came (read no further), 0 when there is nothing more for now (or
 * max was reached), -EPIPE when its end is closed (and *sock with it). */
static int read_interpreter(FigureInbox *figs, int *sock, uint64_t max_images, unsigned max) {
        int k = -EAGAIN, done;

        assert(figs);
        assert(sock);

        for (unsigned i = 0; i < max && (k = figure_inbox_read(figs, *sock, max_images, &done)) == 0; i++)
                ;
        if (k == -EPIPE)
                *sock = safe_close(*sock);
        return k == -EAGAIN ? 0 : k;
}

/* 1. The interpreter is up, with its preload: tell the broker. 0 with
 * *ret_modules (launch_wait_ready()), or the exit status. */
static int run_ready(int sock, pid_t pid, char **ret_modules) {
        _cleanup_json_ json_object *ready = NULL;
        int r, status;

        assert(sock >= 0);
        assert(pid > 0);

        ready = launch_wait_ready(sock, ret_modules);
        if (!ready) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, &status, 0);
                return launch_fail("the interpreter did not start (a preloaded module may have crashed it)", 0);
        }
        r = packet_send(CONTROL_FD, ready, NULL, 0);
        if (r < 0)
                return launch_fail("telling the broker we are ready", r);
        return 0;
}

/* An egress run's feed is the last fd of the run, with "egress": true; a run
 * has one exactly when we have a listener (--egress). 0 with *ret_feed
 * (non-blocking) taken out of fds, or the exit status. */
static int run_take_feed(const LaunchArgs *a, json_object *run, int fds[static PACKET_MAX_FDS], size_t *n_fds,
                         int *ret_feed) {
        int r;

        assert(a);
        assert(n_fds);
        assert(ret_feed);

        if (json_get_bool(run, "egress") != a->egress)
                return launch_fail(a->egress ? "an egress unit got a run without its feed"
                                             : "a run with a network came to a unit without one", 0);
        if (!a->egress)
                return 0;
        if (*n_fds < 4)
                return launch_fail("malformed run message from the broker: no feed", 0);
        r = fd_nonblock(fds[*n_fds - 1], true);
        if (r < 0)
                return launch_fail("the feed", r);
        *ret_feed = TAKE_FD(fds[*n_fds - 1]);
        (*n_fds)--;
        return 0;
}

/* A run with tools (code mode) has its connection to the gateway as the
 * very last fd, with "tools": true: a stream socket, which goes on to the
 * program (MCP_EXEC_TOOLS_FD). 0 with *ret_tools taken out of fds (or left
 * -EBADF), or the exit status. */
static int run_take_tools(json_object *run, int fds[static PACKET_MAX_FDS], size_t *n_fds, int *ret_tools) {
        int type = 0;
        socklen_t len = sizeof type;

        assert(n_fds);
        assert(ret_tools);

        if (!json_get_bool(run, "tools"))
                return 0;
        if (*n_fds < 4 || getsockopt(fds[*n_fds - 1], SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
                return launch_fail("malformed run message from the broker: no tools connection", 0);
        *ret_tools = TAKE_FD(fds[*n_fds - 1]);
        (*n_fds)--;
        return 0;
}

/* 2. The run: stdin, stdout, stderr, maybe the result channel (into w,
 * with the run's limits), and an egress run's feed (*ret_feed). 0 with
 * *ret_run set; 0 with *ret_run NULL at EOF: the broker stopped us (the pool
 * drained), nothing ran; or the exit status. fds[] gets the fds, also on
 * failure (the caller closes them). */
static int run_receive(const LaunchArgs *a, int fds[static PACKET_MAX_FDS], ResultWriter *w, int *ret_feed,
                       int *ret_tools, json_object **ret_run) {
        _cleanup_json_ json_object *run = NULL;
        size_t n_fds = 0;
        int r;

        assert(fds);
        assert(w);
        assert(ret_run);

        for (;;) {
                /* packet_recv() never blocks: wait here, asleep (a warm unit
                 * may wait many minutes). */
                struct pollfd p = { .fd = CONTROL_FD, .events = POLLIN };

                if (poll(&p, 1, -1) < 0 && errno != EINTR)
                        return launch_fail("waiting for the run", errno);
                r = packet_recv(CONTROL_FD, &run, fds, PACKET_MAX_FDS, &n_fds);
                if (r != -EAGAIN && r != -EINTR)
                        break;
        }
        if (r == 0) {
                *ret_run = NULL;
                return 0;
        }
        if (r < 0 || !streq_ptr(json_get_string(run, "op"), "run") || n_fds < 3)
                return launch_fail("malformed run message from the broker", r < 0 ? r : 0);
        /* A run of another language (issue 42) is not run as Python. */
        if (!streq(json_get_string(run, "language") ?: "python", "python"))
                return launch_fail("a run of another language came to a Python unit", 0);
        r = run_take_tools(run, fds, &n_fds, ret_tools);
        if (r != 0)
                return r;
        r = run_take_feed(a, run, fds, &n_fds, ret_feed);
        if (r != 0)
                return r;
        if (n_fds == 4)
                w->fd = fds[3];
        result_limits_from_json(json_get(run, "limits"), &w->limits);
        launch_set_err_fd(fds[2]);
        *ret_run = TAKE_PTR(run);
        return 0;
}

/* A fresh interpreter without the preload, for packages that shadow what it
 * may have imported: the old one is killed first. 0, or the exit status. */
static int run_respawn(const LaunchArgs *a, int sp[static 2], pid_t *pid) {
        _cleanup_json_ json_object *ready = NULL;
        LaunchArgs plain = *a;
        int status;

        assert(a);
        assert(pid);

        (void) kill(*pid, SIGKILL);
        (void) waitpid(*pid, &status, 0);
        sp[0] = safe_close(sp[0]);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return launch_fail("socketpair", errno);
        plain.preload = NULL;
        *pid = launch_spawn_interpreter(&plain, sp[1], false);
        sp[1] = safe_close(sp[1]);
        if (*pid < 0)
                return launch_fail("fork", *pid);
        ready = launch_wait_ready(sp[0], NULL);
        if (!ready)
                return launch_fail("the fresh interpreter did not start", 0);
        return 0;
}

/* 2b. The run's "packages", before its code is read (launch-packages.h).
 * preloaded: the modules the warm interpreter's preload imported or looked
 * for (launch_wait_ready()). On failure the code never runs: STATUS
 * (LAUNCH_EXIT_FAILED) and END, and the launcher exits with it. 0, or the
 * exit status. */
static int run_packages(const LaunchArgs *a, json_object *run, const char *preloaded, ResultWriter *w,
                        int sp[static 2], pid_t *pid) {
        _cleanup_json_ json_object *m = NULL;
        LaunchInstall i = {};
        bool fresh = false;
        int r;

        assert(a);
        assert(w);
        assert(pid);

        if (!launch_packages_wanted(run)) {
                launch_installer_drop();
                return 0;
        }
        /* No deadline of our own: the unit's RuntimeMaxSec= bounds it all. */
        r = launch_packages_install(a, run, NULL, true, 0, &i);
        if (r < 0) {
                launch_install_done(&i);
                return launch_fail("installing the packages", r);
        }
        /* Never a stale module: what the code imports may not depend on
         * whether its unit was warm. Whatever the preload imported, or
         * looked for in vain, that the packages bring (by any project's
         * name), or a .pth of theirs: the warm interpreter goes. */
        if (!isempty(a->preload) && launch_packages_stale(&i, preloaded)) {
                r = run_respawn(a, sp, pid);
                if (r != 0) {
                        launch_install_done(&i);
                        return r;
                }
                fresh = true;
        }
        launch_packages_send(&i, fresh, w);
        if (i.ok) {
                launch_install_done(&i);
                return 0;
        }
        launch_install_done(&i);
        (void) kill(*pid, SIGKILL);
        if (json_build(&m, JB_INT("exit_code", LAUNCH_EXIT_FAILED), JB_INT("duration_us", 0), JB_END) >= 0)
                (void) result_send(w, RESULT_FRAME_STATUS, TAKE_PTR(m), NULL, 0);
        (void) result_send(w, RESULT_FRAME_END, NULL, NULL, 0);
        return LAUNCH_EXIT_FAILED;
}

/* 3. The code and the input files, then stdin, stdout, stderr and the code
 * to the interpreter. 0 with *ret_t0 (when it got them), or the exit status. */
static int run_hand_over(const LaunchArgs *a, int sock, int fds[static 3], int *tools, const ResultWriter *w,
                         uint64_t *ret_t0) {
        _cleanup_close_ int code = -EBADF;
        uint64_t t0;
        char go[32];
        int r;

        assert(a);
        assert(fds);
        assert(w);
        assert(ret_t0);

        r = launch_read_input(fds[0], a->max_code_bytes, w->limits.max_input_bytes, false, &code);
        if (r != 0)
                return r;
        t0 = now_usec();
        (void) snprintf(go, sizeof go, "go %" PRIu64, w->limits.max_images);
        r = launch_send_fds(sock, go, (int[]) { fds[0], fds[1], fds[2], code, *tools }, *tools >= 0 ? 5 : 4);
        if (r < 0)
                return launch_fail("handing the run to the interpreter", r);
        *tools = safe_close(*tools);
        /* Only the program holds them now: EOF on the caller's side means it is gone. */
        for (size_t i = 0; i < 3; i++)
                fds[i] = safe_close(fds[i]);
        code = safe_close(code);
        launch_set_err_fd(-EBADF);
        *ret_t0 = t0;
        return 0;
}

/* Until it exits, take its figures as they come: it never blocks on a full
 * socket. Its "done" (output flushed and closed, only the exit left) ends
 * the reading, nothing else: the program shares that process and can send
 * it too, early, then run on. How the run ended is the status its main
 * thread gave exit_group(), heard as the call began (launch-exitwatch.h;
 * *ret_reaped false: the call waits until the caller's report went out and
 * exit_watch_release(), then the caller reaps it), or else what
 * waitpid() says (*ret_reaped true); a program that never exits is stopped
 * by the unit's RuntimeMaxSec=, before any STATUS went out. An egress run's
 * connections go to egressd as they come (*egress: all -EBADF when none). */
static int run_wait_exit(pid_t pid, int *sock, FigureInbox *figs, uint64_t max_images, LaunchEgress *egress,
                         bool *ret_reaped) {
        _cleanup_close_ int pidfd = -EBADF;
        int status;

        assert(pid > 0);
        assert(sock);
        assert(figs);
        assert(ret_reaped);

        pidfd = pidfd_open(pid, 0);
        for (bool exited = false, said_done = false; !exited && !said_done && *sock >= 0;) {
                struct pollfd p[] = {
                        { .fd = pidfd, .events = POLLIN },
                        { .fd = *sock, .events = POLLIN },
                        launch_egress_pollfd(egress),
                        { .fd = exit_watch_fd(), .events = POLLIN },
                };

                if (pidfd < 0 || poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (pidfd >= 0 && errno == EINTR)
                                continue;
                        break;          /* no pidfd: waitpid() below, figures after */
                }
                exited = p[0].revents != 0;
                if (p[1].revents)
                        said_done = read_interpreter(figs, sock, max_images, UINT_MAX) > 0;
                if (p[2].revents)
                        launch_egress_dispatch(egress);
                if (p[3].revents && exit_watch_status() >= 0)
                        break;
        }
        /* Its "done" usually comes just before its exit_group(): a moment
         * for the word that makes the wait for the kernel's teardown moot. */
        if (pidfd >= 0 && exit_watch_fd() >= 0 && exit_watch_status() < 0) {
                struct pollfd p[] = {
                        { .fd = pidfd, .events = POLLIN },
                        { .fd = exit_watch_fd(), .events = POLLIN },
                };

                (void) poll(p, ELEMENTSOF(p), -1);
        }
        status = exit_watch_status();
        if (status >= 0) {
                *ret_reaped = false;
                return status;
        }
        /* Not heard: an exit_group() that comes now is answered at once,
         * or it would wait for us while we wait for it. */
        exit_watch_release();
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        status = W_EXITCODE(LAUNCH_EXIT_FAILED, 0);
                        break;
                }
        *ret_reaped = true;
        return status;
}

/* 4. What it left, then how it ended, on the result channel (if any). */
static void run_report(ResultWriter *w, FigureInbox *figs, int status, uint64_t duration_usec) {
        _cleanup_json_ json_object *m = NULL;
        int r;

        assert(w);
        assert(figs);

        if (w->fd < 0)
                return;
        w->deadline = now_usec() + COLLECT_BUDGET_USEC;
        figure_inbox_send(figs, w);
        collect_outputs(w);
        if (WIFSIGNALED(status))
                r = json_build(&m, JB_INT("signal", WTERMSIG(status)), JB_END);
        else
                r = json_build(&m, JB_INT("exit_code", WEXITSTATUS(status)), JB_END);
        if (r >= 0)
                r = json_build_into(m, JB_INT("duration_us", duration_usec), JB_END);
        if (r >= 0)
                (void) result_send(w, RESULT_FRAME_STATUS, TAKE_PTR(m), NULL, 0);
        (void) result_send(w, RESULT_FRAME_END, NULL, NULL, 0);
        w->fd = safe_close(w->fd);
}

int launch_run(const LaunchArgs *a) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        _cleanup_json_ json_object *run = NULL;
        static FigureInbox figs;
        int fds[PACKET_MAX_FDS] = { [0 ... PACKET_MAX_FDS - 1] = -EBADF };
        _cleanup_(launch_egress_done) LaunchEgress egress = LAUNCH_EGRESS_NULL;
        _cleanup_close_ int tools = -EBADF;
        _cleanup_free_ char *preloaded = NULL;
        ResultWriter w = { .fd = -EBADF, .limits = LAUNCH_LIMITS_DEFAULT };
        uint64_t t0 = 0, t1;
        bool reaped;
        pid_t pid;
        int r, status;

        assert(a);
        (void) signal(SIGPIPE, SIG_IGN);

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return launch_fail("socketpair", errno);
        /* Before the interpreter exists, so that it never holds it. */
        if (a->egress && (egress.listener = launch_egress_listen()) < 0)
                return launch_fail("listening for the egress proxy on " EGRESS_LISTEN_ADDR, egress.listener);
        launch_seed_mpl_cache(a);
        pid = launch_spawn_interpreter(a, sp[1], false);
        if (pid < 0)
                return launch_fail("fork", pid);
        sp[1] = safe_close(sp[1]);
        /* From here the program may run beside us: our memory and fds are
         * ours alone (no /proc/PID/mem, /proc/PID/fd, ptrace by the same uid). */
        (void) prctl(PR_SET_DUMPABLE, 0);
        /* A warm unit's installer starts now too, off the caller's time
         * (launch-packages.h), when there is a package store to install
         * from; a cold unit's when a run asks for packages. */
        if (!isempty(a->preload) && launch_packages_store(a))
                (void) launch_installer_prespawn(a);

        if (a->egress) {
                const char *reason = NULL;
                /* Fail closed: the unit is ended before it says ready. */
                r = launch_egress_check(egress.listener, &reason);
                if (r < 0) {
                        (void) kill(pid, SIGKILL);
                        return launch_fail(reason, r);
                }
        }
        r = run_ready(sp[0], pid, &preloaded);
        if (r != 0)
                return r;
        r = run_receive(a, fds, &w, &egress.feed, &tools, &run);
        if (r != 0 || !run)
                return r;
        r = run_packages(a, run, preloaded, &w, sp, &pid);
        if (r != 0)
                return r;
        /* From "go" on, its main thread's exit_group() is the run's end. */
        exit_watch_set_pid(pid);
        r = run_hand_over(a, sp[0], fds, &tools, &w, &t0);
        if (r != 0)
                return r;

        status = run_wait_exit(pid, &sp[0], &figs, w.limits.max_images, &egress, &reaped);
        /* Nothing more is taken: what is still in the backlog is refused. */
        launch_egress_done(&egress);
        t1 = now_usec();
        /* What it sent before it exited (a bounded read: a child it forked
         * may hold the socket and keep sending). */
        if (sp[0] >= 0)
                (void) read_interpreter(&figs, &sp[0], w.limits.max_images, 2 * FIGURE_INBOX_MAX);

        run_report(&w, &figs, status, t1 - t0);
        /* The caller has its answer; now the kernel's teardown. */
        exit_watch_release();
        while (!reaped && waitpid(pid, &(int) { 0 }, 0) < 0 && errno == EINTR)
                ;
        launch_exit_like(status);
}
