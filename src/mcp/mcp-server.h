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
#include "mcp-session.h"
#include "mem-budget.h"

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
