/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* file: URIs (RFC 8089) for the paths of returned files. A file name may be
 * any bytes but '/' and NUL (newlines, escapes, invalid UTF-8): every byte
 * but the unreserved ones and '/' is percent-encoded, so the URI is valid
 * and names the exact bytes. */

#include <stddef.h>

/* "file:///tmp/outputs/a%20b.csv" for the absolute path[0..len).
 * -EINVAL: not absolute, or a NUL inside; -ENOMEM. */
int file_uri_from_path(const char *path, size_t len, char **ret);

/* The path of a "file:///…" (or "file://localhost/…") URI, percent-decoded,
 * NUL-terminated; *ret_len excludes the NUL. -EINVAL: another scheme or
 * host, a bad escape, or a NUL. */
int file_uri_to_path(const char *uri, char **ret, size_t *ret_len);
