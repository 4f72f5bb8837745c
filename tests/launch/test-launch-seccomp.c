/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The launcher's system call filter (launch-seccomp.c, syscall-filter.c),
 * loaded in a child: what it allows works, what @system-service lacks and
 * what we deny on top fail with EPERM, another ABI is killed, and the
 * program is the one the broker expects (the same digest each time). */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch-seccomp.h"
#include "syscall-filter.h"
#include "test-helpers.h"

/* Runs f in a child under the filter, and the W^X one if wx; returns
 * its wait status. */
static int in_child_wx(int (*f)(void), bool wx) {
        int status;
        pid_t pid;

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                if (launch_seccomp_load() < 0)
                        _exit(99);
                if (launch_seccomp_wx_loaded())
                        _exit(98);
                if (wx && (launch_seccomp_load_wx() < 0 || !launch_seccomp_wx_loaded()))
                        _exit(97);
                _exit(f());
        }
        ASSERT_EQ_INT((int) waitpid(pid, &status, 0), (int) pid);
        return status;
}

static int in_child(int (*f)(void)) {
        return in_child_wx(f, false);
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

/* 0: W^X holds (issue 42): no mapping writable and executable, no
 * mapping made executable afterwards (nor through pkey_mprotect(), nor a
 * SysV segment attached executable), while code mapped from a file, and
 * everything else the filter allows, works. */
static int wx_denied(void) {
        void *p, *f;
        int fd;

        errno = 0;
        if (mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED ||
            errno != EPERM)
                return 2;
        if (mmap(NULL, 4096, PROT_WRITE | PROT_EXEC, MAP_SHARED | MAP_ANONYMOUS, -1, 0) != MAP_FAILED)
                return 3;
        p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return 4;
        errno = 0;
        if (mprotect(p, 4096, PROT_READ | PROT_EXEC) == 0 || errno != EPERM)
                return 5;
        if (mprotect(p, 4096, PROT_EXEC) == 0 || mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) == 0)
                return 6;
        errno = 0;
        if (syscall(SYS_pkey_mprotect, p, 4096, PROT_READ | PROT_EXEC, -1) == 0 || errno != EPERM)
                return 7;
        /* Still allowed: read-only, and back to read-write. */
        if (mprotect(p, 4096, PROT_READ) < 0 || mprotect(p, 4096, PROT_READ | PROT_WRITE) < 0)
                return 8;
        errno = 0;
        if (syscall(SYS_shmat, 0, NULL, SHM_EXEC) != -1 || errno != EPERM)
                return 9;
        /* Code from a file, as the dynamic loader maps it. */
        fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 10;
        f = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        (void) close(fd);
        if (f == MAP_FAILED)
                return 11;
        return calls() == 0 ? 0 : 12;
}

/* 0: without W^X (--jit) the same calls work, as V8's JIT needs. */
static int wx_allowed(void) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED || mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
                return 2;
        if (mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
                return 3;
        return 0;
}

TEST(test_wx) {
        int status = in_child_wx(wx_denied, true);

        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
        status = in_child_wx(wx_allowed, false);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
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

        n = syscall_filter_build_wx(prog, SYSCALL_FILTER_MAX);
        ASSERT_TRUE(n > 10 && n < 64);
        ASSERT_EQ_INT(syscall_filter_build_wx(prog, 10), -ENOBUFS);
        ASSERT_EQ_INT(syscall_filter_digest_wx(b), 0);
        ASSERT_EQ_INT((int) strlen(b), 16);
        ASSERT_TRUE(strcmp(a, b) != 0);
}

int main(void) {
        RUN(test_program);
        RUN(test_calls);
        RUN(test_wx);
        RUN(test_other_abi_killed);
        return 0;
}
