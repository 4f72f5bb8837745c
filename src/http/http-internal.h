/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the HTTP transport's files; not for the rest of the daemon.
 *
 * Who calls whom (A -> B: A calls B's functions), always downward:
 *
 *   http-server.c (MHD callbacks, access gate, lifecycle, callers' tokens)
 *       -> streamable.c, legacy-sse.c, http-status.c (the routes)
 *       -> http-session.c, http-conn.c, http-request.c, http-pump.c
 *   streamable.c, legacy-sse.c -> http-session.c, http-request.c
 *   http-session.c, http-status.c -> http-request.c
 *   http-session.c -> http-pump.c (the daemon's idle exit hears of sessions)
 *   http-request.c, http-conn.c -> http-pump.c (MHD must run again after a
 *       resume, or after a connection closed while MHD sat at its limit)
 *
 * Only http-server.c names the routes' handlers.
 * http-request.c reads HttpServer (loop, budget, suspended list) and
 * HttpSession (caller, id, stream count) fields but calls neither; the
 * server takes a request off its session and the status line
 * (http_session_request_gone(), http_status_request_gone()) before
 * http_request_free(). */

#include <json-c/json.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "http-auth.h"
#include "http-request.h"
#include "http-server.h"
#include "list.h"
#include "mcp-server.h"
#include "json-util.h"
#include "node-id.h"

typedef struct HttpSession HttpSession;
typedef struct HttpConn HttpConn;

/* A refused connection we read from a little longer (http-conn.c); the
 * oldest goes when more are refused. */
#define HTTP_LINGER_MAX 64U
typedef struct HttpLinger {
        int fd;
        uint64_t until;
} HttpLinger;

/* How long work has waited with nothing done about it (http-conn.c). */
typedef struct HttpLiveness {
        uint64_t pending_since;         /* the backlog was first seen non-empty; 0: empty */
        uint64_t n_accepted;            /* HttpServer.n_accepted then */
} HttpLiveness;

typedef enum HttpSessionKind {
        HTTP_SESSION_STREAMABLE,        /* 2025 revisions: Mcp-Session-Id */
        HTTP_SESSION_STATELESS,         /* 2026-07-28: one request, no id */
        HTTP_SESSION_LEGACY,            /* 2024-11-05 HTTP+SSE: lives as long as its /sse stream */
} HttpSessionKind;

struct HttpServer {
        sd_event *event;
        McpServer *mcp;
        struct MHD_Daemon *mhd;
        int listen_fd;
        sd_event_source *mhd_io, *mhd_timer, *sweep_timer;
        HttpServerConfig config;
        HttpAuth auth;

        unsigned n_connections;
        unsigned mhd_limit;             /* MHD's own limit: ours plus some slack */
        HttpConn *conns;                /* every connection MHD holds, with its deadline */
        sd_event_source *conn_tick;     /* deadlines, lingering refusals, log summaries */
        sd_event_source *overflow_io;   /* the listening socket while MHD is at its limit */
        uint64_t overflow_paused_until;
        HttpLinger lingering[HTTP_LINGER_MAX];
        size_t n_lingering;
        uint64_t n_accepted;            /* by MHD or by us, to refuse */
        uint64_t n_refused, n_refused_logged, n_expired, n_expired_logged, last_refusal_log;
        HttpLiveness liveness;
        HttpSession *sessions;
        unsigned n_sessions;            /* streamable and legacy ones: the limited kinds */
        HttpRequest *suspended;         /* every one must be resumed before MHD stops */
        http_status_t status_handler;   /* /healthz, /metrics */
        void *status_userdata;
        HttpRequest *status_waiting;    /* for the handler's answer */

        http_server_activity_t on_activity;
        void *userdata;
        bool quiesced, stopping;
        bool run_again;                 /* MHD_run() wanted from the loop */
};

struct HttpSession {
        HttpServer *server;
        LIST_FIELDS(HttpSession, sessions);     /* in HttpServer.sessions */
        HttpSessionKind kind;
        McpSession *mcp;
        char id[NODE_ID_HANDLE_MAX];    /* Mcp-Session-Id or sessionId= (node_id_mint()); empty for stateless */
        char token_name[HTTP_TOKEN_NAME_MAX + 1];       /* of the request that made it; "" without a token */
        HttpRequest *requests;          /* POSTs waiting for a reply */
        HttpRequest *stream;            /* GET /mcp or /sse */
        HttpRequest *current;           /* the POST being handed to the core right now */
        unsigned n_streams;
        uint64_t last_used;
        uint64_t last_mcp_origin;       /* the last HttpRequest.route.mcp_origin handed out */
};

/* http-pump.c: MHD driven by the loop */
int http_pump_init(HttpServer *h);
void http_pump_done(HttpServer *h);
/* MHD_run() from the loop, as soon as it gets there (never from inside MHD). */
void http_pump_run_soon(HttpServer *h);
/* Connections or sessions came or went: the daemon's idle exit hears of it. */
void http_pump_activity(HttpServer *h);

/* http-conn.c: connection deadlines, overflow refusals, liveness */
int http_conns_init(HttpServer *h);
void http_conns_done(HttpServer *h);
void http_conn_started(HttpServer *h, struct MHD_Connection *c, void **socket_context);
void http_conn_closed(HttpServer *h, void **socket_context);
/* The headers are in: the body's deadline starts. */
void http_conn_request_begins(HttpRequest *req);
/* The body is in: the reply is ours to give, no deadline. */
void http_conn_request_received(HttpRequest *req);
/* A response is done; a kept-alive connection waits for its next request. */
void http_conn_request_completed(HttpServer *h, struct MHD_Connection *c);
/* The decision of http_server_is_stuck(), for tests: pending tells whether the
 * backlog holds connections, oldest_expired when the oldest connection that
 * passed its deadline was shut down (0: none). */
bool http_liveness_check(HttpLiveness *l, bool pending, uint64_t n_accepted, uint64_t oldest_expired, uint64_t now,
                         const char **ret_reason);

/* http-session.c */
/* For the caller of req (the token it passed). */
int http_session_new(HttpServer *h, HttpSessionKind kind, HttpRequest *req, HttpSession **ret);
HttpSession *http_session_free(HttpSession *s);
/* The session of that id, if the token it was made with is token_name ("" or NULL: none). */
HttpSession *http_session_find(HttpServer *h, HttpSessionKind kind, const char *id, const char *token_name);
/* Room for one more limited session: if needed, ends the longest idle one
 * that holds nothing (no request, no stream, no call, no live sandbox
 * session). False if every session holds something: nobody's state is
 * destroyed for a newcomer, who gets 503 and Retry-After. One made with
 * req's token goes before anyone else's. */
bool http_session_make_room(HttpServer *h, HttpRequest *req);
void http_session_touch(HttpSession *s);
/* Hands one parsed message to the core (which takes info->msg) with req as
 * the target of its replies. */
int http_session_handle(HttpSession *s, HttpRequest *req, McpInbound *info);
/* Ties req to the session: a stream, or a POST carrying requests, which
 * waits for their replies. */
void http_session_add_request(HttpSession *s, HttpRequest *req);
/* The request is over (completed or gone): detaches it, and ends what hangs on it. */
void http_session_request_gone(HttpRequest *req);
void http_sessions_sweep(HttpServer *h);

/* streamable.c: /mcp */
mhd_result streamable_handle(HttpRequest *req);

/* http-status.c: /healthz and /metrics */
mhd_result http_status_handle(HttpRequest *req);
void http_status_request_gone(HttpRequest *req);

/* legacy-sse.c: /sse and /messages */
mhd_result legacy_sse_open(HttpRequest *req);
mhd_result legacy_messages_post(HttpRequest *req);
