/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* The MIME type of a file by its name's extension (case-insensitive), from a
 * small fixed table; "application/octet-stream" when unknown. *ret_image
 * (if not NULL) tells whether it is one of the image types returned as MCP
 * image content: PNG, JPEG, GIF, WebP and SVG. */
const char *mime_from_name(const char *name, bool *ret_image);
