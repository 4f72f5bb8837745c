/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "syscall-filter.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#include "macro.h"


static const unsigned allowed[] = {
#include "syscall-allow.h"
};

/* Tested first, in this order: what Python makes most of at its start
 * and while it imports (strace -c of `python3 -I -c "import json,
 * subprocess"`: 778 calls, 280 of them newfstatat), then the rest. Every
 * call pays the tests before its own (two instructions each, ~580 in all
 * in name order). Only those in allowed[] are emitted: this reorders, it
 * never allows more. */
static const unsigned hot[] = {
#ifdef __NR_newfstatat
        __NR_newfstatat,
#endif
#ifdef __NR_read
        __NR_read,
#endif
#ifdef __NR_lseek
        __NR_lseek,
#endif
#ifdef __NR_openat
        __NR_openat,
#endif
#ifdef __NR_rt_sigaction
        __NR_rt_sigaction,
#endif
#ifdef __NR_close
        __NR_close,
#endif
#ifdef __NR_ioctl
        __NR_ioctl,
#endif
#ifdef __NR_mmap
        __NR_mmap,
#endif
#ifdef __NR_getdents64
        __NR_getdents64,
#endif
#ifdef __NR_brk
        __NR_brk,
#endif
#ifdef __NR_mprotect
        __NR_mprotect,
#endif
#ifdef __NR_fcntl
        __NR_fcntl,
#endif
#ifdef __NR_munmap
        __NR_munmap,
#endif
#ifdef __NR_fstat
        __NR_fstat,
#endif
#ifdef __NR_write
        __NR_write,
#endif
#ifdef __NR_futex
        __NR_futex,
#endif
#ifdef __NR_readlink
        __NR_readlink,
#endif
#ifdef __NR_pread64
        __NR_pread64,
#endif
#ifdef __NR_getcwd
        __NR_getcwd,
#endif
#ifdef __NR_rt_sigprocmask
        __NR_rt_sigprocmask,
#endif
};

static bool listed(const unsigned *list, size_t n, unsigned nr) {
        for (size_t i = 0; i < n; i++)
                if (list[i] == nr)
                        return true;
        return false;
}

/* One instruction into buf (the builders' buf, n_buf and n), or -ENOBUFS. */
#define EMIT(insn)                                      \
        do {                                            \
                if (n >= n_buf)                         \
                        return -ENOBUFS;                \
                buf[n++] = (struct sock_filter) insn;   \
        } while (0)

int syscall_filter_build(struct sock_filter *buf, size_t n_buf) {
        size_t n = 0;

        assert(buf);

        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYSCALL_FILTER_NATIVE_ARCH, 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef X32_SYSCALL_BIT
        /* The x32 ABI shares x86-64's AUDIT_ARCH: told apart by this bit. */
        EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
        /* One test and one answer per call: a conditional jump reaches at
         * most 255 instructions, so no shared "allow" at the end. */
        for (size_t i = 0; i < ELEMENTSOF(hot); i++)
                if (listed(allowed, ELEMENTSOF(allowed), hot[i])) {
                        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, hot[i], 0, 1));
                        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
                }
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++)
                if (!listed(hot, ELEMENTSOF(hot), allowed[i])) {
                        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i], 0, 1));
                        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
                }
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
        return (int) n;
}

/* The W^X program: one block per call that can make memory executable,
 * each ending in its own answer (so every jump is short). Everything else
 * it allows: the main program has the say there. */
int syscall_filter_build_wx(struct sock_filter *buf, size_t n_buf) {
        size_t n = 0;

        assert(buf);

        /* Another call jumps over the block with nr still loaded.
         * Arguments are 64 bits; the flags are in the low word, and what the
         * high word holds can add no PROT_WRITE, PROT_EXEC or SHM_EXEC. */
#define DENY_IF_ALL(nr, mask)                                                                   \
        do {                                                                                    \
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 5));                          \
                EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2]))); \
                EMIT(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (mask)));                              \
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (mask), 0, 1));                        \
                EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));  \
                EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));                             \
        } while (0)

        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYSCALL_FILTER_NATIVE_ARCH, 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef X32_SYSCALL_BIT
        EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
        /* A new mapping may be writable or executable, never both. */
#if defined(__NR_mmap) && !defined(__i386__)
        DENY_IF_ALL(__NR_mmap, PROT_WRITE | PROT_EXEC);
#endif
#ifdef __NR_mmap2
        DENY_IF_ALL(__NR_mmap2, PROT_WRITE | PROT_EXEC);
#endif
        /* An existing mapping never becomes executable: what was written
         * could be run. (dlopen() maps code executable from the start.) */
#ifdef __NR_mprotect
        DENY_IF_ALL(__NR_mprotect, PROT_EXEC);
#endif
#ifdef __NR_pkey_mprotect
        DENY_IF_ALL(__NR_pkey_mprotect, PROT_EXEC);
#endif
#ifdef __NR_shmat
        DENY_IF_ALL(__NR_shmat, SHM_EXEC);
#endif
#ifdef __i386__
        /* i386's old mmap() takes its arguments in memory, out of a
         * filter's sight: refused (glibc uses mmap2()). */
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
#endif
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef DENY_IF_ALL
        return (int) n;
}

#undef EMIT

static int digest_of(int (*build)(struct sock_filter *, size_t), char ret[static 17]) {
        struct sock_filter prog[SYSCALL_FILTER_MAX];
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        int n;

        n = build(prog, ELEMENTSOF(prog));
        if (n < 0)
                return n;
        for (int i = 0; i < n; i++) {
                const uint8_t b[8] = { prog[i].code & 0xff, prog[i].code >> 8, prog[i].jt, prog[i].jf,
                                       prog[i].k & 0xff, (prog[i].k >> 8) & 0xff, (prog[i].k >> 16) & 0xff,
                                       prog[i].k >> 24 };
                for (size_t j = 0; j < sizeof b; j++) {
                        h ^= b[j];
                        h *= UINT64_C(0x100000001b3);
                }
        }
        (void) snprintf(ret, 17, "%016" PRIx64, h);
        return 0;
}

int syscall_filter_digest(char ret[static 17]) {
        return digest_of(syscall_filter_build, ret);
}

int syscall_filter_digest_wx(char ret[static 17]) {
        return digest_of(syscall_filter_build_wx, ret);
}
