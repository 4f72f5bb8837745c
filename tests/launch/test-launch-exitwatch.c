/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The launcher's early word of the interpreter's exit (launch-exitwatch.c),
 * in a child that plays the launcher: its filters as main() loads them,
 * then processes of its own. Only the watched process's main thread's
 * exit_group() sets the status, with the code it passed, and before the
 * process is reaped; that call waits until exit_watch_release(), and every
 * other one goes on at once (nothing hangs, the launcher's own exit
 * included); another process's or another thread's sets nothing. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch-exitwatch.h"
#include "launch-seccomp.h"
#include "macro.h"
#include "test-helpers.h"

#define FAIL_IF(cond, code)                                                     \
        do {                                                                    \
                if (cond) {                                                     \
                        fprintf(stderr, "check %d failed: %s\n", code, #cond);  \
                        return code;                                            \
                }                                                               \
        } while (0)

static void *thread_exit_group(void *arg) {
        (void) syscall(SYS_exit_group, (long) (intptr_t) arg);
        return NULL;
}

/* exit_group(9) from a second thread; the main thread waits for it. */
_noreturn_ static void grandchild_thread_exit(void) {
        pthread_t t;

        if (pthread_create(&t, NULL, thread_exit_group, (void *) (intptr_t) 9) != 0)
                _exit(90);
        (void) pthread_join(t, NULL);
        _exit(91);
}

/* Some memory to free, then exit_group(42) once told to go. */
_noreturn_ static void grandchild_exit(int go) {
        size_t n = 64u << 20;
        char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char c;

        if (m == MAP_FAILED)
                _exit(80);
        memset(m, 1, n);
        if (read(go, &c, 1) != 1)
                _exit(81);
        _exit(42);
}

static int launcher(void) {
        int listener, status, go[2];
        struct pollfd p;
        pid_t pid;

        listener = exit_watch_install();
        FAIL_IF(listener < 0, 1);
        FAIL_IF(launch_seccomp_load() < 0, 2);
        FAIL_IF(exit_watch_start(listener) < 0, 3);
        FAIL_IF(exit_watch_fd() < 0 || exit_watch_status() != -EAGAIN, 4);

        /* Nobody watched: a process's exit goes on, and says nothing. */
        pid = fork();
        FAIL_IF(pid < 0, 5);
        if (pid == 0)
                _exit(7);
        FAIL_IF(waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7, 6);
        FAIL_IF(exit_watch_status() != -EAGAIN, 7);

        /* Watched, but the call comes from another thread: its id is not the pid. */
        pid = fork();
        FAIL_IF(pid < 0, 8);
        if (pid == 0)
                grandchild_thread_exit();
        exit_watch_set_pid(pid);
        FAIL_IF(waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 9, 9);
        FAIL_IF(exit_watch_status() != -EAGAIN, 10);

        /* Watched, its main thread: the status, heard before the process is reaped. */
        FAIL_IF(pipe2(go, O_CLOEXEC) < 0, 11);
        pid = fork();
        FAIL_IF(pid < 0, 12);
        if (pid == 0)
                grandchild_exit(go[0]);
        exit_watch_set_pid(pid);
        FAIL_IF(write(go[1], "x", 1) != 1, 13);
        p = (struct pollfd) { .fd = exit_watch_fd(), .events = POLLIN };
        FAIL_IF(poll(&p, 1, 30 * 1000) != 1, 14);
        status = exit_watch_status();
        FAIL_IF(status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 42, 15);
        /* Held in the call until released: it has not ended, however long
         * we wait (unheld it would be gone in milliseconds). */
        FAIL_IF(poll(NULL, 0, 300) != 0, 16);
        FAIL_IF(waitpid(pid, &status, WNOHANG) != 0, 17);
        exit_watch_release();
        FAIL_IF(waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 42, 18);

        /* Once released, a watched exit goes on at once, as any other. */
        pid = fork();
        FAIL_IF(pid < 0, 19);
        if (pid == 0)
                _exit(5);
        exit_watch_set_pid(pid);
        FAIL_IF(waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 5, 20);
        /* Our own exit_group() goes through the same filter: answered too. */
        return 0;
}

TEST(test_exit_watch) {
        int status;
        pid_t pid;

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0)
                exit(launcher());
        ASSERT_EQ_INT((int) waitpid(pid, &status, 0), (int) pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
}

int main(void) {
        RUN(test_exit_watch);
        return 0;
}
