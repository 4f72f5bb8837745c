/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mcp-task.h"
#include "task-internal.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "util.h"

/* A tools/call as a task: whether it is one, its admission under the caps,
 * its own session (whose sink is the task), what the call says to it, and
 * when it becomes a task. The dispatch (mcp-server.c) starts the call in
 * that session between mcp_task_begin() and mcp_task_started(). */

static bool extension_declared(json_object *meta) {
        json_object *caps = json_get(meta, MCP_META_CLIENT_CAPABILITIES);

        return json_object_is_type(json_get(json_get(caps, "extensions"), MCP_TASKS_EXTENSION), json_type_object);
}

/* A 2026-07-28 client that can be asked in form mode: its plain call runs
 * as a hidden task, so that it can wait for the answer (MRTR). */
static bool elicitation_declared(json_object *meta) {
        return mcp_confirm_capability_form(json_get(meta, MCP_META_CLIENT_CAPABILITIES));
}

bool mcp_task_requested(const McpRequest *req) {
        assert(req);

        if (req->rev->tasks)
                return json_object_is_type(json_get(req->params, "task"), json_type_object);
        return req->rev->stateless && (extension_declared(req->meta) || elicitation_declared(req->meta) ||
                                       json_get(req->params, "requestState"));
}

static unsigned caller_tasks(McpServer *server, const char *caller) {
        unsigned n = 0;

        LIST_FOREACH(tasks, t, server->tasks)
                n += streq(t->caller, caller);
        return n;
}

/* The first text block of a failed result: why it failed, for clients
 * that show only statusMessage. */
static const char *result_text(json_object *result) {
        json_object *content = json_get(result, "content");

        if (!json_object_is_type(content, json_type_array) || json_object_array_length(content) == 0)
                return NULL;
        return json_get_string(json_object_array_get_idx(content, 0), "text");
}

static void task_session_idle(McpSession *s, void *userdata) {
        McpTask *t = userdata;

        /* The call is gone: so is the session that carried it. A task
         * answered inline was only ever a call, and goes with it. */
        assert(t->session == s);
        task_drop_session(t);
        if (t->inline_done && !t->starting)
                task_free(t);
}

/* The extension's call ended before it became a task: answer inline. */
static int task_reply_inline(McpTask *t, json_object *reply, MemCharge *charge) {
        McpSession *o = TAKE_PTR(t->origin_session);

        t->inline_done = true;
        if (!o || !reply) {
                json_object_put(reply);
                mem_charge_done(charge);
                return 0;
        }
        /* The reply carries the call's id; a retry (MRTR) has its own. */
        if (t->origin_id && json_add(reply, "id", json_object_get(t->origin_id)) < 0) {
                json_object_put(reply);
                mem_charge_done(charge);
                return -ENOMEM;
        }
        return mcp_reply_charged(o, NULL, t->origin, reply, charge);
}

/* The outcome, serialized once, replaces the result's tree and what the
 * call's charge held for it. */
static int task_keep_outcome(McpTask *t, json_object *result) {
        _cleanup_json_ json_object *related = NULL;
        json_object *meta;
        int r;

        if (t->format == MCP_TASK_CORE) {
                /* What tasks/result answers: the result with its related
                 * task in its _meta. */
                meta = json_get(result, "_meta");
                if (!json_object_is_type(meta, json_type_object)) {
                        meta = json_object_new_object();
                        if (json_add(result, "_meta", meta) < 0)
                                return -ENOMEM;
                }
                if (json_build(&related, JB_STR("taskId", t->id), JB_END) < 0 ||
                    json_add(meta, MCP_META_RELATED_TASK, TAKE_PTR(related)) < 0)
                        return -ENOMEM;
        }
        /* The tree is about to go: only the task itself stays charged
         * here (shrinking always works), the text in its own charge. */
        (void) mem_charge_set(&t->charge, TASK_OVERHEAD_BYTES);
        r = task_outcome_new(t, result, &t->outcome);
        if (r < 0)
                return r;
        return 0;
}

/* A result the budget cannot keep: the task failed, and says why. */
static int task_fail_busy(McpTask *t) {
        static const char m[] = "server busy: the result is past your share of the server's memory budget "
                                "(results not yet read, calls running); fetch or delete some tasks and retry";

        t->error = jsonrpc_error_new(NULL, JSONRPC_SERVER_ERROR, m, NULL);
        if (t->error) {
                /* Only the error object, not the envelope around it. */
                json_object *e = json_object_get(json_get(t->error, "error"));
                json_object_put(t->error);
                t->error = e;
        }
        task_set_status(t, MCP_TASK_FAILED, m);
        task_ended(t);
        task_answer_waiters(t);
        return 0;
}

static int task_on_reply(McpTask *t, json_object *reply, MemCharge *charge) {
        _cleanup_json_ json_object *r = reply;
        json_object *result, *error;

        assert(t);
        assert(charge);

        if (!t->shown)
                return task_reply_inline(t, TAKE_PTR(r), charge);
        if (t->status != MCP_TASK_WORKING || !r) {
                /* Cancelled: what the run left is nobody's. */
                mem_charge_done(charge);
                return 0;
        }
        /* The reply's charge joins the task's own (set at its start). */
        if (charge->budget)
                mem_charge_move(&t->charge, charge);
        mem_charge_done(charge);
        result = json_get(r, "result");
        error = json_get(r, "error");
        if (result) {
                bool is_error = json_get_bool(result, "isError");
                _cleanup_free_ char *why = is_error && result_text(result) ?
                        strndup(result_text(result), TASK_STATUS_MESSAGE_MAX) : NULL;
                int k;

                /* The extension's result stays as tools/call would have
                 * answered it, resultType "complete" included: clients
                 * (ext-tasks) check it against the CallToolResult schema. */
                result = json_object_get(result);
                json_object_put(TAKE_PTR(r));   /* the reply's own text goes first */
                k = task_keep_outcome(t, result);
                json_object_put(result);
                if (k < 0)
                        return task_fail_busy(t);       /* nowhere to keep it */
                /* The core has failed for an isError result; the extension
                 * calls that completed, with the result inline. */
                task_set_status(t, is_error && t->format == MCP_TASK_CORE ? MCP_TASK_FAILED : MCP_TASK_COMPLETED, why);
        } else {
                t->error = json_object_get(error);
                task_set_status(t, MCP_TASK_FAILED, json_get_string(error, "message"));
        }
        task_ended(t);
        task_answer_waiters(t);
        return 0;
}

static int task_on_notification(McpTask *t, json_object *m) {
        _cleanup_json_ json_object *msg = m;

        assert(t);

        if (!msg)
                return log_oom();
        /* Progress goes where the request is while it is one (the
         * extension before the handle); the core's token stays valid for
         * the task's life, so it goes to the session that made it. */
        if (!t->origin_session)
                return 0;
        if (!t->shown)
                return mcp_session_send_notification(t->origin_session, t->origin, t->origin_id, TAKE_PTR(msg));
        if (t->format == MCP_TASK_CORE)
                return mcp_session_send_notification(t->origin_session, 0, NULL, TAKE_PTR(msg));
        return 0;
}

/* The task's own session says everything to the task. */
static int sink_reply(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply, MemCharge *charge) {
        assert(s);

        return task_on_reply(s->userdata, reply, charge);
}

static int sink_notification(McpSession *s, uint64_t origin, json_object *id, json_object *m, MemCharge *charge) {
        assert(s);

        return task_on_notification(s->userdata, m);
}

static int sink_unanswered(McpSession *s, uint64_t origin, json_object *id) {
        return 0;       /* a task's call: the task knows */
}

static const McpSink task_sink = {
        .reply = sink_reply,
        .notification = sink_notification,
        .unanswered = sink_unanswered,
};

static json_object *handle_reply(McpTask *t, const McpRequest *req) {
        json_object *task = task_json(t), *result;

        if (!task)
                return NULL;
        if (t->format == MCP_TASK_EXTENSION) {
                /* The stateless envelope, but a task rather than complete. */
                _cleanup_json_ json_object *reply = mcp_result_reply(req, task);
                if (!reply || json_add_string(json_get(reply, "result"), "resultType", "task") < 0)
                        return NULL;
                return TAKE_PTR(reply);
        }
        result = json_object_new_object();
        if (!result || json_add(result, "task", task) < 0) {
                json_object_put(result);
                return NULL;
        }
        return mcp_result_reply(req, result);
}

/* The extension: the call still runs, so it is a task from now on. */
static int on_show(sd_event_source *src, uint64_t usec, void *userdata) {
        McpTask *t = userdata;
        McpSession *o = TAKE_PTR(t->origin_session);
        McpRequest req = { .session = o, .rev = mcp_revision_stateless(), .id = t->call_id };
        json_object *reply;

        t->show_timer = sd_event_source_disable_unref(t->show_timer);
        if (!o)
                return 0;
        t->shown = true;
        reply = handle_reply(t, &req);
        if (!reply) {
                (void) log_oom();
                reply = jsonrpc_error_new(t->call_id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
        }
        task_log(t, LOG_INFO, "became a task");
        (void) mcp_reply(o, NULL, t->origin, reply);
        return 0;
}

static int on_expire(sd_event_source *src, uint64_t usec, void *userdata) {
        McpTask *t = userdata;

        /* Its ttl ended: the result goes, a run still going stops. */
        task_log(t, LOG_INFO, t->status == MCP_TASK_WORKING ? "expired while running: stopped" : "expired");
        task_free(t);
        return 0;
}

/* MRTR: the request ends with InputRequiredResult, the open questions in
 * inputRequests and the task's id as requestState; the run waits on. */
static int ask_input_required(McpTask *t) {
        McpSession *o = TAKE_PTR(t->origin_session);
        McpRequest req = { .session = o, .rev = mcp_revision_stateless(), .id = t->origin_id };
        _cleanup_json_ json_object *result = NULL;
        json_object *reply;

        assert(o);

        if (json_build(&result, JB_OBJ("inputRequests", mcp_confirm_input_requests(t->session)),
                       JB_STR("requestState", t->id), JB_END) < 0)
                reply = NULL;
        else
                reply = mcp_result_reply(&req, TAKE_PTR(result));
        if (reply && json_add_string(json_get(reply, "result"), "resultType", "input_required") < 0) {
                json_object_put(reply);
                reply = NULL;
        }
        if (!reply) {
                (void) log_oom();
                reply = jsonrpc_error_new(t->origin_id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
        }
        task_log(t, LOG_DEBUG, "call asks its client (InputRequiredResult)");
        return mcp_reply(o, NULL, t->origin, reply);
}

/* MRTR: the retry of a call that asked. Its inputResponses answer the
 * questions (by our ids); then it waits for the call's reply, or is asked
 * again at once if a question is still open. Only the caller's own call,
 * while no other request of it waits. */
static int task_resume(const McpRequest *req, json_object **ret) {
        McpTask *t = task_find(req->session->server, json_get_string(req->params, "requestState"));
        json_object *responses = json_get(req->params, "inputResponses");

        if (!t || !t->mrtr || t->inline_done || t->origin_session || !t->session ||
            !streq(t->caller, req->session->caller)) {
                *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_PARAMS,
                                         "Invalid params: requestState names no call of yours that waits for "
                                         "input (it ended, or timed out); call again without it", NULL);
                return *ret ? 0 : -ENOMEM;
        }
        t->origin_session = req->session;
        t->origin = req->origin;
        json_object_put(t->origin_id);
        t->origin_id = json_object_get(req->id);
        if (json_object_is_type(responses, json_type_object)) {
                t->resuming = true;
                json_object_object_foreach(responses, key, value) {
                        if (!t->session)
                                break;
                        (void) mcp_confirm_input_response(t->session, key, value);
                }
                t->resuming = false;
        }
        /* Still asking (an answer missing, or a new question): at once. */
        if (t->session && t->session->n_confirms > 0 && t->origin_session)
                (void) ask_input_required(t);
        return 0;               /* the reply comes later (or came) */
}

static uint64_t granted_ttl_ms(const McpServerConfig *c, json_object *task_param, uint64_t timeout_s) {
        int64_t asked = json_get_int64(task_param, "ttl", 0);
        uint64_t ttl = asked > 0 ? (uint64_t) asked : c->task_ttl_max_s * 1000;

        /* Never shorter than the run may take and a minute to fetch it; never
         * longer than the operator allows. What we grant is what we say. */
        ttl = MAX(ttl, timeout_s * 1000 + TASK_TTL_SLACK_MS);
        return MIN(ttl, c->task_ttl_max_s * 1000);
}

static const char too_many_text[] =
        "too many tasks: %u of %" PRIu64 " are %s; wait for yours to end or cancel some (an ended one of yours "
        "makes room by itself), then retry";

/* One caller's share of the task cap: never all of it, so that one
 * caller cannot fill it. */
static uint64_t caller_share(const McpServerConfig *c) {
        return MAX((uint64_t) 1, MIN(c->max_tasks_per_caller, c->max_tasks > 1 ? c->max_tasks - 1 : 1));
}

/* The ended task that goes when the caller needs room, ranked by caller:
 * the caller's own oldest first; then, if others is set (the caller is
 * within its share at the global cap), the oldest of the caller that holds
 * the most, if that is more than one above what this caller holds (mine),
 * so that a few callers' unread results cannot hold the shared cap until
 * their ttl (issue 37, item 9). Never anyone else's otherwise (their
 * results are theirs until their ttl), never a working task. */
static McpTask *ended_to_evict(McpServer *server, const char *caller, unsigned mine, bool others) {
        McpTask *found = NULL;
        unsigned best = 0, n_seen = 0;
        const char *seen = NULL;

        /* Newest first with ">=": of a caller, the last one seen is its
         * oldest, and of callers ranked alike, the one with the oldest
         * goes. A caller's count is asked again only when the caller
         * changes from both the one found and the one seen last. */
        LIST_FOREACH(tasks, t, server->tasks) {
                unsigned rank;

                if (!t->shown || t->status == MCP_TASK_WORKING)
                        continue;
                if (streq(t->caller, caller))
                        rank = UINT_MAX;
                else if (!others || best == UINT_MAX)
                        continue;
                else if (found && streq(t->caller, found->caller))
                        rank = best;
                else {
                        if (!seen || !streq(t->caller, seen)) {
                                seen = t->caller;
                                n_seen = caller_tasks(server, t->caller);
                        }
                        rank = n_seen > mine + 1 ? n_seen : 0;
                }
                if (rank > 0 && rank >= best) {
                        best = rank;
                        found = t;
                }
        }
        return found;
}

/* -EBUSY when a cap is reached and the caller has no ended task to make
 * room with; then, if ret is given, the error for the client. */
static int task_admit(const McpRequest *req, json_object **ret) {
        McpServer *server = req->session->server;
        const McpServerConfig *c = &server->config;
        unsigned mine;
        _cleanup_free_ char *m = NULL;
        McpTask *old;
        int r;

        for (;;) {
                mine = caller_tasks(server, req->session->caller);
                if (server->n_tasks < c->max_tasks && mine < caller_share(c))
                        return 0;
                old = ended_to_evict(server, req->session->caller, mine, mine < caller_share(c));
                if (!old)
                        break;
                task_delete(old, streq(old->caller, req->session->caller) ?
                                 "deleted: its caller needed room for a new task" :
                                 "deleted: the task cap was full and its caller held more than its share");
        }
        if (!ret)
                return -EBUSY;
        if (mine < caller_share(c))
                r = asprintf(&m, too_many_text, server->n_tasks, c->max_tasks,
                             "held for all callers, none of them your ended ones");
        else
                r = asprintf(&m, too_many_text, mine, caller_share(c), "yours, all still running");
        if (r < 0)
                return -ENOMEM;
        *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_REQUEST, m, NULL);
        return *ret ? -EBUSY : -ENOMEM;
}

static int task_new(const McpRequest *req, McpTaskFormat format, McpTask **ret) {
        McpSession *o = req->session;
        McpServer *server = o->server;
        _cleanup_(task_freep) McpTask *t = NULL;
        McpPeer peer = { .transport = o->peer_transport, .uid = o->peer_uid, .pid = o->peer_pid, .caller = o->caller };
        int r;

        t = new0(McpTask, 1);
        if (!t)
                return -ENOMEM;
        t->format = format;
        t->started_usec = now_usec();
        t->created_ms = t->updated_ms = task_now_ms();
        t->call_id = json_object_get(req->id);
        t->origin_id = json_object_get(req->id);
        t->caller = strdup(o->caller);
        if (!t->caller)
                return -ENOMEM;
        r = node_id_mint(t->id);
        if (r < 0)
                return r;
        r = mem_charge_init(&t->charge, server->config.budget, o->caller);
        if (r < 0)
                return r;
        r = mem_charge_set(&t->charge, TASK_OVERHEAD_BYTES);
        if (r < 0)
                return r;
        r = mcp_session_new_sink(server, &task_sink, t, &peer, &t->session);
        if (r < 0)
                return r;
        t->session->revision = o->revision ?: req->rev;  /* 2026-07-28: no initialize, the request says */
        /* Its call may ask the caller's client what it declared it can: at
         * initialize, or (2026-07-28) in this request's _meta. */
        t->session->client_elicit_form = format == MCP_TASK_CORE ? o->client_elicit_form :
                mcp_confirm_capability_form(json_get(req->meta, MCP_META_CLIENT_CAPABILITIES));
        /* Its sandbox sessions are the asker's: exec in one may be a task. */
        memcpy(t->session->scope, o->scope, sizeof o->scope);
        mcp_session_set_idle_callback(t->session, task_session_idle);

        t->server = server;
        LIST_PREPEND(tasks, server->tasks, t);
        server->n_tasks++;
        *ret = TAKE_PTR(t);
        return 0;
}

static int task_arm(McpTask *t, sd_event_source **ret, uint64_t usec, sd_event_time_handler_t handler) {
        return sd_event_add_time_relative(t->server->event, ret, CLOCK_MONOTONIC, usec, USEC_PER_MSEC, handler, t);
}

int mcp_task_begin(const McpRequest *req, McpTask **ret_task, json_object **ret) {
        McpServer *server = req->session->server;
        const McpServerConfig *c = &server->config;
        McpTaskFormat format = req->rev->tasks ? MCP_TASK_CORE : MCP_TASK_EXTENSION;
        _cleanup_(task_freep) McpTask *t = NULL;
        json_object *args = json_get(req->params, "arguments");
        int64_t timeout = json_get_int64(args, "timeout_s", 0);
        int r;

        assert(req);
        assert(ret_task);
        assert(ret);

        *ret = NULL;
        if (format == MCP_TASK_EXTENSION && json_get(req->params, "requestState"))
                return task_resume(req, ret);
        r = task_admit(req, format == MCP_TASK_CORE ? ret : NULL);
        if (r == -EBUSY && format == MCP_TASK_EXTENSION)
                return -EBUSY;
        if (r < 0)
                return r == -EBUSY ? 0 : r;

        r = task_new(req, format, &t);
        if (r == -EBUSY && format == MCP_TASK_EXTENSION)
                return -EBUSY;
        if (r == -EBUSY) {
                /* A client that asked for a task parses a task or an error. */
                *ret = jsonrpc_error_new(req->id, JSONRPC_INVALID_REQUEST,
                                         "server busy: your share of the server's memory budget is spent (results "
                                         "not yet read, calls running); fetch or cancel some tasks and retry",
                                         NULL);
                return *ret ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        t->ttl_ms = granted_ttl_ms(c, json_get(req->params, "task"),
                                   timeout > 0 ? MIN((uint64_t) timeout, c->task_max_timeout_s) : c->default_timeout_s);
        r = task_arm(t, &t->expire_timer, t->ttl_ms * USEC_PER_MSEC, on_expire);
        if (r < 0)
                return r;

        /* Without the extension it is never shown: a call that asks
         * answers InputRequiredResult instead. */
        t->mrtr = format == MCP_TASK_EXTENSION && !extension_declared(req->meta);
        if (format == MCP_TASK_CORE)
                t->shown = true;
        else if (!t->mrtr) {
                r = task_arm(t, &t->show_timer, c->task_after_ms * USEC_PER_MSEC, on_show);
                if (r < 0)
                        return r;
        }
        /* The call may end right inside (a broker that is not there): it
         * must find where its answer goes. */
        t->origin_session = req->session;
        t->origin = format == MCP_TASK_EXTENSION ? req->origin : 0;
        /* Until mcp_task_started(), which frees it if it must. */
        t->starting = true;
        *ret_task = TAKE_PTR(t);
        return 1;
}

McpSession *mcp_task_session(McpTask *t) {
        assert(t);
        assert(t->session);

        return t->session;
}

int mcp_task_started(McpTask *task, const McpRequest *req, int r, json_object *reply, json_object **ret) {
        _cleanup_(task_freep) McpTask *t = task;
        _cleanup_json_ json_object *now = reply;

        assert(t);
        assert(t->starting);
        assert(req);
        assert(ret);

        t->starting = false;
        *ret = NULL;
        if (r < 0)
                return r;
        if (now && (json_get(now, "error") || t->format == MCP_TASK_EXTENSION)) {
                /* The request itself was wrong, or (the extension) the tool
                 * refused it at once: that is its answer, and no task. */
                *ret = TAKE_PTR(now);
                return 0;
        }
        if (t->format == MCP_TASK_EXTENSION) {
                if (t->inline_done)
                        return 0;       /* answered already; the task goes */
                task_log(t, LOG_DEBUG, "call started, a task if it runs long");
                TAKE_PTR(t);
                return 0;
        }

        task_log(t, LOG_INFO, "started");
        if (now) {
                /* Refused at once (a tool error): the task failed already. */
                MemCharge none = {};
                (void) task_on_reply(t, TAKE_PTR(now), &none);
        }
        *ret = handle_reply(t, req);
        if (!*ret)
                return -ENOMEM;
        TAKE_PTR(t);
        return 0;
}

void mcp_tasks_session_gone(McpServer *server, McpSession *s) {
        assert(server);
        assert(s);

        LIST_FOREACH_SAFE(listeners, l, lnext, server->task_listeners)
                if (l->session == s)
                        task_listener_free(server, l);

        LIST_FOREACH_SAFE(tasks, t, next, server->tasks) {
                LIST_FOREACH_SAFE(waiters, w, wnext, t->waiters)
                        if (w->session == s) {
                                LIST_REMOVE(waiters, t->waiters, w);
                                task_waiter_free(w);
                        }
                if (t->session && t->session != s) {
                        /* Its questions asked there go on the next tasks/result. */
                        mcp_confirm_unroute(t->session, s);
                        mcp_task_questions_changed(t->session);
                }
                if (t->origin_session != s)
                        continue;
                t->origin_session = NULL;
                if (!t->shown && !t->inline_done) {
                        /* Its client hung up before it became a task: as
                         * for any call, the run stops. */
                        task_log(t, LOG_DEBUG, "call dropped before it became a task");
                        task_free(t);
                }
        }
}

void mcp_task_call_cancel(McpSession *s, json_object *id) {
        assert(s);

        if (!s->server)
                return;
        LIST_FOREACH(tasks, t, s->server->tasks)
                if (t->origin_session == s && !t->shown && !t->inline_done && jsonrpc_id_equal(t->origin_id, id)) {
                        /* The transport may end what it holds open for it. */
                        (void) mcp_session_send_unanswered(s, t->origin, t->origin_id);
                        task_log(t, LOG_DEBUG, "call cancelled before it became a task");
                        task_free(t);
                        return;
                }
}

void mcp_tasks_free_all(McpServer *server) {
        assert(server);

        while (server->tasks)
                task_free(server->tasks);
        while (server->task_listeners)
                task_listener_free(server, server->task_listeners);
}

const char *mcp_task_session_task_id(const McpSession *s) {
        const McpTask *t;

        if (!s || s->sink != &task_sink)
                return NULL;
        t = s->userdata;
        return t->session == s ? t->id : NULL;
}

void mcp_task_questions_changed(McpSession *s) {
        McpTask *t;
        bool open;

        if (!mcp_task_session_task_id(s))
                return;
        t = s->userdata;
        if (t->status != MCP_TASK_WORKING)
                return;
        open = s->n_confirms > 0;
        if (open && !t->shown && !t->starting && !t->resuming && t->origin_session) {
                if (t->mrtr)
                        /* The plain call's request ends here; its retry
                         * comes back with the answers. */
                        (void) ask_input_required(t);
                else
                        /* The extension's call waits for its client: a
                         * task now, so that tasks/get can show the question. */
                        (void) on_show(NULL, 0, t);
        }
        if (open != t->input_required) {
                t->input_required = open;
                task_input_changed(t);
        }
        /* A question not asked yet goes on a tasks/result that waits. */
        LIST_FOREACH(waiters, w, t->waiters)
                if (mcp_confirm_send_open(s, w->session, w->origin, w->id, false) > 0)
                        break;
}

int mcp_task_confirm_response(McpSession *s, json_object *msg) {
        assert(s);

        if (!s->server || !s->caller)
                return 0;
        /* Only the caller's tasks; the question must have been asked on s. */
        LIST_FOREACH(tasks, t, s->server->tasks)
                if (t->session && streq(t->caller, s->caller) && mcp_confirm_response_from(t->session, s, msg) > 0)
                        return 1;
        return 0;
}
