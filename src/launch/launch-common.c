/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-common.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int err_fd = STDERR_FILENO;

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
                uint8_t buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = strlen(msg) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct cmsghdr *c;

        assert(msg);
        assert(fds || n == 0);
        assert(n <= 4);
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
