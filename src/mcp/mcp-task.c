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
#include <time.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "node-id.h"
#include "util.h"

/* What clients are told to wait between polls. */
#define TASK_POLL_INTERVAL_MS 1000
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

uint64_t task_now_ms(void) {
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

McpTask *task_find(McpServer *server, const char *id) {
        if (!id)
                return NULL;
        LIST_FOREACH(tasks, t, server->tasks)
                if (streq(t->id, id))
                        return t;
        return NULL;
}

void task_log(McpTask *t, int level, const char *what) {
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
void task_drop_session(McpTask *t) {
        McpSession *s = TAKE_PTR(t->session);

        if (!s)
                return;
        /* Nothing it says reaches the task from now on; no question of
         * its call is open any more. */
        mcp_session_set_sink(s, NULL);
        t->input_required = false;
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

json_object *task_outcome_json(TaskOutcome *o) {
        assert(o);

        return mcp_shared_json(o->text, o->len, o, outcome_ref, outcome_unref);
}

/* Serializes value once, for all readers; the tree can go then. Charged
 * refusably to the task's caller: -EBUSY if it does not fit. */
int task_outcome_new(McpTask *t, json_object *value, TaskOutcome **ret) {
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

McpTask *task_free(McpTask *t) {
        if (!t)
                return NULL;
        task_drop_session(t);
        while (t->waiters) {
                TaskWaiter *w = LIST_REMOVE(waiters, t->waiters, t->waiters);
                /* A tasks/result still open: its task is gone. */
                (void) mcp_reply(w->session, NULL, w->origin,
                                 jsonrpc_error_new(w->id, JSONRPC_INVALID_PARAMS, "Invalid params: no such task",
                                                   NULL));
                task_waiter_free(w);
        }
        if (t->server) {
                LIST_REMOVE(tasks, t->server->tasks, t);
                t->server->n_tasks--;
        }
        sd_event_source_disable_unref(t->expire_timer);
        sd_event_source_disable_unref(t->show_timer);
        json_object_put(t->call_id);
        json_object_put(t->origin_id);
        task_outcome_unref(t->outcome);
        json_object_put(t->error);
        free(t->status_message);
        free(t->caller);
        mem_charge_done(&t->charge);
        return mfree(t);
}

/* The Task object of either format. */
json_object *task_json(const McpTask *t) {
        char created[32], updated[32];
        _cleanup_json_ json_object *o = NULL;
        bool core = t->format == MCP_TASK_CORE;

        format_iso8601(t->created_ms, created);
        format_iso8601(t->updated_ms, updated);
        if (json_build(&o, JB_STR("taskId", t->id),
                       JB_STR("status", t->status == MCP_TASK_WORKING && t->input_required ? "input_required" :
                                        mcp_task_status_to_string(t->status)),
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
        /* The questions a working task waits for: answered by tasks/update. */
        if (t->format == MCP_TASK_EXTENSION && t->status == MCP_TASK_WORKING && t->input_required && t->session &&
            json_add(o, "inputRequests", mcp_confirm_input_requests(t->session)) < 0)
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
        t->updated_ms = task_now_ms();
        free(t->status_message);
        t->status_message = message ? strndup(message, TASK_STATUS_MESSAGE_MAX) : NULL;
        if (t->server && status != MCP_TASK_WORKING)
                t->server->tasks_ended[status]++;
        task_log(t, LOG_INFO, mcp_task_status_to_string(status));
        task_notify_status(t);
}

void task_input_changed(McpTask *t) {
        assert(t->status == MCP_TASK_WORKING);

        t->updated_ms = task_now_ms();
        task_log(t, LOG_INFO, t->input_required ? "input_required: asks its client to confirm a tool" :
                                                  "working again: its question is answered or over");
        task_notify_status(t);
        /* The extension's subscribers hear of it as of an end. */
        task_ended(t);
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

void mcp_tasks_count(const McpServer *server, unsigned ret[static _MCP_TASK_STATUS_MAX]) {
        assert(server);

        for (size_t i = 0; i < _MCP_TASK_STATUS_MAX; i++)
                ret[i] = 0;
        /* Those not yet shown are no tasks to anyone yet. */
        LIST_FOREACH(tasks, t, server->tasks)
                if (t->shown)
                        ret[t->status]++;
}
