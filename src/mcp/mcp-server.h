/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The transport-neutral MCP core: JSON-RPC 2.0 framing rules, version
 * negotiation across every revision from 2024-11-05 to the stateless
 * 2026-07-28, the exec tool, concurrency with a bounded queue, cancellation
 * and progress. It does not know whether a message came over stdio, a unix
 * socket or HTTP, and it does not know systemd: code runs through the broker
 * (exec-client.h). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "mcp-config.h"
#include "mem-budget.h"

typedef struct McpServer McpServer;
typedef struct McpSession McpSession;

typedef enum McpMessageKind {
        MCP_MESSAGE_RESPONSE,           /* the reply (result or error) to a request, or a batch's replies */
        MCP_MESSAGE_NOTIFICATION,       /* progress of a call */
        /* No text: a request the client cancelled (not one in a batch)
         * ends without a reply. Sent when the cancel arrives, while the run
         * may still be stopping and count in mcp_session_in_flight(). */
        MCP_MESSAGE_UNANSWERED,
} McpMessageKind;

/* A large part of a message kept once and shared by every message that
 * carries it (a task's result, issue 37): the message is json's first at
 * bytes, then data, then the rest of json. A transport that keeps the
 * message takes a reference (ref(owner), unref(owner) when done) rather
 * than a copy of data. Only for transports that ask for it. */
typedef struct McpShared {
        const char *data;
        size_t len, at;
        void *owner;
        void (*ref)(void *owner);
        void (*unref)(void *owner);
} McpShared;

/* What a session hands its transport: the message and the facts needed to
 * route it, so that no transport reads JSON-RPC. */
typedef struct McpMessage {
        McpMessageKind kind;
        /* One complete JSON-RPC message or batch array, serialized, without
         * a trailing newline; NULL for MCP_MESSAGE_UNANSWERED. */
        const char *json;
        size_t len;
        /* The origin given to mcp_session_handle() with what this answers
         * or concerns (a progress notification: its call's request). 0 for
         * what concerns no request of the peer. */
        uint64_t origin;
        /* Borrowed. The id of the request answered (RESPONSE) or concerned
         * (NOTIFICATION, UNANSWERED); NULL for a batch's replies, and for an
         * error about a message whose id could not be read. */
        json_object *id;
        int error_code;                 /* a RESPONSE that is an error: its code (jsonrpc.h); else 0 */
        /* What the core charged, refusably, for the bytes of this message
         * (a call's reply: json and room for one copy of it), to the
         * session's caller; NULL for none. The transport may take it over
         * (mem_charge_move()) for the copy it keeps; the core gives back
         * what is left once send returns. What is sent without one the
         * transport charges refusably itself: a notification that does not
         * fit is skipped, a reply replaced by a short error. */
        MemCharge *charge;
        /* Set (only for a transport with shared_parts) when json leaves
         * out a shared part; borrowed. */
        const McpShared *shared;
} McpMessage;

/* The whole text of m, json and its shared part together (malloc'd, with
 * a NUL), for a transport that must copy it after all; NULL on out of
 * memory. */
char *mcp_message_flatten(const McpMessage *m, size_t *ret_len);

/* How a session hands messages back to its transport. */
typedef struct McpTransport {
        /* Returns < 0 if the peer is gone. */
        int (*send)(McpSession *s, const McpMessage *m, void *userdata);
        /* It takes McpMessage.shared: a large part shared, not copied. */
        bool shared_parts;
} McpTransport;

/* Who is on the other end: for the journal, and for whose sandbox sessions
 * (session_create) it may use. */
typedef struct McpPeer {
        const char *transport;          /* "stdio", "unix", "http", "sse" */
        uid_t uid;                      /* (uid_t) -1 when unknown */
        pid_t pid;                      /* 0 when unknown */
        /* Who the transport vouches for: "uid:1000" (polkit-checked), "http:token"
         * (it presented the token), "http:loopback" (no token configured). NULL:
         * "uid:N" from uid, else the transport's name. Sandbox sessions are the
         * caller's. */
        const char *caller;
        /* This MCP session is one the client keeps (a 2025 Mcp-Session-Id, an
         * SSE stream): sandbox sessions made in it are its alone, and close
         * when it ends. Not for stdio (the uid's) nor stateless requests. */
        bool scoped;
} McpPeer;

/* What a transport may need to know of an incoming message before it picks
 * a session for it (the HTTP transport: the era, whether an answer will
 * come, and what its headers must mirror). Strings and id point into msg. */
typedef struct McpInbound {
        json_object *msg;               /* the parsed message; NULL for the JSON literal null */
        /* When it is refused unparsed: the error to answer with (id null).
         * -EBADMSG: JSONRPC_PARSE_ERROR, -E2BIG: JSONRPC_INVALID_REQUEST. */
        char *error;
        int error_code;
        bool batch;
        unsigned n_requests;            /* messages that get a reply (unless the client cancels them) */
        bool progress;                  /* a request asks for progress notifications */
        /* Of a single message; NULL where it has none: */
        const char *method;             /* of a request or a notification */
        json_object *id;                /* a valid id, for errors the transport answers itself */
        const char *protocol_version;   /* its _meta's protocol version, if a string */
        const char *name;               /* what HTTP's Mcp-Name mirrors: the tool, prompt or resource */
        const char *param_session;      /* what Mcp-Param-Session mirrors: a tools/call's "session" string */
        bool stateless;                 /* a request of the stateless revision (2026-07-28) */
} McpInbound;

/* A request's _meta.progressToken is echoed in every progress notification
 * of its call, once a second for as long as it runs, into a stream the
 * client may not read: so its size is bounded where it comes in. The spec
 * says a token is a string or an integer (JSON-RPC ids' types), chosen by
 * the client only to tell its requests apart: 256 bytes is room for any
 * UUID, URL-ish or counter scheme a client uses (the SDKs send small
 * integers), and an integer must be one every JSON peer reads exactly,
 * within +-(2^53 - 1) (RFC 8259, I-JSON). */
#define MCP_PROGRESS_TOKEN_MAX 256
#define MCP_PROGRESS_TOKEN_INT_MAX ((INT64_C(1) << 53) - 1)
/* 1: token is a progress token we echo; 0: absent or of another type (no
 * progress, as before: never echoed); -E2BIG: a string or integer past the
 * bounds above (the request is refused: invalid params). */
int mcp_progress_token_check(json_object *token);

/* Parses data as mcp_session_handle() does, with ret->error and
 * ret->error_code set (mcp_inbound_done() frees them) on -EBADMSG, when it
 * is not one JSON value or nests too deeply (HTTP: 400), and on -E2BIG, when
 * it has more values than a message may (jsonrpc.h; HTTP: 413); -ENOMEM. */
int mcp_inbound_parse(const char *data, size_t len, McpInbound *ret);
void mcp_inbound_done(McpInbound *i);

int mcp_server_new(sd_event *e, const McpServerConfig *config, McpServer **ret);
McpServer *mcp_server_free(McpServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(McpServer *, mcp_server_free);

int mcp_session_new(McpServer *server, const McpTransport *transport, void *userdata, const McpPeer *peer,
                    McpSession **ret);

/* Handles one complete incoming message (an object, or an array where the
 * negotiated revision allows batches). Replies, notifications and results of
 * runs go out through transport->send, now or later from the event loop,
 * each with origin: the transport's own tag for where this message came
 * from (an HTTP POST), 0 if it needs none. Returns < 0 only for a local
 * failure (out of memory); protocol errors are answered on the wire. */
int mcp_session_handle(McpSession *s, const char *data, size_t len, uint64_t origin);

/* The same for a message the transport parsed already with
 * mcp_inbound_parse(), so that it is parsed once: takes i->msg and clears
 * the fields that point into it (the counts and flags stay). One refused
 * unparsed (i->error) is answered with its error. */
int mcp_session_handle_inbound(McpSession *s, McpInbound *i, uint64_t origin);

/* Frees the session. Calls still queued are dropped without starting; runs
 * in progress are cancelled (their units stopped): nobody can receive them.
 * May be called from inside transport->send (the session then goes quiet at
 * once and the rest happens from the event loop), and after
 * mcp_server_free(), which leaves sessions inert but allocated. */
McpSession *mcp_session_free(McpSession *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(McpSession *, mcp_session_free);

/* Who the session is for (McpPeer.caller, or what stands in for it): what
 * the transport charges the bytes it holds for the session to. */
const char *mcp_session_caller(const McpSession *s);

/* Calls queued or running for this session (transports use it for idle exit). */
unsigned mcp_session_in_flight(const McpSession *s);

/* Optional: called each time mcp_session_in_flight() drops to zero, also
 * when no message goes out (a cancelled call, whose unit stopped), so that a
 * transport waiting for idle need not poll. A call's final reply is sent
 * after it stopped counting, so send already sees zero there. Like send, the
 * callback may free the session. NULL unsets. */
typedef void (*mcp_session_idle_t)(McpSession *s, void *userdata);
void mcp_session_set_idle_callback(McpSession *s, mcp_session_idle_t callback);

/* Negotiated protocol revision ("2025-06-18", …), or NULL before initialize.
 * A session that never initialized but was served stateless requests says
 * "2026-07-28". */
const char *mcp_session_protocol_version(const McpSession *s);

/* Sandbox sessions made in this (scoped) MCP session that may still live:
 * state of its client that ends with it. */
unsigned mcp_session_sandbox_sessions(const McpSession *s);

/* Runs queued or in progress over all sessions. */
unsigned mcp_server_in_flight(const McpServer *s);

/* The call queue of all sessions, for health and metrics. */
typedef struct McpQueueStats {
        unsigned running, waiting;
        uint64_t max_running, max_waiting;
} McpQueueStats;
void mcp_server_queue_stats(const McpServer *s, McpQueueStats *ret);

/* Sandbox sessions this process made that may still live: they end when it
 * exits, so it should not exit idle while there are any. */
unsigned mcp_server_sandbox_sessions(const McpServer *s);

/* Tasks (MCP tasks) held: running or with a result not yet expired. They
 * end when this process exits, so it should not exit idle while any live. */
unsigned mcp_server_tasks(const McpServer *s);

typedef struct McpTaskStats {
        unsigned working, completed, failed, cancelled;         /* held now */
        uint64_t ended_completed, ended_failed, ended_cancelled; /* since start */
} McpTaskStats;
void mcp_server_task_stats(const McpServer *s, McpTaskStats *ret);

/* Calls with "packages" since start, for /metrics: the installer's
 * verdicts (RESULT_FRAME_PACKAGES "ok"), the calls the front end refused
 * before asking for a unit, and the installs' time (their duration_us). */
typedef struct McpPackageStats {
        uint64_t ok, failed, refused;
        uint64_t install_usec;
} McpPackageStats;
void mcp_server_package_stats(const McpServer *s, McpPackageStats *ret);

/* The caller ("http:token:NAME") is no more: its token was removed or
 * changed. Its tasks end (their runs stopped) and are forgotten, its
 * sandbox sessions are closed through the broker. Its MCP sessions are the
 * transport's to end, first. How many of each ended. */
typedef struct McpCallerEnded {
        unsigned tasks, sandbox_sessions;
} McpCallerEnded;
void mcp_server_end_caller(McpServer *s, const char *caller, McpCallerEnded *ret);

/* Those of one caller ("http:token:NAME"), for /metrics. */
unsigned mcp_server_caller_sandbox_sessions(const McpServer *s, const char *caller);
