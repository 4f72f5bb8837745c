/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The command's MCP tasks (protocol 2025-11-25): `run --detach` makes a
 * task and prints its id; `task get|wait|cancel|list` reach it later from
 * a new session. A task belongs to the uid that made it, not to the
 * session, so any later invocation by the same user finds it. */

#include <json-c/json.h>

/* The protocol revision whose tools/call may ask for a task. */
#define TASK_PROTOCOL_VERSION "2025-11-25"

/* `task get` of a task still working: try again later (EX_TEMPFAIL). */
#define EXIT_TASK_WORKING 75

/* resp answers a tools/call with "task": prints the task's id on stdout;
 * the exit status of `run --detach`. */
int task_print_created(json_object *resp);

/* mcp-exec task VERB ...: argv[0] is "task". The exit status. */
int task_cmd(int argc, char *argv[]);
