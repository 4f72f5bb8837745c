/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The few systemd-style helpers every file uses: cleanup attributes and
 * ownership hand-off. Kept tiny on purpose. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _sentinel_ __attribute__((sentinel))
#define _noreturn_ __attribute__((noreturn))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
/* A zeroed array of n objects of type t. */
#define new0(t, n) ((t *) calloc((n), sizeof(t)))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))

/* Hand ownership away: return the value and reset the variable. */
#define TAKE_GENERIC(var, type, nullvalue)              \
        ({                                              \
                type *_pvar_ = &(var);                  \
                type _var_ = *_pvar_;                   \
                *_pvar_ = (nullvalue);                  \
                _var_;                                  \
        })
#define TAKE_PTR(p) TAKE_GENERIC(p, __typeof__(p), NULL)
#define TAKE_FD(fd) TAKE_GENERIC(fd, int, -EBADF)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p) {                   \
                if (*p)                                         \
                        func(*p);                               \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

/* Closes fd if valid, preserves errno, always returns -EBADF. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void close_pairp(int (*p)[2]) {
        (*p)[0] = safe_close((*p)[0]);
        (*p)[1] = safe_close((*p)[1]);
}
#define _cleanup_close_pair_ _cleanup_(close_pairp)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

#define streq(a, b) (strcmp((a), (b)) == 0)
/* Also false when either is NULL, unless both are. */
static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? strcmp(a, b) == 0 : a == b;
}
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
#define isempty(s) (!(s) || !(s)[0])

#define USEC_PER_SEC ((uint64_t) 1000000ULL)
#define USEC_PER_MSEC ((uint64_t) 1000ULL)
#define NSEC_PER_MSEC ((uint64_t) 1000000ULL)

/* Return -errno from a libc call that sets errno, never 0 by accident. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
