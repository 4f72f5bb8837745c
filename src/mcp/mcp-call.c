/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tools/call: from validated arguments through the queue to the broker and
 * back, with progress notifications, cancellation and one journal entry per
 * call (call-log.h). Only metadata is logged, never code, stdin, output or
 * arguments. */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "broker-request.h"
#include "call-log.h"
#include "exec-client.h"
#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "list.h"
#include "mcp-internal.h"
#include "mcp-tool.h"
#include "tool-arg-network.h"
#include "tool-arg-packages.h"
#include "util.h"

/* Request ids as logged and as part of the broker's run tag. */
#define REQUEST_ID_LOG_MAX 64
/* The broker's MCP_EXEC_MAX_CONCURRENT is shared by every front end
 * (mcp-exec.service, mcp-exec-stdio.service, mcp-execd --stdio): a call
 * that holds one of our slots may still find the broker full. It keeps its
 * slot and asks again, backing off, for at most this long. */
#define BROKER_BUSY_RETRY_MIN_USEC (100 * USEC_PER_MSEC)
#define BROKER_BUSY_RETRY_MAX_USEC (250 * USEC_PER_MSEC)
#define BROKER_BUSY_WAIT_MAX_USEC (120 * USEC_PER_SEC)
/* A call's own bookkeeping beside its arguments, charged with them. */
#define CALL_OVERHEAD_BYTES ((uint64_t) 4096)

struct McpCall {
        const McpTool *tool;
        McpSession *session;
        LIST_FIELDS(McpCall, calls);    /* in session->calls while counted */
        McpBatch *batch;                /* owed a reply (or a release) when set */
        uint64_t origin;                /* of the request, for the transport */
        const McpRevision *rev;
        json_object *id;                /* ref */
        json_object *progress_token;    /* ref, or NULL: no progress wanted */
        json_object *arguments;         /* ref: args point into it */
        McpToolArgs args;
        QueueSlot slot;
        ExecClient *exec;
        BrokerRequest *request;         /* a tool's broker_op */
        sd_event_source *progress_timer;
        sd_event_source *retry_timer;   /* armed while the broker was busy */
        uint64_t busy_since, retry_usec;
        uint64_t received_usec;
        uint64_t last_progress;
        bool progress_sent, cancelled;
        bool counted;                   /* in the session's list and count; not before it is queued,
                                         * nor once its reply is going out */
        MemCharge charge;               /* of the memory budget: all the call holds (see charge_*) */
        char request_id[REQUEST_ID_LOG_MAX + 1];
};

static void call_log(McpCall *c, const ExecResult *r, int level, const char *result) {
        uint64_t output = c->exec ? exec_client_output_bytes(c->exec) : 0;
        uint64_t duration = r && r->duration_ms > 0 ? r->duration_ms :
                            c->exec                 ? exec_client_elapsed_usec(c->exec) / USEC_PER_MSEC : 0;

        assert(c);

        mcp_call_log_entry(c->session, c->rev, c->request_id, &c->args.exec, r, output, duration, level, result);
}

/* Takes the call out of the session's count; true if it was the last. */
static bool call_detach(McpCall *c) {
        McpSession *s;

        assert(c);

        if (!c->counted)
                return false;
        s = c->session;
        c->counted = false;
        LIST_REMOVE(calls, s->calls, c);
        return --s->n_calls == 0;
}

static void on_exec_confirm(ExecClient *e, const BrokerConfirmAsk *ask, void *userdata) {
        McpCall *c = userdata;
        mcp_confirm_ask(c->session, c->origin, c->id, e, ask, c->args.exec.timeout_s);
}

/* Frees the call without a reply; a batch waiting for it is told so. Also
 * for a call that was never queued. */
static McpCall *call_free(McpCall *c) {
        McpSession *s;
        McpBatch *b;
        bool idle;

        if (!c)
                return NULL;
        s = c->session;
        b = TAKE_PTR(c->batch);
        c->progress_timer = sd_event_source_disable_unref(c->progress_timer);
        c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
        c->exec = mcp_confirm_exec_free(c->session, c->exec);
        c->request = broker_request_free(c->request);
        idle = call_detach(c);

        /* This may start the next waiting call right here. */
        call_queue_release(&c->slot);

        mcp_tool_args_done(&c->args);
        json_object_put(c->id);
        json_object_put(c->progress_token);
        json_object_put(c->arguments);
        mem_charge_done(&c->charge);
        free(c);

        if (b)
                (void) mcp_reply(s, b, 0, NULL);
        if (idle)
                mcp_session_notify_idle(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(McpCall *, call_free);

static const char budget_busy_text[] =
        "server busy: the server's memory budget for calls is spent (calls queued or running, results not yet "
        "read, by you or by all clients together); retry when some have finished and their replies were read";

/* At admission, before the call queues: what it holds while it waits. */
static int charge_admission(McpCall *c) {
        McpServer *server = c->session->server;
        uint64_t n = CALL_OVERHEAD_BYTES + json_estimate_size(c->arguments) + json_estimate_size(c->id) +
                     json_estimate_size(c->progress_token);
        int r;

        assert(c);

        /* utf-8 files point into the arguments, counted with them. */
        for (size_t i = 0; i < c->args.exec.n_files; i++)
                if (c->args.exec.decoded[i])
                        n += c->args.exec.files[i].size;
        r = mem_charge_init(&c->charge, server->config.budget, c->session->caller);
        if (r < 0)
                return r;
        return mem_charge_set(&c->charge, n);
}

/* The reply, until the transport has its own copy: its tree, the text
 * serialized from it, and room for that copy (the transport takes the
 * charge over for it: McpMessage.charge). The run's output and the
 * arguments are let go first: the reply has what it needs of them. If the
 * budget cannot take it, the reply is "server busy" instead. Takes reply. */
static json_object *charge_reply(McpCall *c, const McpRequest *req, json_object *reply) {
        uint64_t tree;
        size_t len;

        assert(c);
        assert(reply);

        c->exec = mcp_confirm_exec_free(c->session, c->exec);
        exec_args_done(&c->args.exec);
        json_object_put(c->arguments);
        c->arguments = NULL;
        if (!c->charge.budget)
                return reply;
        tree = json_estimate_size(reply);
        if (!json_serialize(reply, &len))
                return reply;   /* out of memory: the send fails the same way */
        /* Refusable: the tree, its text, and the transport's copy, which
         * takes this charge over (McpMessage.charge). Shrinking never fails. */
        if (mem_charge_set(&c->charge, CALL_OVERHEAD_BYTES + tree + 2 * (uint64_t) len) >= 0)
                return reply;
        log_warning("exec call %s of session %s: its reply of %zu bytes is past the memory budget; answering "
                    "\"server busy\" instead.", c->request_id, c->session->id, len);
        json_object_put(reply);
        (void) mem_charge_set(&c->charge, CALL_OVERHEAD_BYTES);
        return mcp_result_reply(req, tool_error_result(budget_busy_text));
}

/* The reply goes out first, then the slot is freed: the next call's
 * "started" must not overtake this call's result. Takes result. */
static void call_finish(McpCall *c, json_object *result) {
        McpRequest req = { .session = c->session, .rev = c->rev, .id = c->id };
        McpSession *s = c->session;
        McpBatch *b = TAKE_PTR(c->batch);
        json_object *reply;
        bool idle;

        assert(c);

        c->progress_timer = sd_event_source_disable_unref(c->progress_timer);
        c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
        /* A transport deciding in send whether it may close must already
         * see this call gone. */
        idle = call_detach(c);
        reply = mcp_result_reply(&req, result);
        if (reply)
                reply = charge_reply(c, &req, reply);
        if (!reply) {
                /* Out of memory: a short error still beats a client waiting forever. */
                (void) log_oom();
                reply = jsonrpc_error_new(c->id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
        }
        (void) mcp_reply_charged(s, b, c->origin, reply, &c->charge);
        call_free(c);
        if (idle)
                mcp_session_notify_idle(s);
}

static void call_fail(McpCall *c, const char *text, const char *result) {
        assert(c);
        assert(text);

        call_log(c, NULL, LOG_WARNING, result);
        call_finish(c, tool_error_result(text));
}

static void progress_send(McpCall *c, const char *message) {
        _cleanup_json_ json_object *params = NULL;
        uint64_t v;

        assert(c);
        assert(message);

        if (!c->progress_token || c->cancelled)
                return;
        /* Milliseconds since the request came in; always increasing, as the
         * spec wants, even when two notifications share a millisecond. */
        v = (now_usec() - c->received_usec) / USEC_PER_MSEC;
        if (c->progress_sent && v <= c->last_progress)
                v = c->last_progress + 1;

        params = json_object_new_object();
        if (!params || json_add(params, "progressToken", json_object_get(c->progress_token)) < 0 ||
            json_add_int(params, "progress", (int64_t) v) < 0 ||
            (c->rev->progress_message && json_add_string(params, "message", message) < 0)) {
                (void) log_oom();
                return;
        }
        (void) mcp_session_send_notification(c->session, c->origin, c->id,
                                             jsonrpc_notification_new("notifications/progress", TAKE_PTR(params)));
        c->last_progress = v;
        c->progress_sent = true;
}

static void progress_now(McpCall *c) {
        McpServer *server = c->session->server;
        char m[160];

        assert(c);

        if (c->slot.state == QUEUE_SLOT_WAITING)
                (void) snprintf(m, sizeof m,
                                "queued: %u of %" PRIu64 " runs in progress, position %u in the queue",
                                call_queue_running(server->queue), call_queue_max_running(server->queue),
                                call_queue_position(&c->slot));
        else if (c->retry_timer)
                (void) snprintf(m, sizeof m, "waiting for the sandbox: other front ends' runs fill it");
        else if (c->exec) {
                uint64_t ms = exec_client_elapsed_usec(c->exec) / USEC_PER_MSEC;
                (void) snprintf(m, sizeof m, "running %" PRIu64 ".%" PRIu64 " s, %" PRIu64 " bytes of output",
                                ms / 1000, ms % 1000 / 100, exec_client_output_bytes(c->exec));
        } else
                return;
        progress_send(c, m);
}

static int on_progress_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        McpCall *c = userdata;

        progress_now(c);
        if (sd_event_source_set_time_relative(src, c->session->server->progress_interval_usec) < 0 ||
            sd_event_source_set_enabled(src, SD_EVENT_ONESHOT) < 0)
                log_debug("Cannot re-arm the progress timer; no more progress for call %s.", c->request_id);
        return 0;
}

static void progress_arm(McpCall *c) {
        McpServer *server = c->session->server;

        assert(c);

        if (!c->progress_token || c->progress_timer)
                return;
        /* Progress is a courtesy: without a timer the call still runs. */
        if (sd_event_add_time_relative(server->event, &c->progress_timer, CLOCK_MONOTONIC,
                                       server->progress_interval_usec, server->progress_interval_usec / 10,
                                       on_progress_timer, c) < 0)
                log_debug("Cannot add a progress timer for call %s.", c->request_id);
}

static void call_start(McpCall *c);

static int on_retry(sd_event_source *src, uint64_t usec, void *userdata) {
        McpCall *c = userdata;

        c->retry_timer = sd_event_source_disable_unref(c->retry_timer);
        call_start(c);          /* may finish (and free c) at once */
        return 0;
}

/* The broker refused the run as busy although we hold a slot: another front
 * end's runs fill it. True if the call waits and asks again (keeping its
 * slot, so nothing queued behind it overtakes it or fails in a cascade). */
static bool retry_when_busy(McpCall *c, const ExecResult *r) {
        McpServer *server = c->session->server;
        uint64_t now = now_usec();

        assert(c);
        assert(r);

        if (r->error != BROKER_ERROR_BUSY || c->session->dead)
                return false;
        if (c->busy_since == 0) {
                c->busy_since = now;
                c->retry_usec = BROKER_BUSY_RETRY_MIN_USEC;
        } else
                c->retry_usec = MIN(c->retry_usec * 2, BROKER_BUSY_RETRY_MAX_USEC);
        if (now - c->busy_since + c->retry_usec > BROKER_BUSY_WAIT_MAX_USEC)
                return false;
        if (sd_event_add_time_relative(server->event, &c->retry_timer, CLOCK_MONOTONIC, c->retry_usec, 0, on_retry,
                                       c) < 0) {
                c->retry_timer = NULL;
                return false;
        }
        log_debug("exec call %s: the broker is busy with other runs, asking again in %" PRIu64 " ms.", c->request_id,
                  c->retry_usec / USEC_PER_MSEC);
        /* r belongs to the client: nothing of it is used after this. */
        c->exec = mcp_confirm_exec_free(c->session, c->exec);
        return true;
}

static void on_exec_done(ExecClient *client, const ExecResult *r, void *userdata) {
        McpCall *c = userdata;
        SandboxSessionTable *table = c->session->server->sandbox_sessions;
        SandboxOwner owner = mcp_session_owner(c->session);
        _cleanup_free_ char *text = NULL, *result = NULL;

        if (!c->cancelled && retry_when_busy(c, r))
                return;
        if (c->cancelled) {
                /* The client asked for this: no reply at all. */
                call_log(c, r, LOG_INFO, "cancelled");
                call_free(c);
                return;
        }
        if (c->args.session_id[0] &&
            (r->error == BROKER_ERROR_SESSION_NOT_FOUND || r->error == BROKER_ERROR_SESSION_BUSY)) {
                if (r->error == BROKER_ERROR_SESSION_NOT_FOUND)
                        sandbox_session_table_remove(table, c->args.session_id, &owner);
                text = tool_session_failure_text(r->error, r->error_message);
                call_log(c, r, LOG_INFO, r->error == BROKER_ERROR_SESSION_BUSY ? "session-busy" : "session-not-found");
                call_finish(c, text ? tool_error_result(text) : NULL);
                return;
        }
        if (c->args.session_id[0]) {
                if (r->error != BROKER_ERROR_NONE || r->session_lost)
                        sandbox_session_table_remove(table, c->args.session_id, &owner);
                else
                        sandbox_session_table_touch(table, c->args.session_id, &owner);
        }
        if (r->error != BROKER_ERROR_NONE) {
                text = tool_exec_failure_text(r->error, r->error_message);
                if (asprintf(&result, "error:%s", broker_error_to_string(r->error)) < 0)
                        result = NULL;
                call_log(c, r, LOG_WARNING, result ?: "error");
                call_finish(c, text ? tool_error_result(text) : NULL);
                return;
        }
        if (r->cancelled) {
                call_log(c, r, LOG_WARNING, "error:cancelled");
                call_finish(c, tool_error_result("the run was stopped by the sandbox broker before it ended"));
                return;
        }

        if (r->packages) {
                McpServer *server = c->session->server;
                int64_t us = json_get_int64(r->packages, "duration_us", 0);

                if (json_get_bool(r->packages, "ok"))
                        server->package_stats.ok++;
                else
                        server->package_stats.failed++;
                server->package_stats.install_usec += (uint64_t) MAX(us, (int64_t) 0);
        }
        if (r->packages && !json_get_bool(r->packages, "ok"))
                result = strdup("packages-failed");
        else if (r->timed_out)
                result = strdup("timeout");
        else if (r->oom_killed)
                result = strdup("oom");
        else if (r->signal) {
                if (asprintf(&result, "signal:%s", r->signal) < 0)
                        result = NULL;
        } else if (asprintf(&result, "exit:%i", r->exit_code) < 0)
                result = NULL;
        call_log(c, r, LOG_INFO, result ?: "done");
        /* A non-zero exit, a timeout or an OOM kill is a normal result. */
        call_finish(c, tool_exec_result(&c->session->server->config, r, c->rev));
}

static void call_start(McpCall *c) {
        McpServer *server = c->session->server;
        ExecRequest req = {
                .code = c->args.exec.code,
                .code_len = c->args.exec.code_len,
                .stdin_data = c->args.exec.stdin_data,
                .stdin_len = c->args.exec.stdin_len,
                .timeout_s = c->args.exec.timeout_s,
                .max_output_bytes = server->config.max_output_bytes,
                .result_channel = server->config.result_channel,
                .result_limits = {
                        .max_images = server->config.max_images,
                        .max_image_bytes = server->config.max_image_bytes,
                        .max_files = server->config.max_files_out,
                        .max_result_bytes = server->config.max_result_bytes,
                },
                .files = c->args.exec.files,
                .n_files = c->args.exec.n_files,
                .session = c->args.session_id[0] ? c->args.session_id : NULL,
                .network = c->args.network,
                .packages = tool_packages_requested(c->args.packages) ? c->args.packages : NULL,
                .language = c->args.exec.language,
                .owner = mcp_session_owner(c->session),
                .confirm = on_exec_confirm, .confirm_userdata = c,
                .charge = &c->charge,
        };
        char tag[96];
        int r;

        assert(c);

        if (c->session->dead) {
                /* Nobody would get the result. */
                call_log(c, NULL, LOG_INFO, "dropped");
                call_free(c);
                return;
        }
        (void) snprintf(tag, sizeof tag, "mcp:%.8s:%s", c->session->id, c->request_id);
        req.tag = tag;
        r = exec_client_start(server->event, server->broker_socket, &req, on_exec_done, c, &c->exec);
        if (r < 0) {
                _cleanup_free_ char *text = NULL;
                if (asprintf(&text, "the code did not run: the sandbox broker is unreachable (%s)", strerror(-r)) < 0)
                        text = NULL;
                c->exec = NULL;
                call_fail(c, text ?: "the code did not run: the sandbox broker is unreachable",
                          "error:broker-unavailable");
                return;
        }
        progress_send(c, "started");
        progress_arm(c);
}

static void on_slot_start(QueueSlot *slot, void *userdata) {
        call_start(userdata);
}

static int reject(const McpRequest *req, const char *text, json_object **ret) {
        assert(req);
        assert(text);
        assert(ret);

        *ret = mcp_result_reply(req, tool_error_result(text));
        return *ret ? 0 : -ENOMEM;
}

/* Hands call to its session: listed, counted as in flight, and part of the
 * request's batch, if any, which waits for it. */
static void session_adopt_call(McpSession *s, McpCall *call, const McpRequest *req) {
        assert(s);
        assert(call);
        assert(req);

        LIST_PREPEND(calls, s->calls, call);
        call->counted = true;
        s->n_calls++;
        if (req->batch) {
                call->batch = req->batch;
                call->batch->pending++;
        }
}

static McpToolContext call_context(McpCall *c) {
        McpServer *server = c->session->server;

        return (McpToolContext) {
                .config = &server->config,
                .rev = c->rev,
                .sessions = server->sandbox_sessions,
                .owner = mcp_session_owner(c->session),
        };
}

/* A tool's broker_op was answered (or failed). */
static void on_broker_op_done(BrokerRequest *request, json_object *reply, BrokerError error, const char *message,
                              void *userdata) {
        McpCall *c = userdata;
        McpToolContext ctx = call_context(c);
        McpToolOutcome o = {};

        c->request = broker_request_free(c->request);
        if (c->cancelled) {
                call_log(c, NULL, LOG_INFO, "cancelled");
                call_free(c);
                return;
        }
        c->tool->broker_done(&ctx, &c->args, reply, error, message, &o);
        call_log(c, NULL, o.log_level, o.log_result);
        call_finish(c, o.result);
}

/* A call that is one request to the broker: it takes no slot. On success the
 * session owns the call. */
static int submit_broker_op(McpCall **cp, const McpRequest *req, json_object **ret) {
        McpCall *c = *cp;
        McpSession *s = c->session;
        McpServer *server = s->server;
        SandboxOwner owner = mcp_session_owner(s);
        _cleanup_json_ json_object *msg = NULL;
        _cleanup_free_ char *m = NULL;
        int r;

        assert(c);
        assert(req);
        assert(ret);

        msg = json_object_new_object();
        if (!msg || json_add_string(msg, "op", c->tool->broker_op) < 0 ||
            json_add_string(msg, "caller", owner.caller) < 0 || json_add_string(msg, "scope", owner.scope) < 0 ||
            (c->args.session_id[0] && json_add_string(msg, "session", c->args.session_id) < 0) ||
            (c->args.network && json_add_string(msg, "network", c->args.network) < 0) ||
            (c->args.exec.language && json_add_string(msg, "language", c->args.exec.language) < 0) ||
            (tool_packages_requested(c->args.packages) &&
             json_add(msg, "packages", json_object_get(c->args.packages)) < 0))
                return -ENOMEM;
        r = broker_request_start(server->event, server->broker_socket, msg, c->tool->broker_timeout_usec,
                                 on_broker_op_done, c, &c->request);
        if (r < 0) {
                mcp_call_log_entry(s, req->rev, c->request_id, NULL, NULL, 0, 0, LOG_WARNING,
                                   "error:broker-unavailable");
                if (asprintf(&m, "the sandbox broker is unreachable (%s)", strerror(-r)) < 0)
                        return -ENOMEM;
                return reject(req, m, ret);
        }

        /* The session owns it from here: it counts as in flight. */
        session_adopt_call(s, TAKE_PTR(*cp), req);
        return 0;
}

/* A call that runs code: it queues for a slot. On success the session owns
 * the call. */
static int submit_run(McpCall **cp, const McpRequest *req, json_object **ret) {
        McpCall *c = *cp, *call;
        McpServer *server = c->session->server;
        int r;

        assert(c);
        assert(req);
        assert(ret);

        /* Fair shares (call-queue.h): the slot is its caller's, tasks too (their
         * session has the caller's name); past the call maximum it is a long hold. */
        r = call_queue_submit(server->queue, &c->slot, c->session->caller,
                              c->args.exec.timeout_s > server->config.max_timeout_s, on_slot_start, c);
        if (r == -EBUSY) {
                _cleanup_free_ char *m = NULL;
                mcp_call_log_entry(c->session, req->rev, c->request_id, &c->args.exec, NULL, 0, 0, LOG_WARNING, "busy");
                if (asprintf(&m, "server busy: %u runs in progress and the queue of %" PRIu64 " is full; retry later",
                             call_queue_running(server->queue), call_queue_max_waiting(server->queue)) < 0)
                        return -ENOMEM;
                return reject(req, m, ret);
        }
        assert(r >= 0);

        /* The session owns it from here. */
        call = TAKE_PTR(*cp);
        session_adopt_call(call->session, call, req);

        if (r > 0)
                call_start(call);       /* may finish (and free the call) at once */
        else {
                progress_now(call);
                progress_arm(call);
        }
        return 0;
}

static int protocol_error(const McpRequest *req, int code, const char *message, json_object **ret) {
        assert(req);
        assert(message);
        assert(ret);

        *ret = jsonrpc_error_new(req->id, code, message, NULL);
        return *ret ? 0 : -ENOMEM;
}

/* What makes the request itself wrong is a protocol error: 0 with *ret set
 * to it. Else 1, with the tool and its arguments (NULL: absent). */
static int call_resolve(const McpRequest *req, const McpTool **ret_tool, json_object **ret_arguments,
                        json_object **ret) {
        const McpServerConfig *config = &req->session->server->config;
        json_object *arguments;
        const McpTool *tool;
        const char *name;

        assert(req);
        assert(ret_tool);
        assert(ret_arguments);
        assert(ret);

        name = json_get_string(req->params, "name");
        if (!name)
                return protocol_error(req, JSONRPC_INVALID_PARAMS, "Invalid params: tools/call needs a tool name", ret);
        tool = mcp_tool_find(config, name);
        if (!tool) {
                _cleanup_free_ char *m = mcp_tool_unknown_text(config, name);
                if (!m)
                        return -ENOMEM;
                return protocol_error(req, JSONRPC_INVALID_PARAMS, m, ret);
        }
        /* Not an object fails the CallToolRequest schema: a protocol error.
         * What is inside is the tool's business (isError results). null is
         * taken as absent. */
        arguments = json_get(req->params, "arguments");
        if (arguments && !json_object_is_type(arguments, json_type_object))
                return protocol_error(req, JSONRPC_INVALID_PARAMS, "Invalid params: arguments must be an object", ret);
        /* Cancellation finds calls by id: two alive with one id would be ambiguous. */
        LIST_FOREACH(calls, i, req->session->calls)
                if (!i->cancelled && jsonrpc_id_equal(i->id, req->id))
                        return protocol_error(req, JSONRPC_INVALID_REQUEST,
                                              "Invalid Request: a call with this id is still in progress", ret);
        *ret_tool = tool;
        *ret_arguments = arguments;
        return 1;
}

/* Each session may hold as many runs as the whole server can. */
static bool session_full(const McpSession *s) {
        const McpServerConfig *config = &s->server->config;
        uint64_t per_session = config->max_concurrent + config->max_queue;

        assert(s);

        if (per_session < config->max_concurrent)
                per_session = UINT64_MAX;
        return s->n_calls >= per_session;
}

/* Takes the arguments parsed into args. */
static McpCall *call_new(const McpRequest *req, const McpTool *tool, json_object *arguments, McpToolArgs *args,
                         const char *request_id) {
        json_object *token;
        McpCall *c;

        assert(req);
        assert(tool);
        assert(args);
        assert(request_id);

        c = new0(McpCall, 1);
        if (!c)
                return NULL;
        *c = (McpCall) {
                .tool = tool,
                .session = req->session,
                .rev = req->rev,
                .id = json_object_get(req->id),
                .origin = req->origin,
                .arguments = json_object_get(arguments),
                .args = *args,
                .received_usec = now_usec(),
        };
        *args = (McpToolArgs) {};       /* the call owns the decoded files now */
        (void) snprintf(c->request_id, sizeof c->request_id, "%s", request_id);
        /* Progress is for runs, which may wait and take long. */
        token = json_get(req->meta, "progressToken");
        if (!tool->broker_op && mcp_progress_token_check(token) > 0)
                c->progress_token = json_object_get(token);
        return c;
}

int mcp_call_resolve(const McpRequest *req, const McpTool **ret_tool, json_object **ret) {
        json_object *arguments;

        return call_resolve(req, ret_tool, &arguments, ret);
}

int mcp_call_handle(const McpRequest *req, json_object **ret) {
        McpSession *s = req->session;
        const McpServerConfig *config = &s->server->config;
        McpServerConfig task_config;
        _cleanup_(mcp_tool_args_done) McpToolArgs args = {};
        _cleanup_(call_freep) McpCall *c = NULL;
        _cleanup_free_ char *error = NULL;
        char request_id[REQUEST_ID_LOG_MAX + 1];
        json_object *arguments = NULL;
        const McpTool *tool = NULL;
        int r;

        assert(req);
        assert(ret);

        *ret = NULL;
        r = call_resolve(req, &tool, &arguments, ret);
        if (r <= 0)
                return r;
        if (req->task_run) {
                /* A task's run may take longer than a call's. */
                task_config = *config;
                task_config.max_timeout_s = config->task_max_timeout_s;
                config = &task_config;
        }

        jsonrpc_id_format(req->id, request_id, sizeof request_id);
        r = tool->parse(config, arguments, &args, &error);
        if (r == -EINVAL) {
                mcp_call_log_entry(s, req->rev, request_id, NULL, NULL, 0, 0, LOG_INFO, "invalid-arguments");
                return reject(req, error, ret);
        }
        if (r == -ESRCH) {
                mcp_call_log_entry(s, req->rev, request_id, &args.exec, NULL, 0, 0, LOG_INFO, "session-not-found");
                return reject(req, tool_session_gone_text, ret);
        }
        if (r < 0)
                return r;
        /* The policy must exist and be the caller's; the broker checks
         * that it exists again (and fails closed), the caller is ours. */
        r = tool_network_check(config->egress, args.network, mcp_session_owner(s).caller, &error);
        if (r == -EINVAL) {
                mcp_call_log_entry(s, req->rev, request_id, &args.exec, NULL, 0, 0, LOG_INFO, "network-refused");
                return reject(req, error, ret);
        }
        if (r < 0)
                return r;
        /* Before any unit is asked for: the broker and the installer
         * check the specs again; only we know the wheelhouse's list. */
        if (args.packages) {
                tool_packages_refresh(config->packages);
                r = tool_packages_check(config->packages, args.packages, &error);
                if (r == -EINVAL) {
                        s->server->package_stats.refused++;
                        mcp_call_log_entry(s, req->rev, request_id, &args.exec, NULL, 0, 0, LOG_INFO,
                                           "packages-refused");
                        return reject(req, error, ret);
                }
                if (r < 0)
                        return r;
        }

        if (!tool->broker_op && session_full(s)) {
                _cleanup_free_ char *m = NULL;
                mcp_call_log_entry(s, req->rev, request_id, &args.exec, NULL, 0, 0, LOG_WARNING, "too-many-calls");
                /* With one connection this is how a full server shows: its
                 * whole capacity (runs + queue) is this session's. Say busy,
                 * as for a full queue, so clients and models retry later. */
                if (asprintf(&m, "server busy: this connection already has %u calls running or queued, as many "
                             "as the server takes at once; retry when some have finished", s->n_calls) < 0)
                        return -ENOMEM;
                return reject(req, m, ret);
        }

        c = call_new(req, tool, arguments, &args, request_id);
        if (!c)
                return -ENOMEM;
        /* Charged before it queues: a waiting call holds its arguments and
         * files all the while (issue 19). */
        r = charge_admission(c);
        if (r == -EBUSY) {
                mcp_call_log_entry(s, req->rev, request_id, &c->args.exec, NULL, 0, 0, LOG_WARNING, "busy:memory");
                return reject(req, budget_busy_text, ret);
        }
        if (r < 0)
                return r;

        return tool->broker_op ? submit_broker_op(&c, req, ret) : submit_run(&c, req, ret);
}

void mcp_call_cancel(McpSession *s, json_object *id) {
        McpCall *c = NULL;

        assert(s);

        LIST_FOREACH(calls, i, s->calls)
                if (!i->cancelled && jsonrpc_id_equal(i->id, id)) {
                        c = i;
                        break;
                }
        if (!c)
                return;

        c->cancelled = true;
        /* A transport that holds a response open for it (an HTTP POST) can
         * end it now; a batch's other replies still come. The transport
         * may free the session here, which only marks it dead. */
        if (!c->batch)
                (void) mcp_session_send_unanswered(s, c->origin, c->id);
        c->progress_timer = sd_event_source_disable_unref(c->progress_timer);
        if (c->slot.state == QUEUE_SLOT_WAITING || c->retry_timer) {
                /* Still queued, or waiting to ask the busy broker again: it
                 * never starts. */
                call_log(c, NULL, LOG_INFO, "cancelled");
                call_free(c);
                return;
        }
        if (c->tool->broker_op) {
                /* A session_create given up ends that session (nobody has its
                 * handle); a close may have happened or not. */
                call_log(c, NULL, LOG_INFO, "cancelled");
                call_free(c);
                return;
        }
        /* Closing the connection makes the broker stop the unit; done
         * follows, maybe right here, and frees the call without a reply. */
        exec_client_cancel(c->exec);
}

static McpCall *first_waiting(McpSession *s) {
        assert(s);

        LIST_FOREACH(calls, c, s->calls)
                if (c->slot.state == QUEUE_SLOT_WAITING)
                        return c;
        return NULL;
}

void mcp_session_drop_calls(McpSession *s) {
        McpCall *c;

        assert(s);

        /* Waiting ones first, so none starts in the room the others free.
         * Freeing one may run other calls' code: restart from the head. */
        while ((c = first_waiting(s))) {
                call_log(c, NULL, LOG_INFO, "dropped");
                call_free(c);
        }
        /* exec_client_free() closes the broker connection: the unit is
         * stopped, and done never fires. */
        while ((c = s->calls)) {
                call_log(c, NULL, LOG_INFO, "cancelled:session-closed");
                call_free(c);
        }
}
