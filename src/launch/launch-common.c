/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-common.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int err_fd = STDERR_FILENO;

/* The launcher's own children (the interpreter, the installer, and the
 * interpreter after an install): the last few forked, never reaped by the
 * handler. */
#define OWN_CHILDREN 4
static volatile pid_t own_children[OWN_CHILDREN];
static volatile unsigned n_forked;

static bool own_child(pid_t pid) {
        for (unsigned i = 0; i < OWN_CHILDREN; i++)
                if (own_children[i] == pid)
                        return true;
        return false;
}

/* Async-signal-safe. waitid(WNOWAIT) names the first exited child without
 * reaping it: an orphan is reaped, our own child is left (and ends the
 * round: the ones behind it wait for the next SIGCHLD or the run's end). */
static void on_sigchld(int sig) {
        int saved = errno;

        for (;;) {
                siginfo_t si = {};

                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0 || own_child(si.si_pid))
                        break;
                (void) waitpid(si.si_pid, NULL, WNOHANG);
        }
        errno = saved;
}

void launch_reap_orphans(void) {
        struct sigaction sa = { .sa_handler = on_sigchld, .sa_flags = SA_RESTART | SA_NOCLDSTOP };

        if (getpid() != 1)
                return;
        (void) sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGCHLD, &sa, NULL);
}

pid_t launch_fork(void) {
        sigset_t chld, old;
        pid_t pid;

        /* Recorded before the handler can see it exit. */
        (void) sigemptyset(&chld);
        (void) sigaddset(&chld, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &chld, &old);
        pid = fork();
        if (pid == 0) {
                struct sigaction sa = { .sa_handler = SIG_DFL };
                (void) sigaction(SIGCHLD, &sa, NULL);
        } else if (pid > 0)
                own_children[n_forked++ % OWN_CHILDREN] = pid;
        (void) sigprocmask(SIG_SETMASK, &old, NULL);
        return pid;
}

void launch_disown_child(pid_t pid) {
        sigset_t chld, old;

        assert(pid > 0);
        (void) sigemptyset(&chld);
        (void) sigaddset(&chld, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &chld, &old);
        for (unsigned i = 0; i < OWN_CHILDREN; i++)
                if (own_children[i] == pid)
                        own_children[i] = 0;
        (void) sigprocmask(SIG_SETMASK, &old, NULL);
        /* Gone already: its SIGCHLD came while it was still ours. */
        (void) waitpid(pid, NULL, WNOHANG);
}

void launch_set_err_fd(int fd) {
        err_fd = fd;
}

int launch_fail(const char *msg, int error) {
        char buf[512];
        int n;

        assert(msg);

        if (err_fd < 0)
                return LAUNCH_EXIT_FAILED;
        if (error)
                n = snprintf(buf, sizeof buf, "mcp-exec-launch: %s: %s\n", msg, strerror(error < 0 ? -error : error));
        else
                n = snprintf(buf, sizeof buf, "mcp-exec-launch: %s\n", msg);
        if (n > 0)
                (void) !write(err_fd, buf, MIN((size_t) n, sizeof buf - 1));
        return LAUNCH_EXIT_FAILED;
}

int launch_send_fds(int sock, const char *msg, const int *fds, size_t n) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * LAUNCH_SEND_FDS_MAX)];
        } control = {};
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = strlen(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct cmsghdr *c;

        assert(msg);
        assert(fds || n == 0);
        assert(n <= LAUNCH_SEND_FDS_MAX);
        if (n > 0) {
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        }
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

_noreturn_ void launch_exit_like(int status) {
        if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                struct sigaction sa = { .sa_handler = SIG_DFL };
                sigset_t all;

                (void) sigaction(sig, &sa, NULL);
                (void) sigfillset(&all);
                (void) sigprocmask(SIG_UNBLOCK, &all, NULL);
                (void) raise(sig);
                _exit(128 + sig);
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : LAUNCH_EXIT_FAILED);
}
