/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* NULL-terminated arrays of strings, as systemd's strv. */

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Frees every string and the array; NULL is fine. Returns NULL. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

#define STRV_FOREACH(s, l) for (char **s = (l); s && *s; s++)

size_t strv_length(char *const *l);

/* A deep copy of at most the first max strings of l; NULL on out of memory. */
char **strv_copy_n(const char *const *l, size_t max);
static inline char **strv_copy(const char *const *l) {
        return strv_copy_n(l, SIZE_MAX);
}

/* Appends a copy of s[0..n) to *l (which may be NULL); -ENOMEM leaves *l as it was. */
int strv_extend_n(char ***l, const char *s, size_t n);

/* The entries of a comma-separated list, each without the blanks (space, tab)
 * around it; empty entries are skipped. NULL or "" gives NULL (no entries).
 * -ENOMEM. */
int strv_split_list(const char *list, char ***ret);
