/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Inside MCP tasks (mcp-task.h): the task itself and what its four files
 * share. From the bottom: mcp-task.c has a task's life, outcome and
 * readers; task-listen.c subscriptions/listen; task-call.c a tools/call as
 * a task; task-methods.c the tasks/ requests. Not for the rest of the
 * core. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "mcp-internal.h"
#include "mcp-task.h"
#include "mem-budget.h"
#include "node-id.h"

/* A task's own bookkeeping, charged with its result. */
#define TASK_OVERHEAD_BYTES ((uint64_t) 2048)
/* statusMessage of a failed task: the start of the tool's error text. */
#define TASK_STATUS_MESSAGE_MAX 512
/* A task's result is kept at least this long after its run may end, so
 * that a client polling once in a while gets it. */
#define TASK_TTL_SLACK_MS (60 * 1000)

typedef enum McpTaskFormat {
        MCP_TASK_CORE,                  /* 2025-11-25 */
        MCP_TASK_EXTENSION,             /* 2026-07-28, io.modelcontextprotocol/tasks */
} McpTaskFormat;

/* A task's outcome (its CallToolResult), serialized once when the task
 * ends and shared by every reader: each reader's message is built around
 * these bytes (a json value whose serializer writes them) rather than from
 * a copy of the result's tree. Refcounted, as a batch may hold a reply past
 * the task's life; its charge lives exactly as long as its bytes. */
typedef struct TaskOutcome {
        unsigned n_ref;
        MemCharge charge;
        size_t len;
        char text[];
} TaskOutcome;

TaskOutcome *task_outcome_unref(TaskOutcome *o);
/* Serializes value once, for all readers; the tree can go then. Charged
 * refusably to the task's caller: -EBUSY if it does not fit. */
int task_outcome_new(McpTask *t, json_object *value, TaskOutcome **ret);
/* A json value that serializes as o's text; it holds a reference. NULL on
 * out of memory. */
json_object *task_outcome_json(TaskOutcome *o);

/* A tasks/result that waits for the task to end. */
typedef struct TaskWaiter TaskWaiter;
struct TaskWaiter {
        LIST_FIELDS(TaskWaiter, waiters);
        McpSession *session;
        json_object *id;                /* ref */
        uint64_t origin;
};

/* An open subscriptions/listen (2026-07-28) for notifications/tasks: the
 * request stays open, the notifications go on its stream. */
typedef struct TaskListener TaskListener;
struct TaskListener {
        LIST_FIELDS(TaskListener, listeners);   /* in server->task_listeners */
        McpSession *session;
        json_object *id;                /* ref: the subscription's id */
        uint64_t origin;
        char **task_ids;                /* the ones honored: the caller's own */
        size_t n_task_ids;
};

struct McpTask {
        McpServer *server;
        LIST_FIELDS(McpTask, tasks);    /* in server->tasks */
        char id[NODE_ID_HANDLE_MAX];
        char *caller;
        McpTaskFormat format;
        McpTaskStatus status;
        /* The handle went out: until then (the extension's first
         * task_after_ms) the task is no task to anyone, and its call may
         * still be answered inline. */
        bool shown;
        bool inline_done;               /* answered inline: nothing more to do */
        bool starting;                  /* between mcp_task_begin() and mcp_task_started(), which frees it if it must */
        bool input_required;            /* working, with a question to its client open (mcp-confirm.c) */
        /* A plain 2026-07-28 call of a client that can be asked (multi
         * round-trip requests): a task never shown, that outlives its
         * request when it asks (InputRequiredResult, requestState its id)
         * and answers the retry that brings the inputResponses. */
        bool mrtr;
        bool resuming;                  /* inside task_resume(): it asks again itself, once */
        uint64_t created_ms, updated_ms;        /* CLOCK_REALTIME */
        uint64_t started_usec;          /* CLOCK_MONOTONIC, for the journal */
        uint64_t ttl_ms;
        sd_event_source *expire_timer;
        sd_event_source *show_timer;    /* the extension: when the call turns into a task */

        McpSession *session;            /* the task's own, while its call lives */
        json_object *call_id;           /* ref: the id of the tools/call, also the call's in session */

        /* Who asked, while they may still hear from us (core: status
         * notifications and progress; extension: the inline reply). */
        McpSession *origin_session;
        uint64_t origin;
        json_object *origin_id;         /* ref: that request's id (a retry's may differ from call_id) */

        TaskOutcome *outcome;           /* the CallToolResult, once ended with one */
        json_object *error;             /* or the JSON-RPC error object */
        char *status_message;
        MemCharge charge;               /* the task and its result, the caller's */
        TaskWaiter *waiters;
};

/* Stops its run (its session ends) and forgets it, answering what waits
 * for its result that it is gone. */
McpTask *task_free(McpTask *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(McpTask *, task_free);
void task_log(McpTask *t, int level, const char *what);
/* Ends the task's session (and with it a call still running: its unit is
 * stopped); from the event loop if the session is inside its callout. */
void task_drop_session(McpTask *t);
/* CLOCK_REALTIME in ms, as tasks' times are given. */
uint64_t task_now_ms(void);

/* The task of that id, whoever's it is; NULL if none. */
McpTask *task_find(McpServer *server, const char *id);
/* The Task object of the task's format; the extension's DetailedTask with
 * the outcome inline, or, if !outcome, without a completed task's result
 * and a statusMessage that says to fetch it. NULL on out of memory. */
json_object *task_json(const McpTask *t);
json_object *detailed_task_json(const McpTask *t, bool outcome);
/* Readers of a task's outcome: each copy of it a transport will hold is
 * charged, refusably, to the caller before it is built. -EBUSY if the
 * caller's share cannot take it; an empty charge for a task without one. */
int task_reader_charge(McpTask *t, MemCharge *ret);
/* The small error for a reader refused so. */
json_object *task_busy_error(const McpTask *t, json_object *id);
/* Sends the reply to a request now (in its batch, if any), with what
 * charge holds for it. Takes reply. */
int task_send_reply(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply, MemCharge *charge);
/* From working to status, with the reason (may be NULL); logged, and the
 * core's status notification sent. */
void task_set_status(McpTask *t, McpTaskStatus status, const char *message);
/* input_required came or went: logged, the core's status notification
 * sent, the extension's subscribers told. */
void task_input_changed(McpTask *t);
/* What tasks/result answers to request id, once the task ended. */
json_object *task_result_reply(McpTask *t, json_object *id);
/* Answers tasks/result request id (of batch b, if any) now. */
int task_answer_result(McpTask *t, McpSession *s, McpBatch *b, uint64_t origin, json_object *id);
/* The task goes: its caller deleted it, or needs its room. */
void task_delete(McpTask *t, const char *why);
void task_answer_waiters(McpTask *t);
TaskWaiter *task_waiter_free(TaskWaiter *w);
/* Is the caller someone (a uid, a token), not every anonymous peer? */
bool task_caller_known(const McpSession *s);

/* task-listen.c */
/* After the outcome is stored: the extension's subscribers hear of it. */
void task_ended(McpTask *t);
TaskListener *task_listener_free(McpServer *server, TaskListener *l);
