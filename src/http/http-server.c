/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "http-server.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "http-internal.h"
#include "http-util.h"
#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "strv.h"
#include "util.h"

/* Per connection; the request line and headers must fit (431 past it). */
#define MHD_MEMORY_LIMIT ((size_t) 64 * 1024)

/* MHD's own limit is this much higher, so that the first clients past ours
 * get a 503 instead of a closed connection. */
#define CONNECTION_SLACK 16U

#define ALLOWED_HEADERS                                                                                          \
        "Content-Type, Accept, Authorization, X-MCP-AUTH, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, " \
        "Mcp-Method, Mcp-Name"

void http_server_get_stats(const HttpServer *h, HttpServerStats *ret) {
        assert(ret);

        *ret = (HttpServerStats) {};
        if (!h)
                return;
        *ret = (HttpServerStats) {
                .connections = h->n_connections,
                .accepted = h->n_accepted,
                .refused = h->n_refused,
                .expired = h->n_expired,
        };
        LIST_FOREACH(sessions, s, h->sessions) {
                if (s->kind == HTTP_SESSION_STREAMABLE)
                        ret->sessions_streamable++;
                else if (s->kind == HTTP_SESSION_LEGACY)
                        ret->sessions_legacy++;
                if (s->stream)
                        ret->streams++;
        }
}

bool http_server_is_idle(const HttpServer *h) {
        return !h || (h->n_connections == 0 && !h->sessions);
}

void http_server_quiesce(HttpServer *h) {
        if (!h || h->quiesced || !h->mhd)
                return;
        /* Hands the socket back without shutdown(): systemd's copy stays
         * listening, and what is queued there starts the next instance. */
        (void) MHD_quiesce_daemon(h->mhd);
        h->quiesced = true;
        if (h->overflow_io)
                (void) sd_event_source_set_enabled(h->overflow_io, SD_EVENT_OFF);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
        HttpRequest *req = *con_cls;

        assert(cls);
        assert(c);
        assert(con_cls);

        *con_cls = NULL;
        if (req && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
                log_debug("HTTP request %s %s ended early (%i).", req->method, req->url, (int) toe);
        if (req) {
                /* Off its session and the status wait line first: what
                 * hangs on it ends there (http-request.c knows neither). */
                http_status_request_gone(req);
                http_session_request_gone(req);
                http_request_free(req);
        }
        if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
                http_conn_request_completed(cls, c);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        HttpServer *h = cls;

        assert(cls);
        assert(c);
        assert(socket_context);

        if (code == MHD_CONNECTION_NOTIFY_STARTED)
                http_conn_started(h, c, socket_context);
        else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
                http_conn_closed(h, socket_context);
        http_pump_activity(h);
}

_printf_(2, 0) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        char buf[512];

        /* MHD's own diagnostics: protocol errors of clients, mostly. */
        (void) vsnprintf(buf, sizeof buf, fmt, ap);
        buf[strcspn(buf, "\n")] = 0;
        log_debug("libmicrohttpd: %s", buf);
}

static void log_refusal(HttpRequest *req, unsigned status, const char *why) {
        char peer[64];

        assert(req);
        assert(why);

        http_request_log_peer(req, peer, sizeof peer);
        log_struct(LOG_NOTICE,
                   "MESSAGE=HTTP %s %s from %s refused (%u): %s", req->method, req->url, peer, status, why,
                   "MCP_TRANSPORT=http",
                   "MCP_HTTP_METHOD=%s", req->method,
                   "MCP_HTTP_PATH=%s", req->url,
                   "MCP_HTTP_STATUS=%u", status,
                   "MCP_HTTP_PEER=%s", peer,
                   "MCP_DECISION=%s", "denied");
}

/* The Host rule (http-auth.h), and Host naming the address the client
 * connected to. */
static bool host_ok(HttpServer *h, struct MHD_Connection *conn) {
        const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
        const union MHD_ConnectionInfo *i;
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;

        assert(h);
        assert(conn);

        if (http_auth_host_ok(&h->auth, host))
                return true;
        i = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        return i && getsockname(i->connect_fd, (struct sockaddr *) &ss, &len) >= 0 &&
               http_auth_host_is_address(host, (struct sockaddr *) &ss);
}

/* /healthz and /metrics take no body; one sent anyway is refused unread
 * (/healthz answers anyone: nobody may make us buffer for it). */
static mhd_result status_begin(HttpRequest *req, HttpStatusKind kind, bool details) {
        const char *cl = http_request_header(req, "Content-Length");

        assert(req);

        if (!streq(req->method, "GET") && !streq(req->method, "HEAD"))
                return http_request_error(req, MHD_HTTP_METHOD_NOT_ALLOWED, JSONRPC_SERVER_ERROR, "Method Not Allowed");
        if ((cl && !streq(cl, "0")) || http_request_header(req, "Transfer-Encoding"))
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, JSONRPC_SERVER_ERROR,
                                          "Bad Request: this endpoint takes no body");
        req->status.wanted = true;
        req->status.kind = kind;
        req->status.details = details;
        return MHD_YES;
}

static mhd_result preflight(HttpRequest *req) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);

        assert(req);

        if (!resp)
                return MHD_NO;
        if (MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS") == MHD_NO ||
            MHD_add_response_header(resp, "Access-Control-Allow-Headers", ALLOWED_HEADERS) == MHD_NO ||
            MHD_add_response_header(resp, "Access-Control-Max-Age", "600") == MHD_NO) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        return http_request_queue(req, MHD_HTTP_NO_CONTENT, resp);
}

static mhd_result refuse_over_budget(HttpRequest *req) {
        assert(req);

        log_refusal(req, MHD_HTTP_SERVICE_UNAVAILABLE, "too much request data in flight");
        return http_request_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                                  "Service Unavailable: too much request data in flight from all clients; "
                                  "retry later");
}

/* A POST's body type and announced size, before a byte of it is read. */
static mhd_result post_begin(HttpRequest *req) {
        HttpServer *h = req->server;
        const char *v;

        assert(req);

        if (!http_content_type_is(http_request_header(req, "Content-Type"), "application/json"))
                return http_request_error(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, JSONRPC_SERVER_ERROR,
                                          "Unsupported Media Type: Content-Type must be application/json");
        v = http_request_header(req, "Content-Length");
        if (v) {
                uint64_t l;
                if (parse_uint(v, &l) < 0 || l > h->config.max_body) {
                        log_refusal(req, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
                        return http_request_error(req, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST,
                                                  "Content Too Large: the message exceeds the size limit");
                }
                /* Announced: held for it now, so it cannot fail half way. */
                if (!mem_budget_grow_input(h->config.budget, 0, (size_t) l))
                        return refuse_over_budget(req);
                req->budget_held = (size_t) l;
        }
        return MHD_YES;
}

/* The token, in either header it may come in. */
static bool token_ok(HttpServer *h, struct MHD_Connection *conn) {
        assert(h);
        assert(conn);

        return http_auth_token_ok(&h->auth, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-MCP-AUTH"),
                                  MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"));
}

/* Everything decided from the request line and the headers, before the body
 * is read: a refusal here closes the connection unread. */
static mhd_result request_begin(HttpServer *h, struct MHD_Connection *conn, const char *url, const char *method,
                                void **con_cls) {
        const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
        bool is_mcp = streq(url, "/mcp"), is_sse = streq(url, "/sse"), is_messages = streq(url, "/messages");
        bool get = streq(method, "GET"), post = streq(method, "POST"), del = streq(method, "DELETE");
        bool is_health = h->status_handler && streq(url, "/healthz");
        bool is_metrics = h->status_handler && streq(url, "/metrics");
        const char *accept, *name = NULL;
        HttpRequest *req;

        assert(h);
        assert(conn);
        assert(url);
        assert(method);
        assert(con_cls);

        if (http_request_new(h, conn, url, method, &req) < 0)
                return MHD_NO;
        *con_cls = req;
        http_conn_request_begins(req);

        /* Load balancers' health checks carry no token and often no Host:
         * the verdict is for anyone, its reasons only for who passes every
         * check below. */
        if (is_health)
                return status_begin(req, HTTP_STATUS_HEALTH,
                                    host_ok(h, conn) && http_auth_origin_ok(&h->auth, origin) &&
                                            token_ok(h, conn));

        /* DNS rebinding: a browser tricked into calling us names the
         * attacker's host, and carries its Origin. */
        if (!host_ok(h, conn)) {
                log_refusal(req, MHD_HTTP_FORBIDDEN, "Host does not name this server");
                return http_request_error(req, MHD_HTTP_FORBIDDEN, JSONRPC_SERVER_ERROR,
                                          "Forbidden: Host header does not name this server");
        }
        if (!http_auth_origin_ok(&h->auth, origin)) {
                log_refusal(req, MHD_HTTP_FORBIDDEN, "Origin not allowed");
                return http_request_error(req, MHD_HTTP_FORBIDDEN, JSONRPC_SERVER_ERROR,
                                          "Forbidden: Origin not allowed");
        }
        req->origin = origin;
        /* A CORS preflight carries no credentials by design. */
        if (origin && streq(method, "OPTIONS"))
                return preflight(req);
        if (!http_auth_token_match(&h->auth, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-MCP-AUTH"),
                                   MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"), &name)) {
                log_refusal(req, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
                return http_request_error(req, MHD_HTTP_UNAUTHORIZED, MCP_ERROR_ACCESS_DENIED,
                                          "Unauthorized: missing or wrong token");
        }
        (void) snprintf(req->token_name, sizeof req->token_name, "%s", name ?: "");

        if (h->n_connections > h->config.max_connections) {
                log_refusal(req, MHD_HTTP_SERVICE_UNAVAILABLE, "too many connections");
                return http_request_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                                          "Service Unavailable: too many connections; retry later");
        }
        if (is_metrics)
                return status_begin(req, HTTP_STATUS_METRICS, true);
        if (!is_mcp && !is_sse && !is_messages)
                return http_request_error(req, MHD_HTTP_NOT_FOUND, JSONRPC_SERVER_ERROR,
                                          "Not Found: the MCP endpoint is /mcp");
        if ((is_mcp && !get && !post && !del) || (is_sse && !get) || (is_messages && !post))
                return http_request_error(req, MHD_HTTP_METHOD_NOT_ALLOWED, JSONRPC_SERVER_ERROR, "Method Not Allowed");

        accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
        if (is_mcp && post && (!http_accepts(accept, "application/json") || !http_accepts(accept, "text/event-stream")))
                return http_request_error(req, MHD_HTTP_NOT_ACCEPTABLE, JSONRPC_SERVER_ERROR,
                                          "Not Acceptable: Accept must list application/json and text/event-stream");
        if (is_mcp && get && !http_accepts(accept, "text/event-stream"))
                return http_request_error(req, MHD_HTTP_NOT_ACCEPTABLE, JSONRPC_SERVER_ERROR,
                                          "Not Acceptable: Accept must list text/event-stream");
        if (post)
                return post_begin(req);
        return MHD_YES;
}

static mhd_result dispatch(HttpRequest *req) {
        assert(req);

        if (req->status.wanted)
                return http_status_handle(req);
        if (streq(req->url, "/mcp"))
                return streamable_handle(req);
        if (streq(req->url, "/sse"))
                return legacy_sse_open(req);
        return legacy_messages_post(req);
}

static mhd_result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                            const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls) {
        HttpServer *h = cls;
        HttpRequest *req = *con_cls;
        mhd_result r;

        assert(cls);
        assert(conn);
        assert(url);
        assert(method);
        assert(upload_data_size);
        assert(con_cls);

        if (!req)
                return request_begin(h, conn, url, method, con_cls);
        if (req->peer_gone)
                return MHD_NO;

        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;

                *upload_data_size = 0;
                if (req->body_verdict != HTTP_BODY_KEPT || req->state != REQUEST_RECEIVING)
                        return MHD_YES;
                if (n > req->body.limit - req->body.size) {
                        /* Chunked, so not refused up front: read on, keep nothing,
                         * answer 413 at the end. */
                        req->body_verdict = HTTP_BODY_TOO_LARGE;
                        buffer_free(&req->body);
                        return MHD_YES;
                }
                if (req->body.size + n > req->budget_held) {
                        /* Chunked: held as it comes. */
                        if (!mem_budget_grow_input(h->config.budget, req->budget_held, req->body.size + n)) {
                                req->body_verdict = HTTP_BODY_OVER_BUDGET;
                                buffer_free(&req->body);
                                return MHD_YES;
                        }
                        req->budget_held = req->body.size + n;
                }
                if (buffer_append(&req->body, upload_data, n) < 0)
                        return MHD_NO;
                req->body.data[req->body.size] = 0;     /* the spare byte */
                return MHD_YES;
        }

        switch (req->state) {
        case REQUEST_RECEIVING:
                if (req->body_verdict == HTTP_BODY_TOO_LARGE) {
                        log_refusal(req, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
                        return http_request_error(req, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST,
                                                  "Content Too Large: the message exceeds the size limit");
                }
                if (req->body_verdict == HTTP_BODY_OVER_BUDGET)
                        return refuse_over_budget(req);
                http_conn_request_received(req);
                r = dispatch(req);
                /* The core has taken what it needs of the body. */
                buffer_free(&req->body);
                mem_budget_release_input(h->config.budget, req->budget_held);
                req->budget_held = 0;
                return r;
        case REQUEST_WAITING:
                if (req->reply.ready)
                        return http_request_queue_reply(req);
                /* Woken without a reply: wait on. */
                http_request_suspend(req);
                return MHD_YES;
        case REQUEST_DONE:
                break;
        }
        return MHD_YES;
}

static int on_sweep(sd_event_source *s, uint64_t usec, void *userdata) {
        HttpServer *h = userdata;

        assert(s);
        assert(userdata);

        http_sessions_sweep(h);
        LIST_FOREACH(sessions, i, h->sessions)
                if (i->kind == HTTP_SESSION_STREAMABLE) {
                        (void) sd_event_source_set_time_relative(s, MIN(h->config.session_idle_usec,
                                                                        60 * USEC_PER_SEC));
                        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                        break;
                }
        return 0;
}

int http_server_new(sd_event *e, McpServer *mcp, int listen_fd, const HttpServerConfig *config, HttpAuth *auth,
                    http_server_activity_t on_activity, void *userdata, HttpServer **ret) {
        _cleanup_(http_server_freep) HttpServer *h = NULL;
        int r;

        assert(e);
        assert(mcp);
        assert(config);
        assert(auth);
        assert(ret);

        h = calloc(1, sizeof *h);
        if (!h) {
                safe_close(listen_fd);
                return -ENOMEM;
        }
        h->event = sd_event_ref(e);
        h->mcp = mcp;
        h->listen_fd = listen_fd;
        h->config = *config;
        h->auth = *auth;
        *auth = (HttpAuth) {};
        h->on_activity = on_activity;
        h->userdata = userdata;
        h->mhd_limit = config->max_connections + CONNECTION_SLACK;
        /* Every session may hold one stream for as long as its client likes
         * (GET /mcp, GET /sse): together they may take only half of the
         * connections, so that calls always find room. */
        h->config.max_sessions = MIN(h->config.max_sessions, MAX(config->max_connections / 2, 1U));

        (void) fd_nonblock(listen_fd, true);
        /* MHD_USE_ITC: MHD must never shutdown() the listening socket, which
         * is shared with systemd (socket activation). No thread: MHD's epoll
         * fd is watched by our loop. */
        h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL,
                                  NULL, on_access, h,
                                  /* First, or MHD logs the other options' errors to stderr itself. */
                                  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
                                  MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
                                  MHD_OPTION_CONNECTION_LIMIT, h->mhd_limit,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) config->connection_timeout_s,
                                  MHD_OPTION_CONNECTION_MEMORY_LIMIT, MHD_MEMORY_LIMIT,
                                  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                                  MHD_OPTION_END);
        if (!h->mhd)
                return -EIO;
        r = http_pump_init(h);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &h->sweep_timer, CLOCK_MONOTONIC,
                                       MIN(config->session_idle_usec, 60 * USEC_PER_SEC), USEC_PER_SEC, on_sweep, h);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(h->sweep_timer, SD_EVENT_OFF);
        r = http_conns_init(h);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(h);
        return 0;
}

HttpServer *http_server_free(HttpServer *h) {
        if (!h)
                return NULL;
        h->stopping = true;
        if (h->mhd) {
                /* MHD_stop_daemon() aborts on suspended connections. */
                while (h->suspended) {
                        h->suspended->peer_gone = true;
                        http_request_resume(h->suspended);
                }
                /* Quiesced, MHD leaves the socket to us: closed below, never shut down. */
                http_server_quiesce(h);
                MHD_stop_daemon(h->mhd);
        }
        while (h->sessions)
                http_session_free(h->sessions);
        http_conns_done(h);
        http_pump_done(h);
        sd_event_source_disable_unref(h->sweep_timer);
        safe_close(h->listen_fd);
        http_auth_done(&h->auth);
        sd_event_unref(h->event);
        free(h);
        return NULL;
}

static void caller_count(const HttpServer *h, HttpCallerStats *c) {
        char caller[sizeof "http:token:" + HTTP_TOKEN_NAME_MAX];
        const char *token_name = streq(c->name, "loopback") ? "" : c->name;

        assert(h);
        assert(c);

        LIST_FOREACH(sessions, s, h->sessions)
                c->sessions += s->kind != HTTP_SESSION_STATELESS && streq(s->token_name, token_name);
        if (token_name[0])
                (void) snprintf(caller, sizeof caller, "http:token:%s", token_name);
        else
                (void) snprintf(caller, sizeof caller, "http:loopback");
        c->sandbox_sessions = h->mcp ? mcp_server_caller_sandbox_sessions(h->mcp, caller) : 0;
}

int http_server_get_caller_stats(const HttpServer *h, HttpCallerStats **ret, size_t *ret_n) {
        const HttpAuth *a;
        HttpCallerStats *l;
        size_t n = 0;

        assert(ret);
        assert(ret_n);

        if (!h) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        a = &h->auth;
        l = new0(HttpCallerStats, a->named.n + 1);
        if (!l)
                return -ENOMEM;
        if (a->token)
                (void) snprintf(l[n++].name, sizeof l->name, "%s", HTTP_TOKEN_DEFAULT_NAME);
        for (size_t i = 0; i < a->named.n; i++)
                (void) snprintf(l[n++].name, sizeof l->name, "%s", a->named.entries[i].name);
        if (!http_auth_has_token(a))
                (void) snprintf(l[n++].name, sizeof l->name, "loopback");
        for (size_t i = 0; i < n; i++)
                caller_count(h, l + i);
        *ret = l;
        *ret_n = n;
        return 0;
}

/* Does next drop the name of old, or give it another token? */
static bool token_revoked(const HttpTokens *next, const HttpToken *old) {
        assert(next);
        assert(old);

        for (size_t i = 0; i < next->n; i++)
                if (streq(next->entries[i].name, old->name))
                        return !streq(next->entries[i].token, old->token);
        return true;
}

/* The token of name was revoked: whatever was made with it ends, so that
 * nobody holding it goes on, and nobody given the name later finds it. */
static void end_caller(HttpServer *h, const char *name) {
        char caller[sizeof "http:token:" + HTTP_TOKEN_NAME_MAX];
        unsigned sessions = 0, streams = 0, sandbox_sessions;
        McpCallerEnded ended = {};

        assert(h);
        assert(name);

        (void) snprintf(caller, sizeof caller, "http:token:%s", name);
        /* All of them end, those of its MCP sessions' scopes with those. */
        sandbox_sessions = h->mcp ? mcp_server_caller_sandbox_sessions(h->mcp, caller) : 0;

        /* Its MCP sessions, with their calls, streams and requests
         * waiting (each gets its end), and the sandbox sessions scoped to
         * them. Freeing one frees no other. */
        LIST_FOREACH_SAFE(sessions, s, next, h->sessions)
                if (streq(s->token_name, name)) {
                        streams += s->n_streams;
                        sessions++;
                        http_session_free(s);
                }
        if (h->mcp)
                mcp_server_end_caller(h->mcp, caller, &ended);
        log_struct(LOG_NOTICE,
                   "MESSAGE=HTTP token \"%s\" was removed or changed: ended %u sessions (%u streams), %u tasks, "
                   "%u sandbox sessions of its caller.", name, sessions, streams, ended.tasks, sandbox_sessions,
                   "MCP_TRANSPORT=http",
                   "MCP_CALLER=%s", caller,
                   "MCP_HTTP_TOKEN_NAME=%s", name,
                   "MCP_ENDED_SESSIONS=%u", sessions,
                   "MCP_ENDED_STREAMS=%u", streams,
                   "MCP_ENDED_TASKS=%u", ended.tasks,
                   "MCP_ENDED_SANDBOX_SESSIONS=%u", sandbox_sessions);
}

int http_server_set_named_tokens(HttpServer *h, HttpTokens *named, const char **ret_error) {
        _cleanup_strv_free_ char **revoked = NULL;
        const HttpTokens *cur;
        int r;

        assert(h);
        assert(named);
        assert(ret_error);

        cur = &h->auth.named;
        for (size_t i = 0; i < cur->n; i++)
                if (token_revoked(named, cur->entries + i) &&
                    strv_extend_n(&revoked, cur->entries[i].name, strlen(cur->entries[i].name)) < 0)
                        return -ENOMEM;
        r = http_auth_set_named(&h->auth, named, ret_error);
        if (r < 0)
                return r;
        STRV_FOREACH(n, revoked)
                end_caller(h, *n);
        return 0;
}

int http_listen(const char *addr, int *ret_fd) {
        struct sockaddr_storage ss;
        _cleanup_close_ int fd = -EBADF;
        socklen_t len;
        int r, one = 1, zero = 0;

        assert(addr);
        assert(ret_fd);

        r = http_parse_address(addr, &ss, &len);
        if (r < 0)
                return r;
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 && errno == EAFNOSUPPORT && ss.ss_family == AF_INET6 &&
            IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *) &ss)->sin6_addr)) {
                /* No IPv6 here: every IPv4 interface then. */
                struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = ((struct sockaddr_in6 *) &ss)->sin6_port,
                                          .sin_addr.s_addr = htonl(INADDR_ANY) };
                memcpy(&ss, &sa, sizeof sa);
                len = sizeof sa;
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        }
        if (fd < 0)
                return negative_errno();
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
                return negative_errno();
        if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *) &ss)->sin6_addr) &&
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) < 0)
                return negative_errno();
        if (bind(fd, (struct sockaddr *) &ss, len) < 0 || listen(fd, SOMAXCONN) < 0)
                return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int http_socket_describe(int fd, bool *ret_loopback, uint16_t *ret_port, char **ret_host) {
        struct sockaddr_storage ss = {};
        socklen_t len = sizeof ss;
        char a[INET6_ADDRSTRLEN], *host = NULL;
        int type;
        socklen_t tl = sizeof type;

        assert(ret_loopback);
        assert(ret_port);
        assert(ret_host);

        if (getsockname(fd, (struct sockaddr *) &ss, &len) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0)
                return negative_errno();
        if (type != SOCK_STREAM)
                return -ENOTSOCK;
        if (ss.ss_family == AF_UNIX) {
                /* Only local processes can reach it, and no browser: no Host check. */
                *ret_loopback = true;
                *ret_port = 0;
                *ret_host = NULL;
                return 0;
        }
        if (ss.ss_family == AF_INET) {
                if (!inet_ntop(AF_INET, &((struct sockaddr_in *) &ss)->sin_addr, a, sizeof a) || !(host = strdup(a)))
                        return -ENOMEM;
        } else if (ss.ss_family == AF_INET6) {
                if (!inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &ss)->sin6_addr, a, sizeof a) ||
                    asprintf(&host, "[%s]", a) < 0)
                        return -ENOMEM;
        } else
                return -EAFNOSUPPORT;
        *ret_loopback = sockaddr_is_loopback((struct sockaddr *) &ss);
        *ret_port = sockaddr_port((struct sockaddr *) &ss);
        *ret_host = host;
        return 0;
}
