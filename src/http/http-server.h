/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The HTTP transports of mcp-execd on libmicrohttpd, inside the daemon's
 * sd-event loop (MHD's epoll fd, no threads): Streamable HTTP at /mcp (the
 * 2025 revisions with Mcp-Session-Id, and the stateless 2026-07-28) and the
 * legacy HTTP+SSE transport (GET /sse, POST /messages). Every request is
 * checked for Host, Origin and the token before anything else. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "http-auth.h"
#include "http-request.h"
#include "mem-budget.h"
#include "macro.h"
#include "mcp-server.h"

typedef struct HttpServerConfig {
        size_t max_body;                /* bytes of one POST body (413 past it) */
        unsigned max_connections;       /* past it: 503, from the access handler or, past MHD's, at accept */
        unsigned max_sessions;          /* with Mcp-Session-Id, and legacy SSE ones; at most max_connections/2 */
        unsigned max_streams_per_session;
        unsigned header_timeout_s;      /* request line and headers, from the connection's start */
        unsigned connection_timeout_s;  /* the body, from the headers; and idle clients (suspended
                                         * requests, waiting for a reply, are exempt) */
        uint64_t session_idle_usec;     /* a session nobody used this long ends */
        uint64_t keepalive_usec;        /* SSE comment interval */
        MemBudget *budget;            /* request bodies of all connections; NULL: unbounded */
} HttpServerConfig;

#define HTTP_SERVER_CONFIG_DEFAULTS                             \
        {                                                       \
                .max_connections = 256,                         \
                .max_sessions = 128,                            \
                .max_streams_per_session = 16,                  \
                .header_timeout_s = 10,                         \
                .connection_timeout_s = 30,                     \
                .session_idle_usec = 30 * 60 * USEC_PER_SEC,    \
                .keepalive_usec = 15 * USEC_PER_SEC,            \
        }

/* Called when connections or sessions come or go (for idle exit). */
typedef void (*http_server_activity_t)(HttpServer *h, void *userdata);

/* GET /healthz and GET /metrics are answered by whoever knows the node's
 * state (HttpStatusKind, HttpStatusAnswer, http_status_t: in
 * http-request.h, beside the request that carries them). Without a handler
 * both are 404. */
void http_server_set_status_handler(HttpServer *h, http_status_t handler, void *userdata);
/* The handler can answer now: the requests waiting for it are asked again. */
void http_server_status_ready(HttpServer *h);

/* What /metrics shows of the HTTP side. */
typedef struct HttpServerStats {
        unsigned connections;           /* open now */
        uint64_t accepted;              /* since start, also those refused at once */
        uint64_t refused;               /* 503 at the connection limit */
        uint64_t expired;               /* closed at their header or body deadline */
        unsigned sessions_streamable;   /* Mcp-Session-Id sessions */
        unsigned sessions_legacy;       /* legacy SSE sessions */
        unsigned streams;               /* GET /mcp and /sse streams */
} HttpServerStats;

void http_server_get_stats(const HttpServer *h, HttpServerStats *ret);

/* Per caller (token name), for /metrics: one entry per configured name
 * ("default" for the single token first), or "loopback" without tokens; so
 * as many as there are names, never one per client. */
typedef struct HttpCallerStats {
        char name[HTTP_TOKEN_NAME_MAX + 1];
        unsigned sessions;              /* HTTP sessions (streamable and legacy) made with it */
        unsigned sandbox_sessions;      /* sandbox sessions of its caller that may live */
} HttpCallerStats;

int http_server_get_caller_stats(const HttpServer *h, HttpCallerStats **ret, size_t *ret_n);

/* Replaces the named tokens (taken; see http_auth_set_named()). Requests
 * from now on are checked against the new set. A name the new set drops or
 * gives another token is revoked: its caller's sessions end (calls
 * stopped, streams closed), and so do its tasks and sandbox sessions; the
 * journal says how many. */
int http_server_set_named_tokens(HttpServer *h, HttpTokens *named, const char **ret_error);

/* Serves the listening socket fd (taken: closed by http_server_free()). auth
 * is taken too (its strings owned by the server afterwards). */
int http_server_new(sd_event *e, McpServer *mcp, int listen_fd, const HttpServerConfig *config, HttpAuth *auth,
                    http_server_activity_t on_activity, void *userdata, HttpServer **ret);
HttpServer *http_server_free(HttpServer *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(HttpServer *, http_server_free);

/* No connection and no session: nothing would be lost by exiting. */
bool http_server_is_idle(const HttpServer *h);

/* Stops accepting; what waits in the backlog stays for the next instance. */
void http_server_quiesce(HttpServer *h);

/* True if connections wait in the listening socket's backlog. */
bool http_server_has_pending(HttpServer *h);

/* True if the server holds work it is not doing: connections have waited in
 * the backlog for a while with none accepted, or one past its deadline was not
 * closed. Then libmicrohttpd is no longer driven, and only a restart helps.
 * Call it now and then (each watchdog period): it compares with the last call.
 * *ret_reason says what, in a few words. */
bool http_server_is_stuck(HttpServer *h, const char **ret_reason);

/* A listening socket for MCP_EXEC_ADDR (non-blocking, close-on-exec). */
int http_listen(const char *addr, int *ret_fd);

/* What the socket is bound to: loopback or not, the port, and the address as
 * a Host header would spell it ("127.0.0.1", "[::1]"). */
int http_socket_describe(int fd, bool *ret_loopback, uint16_t *ret_port, char **ret_host);
