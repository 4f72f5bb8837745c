/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The exec tool: its definition as each revision can carry it, validation
 * of the caller's arguments, and the shape of its results. No I/O here. */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "exec-client.h"
#include "mcp-server.h"
#include "revision.h"

#define TOOL_EXEC_NAME "exec"

/* Validated arguments. Strings point into the arguments object, which must
 * stay alive as long as they are used. */
typedef struct ExecArgs {
        const char *code;
        size_t code_len;
        const char *stdin_data;         /* NULL: no stdin */
        size_t stdin_len;
        uint64_t timeout_s;             /* effective: default applied, clamped to [1, max] */
} ExecArgs;

/* The Tool object for tools/list. NULL on out of memory. */
json_object *tool_exec_definition(const McpServerConfig *c, const McpRevision *rev);

/* arguments may be NULL (absent). -EINVAL with *ret_error set to a message
 * for the model when they do not fit the input schema or the limits;
 * -ENOMEM. */
int tool_exec_parse_arguments(const McpServerConfig *c, json_object *arguments, ExecArgs *ret, char **ret_error);

/* The CallToolResult of a run that happened (whatever its exit): a text block
 * with the result JSON, plus the same as structuredContent where the revision
 * has it. stdout and stderr are cut (and truncated set) where, as JSON, they
 * would take more than twice c->max_output_bytes. NULL on out of memory. */
json_object *tool_exec_result(const McpServerConfig *c, const ExecResult *r, const McpRevision *rev);

/* A CallToolResult with isError set and text as its only content. */
json_object *tool_exec_error_result(const char *text);

/* What to tell the model when the broker could not run the code. */
char *tool_exec_failure_text(BrokerError error, const char *error_message);
