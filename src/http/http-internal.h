/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the HTTP transport's files; not for the rest of the daemon. */

#include <json-c/json.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "http-auth.h"
#include "http-server.h"
#include "list.h"
#include "mcp-server.h"
#include "json-cleanup.h"
#include "node-id.h"

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

typedef struct HttpRequest HttpRequest;
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

typedef enum HttpRequestState {
        REQUEST_RECEIVING,              /* headers checked, body coming */
        REQUEST_WAITING,                /* suspended until its reply is there */
        REQUEST_DONE,                   /* a response is queued */
} HttpRequestState;

struct HttpRequest {
        HttpServer *server;
        struct MHD_Connection *conn;
        HttpRequestState state;
        const char *method, *url;
        const char *origin;             /* an allowed Origin, for CORS headers; owned by MHD */
        /* The name of the token it passed with ("default" for the single
         * one); empty when no token is required. A copy: a reload may drop
         * the token while the request waits. */
        char token_name[HTTP_TOKEN_NAME_MAX + 1];

        char *body;
        size_t body_size, body_alloc;
        size_t budget_held;             /* of HttpServer.budget, for the body */
        bool too_large, over_budget;

        LIST_FIELDS(HttpRequest, susp);         /* in HttpServer.suspended */
        /* GET /healthz or /metrics. */
        bool is_status, status_details, status_waiting;
        HttpStatusKind status_kind;
        LIST_FIELDS(HttpRequest, status);       /* in HttpServer.status_waiting */
        bool suspended, peer_gone;
        sd_event_source *hangup;

        /* A complete reply for the next call of the access handler. */
        bool reply_ready;
        unsigned reply_status;
        char *reply;
        size_t reply_size;
        const char *reply_type;
        bool reply_session_header;      /* add Mcp-Session-Id (initialize) */

        /* An SSE response. */
        bool sse, sse_end;
        char *out;
        size_t out_size, out_off, out_alloc;
        /* The reply or the SSE buffer, charged to the MCP session's caller
         * in the memory budget until sent (a reply's goes with it to MHD). */
        MemCharge held;
        sd_event_source *keepalive;

        /* Routing of what the session sends. */
        HttpSession *session;
        HttpRequest *sess_prev, *sess_next;     /* in session->requests */
        bool pending;                   /* in session->requests */
        bool is_stream;                 /* the GET /mcp or /sse stream of its session */
        uint64_t mcp_origin;            /* what the core tags its replies and progress with */
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
        uint64_t last_mcp_origin;       /* the last HttpRequest.mcp_origin handed out */
};

/* http-server.c */
void http_server_activity(HttpServer *h);
/* MHD_run() from the loop, as soon as it gets there (never from inside MHD). */
void http_server_run_soon(HttpServer *h);
void http_request_suspend(HttpRequest *req);
void http_request_resume(HttpRequest *req);
/* Queues resp (taken) with the CORS headers the request needs. */
mhd_result http_request_queue(HttpRequest *req, unsigned status, struct MHD_Response *resp);
/* A JSON-RPC error with id null as the body. */
mhd_result http_request_error(HttpRequest *req, unsigned status, int code, const char *message);
/* A body already serialized (taken). */
mhd_result http_request_json(HttpRequest *req, unsigned status, char *body, size_t size, const char *session_id);
mhd_result http_request_empty(HttpRequest *req, unsigned status);
/* Turns the request into an SSE response; initial is sent first (may be
 * NULL). Attach it to its session first: the stream counts there. */
mhd_result http_request_start_sse(HttpRequest *req, const char *initial);
/* Queues an SSE event; -ENOBUFS when the client does not read (then the stream is dropped). */
int http_request_sse_event(HttpRequest *req, const char *event, const char *data, size_t len);
void http_request_sse_finish(HttpRequest *req);
/* Queues the reply stored by http_request_set_reply(). */
mhd_result http_request_queue_reply(HttpRequest *req);
/* Stores a complete reply for a suspended or in-progress request. body taken. */
void http_request_set_reply(HttpRequest *req, unsigned status, const char *type, char *body, size_t size);
const char *http_request_header(HttpRequest *req, const char *name);
void http_request_log_peer(HttpRequest *req, char *buf, size_t size);

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
/* Parses the POST body into *ret, once, and frees the body: as
 * mcp_inbound_parse(). http_request_refuse_unparsed() then answers what it
 * refused: 400 unreadable or nested too deeply, 413 too many values. */
int http_request_parse(HttpRequest *req, McpInbound *ret);
mhd_result http_request_refuse_unparsed(HttpRequest *req, int r, const McpInbound *i);

/* http-status.c: /healthz and /metrics */
mhd_result http_status_handle(HttpRequest *req);
void http_status_request_gone(HttpRequest *req);

/* legacy-sse.c: /sse and /messages */
mhd_result legacy_sse_open(HttpRequest *req);
mhd_result legacy_messages_post(HttpRequest *req);
