/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The MIME type of a returned file, by its extension (case-insensitive):
 * a small table of what analysis code writes. */

#include <stddef.h>

/* NULL for an unknown or missing extension: the caller picks text/plain or
 * application/octet-stream by the content. */
const char *mime_type_from_path(const char *path, size_t len);
