/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The system calls a run may make, as one seccomp program built from a
 * list fixed at build time (syscall-allow.h): what the units' own
 * SystemCallFilter=@system-service (minus @keyring, io_uring, userfaultfd),
 * SystemCallArchitectures=native and SystemCallErrorNumber=EPERM gave.
 * systemd compiled that with libseccomp in every unit's child, at every
 * start: about a quarter of what a unit cost PID 1's side here. The
 * launcher loads this program instead, first thing, before it reads
 * anything of a run (launch-seccomp.h); building it takes microseconds.
 * The broker builds the same program to know its digest, which the
 * self-check must report (probe.c): a launcher of another build, or one
 * that loaded nothing, gets no code.
 *
 * The program: a call of another architecture (on x86-64 also the x32
 * ABI) kills the process, as SystemCallArchitectures=native did; a listed
 * call is allowed; any other fails with EPERM. The filters systemd still
 * installs (RestrictAddressFamilies=, RestrictNamespaces=, ...) stay
 * beside it: the kernel applies the strictest answer of all. */

#include <linux/audit.h>
#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

/* The architecture whose calls a run may make (AUDIT_ARCH_*). */
#if defined(__x86_64__)
#  define SYSCALL_FILTER_NATIVE_ARCH AUDIT_ARCH_X86_64
#  define X32_SYSCALL_BIT 0x40000000u
#elif defined(__aarch64__)
#  define SYSCALL_FILTER_NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#  define SYSCALL_FILTER_NATIVE_ARCH AUDIT_ARCH_I386
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define SYSCALL_FILTER_NATIVE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#  define SYSCALL_FILTER_NATIVE_ARCH AUDIT_ARCH_S390X
#elif defined(__riscv) && __riscv_xlen == 64
#  define SYSCALL_FILTER_NATIVE_ARCH AUDIT_ARCH_RISCV64
#else
#  error "syscall-filter.h: no AUDIT_ARCH_* for this architecture; add it"
#endif

#define SYSCALL_FILTER_MAX 1024         /* instructions; the kernel's limit is 4096 */

/* Builds the program into buf (SYSCALL_FILTER_MAX entries); returns its
 * length, or -errno. */
int syscall_filter_build(struct sock_filter *buf, size_t n_buf);

/* The program's digest (64-bit FNV-1a of its instructions), as 16 hex
 * digits into ret (17 bytes), or -errno. */
int syscall_filter_digest(char ret[static 17]);

/* W^X (issue 42), a second program stacked on the first in every unit but
 * those whose interpreter JIT-compiles (Node's V8: the launcher's --jit):
 * what MemoryDenyWriteExecute= does, without PID 1 compiling it. No
 * mmap() both writable and executable, no mprotect() or pkey_mprotect()
 * with PROT_EXEC, no shmat() with SHM_EXEC: EPERM. Code mapped executable
 * from a file (dlopen(), exec) is untouched, so a memfd or a file in /tmp
 * mapped once writable and once executable gets past it: it stops code
 * injected into memory from running, not a program that means to run
 * machine code (any run can exec a binary it wrote). Its digest is what
 * the self-check wants from a unit without --jit (probe.c). */
int syscall_filter_build_wx(struct sock_filter *buf, size_t n_buf);
int syscall_filter_digest_wx(char ret[static 17]);
