/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The exec tool: its definition as each revision can carry it, validation
 * of the caller's arguments, and the shape of its results. No I/O here. */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "exec-client.h"
#include "launch-frame.h"
#include "macro.h"
#include "mcp-config.h"
#include "revision.h"

#define TOOL_EXEC_NAME "exec"

typedef struct McpTool McpTool;
/* Its entry in the tool table (mcp-tool.h). */
extern const McpTool tool_exec;

/* The reply to a tools/call is kept under this, envelope included: the
 * TypeScript SDK drops a message over 10 MiB. */
#define TOOL_EXEC_REPLY_MAX ((size_t) 10 * 1024 * 1024 - 64 * 1024)

/* Validated arguments. Strings point into the arguments object, which must
 * stay alive as long as they are used; so do files whose content was
 * UTF-8. Free with exec_args_done(). */
typedef struct ExecArgs {
        const char *code;
        size_t code_len;
        const char *stdin_data;         /* NULL: no stdin */
        size_t stdin_len;
        uint64_t timeout_s;             /* effective: default applied, clamped to [1, max] */
        ExecInputFile files[LAUNCH_FILES_MAX];
        size_t n_files;
        uint64_t files_bytes;           /* all of them, decoded */
        uint8_t *decoded[LAUNCH_FILES_MAX];     /* owned: what base64 content decoded to */
        const char *session;            /* the handle as given, or NULL: a run of its own */
        const char *network;            /* an egress policy's name as given (not yet checked), or NULL */
        json_object *packages;          /* "packages" as given (not yet checked), or NULL */
        /* "language" as given, one the server has (issue 42; set by the
         * tool's parse, tool_language_parse()); NULL: not given (Python, or
         * a session's own). */
        const char *language;
} ExecArgs;

void exec_args_done(ExecArgs *a);


/* The Tool object for tools/list. NULL on out of memory. */
json_object *tool_exec_definition(const McpServerConfig *c, const McpRevision *rev);

/* arguments may be NULL (absent). -EINVAL with *ret_error set to a message
 * for the model when they do not fit the input schema or the limits;
 * -ENOMEM. The "content" of a base64 file is removed from arguments once
 * decoded: only the decoded bytes are kept. */
/* *ret_error = the formatted text of a bad argument; returns -EINVAL (the
 * argument is refused), or -ENOMEM with *ret_error NULL. For the parsers
 * of single arguments too (tool-arg-*.c). */
int tool_arg_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);

int tool_exec_parse_arguments(const McpServerConfig *c, json_object *arguments, ExecArgs *ret, char **ret_error);

/* The CallToolResult of a run that happened (whatever its exit): a text block
 * with the result JSON, plus the same as structuredContent where the revision
 * has it; then, if something was left out, a short text block saying what;
 * then the returned figures and image files as image blocks and the other
 * files as embedded resources ("file:///tmp/outputs/…"), in the order of the
 * result's "images" and "files" lists (which carry metadata only, never
 * bytes). stdout and stderr are cut (and truncated set) where, as JSON, they
 * would take more than twice c->max_output_bytes; outputs that would take
 * the reply past TOOL_EXEC_REPLY_MAX are left out. When the installer of
 * "packages" failed (the code did not run) the result is an isError whose
 * first block is the installer's error, structuredContent as always (with
 * "packages"). NULL on out of memory. */
json_object *tool_exec_result(const McpServerConfig *c, const ExecResult *r, const McpRevision *rev);

/* What to tell the model when the broker could not run the code. */
char *tool_exec_failure_text(BrokerError error, const char *error_message);
