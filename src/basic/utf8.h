/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* True if s[0..n) is well-formed UTF-8 throughout (NUL bytes included). */
bool utf8_is_valid(const char *s, size_t n);

/* Returns a NUL-terminated copy of s[0..n) in which every byte sequence that
 * is not well-formed UTF-8 (overlongs, surrogates, > U+10FFFF, truncated) is
 * replaced by U+FFFD. Embedded NULs are kept; *ret_len excludes the final NUL. */
char *utf8_sanitize(const char *s, size_t n, size_t *ret_len);

/* The longest prefix of the UTF-8 text s[0..n) (whole characters) whose
 * escaped form in a JSON string takes at most budget bytes; *ret_cost gets
 * that size. Control bytes escape to up to six bytes: output limited in bytes
 * can still make a reply several times larger. */
size_t utf8_json_prefix(const char *s, size_t n, size_t budget, size_t *ret_cost);

/* The longest prefix of the UTF-8 text s[0..n) that ends on a whole
 * character and has at most max bytes. The cut falls only before a byte
 * that is not a continuation byte (10xxxxxx), or at n: on invalid text
 * any other byte keeps the stray continuation bytes after it, as in
 * utf8_json_prefix(). */
size_t utf8_whole_prefix(const char *s, size_t n, size_t max);
