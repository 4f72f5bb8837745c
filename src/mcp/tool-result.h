/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The pieces of a CallToolResult that every tool, and the call machinery,
 * build with: below the tools (tool-exec.c, tool-session.c). */

#include <json-c/json.h>
#include <stddef.h>

/* A content array of one text block with the len bytes of text. NULL on
 * out of memory. */
json_object *tool_text_content(const char *text, size_t len);

/* A CallToolResult with isError set and text as its only content. */
json_object *tool_error_result(const char *text);
