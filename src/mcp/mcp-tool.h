/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The tools, as one table: what tools/list offers and tools/call runs.
 * A tool is an McpTool exported by its file (tool-exec.c, tool-session.c);
 * mcp-tool.c lists them, and the server and the call machinery only ever
 * walk that list. The callbacks do no I/O: mcp-call.c runs the call. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "broker-proto.h"
#include "sandbox-session-table.h"
#include "mcp-config.h"
#include "revision.h"
#include "tool-exec.h"
#include "tool-result.h"
#include "tool-session.h"

/* A call's validated arguments, as its tool's parse left them. */
typedef struct McpToolArgs {
        ExecArgs exec;                  /* exec: what to run */
        /* The broker's id of the sandbox session the call uses or closes; "" for none. */
        char session_id[TOOL_SESSION_ID_LEN + 1];
        char *handle;                   /* session_close: the handle as given */
        /* exec and session_create: the egress policy asked for ("network"),
         * borrowed from the arguments; NULL: none. Checked against the
         * configuration and the caller before the call goes on. */
        const char *network;
        /* exec and session_create: the "packages" argument as given,
         * borrowed from the arguments; NULL: none. Checked against the
         * wheelhouse (tool_packages_check()) before the call goes on. */
        json_object *packages;
} McpToolArgs;

void mcp_tool_args_done(McpToolArgs *a);

/* What the callbacks see of the call. */
typedef struct McpToolContext {
        const McpServerConfig *config;
        const McpRevision *rev;
        SandboxSessionTable *sessions;  /* the sandbox session handles this front end gave out */
        SandboxOwner owner;             /* whose call it is */
} McpToolContext;

/* How a call ended, for its reply and the journal. */
typedef struct McpToolOutcome {
        json_object *result;            /* the CallToolResult; NULL: out of memory */
        int log_level;
        char log_result[64];            /* MCP_RESULT */
} McpToolOutcome;

typedef struct McpTool {
        const char *name;
        /* Offered under this configuration? NULL: always. */
        bool (*available)(const McpServerConfig *c);
        /* The Tool object for tools/list. NULL on out of memory. */
        json_object *(*definition)(const McpServerConfig *c, const McpRevision *rev);
        /* arguments may be NULL (absent). -EINVAL with *ret_error for the
         * model; -ESRCH for a sandbox session handle that is not ours (as
         * gone as one that ended); -ENOMEM. */
        int (*parse)(const McpServerConfig *c, json_object *arguments, McpToolArgs *a, char **ret_error);
        /* NULL: the call runs code (it queues for a slot, reports progress
         * and goes through exec-client). Otherwise it is this one request
         * to the broker, answered by broker_done. */
        const char *broker_op;
        /* May run as an MCP task (mcp-task.h): "taskSupport": "optional". */
        bool tasks;
        uint64_t broker_timeout_usec;
        /* The broker's reply to broker_op (NULL unless error is NONE). */
        void (*broker_done)(const McpToolContext *ctx, const McpToolArgs *a, json_object *reply, BrokerError error,
                            const char *message, McpToolOutcome *ret);
} McpTool;

/* Every tool, in the order tools/list gives them; NULL-terminated. */
extern const McpTool *const mcp_tools[];

bool mcp_tool_available(const McpTool *t, const McpServerConfig *c);
/* The tool of that name, if offered under c; NULL otherwise. */
const McpTool *mcp_tool_find(const McpServerConfig *c, const char *name);
/* The error for a tool we do not have: "Unknown tool: NAME (the tools are …)",
 * NAME cut to 64 characters. NULL on out of memory. */
char *mcp_tool_unknown_text(const McpServerConfig *c, const char *name);
