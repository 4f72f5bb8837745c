/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* MCP tasks: a tools/call whose result is fetched later by id, so a run can
 * outlast the client's request and its connection. The fourth long-lived
 * object of the front end, beside McpSession, HttpSession and the sandbox
 * sessions.
 *
 * A task belongs to its caller (McpSession.caller: the stdio uid, the HTTP
 * token holder), never to the MCP session or the connection that made it:
 * any session of the same caller reaches it by id, and for anyone else the
 * id does not exist. Its run is an ordinary call (mcp-call.c) in a session
 * of the task's own, whose sink is the task: its replies and notifications
 * come here instead of to a transport. Both wire formats:
 *
 *   core       2025-11-25: tools/call with "task": {ttl} answers at once
 *              with a handle; tasks/get, tasks/result, tasks/list,
 *              tasks/cancel; notifications/tasks/status.
 *   extension  2026-07-28 "io.modelcontextprotocol/tasks": a call that
 *              declared it and still runs after task_after_ms is answered
 *              with resultType "task"; a quicker one inline, as if there
 *              were no tasks. tasks/get carries the outcome inline.
 *
 * Results live in this process's memory only, charged to the caller's
 * memory budget until the task's ttl ends: never on disk, so none survive
 * a restart (and the broker stops the runs of a front end that is gone). */

#include <json-c/json.h>
#include <stdbool.h>

#include "mcp-internal.h"

#define MCP_TASKS_EXTENSION "io.modelcontextprotocol/tasks"
#define MCP_META_RELATED_TASK "io.modelcontextprotocol/related-task"

typedef enum McpTaskStatus {
        MCP_TASK_WORKING,
        MCP_TASK_COMPLETED,
        MCP_TASK_FAILED,
        MCP_TASK_CANCELLED,
        _MCP_TASK_STATUS_MAX,
} McpTaskStatus;

const char *mcp_task_status_to_string(McpTaskStatus s);

/* Does this tools/call ask for a task (core: a "task" object; extension:
 * declared in _meta)? Only where the revision has that format. */
bool mcp_task_requested(const McpRequest *req);

/* A tools/call as a task, in three steps that the dispatch takes, so that
 * the call machinery (mcp-call.c) knows nothing of tasks:
 * mcp_task_begin() admits and makes the task: 1 with *ret_task, whose call
 * is then started in mcp_task_session(), as a task's (McpRequest.task_run),
 * and its outcome r and immediate reply handed to mcp_task_started(),
 * which takes both and sets *ret to the reply to send now (a handle, an
 * error, or, for the extension, an inline result; NULL when it comes
 * later). mcp_task_begin() returns 0 with *ret set when the task is
 * refused, and -EBUSY when the extension's call is to run as a plain call
 * (no room for a task). */
int mcp_task_begin(const McpRequest *req, McpTask **ret_task, json_object **ret);
McpSession *mcp_task_session(McpTask *t);
int mcp_task_started(McpTask *t, const McpRequest *req, int r, json_object *reply, json_object **ret);

/* Session s is going: what waits on it is dropped, a call that had not
 * become a task yet is stopped (its client hung up). */
void mcp_tasks_session_gone(McpServer *server, McpSession *s);

/* Every task ends (server shutdown): runs are stopped, nothing is sent. */
void mcp_tasks_free_all(McpServer *server);

/* Tasks shown to their callers, by status. */
void mcp_tasks_count(const McpServer *server, unsigned ret[static _MCP_TASK_STATUS_MAX]);

/* Every task of caller ends, its run stopped, and is forgotten (its token
 * was revoked); how many. */
unsigned mcp_tasks_end_caller(McpServer *server, const char *caller);

/* notifications/cancelled for request id of s: if it is a
 * subscriptions/listen, the subscription ends (stdio's way to end one). */
void mcp_task_listener_cancel(McpSession *s, json_object *id);
/* The same for a call that has not become a task yet (the extension's
 * first task_after_ms): it is cancelled as any call, without a reply. A
 * task's own call is never cancelled this way (tasks/cancel is). */
void mcp_task_call_cancel(McpSession *s, json_object *id);

/* Code mode's questions to confirm a destructive tool (mcp-confirm.c) in a
 * task's call: while one is open the task is input_required; the core's
 * questions go on the caller's tasks/result, with the task's related-task
 * _meta, the extension's are tasks/get's inputRequests, answered by
 * tasks/update. The id of the task whose own session s is; else NULL. */
const char *mcp_task_session_task_id(const McpSession *s);
/* A question of task session s opened or closed: its status follows, and
 * one not asked yet goes on an open tasks/result. */
void mcp_task_questions_changed(McpSession *s);
/* A response that came on s: 1 if it answered a question of one of its
 * caller's tasks that was asked on s, else 0. */
int mcp_task_confirm_response(McpSession *s, json_object *msg);

/* The methods. subscriptions/listen is here because task notifications are
 * the only ones this server has (its tool list never changes). */
int mcp_task_handle_listen(McpRequest *req, json_object **ret);
int mcp_task_handle_get(McpRequest *req, json_object **ret);
int mcp_task_handle_result(McpRequest *req, json_object **ret);
int mcp_task_handle_list(McpRequest *req, json_object **ret);
int mcp_task_handle_cancel(McpRequest *req, json_object **ret);
int mcp_task_handle_update(McpRequest *req, json_object **ret);

/* The "tasks" server capability of the core format, for a session: "list"
 * only where the caller is known (not an anonymous loopback peer). */
json_object *mcp_task_capability(const McpSession *s);
