/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The launcher's system call filter (launch-seccomp.c, syscall-filter.c),
 * loaded in a child: what it allows works, what @system-service lacks and
 * what we deny on top fail with EPERM, another ABI is killed, and the
 * program is the one the broker expects (the same digest each time). */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch-seccomp.h"
#include "syscall-filter.h"
#include "test-helpers.h"

/* Runs f in a child under the filter; returns its wait status. */
static int in_child(int (*f)(void)) {
        int status;
        pid_t pid;

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                if (launch_seccomp_load() < 0)
                        _exit(99);
                _exit(f());
        }
        ASSERT_EQ_INT((int) waitpid(pid, &status, 0), (int) pid);
        return status;
}

/* Exit codes say which check failed: 0 all passed. */
static int calls(void) {
        static const long denied[] = {
                SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, /* our deny list */
                SYS_userfaultfd, SYS_add_key, SYS_request_key, SYS_keyctl,
                SYS_perf_event_open, SYS_ptrace, SYS_bpf, SYS_mount, SYS_umount2, /* not @system-service */
                SYS_reboot, SYS_init_module, SYS_kexec_load, SYS_swapon, SYS_settimeofday, SYS_seccomp,
                SYS_open_by_handle_at, SYS_acct, SYS_quotactl,
        };
        int fds[2];

        for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
                errno = 0;
                if (syscall(denied[i], 0, NULL, 0, 0, 0, 0) != -1 || errno != EPERM) {
                        fprintf(stderr, "system call %ld: errno %d, not EPERM\n", denied[i], errno);
                        return 10 + (int) i;
                }
        }
        /* What a program needs still works. */
        if (getppid() <= 0 || pipe(fds) < 0 || write(fds[1], "x", 1) != 1 || close(fds[0]) < 0 || close(fds[1]) < 0)
                return 2;
        if (syscall(SYS_kcmp, getpid(), getpid(), 0 /* KCMP_FILE */, 0, 0) < 0 && errno == EPERM)
                return 3;
        return 0;
}

#ifdef __x86_64__
static int x32_call(void) {
        /* getpid through the x32 ABI: another architecture, killed. */
        (void) syscall(0x40000000 | SYS_getpid);
        return 0;
}
#endif

TEST(test_calls) {
        int status = in_child(calls);

        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
}

TEST(test_other_abi_killed) {
#ifdef __x86_64__
        int status = in_child(x32_call);

        ASSERT_TRUE(WIFSIGNALED(status));
        ASSERT_EQ_INT(WTERMSIG(status), SIGSYS);
#endif
}

TEST(test_program) {
        struct sock_filter prog[SYSCALL_FILTER_MAX];
        char a[17], b[17];
        int n;

        n = syscall_filter_build(prog, SYSCALL_FILTER_MAX);
        ASSERT_TRUE(n > 300 && n < SYSCALL_FILTER_MAX);
        /* Too small a buffer is an error, never a cut-off program. */
        ASSERT_EQ_INT(syscall_filter_build(prog, 10), -ENOBUFS);
        ASSERT_EQ_INT(syscall_filter_digest(a), 0);
        ASSERT_EQ_INT(syscall_filter_digest(b), 0);
        ASSERT_STREQ(a, b);
        ASSERT_EQ_INT((int) strlen(a), 16);
}

int main(void) {
        RUN(test_program);
        RUN(test_calls);
        RUN(test_other_abi_killed);
        return 0;
}
