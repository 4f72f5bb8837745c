/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "syscall-filter.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "macro.h"

#if defined(__x86_64__)
#  define NATIVE_ARCH AUDIT_ARCH_X86_64
#  define X32_SYSCALL_BIT 0x40000000u
#elif defined(__aarch64__)
#  define NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#  define NATIVE_ARCH AUDIT_ARCH_I386
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define NATIVE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#  define NATIVE_ARCH AUDIT_ARCH_S390X
#elif defined(__riscv) && __riscv_xlen == 64
#  define NATIVE_ARCH AUDIT_ARCH_RISCV64
#else
#  error "syscall-filter.c: no AUDIT_ARCH_* for this architecture; add it"
#endif

static const unsigned allowed[] = {
#include "syscall-allow.h"
};

int syscall_filter_build(struct sock_filter *buf, size_t n_buf) {
        size_t n = 0;

        assert(buf);

#define EMIT(insn)                                      \
        do {                                            \
                if (n >= n_buf)                         \
                        return -ENOBUFS;                \
                buf[n++] = (struct sock_filter) insn;   \
        } while (0)

        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef X32_SYSCALL_BIT
        /* The x32 ABI shares x86-64's AUDIT_ARCH: told apart by this bit. */
        EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
        /* One test and one answer per call: a conditional jump reaches at
         * most 255 instructions, so no shared "allow" at the end. */
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i], 0, 1));
                EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        }
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
#undef EMIT
        return (int) n;
}

int syscall_filter_digest(char ret[static 17]) {
        struct sock_filter prog[SYSCALL_FILTER_MAX];
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        int n;

        n = syscall_filter_build(prog, ELEMENTSOF(prog));
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
