/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* subscriptions/listen (2026-07-28) for notifications/tasks: the only
 * notifications this server has (its tool list never changes). The
 * request stays open and its stream carries them; it ends with the
 * session or notifications/cancelled. */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "task-internal.h"

/* Task ids in one subscription; subscriptions open per caller (not per
 * MCP session: each 2026-07-28 request is a session of its own); and
 * subscriptions that may hear of one task, as each gets a copy of its
 * result when it ends. */
#define LISTENER_IDS_MAX 64
#define LISTENERS_PER_CALLER_MAX 16
#define LISTENERS_PER_TASK_MAX 4
#define MCP_META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

TaskListener *task_listener_free(McpServer *server, TaskListener *l) {
        if (!l)
                return NULL;
        LIST_REMOVE(listeners, server->task_listeners, l);
        json_object_put(l->id);
        for (size_t i = 0; i < l->n_task_ids; i++)
                free(l->task_ids[i]);
        free(l->task_ids);
        return mfree(l);
}


static bool listener_has(const TaskListener *l, const char *id) {
        for (size_t i = 0; i < l->n_task_ids; i++)
                if (streq(l->task_ids[i], id))
                        return true;
        return false;
}

/* One subscriber hears of t: with the outcome inline if the caller's share
 * can take that copy now, else the status alone (tasks/get has the rest). */
static void listener_notify(McpTask *t, TaskListener *l) {
        _cleanup_json_ json_object *params = NULL, *meta = NULL;
        _cleanup_(mem_charge_done) MemCharge charge = {};
        int r;

        r = task_reader_charge(t, &charge);
        if (r < 0 && r != -EBUSY)
                return (void) log_oom();
        params = detailed_task_json(t, r >= 0);
        if (!params || json_build(&meta, JB_OBJ(MCP_META_SUBSCRIPTION_ID, json_object_get(l->id)), JB_END) < 0 ||
            json_add(params, "_meta", TAKE_PTR(meta)) < 0)
                return (void) log_oom();
        /* The transport takes the charge over for its copy (a stream that
         * cannot keep it drops the stream, never charges past the budget). */
        (void) mcp_session_send_notification_charged(l->session, l->origin, l->id,
                                                     jsonrpc_notification_new("notifications/tasks",
                                                                              TAKE_PTR(params)),
                                                     r >= 0 ? &charge : NULL);
}

/* After the outcome is stored: the extension's subscribers see it inline. */
void task_ended(McpTask *t) {
        if (t->format != MCP_TASK_EXTENSION || !t->server)
                return;
        LIST_FOREACH(listeners, l, t->server->task_listeners)
                if (listener_has(l, t->id))
                        listener_notify(t, l);
}

/* The task ids of the filter that the caller may hear about; the rest are
 * left out of the acknowledgment, as for any kind we do not serve. */
/* Subscriptions of the caller that may hear of task id. */
static unsigned task_listeners(McpServer *server, const char *caller, const char *id) {
        unsigned n = 0;

        LIST_FOREACH(listeners, l, server->task_listeners)
                n += streq(l->session->caller, caller) && listener_has(l, id);
        return n;
}

static int listener_take_ids(McpRequest *req, TaskListener *l, json_object **ret_ack) {
        McpServer *server = req->session->server;
        json_object *ids = json_get(json_get(req->params, "notifications"), "taskIds");
        _cleanup_json_ json_object *acked = json_object_new_array();
        size_t n;

        if (!acked)
                return -ENOMEM;
        n = json_object_is_type(ids, json_type_array) ? json_object_array_length(ids) : 0;
        l->task_ids = new0(char *, MIN(n, (size_t) LISTENER_IDS_MAX) + 1);
        if (!l->task_ids)
                return -ENOMEM;
        for (size_t i = 0; i < n && l->n_task_ids < LISTENER_IDS_MAX; i++) {
                McpTask *t = task_find(server, json_object_get_string(json_object_array_get_idx(ids, i)));
                if (!json_object_is_type(json_object_array_get_idx(ids, i), json_type_string) || !t || !t->shown ||
                    t->format != MCP_TASK_EXTENSION || !streq(t->caller, req->session->caller) ||
                    listener_has(l, t->id) || task_listeners(server, t->caller, t->id) >= LISTENERS_PER_TASK_MAX)
                        continue;
                l->task_ids[l->n_task_ids] = strdup(t->id);
                if (!l->task_ids[l->n_task_ids] || json_append(acked, json_object_new_string(t->id)) < 0)
                        return -ENOMEM;
                l->n_task_ids++;
        }
        *ret_ack = TAKE_PTR(acked);
        return 0;
}

int mcp_task_handle_listen(McpRequest *req, json_object **ret) {
        McpServer *server = req->session->server;
        _cleanup_json_ json_object *acked = NULL, *filter = NULL, *meta = NULL, *params = NULL;
        TaskListener *l;
        unsigned n = 0;
        int r;

        assert(req);
        assert(ret);

        if (!json_object_is_type(json_get(req->params, "notifications"), json_type_object)) {
                *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_PARAMS,
                                         "Invalid params: subscriptions/listen needs a notifications object", NULL);
                return *ret ? 0 : -ENOMEM;
        }
        LIST_FOREACH(listeners, i, server->task_listeners)
                n += streq(i->session->caller, req->session->caller);
        if (n >= LISTENERS_PER_CALLER_MAX) {
                *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_REQUEST,
                                         "Invalid Request: too many subscriptions open; end some first", NULL);
                return *ret ? 0 : -ENOMEM;
        }
        l = new0(TaskListener, 1);
        if (!l)
                return -ENOMEM;
        *l = (TaskListener) { .session = req->session, .id = json_object_get(req->id), .origin = req->origin };
        LIST_PREPEND(listeners, server->task_listeners, l);
        r = listener_take_ids(req, l, &acked);
        if (r < 0) {
                task_listener_free(server, l);
                return r;
        }
        /* Only what we serve is acknowledged: task ids, nothing else. */
        if (json_build(&filter, JB_OBJ("taskIds", TAKE_PTR(acked)), JB_END) < 0 ||
            json_build(&meta, JB_OBJ(MCP_META_SUBSCRIPTION_ID, json_object_get(req->id)), JB_END) < 0 ||
            json_build(&params, JB_OBJ("_meta", TAKE_PTR(meta)), JB_OBJ("notifications", TAKE_PTR(filter)),
                       JB_END) < 0) {
                task_listener_free(server, l);
                return -ENOMEM;
        }
        /* The request stays open: its stream carries the notifications. */
        return mcp_session_send_notification(req->session, req->origin, req->id,
                                             jsonrpc_notification_new("notifications/subscriptions/acknowledged",
                                                                      TAKE_PTR(params)));
}

void mcp_task_listener_cancel(McpSession *s, json_object *id) {
        McpServer *server = s->server;

        assert(s);

        if (!server)
                return;
        LIST_FOREACH_SAFE(listeners, l, next, server->task_listeners)
                if (l->session == s && jsonrpc_id_equal(l->id, id)) {
                        /* Ended by the client: no reply, as for a cancelled call. */
                        (void) mcp_session_send_unanswered(s, l->origin, l->id);
                        task_listener_free(server, l);
                        return;
                }
}
