/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The installer process of launch-packages.h: started, fed, read, bounded. */
#include "launch-packages.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json-util.h"
#include "launch-egress.h"
#include "macro.h"
#include "result-frame.h"
#include "util.h"

/* Nothing of the daemon's environment; pip needs only a temp dir. A home
 * the run cannot write (the run's is /tmp): no configuration of its code's
 * is read there, nor at ~/.config (pip runs --isolated as well). */
static char *const installer_env[] = {
        (char *) "PATH=/usr/local/bin:/usr/bin:/bin",
        (char *) "HOME=/nonexistent",
        (char *) "TMPDIR=/tmp",
        (char *) "LANG=C.UTF-8",
        NULL,
};

/* Forks the installer with in, out, log as its stdin, stdout, stderr. */
static pid_t installer_spawn(const LaunchArgs *a, const char *script, int in, int out, int log) {
        char *argv[] = { (char *) "python3", (char *) "-I", (char *) "-B", (char *) script, NULL };
        pid_t pid;

        assert(a);
        pid = launch_fork();
        if (pid != 0)
                return pid < 0 ? -errno : pid;
        /* The child, until exec: only async-signal-safe calls. Its own
         * group, so that a timeout kills pip's processes with it. */
        (void) setpgid(0, 0);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(log, STDERR_FILENO) < 0)
                _exit(LAUNCH_EXIT_FAILED);
        (void) close_range(3, ~0U, 0);
        /* Not the run's /tmp, where a session's code may have left a
         * setup.cfg or the like for it to find. */
        if (chdir("/") < 0)
                _exit(LAUNCH_EXIT_FAILED);
        /* The installer reads files the run's code may have written: it runs
         * under the code's filters. The launcher's own (syscall-filter.h) it
         * inherits; an egress run's code also gets no bind() nor listen(). */
        if (a->egress && launch_egress_seccomp() < 0)
                _exit(LAUNCH_EXIT_FAILED);
        execve(a->python, argv, installer_env);
        _exit(LAUNCH_EXIT_FAILED);
}

/* Appends to the log, keeping its last RESULT_PACKAGES_LOG_MAX bytes. */
static void log_append(LaunchInstall *i, const char *buf, size_t n) {
        size_t keep;

        assert(i);
        assert(n <= RESULT_PACKAGES_LOG_MAX);   /* one read() */
        if (!i->log && !(i->log = malloc(RESULT_PACKAGES_LOG_MAX)))
                return;
        keep = MIN(i->log_len, (size_t) RESULT_PACKAGES_LOG_MAX - n);
        memmove(i->log, i->log + i->log_len - keep, keep);
        memcpy(i->log + keep, buf, n);
        i->log_len = keep + n;
}

/* Reads out (the answer, into ans) and log until both end or the deadline.
 * -ETIME at the deadline, -EFBIG for an answer over the limit. */
static int installer_read(int out, int log, uint64_t deadline, LaunchInstall *i, char *ans, size_t *ans_len) {
        char buf[4096];

        for (;;) {
                struct pollfd p[] = { { .fd = out, .events = POLLIN }, { .fd = log, .events = POLLIN } };
                int timeout = -1, r;

                if (out < 0 && log < 0)
                        return 0;
                if (deadline > 0) {
                        uint64_t now = now_usec();
                        if (now >= deadline)
                                return -ETIME;
                        timeout = (int) MIN((deadline - now + 999) / 1000, (uint64_t) INT_MAX);
                }
                r = poll(p, ELEMENTSOF(p), timeout);
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r <= 0)
                        continue;
                if (p[0].revents) {
                        ssize_t k = read(out, ans + *ans_len, LAUNCH_INSTALL_ANSWER_MAX - *ans_len);
                        if (k < 0 && errno != EINTR && errno != EAGAIN)
                                return -errno;
                        if (k == 0)
                                out = -EBADF;   /* closed by the caller */
                        if (k > 0 && (*ans_len += (size_t) k) >= LAUNCH_INSTALL_ANSWER_MAX)
                                return -EFBIG;
                }
                if (p[1].revents) {
                        ssize_t k = read(log, buf, sizeof buf);
                        if (k < 0 && errno != EINTR && errno != EAGAIN)
                                return -errno;
                        if (k == 0)
                                log = -EBADF;
                        if (k > 0)
                                log_append(i, buf, (size_t) k);
                }
        }
}

/* The installer's path: next to the bootstrap. */
static char *installer_path(const LaunchArgs *a) {
        const char *slash = strrchr(a->bootstrap, '/');
        char *p = NULL;

        assert(slash);
        if (asprintf(&p, "%.*s/" LAUNCH_INSTALLER_NAME, (int) (slash - a->bootstrap), a->bootstrap) < 0)
                return NULL;
        return p;
}

/* A started installer: its pid, and our ends of its stdin, stdout, stderr. */
typedef struct Installer {
        pid_t pid;
        int in, out, log;
} Installer;

/* The one launch_installer_prespawn() started, waiting for its request. */
static Installer ahead = { .in = -EBADF, .out = -EBADF, .log = -EBADF };

static void installer_close(Installer *x) {
        x->in = safe_close(x->in);
        x->out = safe_close(x->out);
        x->log = safe_close(x->log);
        x->pid = 0;
}

/* Forks the installer with pipes for its stdin, stdout and stderr. */
static int installer_start(const LaunchArgs *a, Installer *ret) {
        _cleanup_close_pair_ int in[2] = { -EBADF, -EBADF }, out[2] = { -EBADF, -EBADF }, log[2] = { -EBADF, -EBADF };
        _cleanup_free_ char *script = installer_path(a);
        pid_t pid;

        if (!script)
                return -ENOMEM;
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(log, O_CLOEXEC) < 0)
                return -errno;
        pid = installer_spawn(a, script, in[0], out[1], log[1]);
        if (pid < 0)
                return pid;
        *ret = (Installer) { .pid = pid, .in = TAKE_FD(in[1]), .out = TAKE_FD(out[0]), .log = TAKE_FD(log[0]) };
        return 0;
}

/* Kills it, and whatever is left of pip, also after a clean end; reaped
 * (wait: waited for; else left to the orphan reaper, its teardown at the
 * idle priority: the run it was not needed for goes on in the same unit,
 * under the same CPU quota). */
static void installer_end(Installer *x, bool wait) {
        if (x->pid > 0) {
                if (!wait)
                        (void) sched_setscheduler(x->pid, SCHED_IDLE, &(struct sched_param) {});
                (void) kill(-x->pid, SIGKILL);
                (void) kill(x->pid, SIGKILL);
                if (wait)
                        while (waitpid(x->pid, &(int) { 0 }, 0) < 0 && errno == EINTR)
                                ;
                else
                        launch_disown_child(x->pid);
        }
        installer_close(x);
}

int launch_installer_prespawn(const LaunchArgs *a) {
        assert(a);

        installer_end(&ahead, false);
        return installer_start(a, &ahead);
}

void launch_installer_drop(void) {
        /* Not waited for: the caller is waiting for the run. */
        installer_end(&ahead, false);
}

json_object *launch_installer_run(const LaunchArgs *a, json_object *request, uint64_t deadline,
                                  LaunchInstall *i, const char **ret_error) {
        _cleanup_free_ char *ans = NULL;
        Installer x = { .in = -EBADF, .out = -EBADF, .log = -EBADF };
        size_t ans_len = 0, req_len = 0;
        const char *req;
        json_object *j;
        int r;

        assert(a);
        assert(request);
        assert(i);
        assert(ret_error);

        *ret_error = "the installer could not be started";
        ans = malloc(LAUNCH_INSTALL_ANSWER_MAX + 1);
        req = json_serialize(request, &req_len);
        /* The request (at most PACKAGES_MAX specs) fits in the pipe: the
         * write below never waits for the installer. */
        if (!ans || !req || req_len >= PIPE_BUF * 8)
                return NULL;
        /* The one started ahead, if it is still there to take it. */
        x = ahead;
        ahead = (Installer) { .in = -EBADF, .out = -EBADF, .log = -EBADF };
        r = x.pid > 0 ? loop_write(x.in, req, req_len) : -ESRCH;
        if (r < 0) {
                installer_end(&x, true);
                if (installer_start(a, &x) < 0)
                        return NULL;
                r = loop_write(x.in, req, req_len);
        }
        x.in = safe_close(x.in);
        if (r >= 0)
                r = installer_read(x.out, x.log, deadline, i, ans, &ans_len);
        installer_end(&x, true);
        if (r == -ETIME) {
                i->timed_out = true;
                *ret_error = "installing the packages timed out";
                return NULL;
        }
        ans[ans_len] = 0;
        j = r >= 0 ? json_tokener_parse(ans) : NULL;
        if (!j || !json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                *ret_error = "the installer failed without an answer";
                return NULL;
        }
        return j;
}
