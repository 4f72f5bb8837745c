/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the core's floors, from the bottom: sessions (mcp-session.c),
 * calls (mcp-call.c), tasks (mcp-task.c and its kin), and the dispatch of
 * methods (mcp-server.c), which alone chooses between a call and a task.
 * Not for transports. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "call-queue.h"
#include "sandbox-session-table.h"
#include "list.h"
#include "mcp-confirm.h"
#include "mcp-server.h"
#include "revision.h"

typedef struct McpCall McpCall;
typedef struct McpBatch McpBatch;
typedef struct McpTask McpTask;
typedef struct McpTool McpTool;
typedef struct McpConfirm McpConfirm;

struct McpServer {
        sd_event *event;
        McpServerConfig config;         /* strings point at the copies below */
        char *broker_socket, *python_version;
        char **modules, **preloaded;
        CallQueue *queue;
        SandboxSessionTable *sandbox_sessions; /* the sandbox session handles we gave out */
        McpSession *sessions;
        McpTask *tasks;                 /* mcp-task.c: oldest last */
        struct TaskListener *task_listeners;    /* subscriptions/listen for tasks (task-listen.c) */
        unsigned n_tasks;               /* all of them, also those not yet shown to the client */
        uint64_t tasks_ended[4];        /* by McpTaskStatus, since start: for /metrics */
        McpPackageStats package_stats;  /* installs since start: for /metrics */
        uint64_t progress_interval_usec;
        uint64_t last_confirm;          /* mcp-confirm.c: the ids of our questions */
        /* A session ends: what hangs on it above its floor (its calls, what
         * waits on tasks) ends with it. Set by mcp-server.c. */
        void (*session_gone)(McpSession *s);
};

/* Where what a session says goes: its transport (the default), or, for a
 * task's own session, the task (task-call.c). Each takes what it is given. */
typedef struct McpSink {
        /* A call's reply (NULL: the call ended without one) to what came
         * with origin, in batch b if any, with what charge holds for it. */
        int (*reply)(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply, MemCharge *charge);
        /* A notification about request id, which came with origin; charge
         * as for a reply (NULL: none). */
        int (*notification)(McpSession *s, uint64_t origin, json_object *id, json_object *m, MemCharge *charge);
        /* Request id, which came with origin, ends without a reply. */
        int (*unanswered)(McpSession *s, uint64_t origin, json_object *id);
} McpSink;

struct McpSession {
        McpServer *server;              /* NULL once the server is gone */
        LIST_FIELDS(McpSession, sessions);      /* in server->sessions */
        McpTransport transport;         /* none for a task's own session */
        const McpSink *sink;
        void *userdata;                 /* the transport's, or the sink's */
        char id[33];                    /* random, for the journal */
        char *peer_transport;
        uid_t peer_uid;
        pid_t peer_pid;
        char *caller;                   /* McpPeer.caller, or made up from uid or transport */
        char scope[33];                 /* random when McpPeer.scoped, else empty */

        const McpRevision *revision;    /* negotiated by initialize; NULL before */
        bool stateless_seen;            /* a 2026-07-28 request was served */
        bool dead;                      /* the transport said the peer is gone */
        bool freeing;
        unsigned in_callout;            /* inside a transport callback, which may free us */
        sd_event_source *defer_free;    /* set when it did: the rest happens from the loop */
        mcp_session_idle_t idle_callback;
        int log_level;                  /* logging/setLevel, a syslog level */

        McpCall *calls;
        unsigned n_calls;

        /* Code mode's questions to the client (mcp-confirm.c). */
        bool client_elicit_form;        /* initialize's capabilities: elicitation, form mode */
        LIST_HEAD(McpConfirm, confirms);
        unsigned n_confirms;
};

/* Whose the sandbox sessions made in s are. Borrowed from s. */
static inline SandboxOwner mcp_session_owner(const McpSession *s) {
        return (SandboxOwner) { .caller = s->caller, .scope = s->scope };
}

/* Replies to the requests of one batch, sent together once all are in. */
struct McpBatch {
        McpSession *session;
        uint64_t origin;                /* of the batch, for the transport */
        json_object *replies;           /* array */
        unsigned pending;               /* replies still to come, +1 while the batch is being read */
        MemCharge charge;               /* what the replies in it hold, their calls' charges taken over */
};

/* One request being handled. */
typedef struct McpRequest {
        McpSession *session;
        const McpRevision *rev;         /* the revision governing this request */
        const char *method;
        json_object *id;
        json_object *params;            /* an object or NULL */
        json_object *meta;              /* params._meta if an object, else NULL */
        McpBatch *batch;                /* NULL: reply on its own */
        uint64_t origin;                /* where the transport got it from */
        bool task_run;                  /* the call of a task: it may run as long as a task may */
} McpRequest;

/* A session whose messages go to sink, with userdata: a task's own. */
int mcp_session_new_sink(McpServer *server, const McpSink *sink, void *userdata, const McpPeer *peer,
                         McpSession **ret);
/* NULL: back to the transport's. */
void mcp_session_set_sink(McpSession *s, const McpSink *sink);
/* mcp_session_free() without waiting for a callout to end. */
McpSession *mcp_session_free_now(McpSession *s);

/* A json value that serializes as the len bytes of data, kept once by
 * owner: it holds a reference (ref(owner) now, unref(owner) when it goes).
 * A transport with shared_parts gets it as McpMessage.shared, not a copy.
 * NULL on out of memory. */
json_object *mcp_shared_json(const char *data, size_t len, void *owner, void (*ref)(void *owner),
                             void (*unref)(void *owner));
/* Serializes msg as json_serialize() does, but its first shared part is
 * left out and described in *ret_shared (ret_shared->data NULL: none). The
 * text is msg's, as json_serialize()'s. */
const char *mcp_shared_serialize(json_object *msg, size_t *ret_len, McpShared *ret_shared);

/* A batch's replies: each added as it comes; sent once the last pending
 * one is released. */
void mcp_batch_add(McpBatch *b, json_object *reply);
void mcp_batch_release(McpBatch *b);

/* Our name and version, as the revision wants it. */
json_object *mcp_server_info(const McpRevision *rev);

/* Send to the peer, with the facts the transport routes by. Take m (NULL:
 * out of memory). A reply (or a batch's replies) to what came with origin: */
int mcp_session_send_reply(McpSession *s, uint64_t origin, json_object *m);
/* A notification about request id, which came with origin (0, NULL: none). */
int mcp_session_send_notification(McpSession *s, uint64_t origin, json_object *id, json_object *m);
/* The same, for a notification whose bytes charge holds (a task's outcome
 * for a listener): the transport may take it over for its copy; what is
 * left is given back when this returns. */
int mcp_session_send_notification_charged(McpSession *s, uint64_t origin, json_object *id, json_object *m,
                                          MemCharge *charge);
/* A request of ours to the client (m, taken) about request id, which came
 * with origin: where the client sees it as part of that request (over
 * HTTP, the POST's event stream). -ENOTCONN if it cannot go there. */
int mcp_session_send_request(McpSession *s, uint64_t origin, json_object *id, json_object *m);
/* Request id, which came with origin, ends without a reply. */
int mcp_session_send_unanswered(McpSession *s, uint64_t origin, json_object *id);
/* The session's last call is gone: tell the transport. */
void mcp_session_notify_idle(McpSession *s);

/* Delivers a reply for a request of batch b, or alone (with origin) if b is
 * NULL. Takes reply; NULL means the request ends without one (it was
 * cancelled). */
int mcp_reply(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply);
/* The same, for a reply whose bytes charge holds: a batch keeps the charge
 * until it is sent, else it is given back once the transport has the reply
 * (and charged its own copy). */
int mcp_reply_charged(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply, MemCharge *charge);

/* A result reply as the revision wants it (resultType and serverInfo in the
 * stateless one). Takes result. */
json_object *mcp_result_reply(const McpRequest *req, json_object *result);

/* What makes a tools/call itself wrong is a protocol error: 0 with *ret
 * set to it. Else 1, with its tool. */
int mcp_call_resolve(const McpRequest *req, const McpTool **ret_tool, json_object **ret);
/* Runs the tools/call of req as a plain call, in req's session (a task's
 * own, for a task); *ret_reply is NULL when the reply comes later. */
int mcp_call_handle(const McpRequest *req, json_object **ret_reply);
/* notifications/cancelled for id: no reply will be sent for that call. */
void mcp_call_cancel(McpSession *s, json_object *id);
/* Drops every call of the session: queued ones never start, running ones
 * are cancelled. Nothing is sent. */
void mcp_session_drop_calls(McpSession *s);

/* For tests: how often progress goes out (default 1 s). */
void mcp_server_set_progress_interval(McpServer *s, uint64_t usec);
