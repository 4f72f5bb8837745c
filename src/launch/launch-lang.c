/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-lang.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json-util.h"
#include "launch-collect.h"
#include "launch-egress.h"
#include "launch-input.h"
#include "launch-interp.h"
#include "launch-session.h"
#include "macro.h"
#include "packet.h"
#include "util.h"

#define CONTROL_FD STDIN_FILENO         /* the broker's end: the unit's stdin */
#define COLLECT_BUDGET_USEC (2 * USEC_PER_SEC)
/* The caller's stdin is bounded by the front end (MCP_EXEC_MAX_STDIN_BYTES);
 * this is ours, so that nothing a caller sends grows without limit. */
#define LANG_STDIN_MAX ((uint64_t) 256 << 20)
/* After the program's end, what its pipes still hold is relayed, up to this
 * much: a child it left running may keep writing, and is not the run's. */
#define LANG_DRAIN_MAX ((size_t) 4 << 20)
#define LANG_LINE_MAX 64U

/* The interpreter and the launcher's ends of its fds (launch-lang.h). */
typedef struct LangChild {
        pid_t pid;
        int pidfd;
        int control;                    /* ours of fd 3, non-blocking */
        int out, err;                   /* the read ends of fd 1 and 2, non-blocking */
        int in, code;                   /* the memfds at fd 0 and fd 4 */
        char line[LANG_LINE_MAX + 1];   /* a control line being read */
        size_t line_len;
        bool control_eof;
        int status;                     /* its wait status, once gone */
        bool gone;
} LangChild;

#define LANG_CHILD_NULL                                                                                 \
        { .pid = 0, .pidfd = -EBADF, .control = -EBADF, .out = -EBADF, .err = -EBADF, .in = -EBADF,    \
          .code = -EBADF }

static void lang_child_reap(LangChild *c) {
        assert(c);

        if (c->gone || c->pid <= 0)
                return;
        while (waitpid(c->pid, &c->status, 0) < 0)
                if (errno != EINTR) {
                        c->status = W_EXITCODE(LAUNCH_EXIT_FAILED, 0);
                        break;
                }
        c->gone = true;
}

/* The interpreter and whatever of its process group is left. */
static void lang_child_kill(LangChild *c) {
        assert(c);

        if (c->pid > 0 && !c->gone) {
                (void) kill(-c->pid, SIGKILL);
                (void) kill(c->pid, SIGKILL);
        }
        lang_child_reap(c);
}

static void lang_child_done(LangChild *c) {
        if (!c)
                return;
        lang_child_kill(c);
        c->pidfd = safe_close(c->pidfd);
        c->control = safe_close(c->control);
        c->out = safe_close(c->out);
        c->err = safe_close(c->err);
        c->in = safe_close(c->in);
        c->code = safe_close(c->code);
}

/* In the child: fd to target, where every source is above LAUNCH_LANG_CODE_FD
 * already (no dup2() clobbers a source). */
static int lang_child_exec(const LaunchArgs *a, char **argv, char **env, const int src[static 5]) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

        /* Out of memory, the kernel takes the program, not the parent. */
        if (oom >= 0)
                (void) !write(oom, "1000", 4);
        (void) sigaction(SIGPIPE, &sa, NULL);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* A group of its own: a session's interrupt reaches what it runs in
         * the foreground too. */
        (void) setpgid(0, 0);
        for (int i = 0; i < 5; i++)
                if (dup2(src[i], i) < 0)
                        return -errno;
        (void) close_range(LAUNCH_LANG_CODE_FD + 1, ~0U, 0);
        if (a->egress && launch_egress_seccomp() < 0)
                return -EPERM;
        execve(a->interpreter, argv, env);
        return -errno;
}

/* Forks and execs the interpreter with its fds (launch-lang.h). */
static int lang_spawn(const LaunchArgs *a, bool session, LangChild *c) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF }, out[2] = { -EBADF, -EBADF },
                                 err[2] = { -EBADF, -EBADF };
        const char *const *flags = language_interpreter_flags(a->language);
        char *argv[16];
        LaunchArgs plain = *a;
        int src[5];
        size_t n = 0;
        char **env;
        pid_t pid;

        assert(a);
        assert(c);

        c->in = memfd_create("mcp-exec-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        c->code = memfd_create("mcp-exec-code", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (c->in < 0 || c->code < 0)
                return -errno;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
            pipe2(err, O_CLOEXEC) < 0)
                return -errno;
        /* Every source above the targets, so that no dup2() in the child
         * clobbers another. */
        src[0] = fcntl(c->in, F_DUPFD_CLOEXEC, 16);
        src[1] = fcntl(out[1], F_DUPFD_CLOEXEC, 16);
        src[2] = fcntl(err[1], F_DUPFD_CLOEXEC, 16);
        src[3] = fcntl(sp[1], F_DUPFD_CLOEXEC, 16);
        src[4] = fcntl(c->code, F_DUPFD_CLOEXEC, 16);

        argv[n++] = (char *) a->interpreter;
        for (size_t i = 0; flags[i] && n < ELEMENTSOF(argv) - 3; i++)
                argv[n++] = (char *) flags[i];
        argv[n++] = (char *) a->bootstrap;
        if (session)
                argv[n++] = (char *) "--session";
        argv[n] = NULL;
        /* Python's environment, without matplotlib's nor the packages'. */
        plain.mpl_dir = NULL;
        plain.wheelhouse = NULL;
        env = launch_child_env(&plain);

        pid = -EBADF;
        for (size_t i = 0; i < 5; i++)
                if (src[i] < 0)
                        pid = -errno;
        if (pid == -EBADF)
                pid = launch_fork();
        if (pid == 0)
                {
                (void) lang_child_exec(a, argv, env, src);
                _exit(LAUNCH_EXIT_FAILED);
        }
        for (size_t i = 0; i < 5; i++)
                (void) safe_close(src[i]);
        if (pid < 0)
                return pid == -1 ? -errno : pid;
        c->pid = pid;
        c->pidfd = pidfd_open(pid, 0);
        if (c->pidfd < 0)
                return -errno;
        c->control = TAKE_FD(sp[0]);
        c->out = TAKE_FD(out[0]);
        c->err = TAKE_FD(err[0]);
        if (fd_nonblock(c->control, true) < 0 || fd_nonblock(c->out, true) < 0 || fd_nonblock(c->err, true) < 0)
                return -errno;
        return 0;
}

/* One control line from the interpreter, without blocking: 1 with it in
 * c->line (NUL-terminated, without '\n'), 0 when none is whole yet, -EPIPE
 * at EOF. An overlong line is dropped: nothing we know is that long. */
static int lang_read_line(LangChild *c) {
        for (;;) {
                char ch;
                ssize_t k = read(c->control, &ch, 1);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno == EAGAIN ? 0 : -EPIPE;
                if (k == 0) {
                        c->control_eof = true;
                        return -EPIPE;
                }
                if (ch == '\n') {
                        bool whole = c->line_len <= LANG_LINE_MAX;
                        c->line[MIN(c->line_len, (size_t) LANG_LINE_MAX)] = 0;
                        c->line_len = 0;
                        if (whole)
                                return 1;
                        continue;
                }
                if (c->line_len < LANG_LINE_MAX)
                        c->line[c->line_len] = ch;
                if (c->line_len <= LANG_LINE_MAX)
                        c->line_len++;
        }
}

/* Blocks until the interpreter's "ready"; the broker's {"event":"ready"}
 * (nothing preloaded), or NULL when it died or said something else. */
static json_object *lang_wait_ready(LangChild *c) {
        json_object *j = NULL;

        for (;;) {
                struct pollfd p = { .fd = c->control, .events = POLLIN };
                int r;

                if (poll(&p, 1, -1) < 0 && errno != EINTR)
                        return NULL;
                r = lang_read_line(c);
                if (r < 0)
                        return NULL;
                if (r == 0)
                        continue;
                if (!streq(c->line, "ready"))
                        return NULL;
                break;
        }
        if (json_build(&j,
                       JB_STR("event", "ready"),
                       JB_OBJ("preloaded", json_object_new_array()),
                       JB_OBJ("failed", json_object_new_array()),
                       JB_END) < 0)
                return NULL;
        return j;
}

/* What is in the pipe from, to to (-EBADF: dropped), up to max bytes: the
 * bytes moved, 0 at EAGAIN, -EPIPE at EOF. A caller that went away is
 * dropped (*to set -EBADF): the rest of the output is nobody's. */
static ssize_t lang_relay(int from, int *to, size_t max) {
        static char buf[64 * 1024];
        size_t moved = 0;

        assert(to);

        while (moved < max) {
                ssize_t k = read(from, buf, MIN(sizeof buf, max - moved));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno == EAGAIN ? (ssize_t) moved : -errno;
                if (k == 0)
                        return moved > 0 ? (ssize_t) moved : -EPIPE;
                if (*to >= 0 && loop_write(*to, buf, (size_t) k) < 0)
                        *to = safe_close(*to);
                moved += (size_t) k;
        }
        return (ssize_t) moved;
}

/* The output still in the pipes once the program is over (or its call),
 * then the caller's stdout and stderr are closed. */
static void lang_drain(LangChild *c, int fds[static 3]) {
        int *pipes[] = { &c->out, &c->err };

        for (size_t i = 0; i < ELEMENTSOF(pipes); i++)
                if (*pipes[i] >= 0 && lang_relay(*pipes[i], &fds[1 + i], LANG_DRAIN_MAX) == -EPIPE)
                        *pipes[i] = safe_close(*pipes[i]);
        for (size_t i = 0; i < 3; i++)
                fds[i] = safe_close(fds[i]);
}

/* Writes all of buf at offset 0 of memfd, which is emptied first. */
static int lang_fill(int memfd, const void *buf, size_t len) {
        size_t off = 0;

        if (ftruncate(memfd, 0) < 0)
                return -errno;
        while (off < len) {
                ssize_t k = pwrite(memfd, (const char *) buf + off, len - off, (off_t) off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                off += (size_t) k;
        }
        return 0;
}

/* The code (a sealed memfd of launch_read_input()) into the interpreter's. */
static int lang_fill_code(LangChild *c, int code) {
        _cleanup_free_ void *buf = NULL;
        struct stat st;
        size_t off = 0;

        if (fstat(code, &st) < 0)
                return -errno;
        buf = malloc(MAX((size_t) st.st_size, (size_t) 1));
        if (!buf)
                return -ENOMEM;
        while (off < (size_t) st.st_size) {
                ssize_t k = pread(code, (char *) buf + off, (size_t) st.st_size - off, (off_t) off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                off += (size_t) k;
        }
        return lang_fill(c->code, buf, off);
}

/* What follows the code and the input files on the caller's stdin, to its
 * EOF, into the interpreter's stdin (its offset back at 0: it is shared). */
static int lang_fill_stdin(LangChild *c, int in) {
        static char buf[64 * 1024];
        uint64_t off = 0;

        if (ftruncate(c->in, 0) < 0)
                return -errno;
        for (;;) {
                ssize_t k = read(in, buf, sizeof buf);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                if (off + (uint64_t) k > LANG_STDIN_MAX)
                        return -EFBIG;
                for (ssize_t w = 0; w < k;) {
                        ssize_t j = pwrite(c->in, buf + w, (size_t) (k - w), (off_t) (off + (uint64_t) w));
                        if (j < 0 && errno == EINTR)
                                continue;
                        if (j <= 0)
                                return j < 0 ? -errno : -EIO;
                        w += j;
                }
                off += (uint64_t) k;
        }
        if (lseek(c->in, 0, SEEK_SET) < 0)
                return -errno;
        return 0;
}

/* The run's input: code and files (launch-input.h), then stdin, into the
 * interpreter's memfds; sealed for a one-shot run. 0, or the exit status. */
static int lang_take_input(const LaunchArgs *a, LangChild *c, int in, const ResultWriter *w, bool session) {
        _cleanup_close_ int code = -EBADF;
        int r;

        r = launch_read_input(in, a->max_code_bytes, w->limits.max_input_bytes, session, &code);
        if (r != 0)
                return r;
        r = lang_fill_code(c, code);
        if (r < 0)
                return launch_fail("handing the code to the interpreter", r);
        r = lang_fill_stdin(c, in);
        if (r == -EFBIG)
                return launch_fail("stdin is larger than the launcher takes", 0);
        if (r < 0)
                return launch_fail("reading stdin", r);
        if (!session && (fcntl(c->code, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
                         fcntl(c->in, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0))
                return launch_fail("sealing the code", errno);
        return 0;
}

static int lang_send_go(LangChild *c) {
        static const char go[] = "go\n";

        if (send(c->control, go, sizeof go - 1, MSG_NOSIGNAL) != (ssize_t) (sizeof go - 1))
                return -errno ?: -EIO;
        return 0;
}

/* The run's message from the broker: 0 with *ret_run (NULL: EOF, the pool
 * let the unit go), or the exit status. What this path cannot do is
 * refused: packages (a Python wheelhouse), code mode's tools. */
static int lang_receive(const LaunchArgs *a, int fds[static PACKET_MAX_FDS], size_t *n_fds, ResultWriter *w,
                        LaunchEgress *egress, json_object **ret_run) {
        _cleanup_json_ json_object *run = NULL;
        const char *lang;
        int r;

        for (;;) {
                struct pollfd p = { .fd = CONTROL_FD, .events = POLLIN };

                if (poll(&p, 1, -1) < 0 && errno != EINTR)
                        return launch_fail("waiting for the run", errno);
                r = packet_recv(CONTROL_FD, &run, fds, PACKET_MAX_FDS, n_fds);
                if (r != -EAGAIN && r != -EINTR)
                        break;
        }
        if (r == 0) {
                *ret_run = NULL;
                return 0;
        }
        if (r < 0 || !streq_ptr(json_get_string(run, "op"), "run") || *n_fds < 3)
                return launch_fail("malformed run message from the broker", r < 0 ? r : 0);
        lang = json_get_string(run, "language");
        if (!streq_ptr(lang, language_to_string(a->language)))
                return launch_fail("a run of another language came to this unit", 0);
        if (json_get_bool(run, "tools") || json_get(run, "packages"))
                return launch_fail("packages and tools are Python's only", 0);
        if (json_get_bool(run, "egress") != a->egress)
                return launch_fail(a->egress ? "an egress unit got a run without its feed"
                                             : "a run with a network came to a unit without one", 0);
        if (a->egress) {
                if (*n_fds < 4 || fd_nonblock(fds[*n_fds - 1], true) < 0)
                        return launch_fail("malformed run message from the broker: no feed", 0);
                egress->feed = TAKE_FD(fds[*n_fds - 1]);
                (*n_fds)--;
        }
        if (*n_fds == 4)
                w->fd = TAKE_FD(fds[3]);
        result_limits_from_json(json_get(run, "limits"), &w->limits);
        launch_set_err_fd(fds[2]);
        *ret_run = TAKE_PTR(run);
        return 0;
}

/* Until the interpreter exits: its output to the caller, the run's
 * connections to egressd. */
static void lang_run_wait(LangChild *c, int fds[static 3], LaunchEgress *egress) {
        while (!c->gone) {
                struct pollfd p[] = {
                        { .fd = c->pidfd, .events = POLLIN },
                        { .fd = c->out, .events = POLLIN },
                        { .fd = c->err, .events = POLLIN },
                        launch_egress_pollfd(egress),
                };

                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        lang_child_reap(c);
                        break;
                }
                if (p[1].revents && lang_relay(c->out, &fds[1], SIZE_MAX) == -EPIPE)
                        c->out = safe_close(c->out);
                if (p[2].revents && lang_relay(c->err, &fds[2], SIZE_MAX) == -EPIPE)
                        c->err = safe_close(c->err);
                if (p[3].revents)
                        launch_egress_dispatch(egress);
                if (p[0].revents)
                        lang_child_reap(c);
        }
}

/* What it left, then how it ended, on the result channel (if any). */
static void lang_report(ResultWriter *w, int status_signal, int status_code, uint64_t duration_usec, int lost) {
        _cleanup_json_ json_object *m = NULL;
        int r;

        if (w->fd < 0)
                return;
        w->deadline = now_usec() + COLLECT_BUDGET_USEC;
        collect_outputs(w);
        r = status_signal > 0 ? json_build(&m, JB_INT("signal", status_signal), JB_END)
                              : json_build(&m, JB_INT("exit_code", status_code), JB_END);
        if (r >= 0)
                r = json_build_into(m, JB_INT("duration_us", duration_usec), JB_END);
        if (r >= 0 && lost >= 0)
                r = json_build_into(m, JB_BOOL("session_lost", lost), JB_END);
        if (r >= 0)
                (void) result_send(w, RESULT_FRAME_STATUS, TAKE_PTR(m), NULL, 0);
        (void) result_send(w, RESULT_FRAME_END, NULL, NULL, 0);
        w->fd = safe_close(w->fd);
}

/* Starts the interpreter and says ready to the broker. 0, or the exit status. */
static int lang_start(const LaunchArgs *a, bool session, LangChild *c, LaunchEgress *egress) {
        _cleanup_json_ json_object *ready = NULL;
        int r;

        /* Before the interpreter exists, so that it never holds it. */
        if (a->egress && (egress->listener = launch_egress_listen()) < 0)
                return launch_fail("listening for the egress proxy", egress->listener);
        r = lang_spawn(a, session, c);
        if (r < 0)
                return launch_fail("starting the interpreter", r);
        /* See launch-run.h: the program cannot reach into us. */
        (void) prctl(PR_SET_DUMPABLE, 0);
        if (a->egress) {
                const char *reason = NULL;
                r = launch_egress_check(egress->listener, &reason);
                if (r < 0)
                        return launch_fail(reason, r);
        }
        ready = lang_wait_ready(c);
        if (!ready)
                return launch_fail("the interpreter did not start", 0);
        r = packet_send(CONTROL_FD, ready, NULL, 0);
        if (r < 0)
                return launch_fail("telling the broker we are ready", r);
        return 0;
}

int launch_lang_run(const LaunchArgs *a) {
        _cleanup_(lang_child_done) LangChild c = LANG_CHILD_NULL;
        _cleanup_(launch_egress_done) LaunchEgress egress = LAUNCH_EGRESS_NULL;
        _cleanup_json_ json_object *run = NULL;
        int fds[PACKET_MAX_FDS] = { [0 ... PACKET_MAX_FDS - 1] = -EBADF };
        ResultWriter w = { .fd = -EBADF, .limits = LAUNCH_LIMITS_DEFAULT };
        size_t n_fds = 0;
        uint64_t t0, t1;
        int r, status;

        assert(a);
        (void) signal(SIGPIPE, SIG_IGN);

        r = lang_start(a, false, &c, &egress);
        if (r == 0)
                r = lang_receive(a, fds, &n_fds, &w, &egress, &run);
        if (r == 0 && run)
                r = lang_take_input(a, &c, fds[0], &w, false);
        if (r == 0 && run && lang_send_go(&c) < 0)
                r = launch_fail("handing the run to the interpreter", errno);
        if (r != 0 || !run) {
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                w.fd = safe_close(w.fd);
                return r;
        }
        t0 = now_usec();
        launch_set_err_fd(-EBADF);
        /* Only the program's from now on; EOF on it is expected. */
        c.control = safe_close(c.control);
        fds[0] = safe_close(fds[0]);

        lang_run_wait(&c, fds, &egress);
        launch_egress_done(&egress);
        t1 = now_usec();
        lang_drain(&c, fds);
        for (size_t i = 3; i < n_fds; i++)
                safe_close(fds[i]);
        status = c.status;
        lang_report(&w, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1, t1 - t0, -1);
        launch_exit_like(status);
}

/* One call of a session (launch-session.h's protocol with the broker). */
typedef struct LangCall {
        ResultWriter w;
        int fds[3];
        uint64_t t0, deadline;
        bool interrupted, timed_out, lost, broker_gone;
        int exit_code, signal;
} LangCall;

static void lang_interrupt(LangChild *c, LangCall *call, bool timeout) {
        (void) kill(-c->pid, SIGINT);
        call->interrupted = true;
        call->timed_out = call->timed_out || timeout;
        call->deadline = now_usec() + LAUNCH_SESSION_GRACE_USEC;
}

/* The broker during a call: "interrupt", or EOF. */
static void lang_read_broker(LangChild *c, LangCall *call, LaunchEgress *egress) {
        _cleanup_json_ json_object *m = NULL;
        int fds[PACKET_MAX_FDS];
        size_t n_fds = 0;
        int r;

        r = packet_recv(CONTROL_FD, &m, fds, ELEMENTSOF(fds), &n_fds);
        if (r > 0 && streq_ptr(json_get_string(m, "op"), "egress") && egress->feed < 0 && n_fds == 1 &&
            fd_nonblock(fds[0], true) >= 0)
                egress->feed = TAKE_FD(fds[0]);
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);
        if (r == -EAGAIN || r == -EINTR)
                return;
        if (r <= 0) {
                call->broker_gone = true;
                return;
        }
        if (streq_ptr(json_get_string(m, "op"), "interrupt") && !call->interrupted)
                lang_interrupt(c, call, false);
}

/* 1 when the call is over (its "done", or it is lost), 0 to go on. */
static int lang_call_step(LangChild *c, LangCall *call, LaunchEgress *egress) {
        struct pollfd p[] = {
                { .fd = c->control, .events = POLLIN },
                { .fd = c->pidfd, .events = POLLIN },
                { .fd = CONTROL_FD, .events = POLLIN },
                { .fd = c->out, .events = POLLIN },
                { .fd = c->err, .events = POLLIN },
                launch_egress_pollfd(egress),
        };
        uint64_t now = now_usec();
        int r, timeout_ms;

        if (now >= call->deadline) {
                if (call->interrupted) {
                        call->lost = true;
                        return 1;
                }
                lang_interrupt(c, call, true);
                return 0;
        }
        timeout_ms = (int) MIN((call->deadline - now + 999) / 1000, (uint64_t) INT32_MAX);
        r = poll(p, ELEMENTSOF(p), timeout_ms);
        if (r < 0 && errno != EINTR) {
                call->lost = true;
                return 1;
        }
        if (r <= 0)
                return 0;
        if (p[3].revents && lang_relay(c->out, &call->fds[1], SIZE_MAX) == -EPIPE)
                c->out = safe_close(c->out);
        if (p[4].revents && lang_relay(c->err, &call->fds[2], SIZE_MAX) == -EPIPE)
                c->err = safe_close(c->err);
        if (p[5].revents)
                launch_egress_dispatch(egress);
        if (p[0].revents) {
                int n;
                while ((r = lang_read_line(c)) > 0)
                        if (launch_parse_done(c->line, &n) >= 0) {
                                call->signal = n < 0 ? -n : 0;
                                call->exit_code = n < 0 ? -1 : n;
                                return 1;
                        }
                if (r < 0) {
                        call->lost = true;
                        return 1;
                }
        }
        if (p[1].revents) {
                lang_child_reap(c);
                call->lost = true;
                return 1;
        }
        if (p[2].revents) {
                lang_read_broker(c, call, egress);
                if (call->broker_gone) {
                        call->lost = true;
                        return 1;
                }
        }
        return 0;
}

static int lang_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        (void) (flag == FTW_DP ? rmdir(path) : unlink(path));
        return 0;
}

/* The broker's {"event":"done"} for the call. */
static void lang_call_done(LangChild *c, LangCall *call, uint64_t t1) {
        _cleanup_json_ json_object *done = NULL;
        int sig = call->signal, code = call->exit_code;
        int r;

        if (call->lost) {
                lang_child_kill(c);
                sig = WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0;
                code = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
        }
        lang_drain(c, call->fds);
        lang_report(&call->w, sig, code, t1 - call->t0, call->lost);
        if (call->broker_gone)
                return;
        r = json_build(&done, JB_STR("event", "done"), JB_END);
        if (r >= 0)
                r = sig > 0 ? json_build_into(done, JB_INT("signal", sig), JB_END)
                            : json_build_into(done, JB_INT("exit_code", code), JB_END);
        if (r >= 0)
                r = json_build_into(done,
                                    JB_BOOL("timed_out", call->timed_out),
                                    JB_BOOL("interrupted", call->interrupted && !call->timed_out),
                                    JB_BOOL("lost", call->lost),
                                    JB_INT("duration_us", t1 - call->t0),
                                    JB_END);
        if (r < 0)
                launch_exit_like(W_EXITCODE(LAUNCH_EXIT_FAILED, 0));
        (void) packet_send(CONTROL_FD, done, NULL, 0);
}

static void lang_session_call(const LaunchArgs *a, LangChild *c, LaunchEgress *egress, json_object *msg,
                              int fds[], size_t n_fds) {
        LangCall call = { .w = { .fd = -EBADF, .limits = LAUNCH_LIMITS_DEFAULT } };
        int64_t timeout_ms;
        int r = 0;

        for (size_t i = 0; i < 3; i++)
                call.fds[i] = TAKE_FD(fds[i]);
        if (n_fds == 4)
                call.w.fd = TAKE_FD(fds[3]);
        result_limits_from_json(json_get(msg, "limits"), &call.w.limits);
        timeout_ms = CLAMP(json_get_int64(msg, "timeout_ms", 0), (int64_t) 1, (int64_t) 24 * 3600 * 1000);
        launch_set_err_fd(call.fds[2]);
        call.t0 = now_usec();
        call.deadline = call.t0 + (uint64_t) timeout_ms * USEC_PER_MSEC;
        if (json_get(msg, "packages") || !streq_ptr(json_get_string(msg, "language"),
                                                    language_to_string(a->language)))
                r = launch_fail("packages are Python's only, and a session's language is its own", 0);
        /* This call's outputs are its own. */
        if (r == 0)
                (void) nftw(LAUNCH_OUTPUTS_DIR, lang_rm, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        if (r == 0)
                r = lang_take_input(a, c, call.fds[0], &call.w, true);
        /* What a background job printed between calls is nobody's. */
        (void) lang_relay(c->out, &(int) { -EBADF }, LANG_DRAIN_MAX);
        (void) lang_relay(c->err, &(int) { -EBADF }, LANG_DRAIN_MAX);
        if (r == 0 && lang_send_go(c) < 0)
                r = launch_fail("handing the call to the interpreter", errno);
        launch_set_err_fd(-EBADF);
        call.fds[0] = safe_close(call.fds[0]);
        if (r == 0)
                while (lang_call_step(c, &call, egress) == 0)
                        ;
        else
                call.exit_code = LAUNCH_EXIT_FAILED;
        lang_call_done(c, &call, now_usec());
}

/* Between calls: the broker's next, or its EOF; the interpreter's death;
 * output nobody asked for, dropped. */
static int lang_serve(const LaunchArgs *a, LangChild *c, LaunchEgress *egress) {
        for (;;) {
                _cleanup_json_ json_object *msg = NULL;
                int fds[PACKET_MAX_FDS] = { [0 ... PACKET_MAX_FDS - 1] = -EBADF };
                struct pollfd p[] = {
                        { .fd = CONTROL_FD, .events = POLLIN },
                        { .fd = c->pidfd, .events = POLLIN },
                        { .fd = c->out, .events = POLLIN },
                        { .fd = c->err, .events = POLLIN },
                        launch_egress_pollfd(egress),
                };
                size_t n_fds = 0;
                int r;

                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return launch_fail("poll", errno);
                }
                if (p[2].revents && lang_relay(c->out, &(int) { -EBADF }, SIZE_MAX) == -EPIPE)
                        c->out = safe_close(c->out);
                if (p[3].revents && lang_relay(c->err, &(int) { -EBADF }, SIZE_MAX) == -EPIPE)
                        c->err = safe_close(c->err);
                if (p[4].revents)
                        launch_egress_dispatch(egress);
                if (p[1].revents) {
                        lang_child_reap(c);
                        launch_exit_like(c->status);
                }
                if (!p[0].revents)
                        continue;
                r = packet_recv(CONTROL_FD, &msg, fds, ELEMENTSOF(fds), &n_fds);
                if (r == -EAGAIN || r == -EINTR)
                        continue;
                if (r <= 0)
                        return r == 0 ? 0 : launch_fail("reading from the broker", r);
                if (streq_ptr(json_get_string(msg, "op"), "egress") && a->egress && egress->feed < 0 &&
                    n_fds == 1 && fd_nonblock(fds[0], true) >= 0)
                        egress->feed = TAKE_FD(fds[0]);
                else if (streq_ptr(json_get_string(msg, "op"), "run") && n_fds >= 3)
                        lang_session_call(a, c, egress, msg, fds, n_fds);
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                if (c->gone)
                        launch_exit_like(c->status);
        }
}

int launch_lang_session(const LaunchArgs *a) {
        _cleanup_(lang_child_done) LangChild c = LANG_CHILD_NULL;
        _cleanup_(launch_egress_done) LaunchEgress egress = LAUNCH_EGRESS_NULL;
        int r;

        assert(a);
        (void) signal(SIGPIPE, SIG_IGN);

        r = lang_start(a, true, &c, &egress);
        if (r != 0)
                return r;
        return lang_serve(a, &c, &egress);
}
