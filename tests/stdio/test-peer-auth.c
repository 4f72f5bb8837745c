/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the parts of src/stdio/peer-auth.[ch] that run without
 * polkit: the pidfd of a socket's peer, and the start time polkit compares
 * (field 22 of /proc/PID/stat, after a comm that may hold anything). */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer-auth.h"
#include "test-helpers.h"

/* The pid a pidfd stands for, as the kernel says in its fdinfo. */
static pid_t pidfd_pid(int fd) {
        char path[64], line[256];
        long pid = -1;
        FILE *f;

        (void) snprintf(path, sizeof path, "/proc/self/fdinfo/%i", fd);
        f = fopen(path, "re");
        ASSERT_TRUE(f);
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "Pid: %ld", &pid) == 1)
                        break;
        fclose(f);
        return (pid_t) pid;
}

TEST(test_peer_pidfd) {
        int sv[2], fd = -1;

        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ASSERT_EQ_INT(peer_pidfd(sv[0], getpid(), &fd), 0);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(pidfd_pid(fd), getpid());
        close(fd);
        close(sv[0]);
        close(sv[1]);
}

/* A child whose comm would mislead a parser that stops at the first ')'. */
static pid_t spawn_named(const char *name, int *ret_ready) {
        int p[2];
        pid_t pid;

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_NAME, name);
                if (write(p[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(p[1]);
        *ret_ready = p[0];
        return pid;
}

TEST(test_pid_start_time) {
        uint64_t self = 0, child = 0, again = 0;
        int ready;
        char c;
        pid_t pid;

        ASSERT_EQ_INT(pid_start_time(getpid(), &self), 0);
        ASSERT_TRUE(self > 0);

        pid = spawn_named("a) 1 2 (b) 3", &ready);
        ASSERT_EQ_INT(read(ready, &c, 1), 1);
        close(ready);
        ASSERT_EQ_INT(pid_start_time(pid, &child), 0);
        /* Started after us, in clock ticks since boot: a misread field
         * (the state, a pid, a count) would rarely land in that range. */
        ASSERT_TRUE(child >= self);
        ASSERT_TRUE(child - self < 100000);
        ASSERT_EQ_INT(pid_start_time(pid, &again), 0);
        ASSERT_EQ_U64(again, child);    /* fixed for the process's life */
        ASSERT_EQ_INT(kill(pid, SIGKILL), 0);
        ASSERT_EQ_INT(waitpid(pid, NULL, 0), pid);

        /* Reaped: no such process, an error and not a number. */
        ASSERT_EQ_INT(pid_start_time(pid, &again), -ENOENT);
        ASSERT_EQ_U64(again, child);    /* untouched on failure */
}

int main(void) {
        RUN(test_peer_pidfd);
        RUN(test_pid_start_time);
        return 0;
}
