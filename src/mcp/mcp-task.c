/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mcp-task.h"
#include "task-internal.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/printbuf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "node-id.h"
#include "tool-exec.h"
#include "util.h"

/* What clients are told to wait between polls. */
#define TASK_POLL_INTERVAL_MS 1000
/* A task's result is kept at least this long after its run may end, so
 * that a client polling once in a while gets it. */
#define TASK_TTL_SLACK_MS (60 * 1000)
/* A task's own bookkeeping, charged with its result. */
#define TASK_OVERHEAD_BYTES ((uint64_t) 2048)
/* statusMessage of a failed task: the start of the tool's error text. */
#define TASK_STATUS_MESSAGE_MAX 512
/* A reader's message beside the outcome's bytes (the task, the envelope). */
#define TASK_READER_OVERHEAD_BYTES ((uint64_t) 4096)

static const char *const status_names[_MCP_TASK_STATUS_MAX] = {
        [MCP_TASK_WORKING] = "working",
        [MCP_TASK_COMPLETED] = "completed",
        [MCP_TASK_FAILED] = "failed",
        [MCP_TASK_CANCELLED] = "cancelled",
};

const char *mcp_task_status_to_string(McpTaskStatus s) {
        assert(s >= 0 && s < _MCP_TASK_STATUS_MAX);
        return status_names[s];
}

static uint64_t now_realtime_ms(void) {
        struct timespec ts;

        if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void format_iso8601(uint64_t ms, char buf[static 32]) {
        time_t t = (time_t) (ms / 1000);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
                strcpy(buf, "1970-01-01T00:00:00Z");
                return;
        }
        (void) snprintf(buf + strlen(buf), 32 - strlen(buf), ".%03" PRIu64 "Z", ms % 1000);
}

/* "ab12cd34…": the journal's name for a task, never the whole id (the id
 * is the caller's key to its result). */
static const char *id_prefix(const McpTask *t, char buf[static 24]) {
        const char *dot = strchr(t->id, '.');

        (void) snprintf(buf, 24, "%.12s", dot ? dot + 1 : t->id);
        return buf;
}

static bool extension_declared(json_object *meta) {
        json_object *caps = json_get(meta, MCP_META_CLIENT_CAPABILITIES);

        return json_object_is_type(json_get(json_get(caps, "extensions"), MCP_TASKS_EXTENSION), json_type_object);
}

bool mcp_task_requested(const McpRequest *req) {
        assert(req);

        if (req->session->task || req->no_task)
                return false;   /* the task's own call, or one that runs as a call */
        if (req->rev->tasks)
                return json_object_is_type(json_get(req->params, "task"), json_type_object);
        return req->rev->stateless && extension_declared(req->meta);
}

McpTask *task_find(McpServer *server, const char *id) {
        if (!id)
                return NULL;
        LIST_FOREACH(tasks, t, server->tasks)
                if (streq(t->id, id))
                        return t;
        return NULL;
}

static unsigned caller_tasks(McpServer *server, const char *caller) {
        unsigned n = 0;

        LIST_FOREACH(tasks, t, server->tasks)
                n += streq(t->caller, caller);
        return n;
}

static void task_log(McpTask *t, int level, const char *what) {
        char prefix[24];
        uint64_t ms = (now_usec() - t->started_usec) / USEC_PER_MSEC;

        log_struct(level,
                   "MESSAGE=task %s: %s", id_prefix(t, prefix), what,
                   "MCP_TASK=%s", prefix,
                   "MCP_TASK_FORMAT=%s", t->format == MCP_TASK_CORE ? "2025-11-25" : "2026-07-28",
                   "MCP_TASK_STATUS=%s", mcp_task_status_to_string(t->status),
                   "MCP_DURATION_MS=%" PRIu64, ms,
                   "MCP_TASK_TTL_MS=%" PRIu64, t->ttl_ms);
}

/* Ends the task's session (and with it a call still running: its unit is
 * stopped). The session may be inside its own callout: it then finishes
 * from the event loop. */
static void task_drop_session(McpTask *t) {
        McpSession *s = TAKE_PTR(t->session);

        if (!s)
                return;
        s->task = NULL;
        /* The scope is the asker's: its sandbox sessions are not ours to end. */
        s->scope[0] = 0;
        mcp_session_set_idle_callback(s, NULL);
        mcp_session_free(s);
}

TaskWaiter *task_waiter_free(TaskWaiter *w) {
        if (!w)
                return NULL;
        json_object_put(w->id);
        return mfree(w);
}

TaskOutcome *task_outcome_unref(TaskOutcome *o) {
        if (!o)
                return NULL;
        assert(o->n_ref > 0);
        if (--o->n_ref > 0)
                return NULL;
        mem_charge_done(&o->charge);
        return mfree(o);
}

static void outcome_ref(void *p) {
        TaskOutcome *o = p;

        o->n_ref++;
}

static void outcome_unref(void *p) {
        task_outcome_unref(p);
}

/* Set while mcp_task_serialize() runs: where the outcome is described
 * instead of written. One event loop, no threads. */
static McpShared *capture;

static int outcome_serialize(json_object *jso, struct printbuf *pb, int level, int flags) {
        TaskOutcome *o = json_object_get_userdata(jso);

        if (capture && !capture->data) {
                *capture = (McpShared) {
                        .data = o->text,
                        .len = o->len,
                        .at = (size_t) pb->bpos,
                        .owner = o,
                        .ref = outcome_ref,
                        .unref = outcome_unref,
                };
                return 0;
        }
        return printbuf_memappend(pb, o->text, (int) o->len) < 0 ? -1 : 0;
}

const char *mcp_task_serialize(json_object *msg, size_t *ret_len, McpShared *ret_shared) {
        const char *text;

        assert(msg);
        assert(ret_shared);
        assert(!capture);

        *ret_shared = (McpShared) {};
        capture = ret_shared;
        text = json_serialize(msg, ret_len);
        capture = NULL;
        return text;
}

static void outcome_json_free(json_object *jso, void *userdata) {
        task_outcome_unref(userdata);
}

json_object *task_outcome_json(TaskOutcome *o) {
        json_object *j;

        assert(o);

        j = json_object_new_object();
        if (!j)
                return NULL;
        o->n_ref++;
        json_object_set_serializer(j, outcome_serialize, o, outcome_json_free);
        return j;
}

/* Serializes value once, for all readers; the tree can go then. Charged
 * refusably to the task's caller: -EBUSY if it does not fit. */
static int task_outcome_new(McpTask *t, json_object *value, TaskOutcome **ret) {
        _cleanup_free_ TaskOutcome *o = NULL;
        const char *text;
        size_t len;
        int r;

        text = json_serialize(value, &len);
        if (!text)
                return -ENOMEM;
        if (len >= INT_MAX)     /* printbuf's limit; a result is never near it */
                return -EBUSY;
        o = malloc(sizeof *o + len + 1);
        if (!o)
                return -ENOMEM;
        *o = (TaskOutcome) { .n_ref = 1, .len = len };
        memcpy(o->text, text, len + 1);
        r = mem_charge_init(&o->charge, t->server ? t->server->config.budget : NULL, t->caller);
        if (r < 0)
                return r;
        r = mem_charge_set(&o->charge, sizeof *o + len + 1);
        if (r < 0) {
                mem_charge_done(&o->charge);
                return r;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

int task_reader_charge(McpTask *t, MemCharge *ret) {
        MemCharge c = {};
        int r;

        assert(t);
        assert(ret);

        *ret = (MemCharge) {};
        if (t->outcome) {
                /* Its text in the message while that is serialized, then
                 * in the transport's buffer until it is read (which the
                 * transport charges itself once it has it). */
                r = mem_charge_init(&c, t->server ? t->server->config.budget : NULL, t->caller);
                if (r < 0)
                        return r;
                r = mem_charge_set(&c, 2 * (uint64_t) t->outcome->len + TASK_READER_OVERHEAD_BYTES);
                if (r < 0) {
                        mem_charge_done(&c);
                        return r;
                }
        }
        *ret = c;
        return 0;
}

json_object *task_busy_error(const McpTask *t, json_object *id) {
        _cleanup_free_ char *m = NULL;

        if (asprintf(&m, "server busy: this task's result (%zu bytes) does not fit in your share of the server's "
                     "memory now (replies and results not yet read); read or delete those, then ask again",
                     t->outcome ? t->outcome->len : 0) < 0)
                return NULL;
        return jsonrpc_error_new(id, JSONRPC_SERVER_ERROR, m, NULL);
}

int task_send_reply(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply, MemCharge *charge) {
        assert(s);
        assert(charge);

        /* As a call's deferred reply: the batch waits for it. */
        if (b)
                b->pending++;
        return mcp_reply_charged(s, b, origin, reply, charge);
}

static McpTask *task_free(McpTask *t) {
        if (!t)
                return NULL;
        task_drop_session(t);
        while (t->waiters) {
                TaskWaiter *w = LIST_REMOVE(waiters, t->waiters, t->waiters);
                /* A tasks/result still open: its task is gone. */
                (void) mcp_reply(w->session, NULL, w->origin,
                                 jsonrpc_error_new(w->id, JSONRPC_INVALID_PARAMS, "Invalid params: no such task", NULL));
                task_waiter_free(w);
        }
        if (t->server) {
                LIST_REMOVE(tasks, t->server->tasks, t);
                t->server->n_tasks--;
        }
        sd_event_source_disable_unref(t->expire_timer);
        sd_event_source_disable_unref(t->show_timer);
        json_object_put(t->call_id);
        task_outcome_unref(t->outcome);
        json_object_put(t->error);
        free(t->status_message);
        free(t->caller);
        mem_charge_done(&t->charge);
        return mfree(t);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(McpTask *, task_free);

/* The Task object of either format. */
json_object *task_json(const McpTask *t) {
        char created[32], updated[32];
        _cleanup_json_ json_object *o = NULL;
        bool core = t->format == MCP_TASK_CORE;

        format_iso8601(t->created_ms, created);
        format_iso8601(t->updated_ms, updated);
        if (json_build(&o, JB_STR("taskId", t->id), JB_STR("status", mcp_task_status_to_string(t->status)),
                       JB_STR("createdAt", created), JB_STR("lastUpdatedAt", updated),
                       JB_INT(core ? "ttl" : "ttlMs", t->ttl_ms),
                       JB_INT(core ? "pollInterval" : "pollIntervalMs", TASK_POLL_INTERVAL_MS), JB_END) < 0)
                return NULL;
        if (t->status_message && json_add_string(o, "statusMessage", t->status_message) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/* The extension's DetailedTask: the task with its outcome inline. */
json_object *detailed_task_json(const McpTask *t, bool outcome) {
        _cleanup_json_ json_object *o = task_json(t);

        if (!o)
                return NULL;
        if (t->format == MCP_TASK_EXTENSION && t->status != MCP_TASK_WORKING) {
                if (t->outcome && outcome && json_add(o, "result", task_outcome_json(t->outcome)) < 0)
                        return NULL;
                if (t->outcome && !outcome &&
                    json_add_string(o, "statusMessage",
                                    "completed; the result did not fit on this stream now: fetch it with "
                                    "tasks/get") < 0)
                        return NULL;
                if (t->error && json_add(o, "error", json_object_get(t->error)) < 0)
                        return NULL;
        }
        return TAKE_PTR(o);
}

/* Tells the session that made the task what became of it (core only: the
 * extension has its own subscription). A courtesy: clients poll. */
static void task_notify_status(McpTask *t) {
        json_object *params;

        if (t->format != MCP_TASK_CORE || !t->origin_session || !t->shown)
                return;
        params = task_json(t);
        if (!params)
                return (void) log_oom();
        (void) mcp_session_send_notification(t->origin_session, 0, NULL,
                                             jsonrpc_notification_new("notifications/tasks/status", params));
}

void task_set_status(McpTask *t, McpTaskStatus status, const char *message) {
        assert(t->status == MCP_TASK_WORKING);

        t->status = status;
        t->updated_ms = now_realtime_ms();
        free(t->status_message);
        t->status_message = message ? strndup(message, TASK_STATUS_MESSAGE_MAX) : NULL;
        if (t->server && status != MCP_TASK_WORKING)
                t->server->tasks_ended[status]++;
        task_log(t, LOG_INFO, mcp_task_status_to_string(status));
        task_notify_status(t);
}

/* After the outcome is stored: the extension's subscribers see it inline. */
void task_ended(McpTask *t) {
        task_notify_listeners(t);
}

static int on_expire(sd_event_source *src, uint64_t usec, void *userdata) {
        McpTask *t = userdata;

        /* Its ttl ended: the result goes, a run still going stops. */
        task_log(t, LOG_INFO, t->status == MCP_TASK_WORKING ? "expired while running: stopped" : "expired");
        task_free(t);
        return 0;
}

/* The reply a tasks/result gets: the call's own result with the related
 * task in its _meta, or its error. */
json_object *task_result_reply(McpTask *t, json_object *id) {
        if (t->status == MCP_TASK_CANCELLED)
                return jsonrpc_error_new(id, JSONRPC_INVALID_PARAMS, "Invalid params: the task was cancelled", NULL);
        if (t->error || !t->outcome)
                return jsonrpc_error_new(id, (int) json_get_int64(t->error, "code", JSONRPC_INTERNAL_ERROR),
                                         json_get_string(t->error, "message") ?: "Internal error", NULL);
        /* Its related-task _meta is in the outcome already (the core's). */
        return jsonrpc_result_new(id, task_outcome_json(t->outcome));
}

int task_answer_result(McpTask *t, McpSession *s, McpBatch *b, uint64_t origin, json_object *id) {
        MemCharge charge;
        json_object *reply;
        int r;

        r = task_reader_charge(t, &charge);
        if (r == -EBUSY)
                reply = task_busy_error(t, id);
        else if (r < 0)
                return r;
        else
                reply = task_result_reply(t, id);
        if (!reply)
                reply = jsonrpc_error_new(id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory", NULL);
        return task_send_reply(s, b, origin, reply, &charge);
}

void task_answer_waiters(McpTask *t) {
        TaskWaiter *w;

        /* One at a time, each charged before it is built: those the
         * caller's share cannot take get a small error and may ask again. */
        while ((w = t->waiters)) {
                LIST_REMOVE(waiters, t->waiters, w);
                (void) task_answer_result(t, w->session, NULL, w->origin, w->id);
                task_waiter_free(w);
        }
}

void task_delete(McpTask *t, const char *why) {
        assert(t);

        task_log(t, LOG_INFO, why);
        task_free(t);
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
        /* The reply carries the request's own id already. */
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

int mcp_task_on_reply(McpTask *t, json_object *reply, MemCharge *charge) {
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

int mcp_task_on_notification(McpTask *t, json_object *m) {
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
                return mcp_session_send_notification(t->origin_session, t->origin, t->call_id, TAKE_PTR(msg));
        if (t->format == MCP_TASK_CORE)
                return mcp_session_send_notification(t->origin_session, 0, NULL, TAKE_PTR(msg));
        return 0;
}

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

/* The caller's own oldest ended task, which goes first when it needs room:
 * never another caller's (their results are theirs until their ttl). */
static McpTask *oldest_ended(McpServer *server, const char *caller) {
        McpTask *found = NULL;

        /* Newest first: the last one seen is the oldest. */
        LIST_FOREACH(tasks, t, server->tasks)
                if (t->shown && t->status != MCP_TASK_WORKING && streq(t->caller, caller))
                        found = t;
        return found;
}

/* At the global cap, the oldest ended task of the caller that holds the
 * most, if that is more than one above what this caller holds (mine): the
 * cap is shared, so a few callers' unread results cannot hold it until
 * their ttl (issue 37, item 9). A working task is never ended for room. */
static McpTask *oldest_ended_over_share(McpServer *server, const char *caller, unsigned mine) {
        McpTask *found = NULL;
        unsigned most = 0;
        const char *seen = NULL;

        /* Newest first, so the last ended task of a caller is its oldest
         * (and of callers holding as many, the one seen last has the
         * oldest); the count is asked again only when the caller changes. */
        LIST_FOREACH(tasks, t, server->tasks) {
                unsigned n;

                if (!t->shown || t->status == MCP_TASK_WORKING || streq(t->caller, caller))
                        continue;
                if (found && streq(t->caller, found->caller)) {
                        found = t;
                        continue;
                }
                if (seen && streq(t->caller, seen))
                        continue;
                n = caller_tasks(server, t->caller);
                if (n > mine + 1 && n >= most) {
                        most = n;
                        found = t;
                } else
                        seen = t->caller;
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
                old = oldest_ended(server, req->session->caller);
                if (old) {
                        task_delete(old, "deleted: its caller needed room for a new task");
                        continue;
                }
                if (mine >= caller_share(c))
                        break;
                old = oldest_ended_over_share(server, req->session->caller, mine);
                if (!old)
                        break;
                task_delete(old, "deleted: the task cap was full and its caller held more than its share");
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

/* The extension leaves it to us whether a call becomes a task: one we
 * cannot hold runs as a plain call. */
static int run_as_call(const McpRequest *req, json_object **ret) {
        McpRequest plain = *req;

        plain.no_task = true;
        return mcp_call_handle(&plain, ret);
}

/* Never called: the core hands a task's session's messages to the task. */
static int task_send(McpSession *s, const McpMessage *m, void *userdata) {
        return 0;
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
        t->created_ms = t->updated_ms = now_realtime_ms();
        t->call_id = json_object_get(req->id);
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
        r = mcp_session_new(server, &(McpTransport) { .send = task_send }, t, &peer, &t->session);
        if (r < 0)
                return r;
        t->session->task = t;
        t->session->revision = o->revision;
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

/* The call in the task's session; its immediate reply, if any, in *ret. */
static int task_start_call(McpTask *t, const McpRequest *req, json_object **ret) {
        McpRequest inner = *req;

        inner.session = t->session;
        inner.batch = NULL;
        inner.origin = 0;
        return mcp_call_handle(&inner, ret);
}

int mcp_task_call(const McpRequest *req, json_object **ret) {
        McpServer *server = req->session->server;
        const McpServerConfig *c = &server->config;
        McpTaskFormat format = req->rev->tasks ? MCP_TASK_CORE : MCP_TASK_EXTENSION;
        _cleanup_(task_freep) McpTask *t = NULL;
        _cleanup_json_ json_object *now = NULL;
        json_object *args = json_get(req->params, "arguments");
        int64_t timeout = json_get_int64(args, "timeout_s", 0);
        int r;

        assert(req);
        assert(ret);

        *ret = NULL;
        r = task_admit(req, format == MCP_TASK_CORE ? ret : NULL);
        if (r == -EBUSY && format == MCP_TASK_EXTENSION)
                return run_as_call(req, ret);
        if (r < 0)
                return r == -EBUSY ? 0 : r;

        r = task_new(req, format, &t);
        if (r == -EBUSY && format == MCP_TASK_EXTENSION)
                return run_as_call(req, ret);
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

        if (format == MCP_TASK_EXTENSION) {
                r = task_arm(t, &t->show_timer, c->task_after_ms * USEC_PER_MSEC, on_show);
                if (r < 0)
                        return r;
        } else
                t->shown = true;
        /* The call may end right inside (a broker that is not there): it
         * must find where its answer goes. */
        t->origin_session = req->session;
        t->origin = format == MCP_TASK_EXTENSION ? req->origin : 0;
        t->starting = true;
        r = task_start_call(t, req, &now);
        t->starting = false;
        if (r < 0)
                return r;
        if (now && (json_get(now, "error") || format == MCP_TASK_EXTENSION)) {
                /* The request itself was wrong, or (the extension) the tool
                 * refused it at once: that is its answer, and no task. */
                *ret = TAKE_PTR(now);
                return 0;
        }
        if (format == MCP_TASK_EXTENSION) {
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
                (void) mcp_task_on_reply(t, TAKE_PTR(now), &none);
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
                if (t->origin_session == s && !t->shown && !t->inline_done && jsonrpc_id_equal(t->call_id, id)) {
                        /* The transport may end what it holds open for it. */
                        (void) mcp_session_send_unanswered(s, t->origin, t->call_id);
                        task_log(t, LOG_DEBUG, "call cancelled before it became a task");
                        task_free(t);
                        return;
                }
}

unsigned mcp_tasks_end_caller(McpServer *server, const char *caller) {
        unsigned n = 0;

        assert(server);
        assert(caller);

        /* Gone, not cancelled and kept: nobody may read them, not even a
         * caller of that name added again. A run still going is stopped. */
        LIST_FOREACH_SAFE(tasks, t, next, server->tasks)
                if (streq(t->caller, caller)) {
                        task_log(t, LOG_INFO, "ended: its caller's token was revoked");
                        task_free(t);
                        n++;
                }
        return n;
}

void mcp_tasks_free_all(McpServer *server) {
        assert(server);

        while (server->tasks)
                task_free(server->tasks);
        while (server->task_listeners)
                task_listener_free(server, server->task_listeners);
}

/* Is the caller someone (a uid, a token), not every anonymous peer? */
bool task_caller_known(const McpSession *s) {
        return !streq(s->caller, "http:loopback") && !strneq(s->caller, "peer:", 5);
}

/* {"tools": {"call": {}}}: the one request that may be a task. */
static json_object *requests_json(void) {
        _cleanup_json_ json_object *tools = NULL, *o = NULL;

        if (json_build(&tools, JB_OBJ("call", json_object_new_object()), JB_END) < 0 ||
            json_build(&o, JB_OBJ("tools", TAKE_PTR(tools)), JB_END) < 0)
                return NULL;
        return TAKE_PTR(o);
}

json_object *mcp_task_capability(const McpSession *s) {
        _cleanup_json_ json_object *o = NULL;
        bool known;

        assert(s);

        /* An anonymous loopback peer is everyone on the host: no list. */
        known = task_caller_known(s);
        if (json_build(&o, JB_OBJ("cancel", json_object_new_object()), JB_OBJ("requests", requests_json()), JB_END) < 0)
                return NULL;
        if (known && json_add(o, "list", json_object_new_object()) < 0)
                return NULL;
        return TAKE_PTR(o);
}

unsigned mcp_server_tasks(const McpServer *s) {
        assert(s);
        return s->n_tasks;
}

void mcp_server_task_stats(const McpServer *s, McpTaskStats *ret) {
        assert(s);
        assert(ret);

        *ret = (McpTaskStats) {
                .ended_completed = s->tasks_ended[MCP_TASK_COMPLETED],
                .ended_failed = s->tasks_ended[MCP_TASK_FAILED],
                .ended_cancelled = s->tasks_ended[MCP_TASK_CANCELLED],
        };
        LIST_FOREACH(tasks, t, s->tasks) {
                if (!t->shown)
                        continue;
                ret->working += t->status == MCP_TASK_WORKING;
                ret->completed += t->status == MCP_TASK_COMPLETED;
                ret->failed += t->status == MCP_TASK_FAILED;
                ret->cancelled += t->status == MCP_TASK_CANCELLED;
        }
}
