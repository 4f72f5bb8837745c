/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One HTTP request of the transport (http-request.c): its state, the reply
 * it gives and its suspension while it waits. Internal to src/http, but
 * for the status handler's types, which http-server.h hands on. */

#include <json-c/json.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "buffer.h"
#include "http-tokens.h"
#include "list.h"
#include "mcp-server.h"
#include "mem-budget.h"

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

typedef struct HttpServer HttpServer;
typedef struct HttpRequest HttpRequest;
typedef struct HttpSession HttpSession;

/* GET /healthz and GET /metrics, answered by whoever knows the node's state
 * (the daemon: the broker's view, the queue). /healthz is for load
 * balancers, which send no token and often no Host: anyone gets the status
 * code, the details only a caller who passed the token, Host and Origin
 * checks. /metrics is checked like /mcp. Without a handler both are 404. */
typedef enum HttpStatusKind {
        HTTP_STATUS_HEALTH,
        HTTP_STATUS_METRICS,
} HttpStatusKind;

typedef struct HttpStatusAnswer {
        unsigned status;                /* 200, 503, ... */
        const char *content_type;       /* static */
        char *body;                     /* taken */
        size_t size;
} HttpStatusAnswer;

/* 1 with *ret filled; 0 if the answer is not there yet (the request waits
 * for http_server_status_ready(), then asks again); < 0 on failure (500). */
typedef int (*http_status_t)(HttpServer *h, HttpStatusKind kind, bool details, HttpStatusAnswer *ret, void *userdata);

typedef enum HttpRequestState {
        REQUEST_RECEIVING,              /* headers checked, body coming */
        REQUEST_WAITING,                /* suspended until its reply is there */
        REQUEST_DONE,                   /* a response is queued */
} HttpRequestState;

/* What became of the body as it came in. */
typedef enum HttpBodyVerdict {
        HTTP_BODY_KEPT,                 /* read into HttpRequest.body */
        HTTP_BODY_TOO_LARGE,            /* past max_body: read on, kept nothing, 413 at the end */
        HTTP_BODY_OVER_BUDGET,          /* past the memory budget: read on, kept nothing, 503 */
} HttpBodyVerdict;

/* GET /healthz or /metrics. */
typedef struct HttpStatusRoute {
        bool wanted;                    /* the request is for one of them */
        bool details;                   /* the reasons, not just the verdict */
        bool waiting;                   /* in HttpServer.status_waiting */
        HttpStatusKind kind;
} HttpStatusRoute;

/* A complete reply for the next call of the access handler. */
typedef struct HttpReply {
        bool ready;
        bool session_header;            /* add Mcp-Session-Id (initialize) */
        unsigned status;
        char *data;
        size_t size;
        const char *type;
        /* Set: data is the reply around this part, which is sent from its
         * one copy (a task's result); a reference is held. */
        McpShared shared;
} HttpReply;

/* An SSE response. */
typedef struct HttpSse {
        bool on;                        /* the response is a stream */
        bool end;                       /* ends once buf is sent */
        char *buf;
        size_t size, off, alloc;
        /* The end of what the client is reading: the first message queued
         * after it had read everything, and all that was queued when it
         * got past that. What lies behind counts against SSE_BACKLOG_MAX. */
        size_t mark;
        sd_event_source *keepalive;
} HttpSse;

/* Routing of what the session sends. */
typedef struct HttpRoute {
        HttpSession *session;
        bool pending;                   /* in session->requests */
        bool is_stream;                 /* the GET /mcp or /sse stream of its session */
        uint64_t mcp_origin;            /* what the core tags its replies and progress with */
} HttpRoute;

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

        Buffer body;                    /* limit: HttpServerConfig.max_body */
        size_t budget_held;             /* of HttpServer.budget, for the body */
        HttpBodyVerdict body_verdict;

        LIST_FIELDS(HttpRequest, susp);         /* in HttpServer.suspended */
        bool suspended, peer_gone;
        sd_event_source *hangup;

        HttpStatusRoute status;
        LIST_FIELDS(HttpRequest, status);       /* in HttpServer.status_waiting */

        HttpReply reply;
        HttpSse sse;
        /* The reply or the SSE buffer, charged to the MCP session's caller
         * in the memory budget until sent (a reply's goes with it to MHD). */
        MemCharge held;

        HttpRoute route;
        HttpRequest *sess_prev, *sess_next;     /* in route.session->requests */
};

/* A request for the connection MHD gave us: url and method stay MHD's. */
int http_request_new(HttpServer *h, struct MHD_Connection *conn, const char *url, const char *method,
                     HttpRequest **ret);
/* Frees what the request holds. Take it off its session and the status
 * wait line first (http_session_request_gone(), http_status_request_gone()). */
HttpRequest *http_request_free(HttpRequest *req);
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
/* Queues an SSE event, charged (refusably) to the session's caller in the
 * memory budget, taking donor's charge over first (NULL: none; see
 * McpMessage.charge). -EBUSY when the budget cannot hold it (nothing
 * queued; the stream goes on); -ENOBUFS when the client does not read (then
 * the stream is dropped and its bytes freed); -EPIPE when it has ended. */
int http_request_sse_event(HttpRequest *req, const char *event, const char *data, size_t len, MemCharge *donor);
void http_request_sse_finish(HttpRequest *req);
/* Queues the reply stored by http_request_set_reply(). */
mhd_result http_request_queue_reply(HttpRequest *req);
/* Stores a complete reply for a suspended or in-progress request. body
 * taken. Charged as http_request_sse_event() (donor likewise): -EBUSY,
 * body freed and nothing stored, when the budget cannot hold it. */
int http_request_set_reply(HttpRequest *req, unsigned status, const char *type, char *body, size_t size,
                           MemCharge *donor);
/* The same for body around a shared part (McpShared), of which it takes a
 * reference rather than a copy; only body's bytes are charged here. */
int http_request_set_reply_shared(HttpRequest *req, unsigned status, const char *type, char *body, size_t size,
                                  const McpShared *shared, MemCharge *donor);
/* In place of a reply that did not fit: a short JSON-RPC "server busy"
 * error for request id (borrowed, NULL: null), uncharged (small, once per
 * request). */
int http_request_set_busy_reply(HttpRequest *req, json_object *id);
const char *http_request_header(HttpRequest *req, const char *name);
void http_request_log_peer(HttpRequest *req, char *buf, size_t size);
/* Parses the POST body into *ret, once, and frees the body: as
 * mcp_inbound_parse(). http_request_refuse_unparsed() then answers what it
 * refused: 400 unreadable or nested too deeply, 413 too many values. */
int http_request_parse(HttpRequest *req, McpInbound *ret);
mhd_result http_request_refuse_unparsed(HttpRequest *req, int r, const McpInbound *i);
