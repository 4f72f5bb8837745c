/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the MCP core is configured with: limits, what the sandbox offers (for
 * the tool descriptions) and the memory budget. Its own header, so that the
 * tools read it without the server's public interface. */

#include <stdbool.h>
#include <stdint.h>

#include "egress-policy.h"
#include "mem-budget.h"
#include "tool-arg-packages.h"
#include "tool-servers.h"

typedef struct McpServerConfig {
        const char *broker_socket;      /* broker socket path */
        uint64_t default_timeout_s, max_timeout_s;
        uint64_t max_output_bytes, max_stdin_bytes, max_code_bytes;
        uint64_t max_concurrent;        /* runs at once, over all sessions */
        uint64_t max_queue;             /* calls waiting for a slot; past it: immediate error */
        /* For the tool description: what the sandbox offers (from the broker's
         * "info" reply). NULL/0 when unknown. */
        uint64_t memory_max_bytes, tasks_max, cpu_quota_percent;
        const char *python_version;     /* "3.11.2" */
        const char *const *modules;     /* importable non-stdlib top-level modules, NULL-terminated */
        /* Figures and files: the broker has the result channel (its "info"
         * says "result_channel": true); without it the tool neither offers
         * input files nor returns outputs. The limits are MCP_EXEC_*. */
        bool result_channel;
        uint64_t max_images, max_image_bytes, max_files_out, max_result_bytes, max_input_bytes;
        /* Modules warm sandboxes import ahead (the broker's "preloaded"),
         * NULL-terminated; NULL when unknown or none. */
        const char *const *preloaded;
        /* Sessions (session_create): offered when max_sessions > 0 (the
         * broker's "info" says what it allows). */
        uint64_t max_sessions, max_sessions_per_caller, session_idle_s, session_max_s;
        /* Tasks (mcp-task.h): a task's run is clamped to task_max_timeout_s
         * (>= max_timeout_s), it and its result are kept at most
         * task_ttl_max_s; at most max_tasks live tasks, max_tasks_per_caller
         * of one caller (0: no tasks). A 2026-07-28 call that declared the
         * extension becomes a task once it ran task_after_ms. */
        uint64_t task_max_timeout_s, task_ttl_max_s, max_tasks, max_tasks_per_caller, task_after_ms;
        /* The front end's memory budget (mem-budget.h), shared with the
         * transports; NULL: unbounded. A call is charged to its caller at
         * admission, before it queues, for its arguments and decoded files;
         * while it runs, for the output and results collected (what does
         * not fit is left out); when it ends, for its reply until the
         * transport took it. Past the budget or the caller's share it is
         * answered "server busy". */
        MemBudget *budget;
        /* Egress policies (issue 22), as the operator configured them for
         * the front end: the `network` argument names one. NULL or none:
         * runs have no network and the argument is refused. Borrowed. */
        const EgressConfig *egress;
        /* Packages on demand (issue 23): the operator's wheelhouse, as the
         * `packages` argument offers it; read again on tools/list and on a
         * call that asks for packages, when it changed (hence not const).
         * NULL: packages off. Borrowed. */
        ToolPackages *packages;
        /* Code mode (issue 40): the operator's upstream servers, as the
         * exec tool describes them to each caller; read again on tools/list
         * when servers.d changed. NULL: none. Borrowed. */
        ToolServers *servers;
        /* Issue 42: LANGUAGE_BIT()s of the languages runs may use (the
         * broker's "info"); Python always, also when 0. */
        uint32_t languages;
} McpServerConfig;
