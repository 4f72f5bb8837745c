/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mcp-confirm.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "mcp-internal.h"
#include "mcp-task.h"

struct McpConfirm {
        McpSession *session;
        LIST_FIELDS(McpConfirm, confirms);
        ExecClient *exec;               /* borrowed: mcp_confirm_forget() before it goes */
        uint64_t broker_id;             /* the question's, for the answer */
        uint64_t origin;                /* of the tools/call: a cancel goes where the request went */
        json_object *call_id;           /* ref: the tools/call's id, which the question is about */
        /* Where the question went, once it went: the tools/call's own
         * stream, or for a task's question (not sent until its client
         * calls tasks/result) that tasks/result's. Only an answer that
         * comes back on that session counts. */
        McpSession *asked;
        uint64_t asked_origin;
        json_object *asked_id;          /* ref */
        char rpc_id[48];                /* ours, on elicitation/create */
        char server[sizeof ((BrokerConfirmAsk *) NULL)->server];
        char tool[sizeof ((BrokerConfirmAsk *) NULL)->tool];
        sd_event_source *timer;
};

bool mcp_confirm_capability_form(json_object *capabilities) {
        json_object *e = json_get(capabilities, "elicitation");

        if (!json_object_is_type(e, json_type_object))
                return false;
        /* {} is form mode alone (2025-06-18, and kept in 2025-11-25). */
        return json_object_object_length(e) == 0 || json_object_is_type(json_get(e, "form"), json_type_object);
}

const char *mcp_confirm_unavailable(const McpSession *s) {
        assert(s);

        if (!s->revision && !s->stateless_seen)
                return "the caller's protocol revision has no elicitation";
        /* 2026-07-28 (no initialize: a request of its own) asks by
         * inputRequests: a task's (the tasks extension) in tasks/get,
         * answered by tasks/update; a plain call's in an
         * InputRequiredResult, answered by its retry. Both run in a task's
         * session, which outlives the request; a call in the request's own
         * did not declare elicitation, or found no room to wait. */
        if ((!s->revision || s->revision->stateless) && !mcp_task_session_task_id(s))
                return "the caller's client did not declare the elicitation capability (form mode) in its request, "
                       "or the server had no room for the call to wait for the answer";
        if (!s->revision || (!s->revision->stateless && !s->revision->elicitation))
                return "the caller's protocol revision has no elicitation";
        if (!s->transport.send && !mcp_task_session_task_id(s))
                return "the call has no client to ask";
        if (!s->client_elicit_form)
                return "the caller's client did not declare the elicitation capability (form mode)";
        return NULL;
}

bool mcp_session_can_ask(const McpSession *s) {
        return s && !mcp_confirm_unavailable(s);
}

static void confirm_unroute(McpConfirm *k) {
        k->asked = NULL;
        k->asked_origin = 0;
        json_object_put(k->asked_id);
        k->asked_id = NULL;
}

static void confirm_free(McpConfirm *k) {
        McpSession *s = k->session;

        LIST_REMOVE(confirms, s->confirms, k);
        s->n_confirms--;
        sd_event_source_disable_unref(k->timer);
        json_object_put(k->call_id);
        confirm_unroute(k);
        free(k);
}

/* The journal: names and the outcome, never arguments. */
static void confirm_log(McpSession *s, const char *server, const char *tool, const char *outcome) {
        log_struct(LOG_INFO,
                   "MESSAGE=Confirmation of %s.%s asked of the client: %s", server, tool, outcome,
                   "MCP_SESSION=%s", s->id,
                   "MCP_CALLER=%s", s->caller ?: "",
                   "TOOLS_SERVER=%s", server,
                   "TOOLS_TOOL=%s", tool,
                   "TOOLS_CONFIRMATION=%s", outcome);
}

/* Answers the broker's question and forgets it. */
static void confirm_done(McpConfirm *k, bool accept, const char *reason) {
        BrokerConfirmAnswer a = { .id = k->broker_id, .accept = accept };
        McpSession *s = k->session;

        str_printable(reason, a.reason, sizeof a.reason);
        confirm_log(s, k->server, k->tool, accept ? "accepted" : a.reason);
        (void) exec_client_confirm_answer(k->exec, &a);
        confirm_free(k);
        /* A task's status says whether a question is still open. */
        mcp_task_questions_changed(s);
}

static int on_confirm_timeout(sd_event_source *es, uint64_t usec, void *userdata) {
        McpConfirm *k = userdata;
        _cleanup_json_ json_object *params = NULL;

        /* The client may still show the question: tell it that it is over,
         * where it was asked (a task's question may not have gone yet). */
        if (k->asked && json_build(&params, JB_STR("requestId", k->rpc_id), JB_STR("reason", "timeout"), JB_END) >= 0)
                (void) mcp_session_send_notification(k->asked, k->asked_origin, k->asked_id,
                                                     jsonrpc_notification_new("notifications/cancelled",
                                                                              TAKE_PTR(params)));
        confirm_done(k, false, "the client did not answer in time");
        return 0;
}

static json_object *elicitation_request(const McpSession *s, const McpConfirm *k) {
        _cleanup_json_ json_object *schema = NULL, *props = NULL, *box = NULL, *params = NULL, *m = NULL;
        _cleanup_json_ json_object *related = NULL, *meta = NULL;
        const char *task_id = mcp_task_session_task_id(s);
        char message[512];

        (void) snprintf(message, sizeof message,
                        "Code run by the exec tool wants to call the tool \"%s\" of the MCP server \"%s\", which "
                        "says it may change or delete data. Allow this one call?", k->tool, k->server);
        if (json_build(&box, JB_STR("type", "boolean"), JB_STR("title", "Allow this call"),
                       JB_STR("description", "Tick to let this one call go to the server."), JB_BOOL("default", false),
                       JB_END) < 0 ||
            json_build(&props, JB_OBJ("confirm", TAKE_PTR(box)), JB_END) < 0 ||
            json_build(&schema, JB_STR("type", "object"), JB_OBJ("properties", TAKE_PTR(props)), JB_END) < 0 ||
            json_add(schema, "required", json_tokener_parse("[\"confirm\"]")) < 0 ||
            json_build(&params, JB_STR("message", message), JB_OBJ("requestedSchema", TAKE_PTR(schema)), JB_END) < 0)
                return NULL;
        /* "mode" is 2025-11-25's (and 2026-07-28's); 2025-06-18 has form
         * mode alone, unnamed. */
        if ((s->revision->elicitation_modes || s->revision->stateless) && json_add_string(params, "mode", "form") < 0)
                return NULL;
        /* A 2026-07-28 task's question is one of its inputRequests: the
         * request alone, no JSON-RPC envelope, no id (its key is ours). */
        if (s->revision->stateless) {
                if (json_build(&m, JB_STR("method", "elicitation/create"), JB_OBJ("params", TAKE_PTR(params)),
                               JB_END) < 0)
                        return NULL;
                return TAKE_PTR(m);
        }
        /* A task's question says whose it is (2025-11-25, tasks). */
        if (task_id && (json_build(&related, JB_STR("taskId", task_id), JB_END) < 0 ||
                        json_build(&meta, JB_OBJ(MCP_META_RELATED_TASK, TAKE_PTR(related)), JB_END) < 0 ||
                        json_add(params, "_meta", TAKE_PTR(meta)) < 0))
                return NULL;
        if (json_build(&m, JB_STR("jsonrpc", "2.0"), JB_STR("id", k->rpc_id), JB_STR("method", "elicitation/create"),
                       JB_OBJ("params", TAKE_PTR(params)), JB_END) < 0)
                return NULL;
        return TAKE_PTR(m);
}

/* Sends k's question on to (about its request id, which came with origin). */
static int confirm_send(McpConfirm *k, McpSession *to, uint64_t origin, json_object *id) {
        int r;

        r = mcp_session_send_request(to, origin, id, elicitation_request(k->session, k));
        if (r < 0)
                return r;
        confirm_unroute(k);             /* asked again: where it went last counts */
        k->asked = to;
        k->asked_origin = origin;
        k->asked_id = json_object_get(id);
        return 0;
}

static void answer_no(McpSession *s, ExecClient *e, const BrokerConfirmAsk *ask, const char *reason) {
        BrokerConfirmAnswer a = { .id = ask->id };

        str_printable(reason, a.reason, sizeof a.reason);
        confirm_log(s, ask->server, ask->tool, a.reason);
        (void) exec_client_confirm_answer(e, &a);
}

void mcp_confirm_ask(McpSession *s, uint64_t origin, json_object *call_id, ExecClient *e,
                     const BrokerConfirmAsk *ask, uint64_t timeout_s) {
        const char *why = mcp_confirm_unavailable(s);
        uint64_t wait = MCP_CONFIRM_TIMEOUT_USEC, elapsed = exec_client_elapsed_usec(e);
        McpConfirm *k;
        int r;

        assert(s);
        assert(e);
        assert(ask);

        if (timeout_s > 0)
                wait = MIN(wait, timeout_s * USEC_PER_SEC > elapsed ? timeout_s * USEC_PER_SEC - elapsed : 0);
        if (why)
                return answer_no(s, e, ask, why);
        if (s->dead || !s->server)
                return answer_no(s, e, ask, "the caller's client is gone");
        if (s->n_confirms >= MCP_CONFIRM_PENDING_MAX)
                return answer_no(s, e, ask, "too many questions are open in the caller's session");
        k = new0(McpConfirm, 1);
        if (!k)
                return answer_no(s, e, ask, "out of memory");
        k->session = s;
        k->exec = e;
        k->broker_id = ask->id;
        k->origin = origin;
        k->call_id = json_object_get(call_id);
        memcpy(k->server, ask->server, sizeof k->server);
        memcpy(k->tool, ask->tool, sizeof k->tool);
        /* Unique in the server: a client may hold questions of several of
         * its tasks at once. */
        (void) snprintf(k->rpc_id, sizeof k->rpc_id, "mcp-exec-confirm-%" PRIu64, ++s->server->last_confirm);
        LIST_PREPEND(confirms, s->confirms, k);
        s->n_confirms++;
        r = sd_event_add_time_relative(s->server->event, &k->timer, CLOCK_MONOTONIC,
                                       wait, 0, on_confirm_timeout, k);
        if (r >= 0 && mcp_task_session_task_id(s)) {
                /* A task's: input_required now, and asked on its client's
                 * tasks/result (one open now, or the next). */
                mcp_task_questions_changed(s);
                log_debug("Session %s: a task asks its client to confirm %s.%s (%s).", s->id, k->server, k->tool,
                          k->rpc_id);
                return;
        }
        if (r >= 0)
                r = confirm_send(k, s, origin, call_id);
        if (r < 0)
                return confirm_done(k, false, r == -ENOTCONN ? "the question cannot reach the caller's client "
                                                                "(over HTTP: no event stream for the call)"
                                                              : "the question cannot be sent");
        log_debug("Session %s: asked the client to confirm %s.%s (%s).", s->id, k->server, k->tool, k->rpc_id);
}

/* The client's ElicitResult for k: only accept with the box ticked (a
 * boolean true) is yes. */
static void confirm_answer(McpConfirm *k, json_object *result) {
        const char *action = json_get_string(result, "action");
        json_object *box = json_get(json_get(result, "content"), "confirm");

        if (streq_ptr(action, "accept") && json_object_is_type(box, json_type_boolean) && json_object_get_boolean(box))
                confirm_done(k, true, "");
        else if (streq_ptr(action, "accept"))
                confirm_done(k, false, "the user did not tick the confirmation");
        else if (streq_ptr(action, "decline"))
                confirm_done(k, false, "the user declined");
        else if (streq_ptr(action, "cancel"))
                confirm_done(k, false, "the user cancelled");
        else
                confirm_done(k, false, "the client's answer is not one of accept, decline or cancel");
}

int mcp_confirm_response_from(McpSession *owner, McpSession *from, json_object *msg) {
        const char *id = json_get_string(msg, "id");

        assert(owner);
        assert(from);

        if (!id)
                return 0;
        LIST_FOREACH(confirms, k, owner->confirms) {
                /* Ours, by its id, and on the session it was asked on. */
                if (!streq(k->rpc_id, id) || k->asked != from)
                        continue;
                if (json_get(msg, "error"))
                        confirm_done(k, false, "the client answered the question with an error");
                else
                        confirm_answer(k, json_get(msg, "result"));
                return 1;
        }
        return 0;
}

int mcp_confirm_input_response(McpSession *owner, const char *key, json_object *result) {
        assert(owner);

        if (!key)
                return 0;
        LIST_FOREACH(confirms, k, owner->confirms)
                if (streq(k->rpc_id, key)) {
                        confirm_answer(k, result);
                        return 1;
                }
        return 0;
}

json_object *mcp_confirm_input_requests(const McpSession *owner) {
        _cleanup_json_ json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        LIST_FOREACH(confirms, k, owner->confirms)
                if (json_add(o, k->rpc_id, elicitation_request(owner, k)) < 0)
                        return NULL;
        return TAKE_PTR(o);
}

int mcp_confirm_response(McpSession *s, json_object *msg) {
        assert(s);

        if (mcp_confirm_response_from(s, s, msg) > 0)
                return 1;
        /* Else perhaps a question of one of the caller's tasks. */
        return mcp_task_confirm_response(s, msg);
}

int mcp_confirm_send_open(McpSession *owner, McpSession *to, uint64_t origin, json_object *id, bool again) {
        int n = 0;

        assert(owner);
        assert(to);

        LIST_FOREACH(confirms, k, owner->confirms)
                if ((!k->asked || again) && confirm_send(k, to, origin, id) >= 0)
                        n++;
        return n;
}

void mcp_confirm_unroute(McpSession *owner, McpSession *gone) {
        assert(owner);

        LIST_FOREACH(confirms, k, owner->confirms)
                if (k->asked == gone)
                        confirm_unroute(k);
}

void mcp_confirm_forget(McpSession *s, ExecClient *e) {
        bool any = false;

        if (!s || !e)
                return;
        LIST_FOREACH_SAFE(confirms, k, n, s->confirms)
                if (k->exec == e) {
                        confirm_free(k);
                        any = true;
                }
        /* Once all are gone: none of them is asked on the way out. */
        if (any)
                mcp_task_questions_changed(s);
}

void mcp_confirm_drop_all(McpSession *s) {
        assert(s);

        while (s->confirms)
                confirm_free(s->confirms);
}

ExecClient *mcp_confirm_exec_free(McpSession *s, ExecClient *e) {
        mcp_confirm_forget(s, e);
        return exec_client_free(e);
}
