/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tasks/ requests of both formats: get, result, list, cancel, update.
 * A task another caller made is as unknown as one that never was. */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "macro.h"
#include "task-internal.h"

/* tasks/list pages. */
#define TASK_LIST_PAGE 50
/* tasks/result requests open for one task, and for all tasks of one
 * caller: each gets a copy of the result when the task ends, and over
 * stdio nothing else bounds how many it sends. */
#define TASK_WAITERS_MAX 8
#define CALLER_WAITERS_MAX 32

/* The task of the request's taskId, if the caller may see it; else the
 * reply is the error, the same for every reason. */
static McpTask *task_lookup(McpRequest *req, json_object **ret) {
        McpServer *server = req->session->server;
        McpTask *t = task_find(server, json_get_string(req->params, "taskId"));
        McpTaskFormat format = req->rev->stateless ? MCP_TASK_EXTENSION : MCP_TASK_CORE;

        if (t && t->shown && t->format == format && streq(t->caller, req->session->caller))
                return t;
        *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_PARAMS, "Invalid params: no such task", NULL);
        return NULL;
}

static bool method_missing(McpRequest *req, json_object **ret) {
        /* Only where the revision has this format, and the server has tasks. */
        if ((req->rev->tasks || req->rev->stateless) && req->session->server->config.max_tasks > 0)
                return false;
        *ret = jsonrpc_error_new(req->id, JSONRPC_METHOD_NOT_FOUND, "Method not found: tasks are not offered here",
                                 NULL);
        return true;
}

int mcp_task_handle_get(McpRequest *req, json_object **ret) {
        json_object *o, *reply;
        MemCharge charge;
        McpTask *t;
        int r;

        assert(req);
        assert(ret);

        if (method_missing(req, ret) || !(t = task_lookup(req, ret)))
                return *ret ? 0 : -ENOMEM;
        if (!t->outcome || t->status == MCP_TASK_WORKING) {
                o = detailed_task_json(t, false);
                *ret = o ? mcp_result_reply(req, o) : NULL;
                return *ret ? 0 : -ENOMEM;
        }
        /* The outcome inline: charged before it is built, refused small. */
        r = task_reader_charge(t, &charge);
        if (r == -EBUSY) {
                *ret = task_busy_error(t, req->id);
                return *ret ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        o = detailed_task_json(t, true);
        reply = o ? mcp_result_reply(req, o) : NULL;
        if (!reply) {
                mem_charge_done(&charge);
                return -ENOMEM;
        }
        return task_send_reply(req->session, req->batch, req->origin, reply, &charge);
}

int mcp_task_handle_result(McpRequest *req, json_object **ret) {
        TaskWaiter *w;
        McpTask *t;
        unsigned n, mine;

        assert(req);
        assert(ret);

        if (method_missing(req, ret) || !(t = task_lookup(req, ret)))
                return *ret ? 0 : -ENOMEM;
        if (t->status != MCP_TASK_WORKING)
                return task_answer_result(t, req->session, req->batch, req->origin, req->id);
        /* It blocks until the task ends. */
        n = mine = 0;
        LIST_FOREACH(tasks, i, req->session->server->tasks)
                if (streq(i->caller, t->caller))
                        LIST_FOREACH(waiters, j, i->waiters) {
                                n += i == t;
                                mine++;
                        }
        if (n >= TASK_WAITERS_MAX || mine >= CALLER_WAITERS_MAX) {
                *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_REQUEST,
                                         n >= TASK_WAITERS_MAX ?
                                         "Invalid Request: too many tasks/result requests wait for this task" :
                                         "Invalid Request: too many of your tasks/result requests wait", NULL);
                return *ret ? 0 : -ENOMEM;
        }
        w = new0(TaskWaiter, 1);
        if (!w)
                return -ENOMEM;
        *w = (TaskWaiter) { .session = req->session, .id = json_object_get(req->id), .origin = req->origin };
        LIST_PREPEND(waiters, t->waiters, w);
        /* Where a task's questions to its client go (2025-11-25): on this
         * request's stream, all that are open (the client may have lost
         * the stream of an earlier tasks/result). */
        if (t->session)
                (void) mcp_confirm_send_open(t->session, req->session, req->origin, req->id, true);
        return 0;
}

int mcp_task_handle_list(McpRequest *req, json_object **ret) {
        McpServer *server = req->session->server;
        _cleanup_json_ json_object *result = NULL, *tasks = json_object_new_array();
        const char *cursor = json_get_string(req->params, "cursor");
        McpTask *t = NULL;
        unsigned n = 0;

        assert(req);
        assert(ret);

        if (method_missing(req, ret))
                return 0;
        /* Where everyone is one caller, a list would hand out the others'
         * ids, which are their keys: not offered (nor declared). */
        if (!task_caller_known(req->session)) {
                *ret = jsonrpc_error_new(req->id, JSONRPC_METHOD_NOT_FOUND,
                                         "Method not found: tasks/list needs a caller the server can tell apart (an "
                                         "HTTP token, a local uid)", NULL);
                return *ret ? 0 : -ENOMEM;
        }
        if (!tasks)
                return -ENOMEM;
        /* Oldest first: the list is newest first, so walk it backwards. */
        for (t = server->tasks; t && t->tasks_next; t = t->tasks_next)
                ;
        if (cursor) {
                while (t && !streq(t->id, cursor))
                        t = t->tasks_prev;
                if (!t || !streq(t->caller, req->session->caller)) {
                        *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_PARAMS, "Invalid params: unknown cursor",
                                                 NULL);
                        return *ret ? 0 : -ENOMEM;
                }
                t = t->tasks_prev;
        }
        for (; t; t = t->tasks_prev) {
                if (!t->shown || t->format != MCP_TASK_CORE || !streq(t->caller, req->session->caller))
                        continue;
                if (n == TASK_LIST_PAGE)
                        break;
                if (json_append(tasks, task_json(t)) < 0)
                        return -ENOMEM;
                n++;
                cursor = t->id;
        }
        if (json_build(&result, JB_OBJ("tasks", TAKE_PTR(tasks)), JB_END) < 0)
                return -ENOMEM;
        if (t && json_add_string(result, "nextCursor", cursor) < 0)
                return -ENOMEM;
        *ret = mcp_result_reply(req, TAKE_PTR(result));
        return *ret ? 0 : -ENOMEM;
}

int mcp_task_handle_cancel(McpRequest *req, json_object **ret) {
        McpTask *t;

        assert(req);
        assert(ret);

        if (method_missing(req, ret) || !(t = task_lookup(req, ret)))
                return *ret ? 0 : -ENOMEM;
        if (t->status == MCP_TASK_WORKING) {
                /* Cancelled before the answer, and for good: whatever the
                 * run still reports is dropped. Its unit is stopped as a
                 * cancelled call's is. */
                task_set_status(t, MCP_TASK_CANCELLED, "cancelled by the client");
                task_ended(t);
                task_answer_waiters(t);
                if (t->session)
                        mcp_call_cancel(t->session, t->call_id);
        } else {
                /* Cancelling one that ended deletes it: its caller wants
                 * no more of it, and its room is the caller's again. The
                 * core must refuse the cancel itself (-32602); the
                 * extension acks it (cancelling is eventually consistent). */
                *ret = t->format == MCP_TASK_CORE ?
                        jsonrpc_error_new(req->id, JSONRPC_INVALID_PARAMS,
                                          "Invalid params: the task already ended; it is deleted now", NULL) :
                        mcp_result_reply(req, json_object_new_object());
                task_delete(t, "deleted by its caller");
                return *ret ? 0 : -ENOMEM;
        }
        /* The core answers with the task, the extension with an empty ack. */
        *ret = mcp_result_reply(req, t->format == MCP_TASK_CORE ? task_json(t) : json_object_new_object());
        return *ret ? 0 : -ENOMEM;
}

int mcp_task_handle_update(McpRequest *req, json_object **ret) {
        json_object *responses = json_get(req->params, "inputResponses");
        McpTask *t;

        assert(req);
        assert(ret);

        if (method_missing(req, ret) || !(t = task_lookup(req, ret)))
                return *ret ? 0 : -ENOMEM;
        if (!json_object_is_type(responses, json_type_object)) {
                *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_PARAMS,
                                         "Invalid params: inputResponses must be an object", NULL);
                return *ret ? 0 : -ENOMEM;
        }
        /* The core's questions are answered on the stream they were asked
         * on, never here. */
        if (t->format != MCP_TASK_EXTENSION || !t->input_required || !t->session) {
                *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_PARAMS,
                                         "Invalid params: this task asks for no input now; there is nothing to update",
                                         NULL);
                return *ret ? 0 : -ENOMEM;
        }
        /* Each key answers our question of that id, if it is still open; the
         * others (stale, or never ours) change nothing. Only the task's
         * caller gets here (task_lookup). */
        json_object_object_foreach(responses, key, value) {
                if (!t->session)
                        break;
                (void) mcp_confirm_input_response(t->session, key, value);
        }
        *ret = mcp_result_reply(req, json_object_new_object());
        return *ret ? 0 : -ENOMEM;
}
