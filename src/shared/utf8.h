/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* Returns a NUL-terminated copy of s[0..n) in which every byte sequence that
 * is not well-formed UTF-8 (overlongs, surrogates, > U+10FFFF, truncated) is
 * replaced by U+FFFD. Embedded NULs are kept; *ret_len excludes the final NUL. */
char *utf8_sanitize(const char *s, size_t n, size_t *ret_len);
