/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sessions of the HTTP transports and the routing of what the core sends,
 * by the facts it hands along (never by reading the JSON): a reply goes to
 * the POST that carried its request, progress to the POST of its call if
 * that is an event stream, anything else to the session's GET stream. On the
 * legacy transport everything goes to the /sse stream. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-internal.h"
#include "http-util.h"
#include "jsonrpc.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "node-id.h"
#include "util.h"

static const char *kind_name(HttpSessionKind k) {
        return k == HTTP_SESSION_LEGACY ? "sse" : k == HTTP_SESSION_STATELESS ? "http-stateless" : "http";
}

/* The request that handed the core what m answers or concerns. */
static HttpRequest *find_by_origin(HttpSession *s, uint64_t origin) {
        assert(s);

        if (origin == 0)
                return NULL;
        /* The POST being handled gets its immediate replies, whether or not
         * it waits for any (an error about an unreadable message). */
        if (s->current && s->current->route.mcp_origin == origin)
                return s->current;
        LIST_FOREACH(sess, r, s->requests)
                if (r->route.pending && r->route.mcp_origin == origin)
                        return r;
        return NULL;
}

/* Where a message of the core goes. */
static HttpRequest *route(HttpSession *s, const McpMessage *m) {
        HttpRequest *r;

        assert(s);
        assert(m);

        if (m->kind != MCP_MESSAGE_NOTIFICATION && m->kind != MCP_MESSAGE_REQUEST)
                return find_by_origin(s, m->origin);
        if (m->origin == 0)
                return s->stream;
        /* Progress only where the POST became an event stream. */
        r = find_by_origin(s, m->origin);
        return r && r->sse.on ? r : NULL;
}

/* The HTTP status for a JSON reply: the stateless revision maps some errors
 * to statuses, so a client can tell the eras apart. */
static unsigned reply_status(HttpSession *s, const McpMessage *m) {
        assert(s);
        assert(m);

        if (m->error_code == 0)
                return MHD_HTTP_OK;
        if (!m->id)
                return MHD_HTTP_BAD_REQUEST;
        if (s->kind != HTTP_SESSION_STATELESS)
                return MHD_HTTP_OK;
        switch (m->error_code) {
        case JSONRPC_METHOD_NOT_FOUND:
                return MHD_HTTP_NOT_FOUND;
        case JSONRPC_PARSE_ERROR:
        case JSONRPC_INVALID_REQUEST:
        case MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION:
        case MCP_ERROR_MISSING_REQUIRED_CLIENT_CAPABILITY:
        case MCP_ERROR_HEADER_MISMATCH:
                return MHD_HTTP_BAD_REQUEST;
        default:
                return MHD_HTTP_OK;
        }
}

/* A reply for an event stream that the budget cannot hold: a short error
 * instead, so that the request still ends; if not even that fits, the
 * stream goes. */
static int sse_reply_busy(HttpRequest *target, const McpMessage *msg, size_t len) {
        _cleanup_free_ char *body = NULL;
        size_t n;
        int r;

        assert(target);
        assert(msg);

        log_struct(LOG_WARNING,
                   "MESSAGE=HTTP reply of %zu bytes does not fit in the memory budget; sending \"server busy\".",
                   len,
                   "MCP_TRANSPORT=http",
                   "MCP_CALLER=%s", target->route.session && target->route.session->mcp ?
                                    mcp_session_caller(target->route.session->mcp) : "");
        r = jsonrpc_error_serialize(msg->id, JSONRPC_SERVER_ERROR,
                                    "Server busy: the reply does not fit in the server's memory budget now; "
                                    "retry later", &body, &n);
        if (r >= 0)
                r = http_request_sse_event(target, NULL, body, n, NULL);
        if (r == -EBUSY || r == -ENOMEM) {
                target->peer_gone = true;
                http_request_sse_finish(target);
        }
        return r;
}

/* An event of the whole message on target's stream: a stream keeps its
 * bytes in one buffer, so a shared part is copied into it here. A
 * notification that does not fit is skipped (progress is a courtesy), a
 * reply replaced. */
static int send_event(HttpRequest *target, const char *event, const McpMessage *msg) {
        _cleanup_free_ char *flat = NULL;
        const char *data = msg->json;
        size_t len = msg->len;
        int r;

        assert(target);
        assert(msg);

        if (msg->shared) {
                flat = mcp_message_flatten(msg, &len);
                if (!flat)
                        return log_oom();
                data = flat;
        }
        r = http_request_sse_event(target, event, data, len, msg->charge);
        if (r != -EBUSY)
                return r;
        if (msg->kind == MCP_MESSAGE_REQUEST)
                return -ENOTCONN;
        if (msg->kind == MCP_MESSAGE_NOTIFICATION) {
                log_debug("HTTP stream: a notification of %zu bytes does not fit in the memory budget, skipped.",
                          len);
                return 0;
        }
        return sse_reply_busy(target, msg, len);
}

static int session_send(McpSession *m, const McpMessage *msg, void *userdata) {
        HttpSession *s = userdata;
        bool ends = msg->kind == MCP_MESSAGE_RESPONSE || msg->kind == MCP_MESSAGE_UNANSWERED;
        HttpRequest *target;
        char *body;
        int r;

        assert(m);
        assert(msg);
        assert(userdata);

        if (s->kind == HTTP_SESSION_LEGACY) {
                if (!msg->json)
                        return 0;
                if (!s->stream)
                        return -EPIPE;
                r = send_event(s->stream, "message", msg);
                /* Not read, or ended (not even an error fitted): the session is over. */
                return r == -ENOBUFS || r == -EPIPE ? r : 0;
        }

        target = route(s, msg);
        if (msg->kind == MCP_MESSAGE_REQUEST) {
                /* Only on the event stream of the request it is about. */
                if (!target)
                        return -ENOTCONN;
                r = send_event(target, NULL, msg);
                return r < 0 ? -ENOTCONN : 0;
        }
        if (!target) {
                /* Its POST is gone (the client hung up): nobody to tell. The
                 * session lives on; the client may ask again. */
                log_debug("HTTP session: nobody waits for a %s, dropped.", ends ? "reply" : "notification");
                return 0;
        }
        if (target->sse.on) {
                if (msg->json)
                        (void) send_event(target, NULL, msg);
                if (ends && target->route.pending) {
                        target->route.pending = false;
                        http_request_sse_finish(target);
                }
                return 0;
        }
        target->route.pending = false;
        if (!msg->json) {
                /* No reply will come; an event stream that ends at once is a
                 * valid answer to a request. */
                (void) http_request_set_reply(target, MHD_HTTP_OK, "text/event-stream", NULL, 0, NULL);
                return 0;
        }
        body = malloc(msg->len);
        if (!body)
                return log_oom();
        memcpy(body, msg->json, msg->len);
        if (msg->shared)
                /* A task's result, sent from its one copy. */
                r = http_request_set_reply_shared(target, reply_status(s, msg), "application/json", body, msg->len,
                                                  msg->shared, msg->charge);
        else
                r = http_request_set_reply(target, reply_status(s, msg), "application/json", body, msg->len,
                                           msg->charge);
        if (r == -EBUSY) {
                log_struct(LOG_WARNING,
                           "MESSAGE=HTTP reply of %zu bytes does not fit in the memory budget; answering \"server "
                           "busy\".", msg->len,
                           "MCP_TRANSPORT=http",
                           "MCP_CALLER=%s", mcp_session_caller(m));
                r = http_request_set_busy_reply(target, msg->id);
        }
        if (r < 0) {
                target->peer_gone = true;
                http_request_resume(target);
        }
        return 0;
}

static const McpTransport http_transport = { .send = session_send, .shared_parts = true };

static void on_session_idle(McpSession *m, void *userdata) {
        HttpSession *s = userdata;

        assert(m);
        assert(userdata);

        /* Expiry counts from the end of the last run; idle exit may start. */
        http_session_touch(s);
        http_pump_activity(s->server);
}

int http_session_new(HttpServer *h, HttpSessionKind kind, HttpRequest *req, HttpSession **ret) {
        assert(h);
        assert(ret);

        /* Whoever passed a token is the caller of its name (the single
         * token's is "default"), or, without tokens, anyone on loopback is
         * one caller; a session the client keeps scopes its sandbox sessions. */
        char caller[sizeof "http:token:" + HTTP_TOKEN_NAME_MAX];
        McpPeer peer = {
                .transport = kind == HTTP_SESSION_LEGACY ? "sse" : "http",
                .uid = (uid_t) -1,
                .caller = caller,
                .scoped = kind != HTTP_SESSION_STATELESS,
        };
        HttpSession *s;
        int r;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->server = h;
        s->kind = kind;
        s->last_used = now_usec();
        (void) snprintf(s->token_name, sizeof s->token_name, "%s", req ? req->token_name : "");
        if (s->token_name[0])
                (void) snprintf(caller, sizeof caller, "http:token:%s", s->token_name);
        else
                (void) snprintf(caller, sizeof caller, "http:loopback");
        if (kind != HTTP_SESSION_STATELESS) {
                /* "<node>.<hex>": a load balancer routes the session's
                 * later requests here by the prefix. */
                r = node_id_mint(s->id);
                if (r < 0) {
                        free(s);
                        return r;
                }
        }
        r = mcp_session_new(h->mcp, &http_transport, s, &peer, &s->mcp);
        if (r < 0) {
                free(s);
                return r;
        }
        mcp_session_set_idle_callback(s->mcp, on_session_idle);
        LIST_PREPEND(sessions, h->sessions, s);
        if (kind != HTTP_SESSION_STATELESS)
                h->n_sessions++;
        if (kind == HTTP_SESSION_STREAMABLE) {
                int enabled;
                if (sd_event_source_get_enabled(h->sweep_timer, &enabled) >= 0 && enabled == SD_EVENT_OFF) {
                        (void) sd_event_source_set_time_relative(h->sweep_timer,
                                                                 MIN(h->config.session_idle_usec, 60 * USEC_PER_SEC));
                        (void) sd_event_source_set_enabled(h->sweep_timer, SD_EVENT_ONESHOT);
                }
        }
        http_pump_activity(h);
        *ret = s;
        return 0;
}

static void detach(HttpRequest *req) {
        HttpSession *s = req->route.session;

        assert(req);

        LIST_REMOVE(sess, s->requests, req);
        if (s->stream == req)
                s->stream = NULL;
        if (s->current == req)
                s->current = NULL;
        if (req->sse.on && s->n_streams > 0)
                s->n_streams--;
        req->route.session = NULL;
        req->route.pending = false;
}

HttpSession *http_session_free(HttpSession *s) {
        HttpServer *h;

        if (!s)
                return NULL;
        h = s->server;
        /* Whoever still waits on it gets an end, not silence. */
        while (s->requests) {
                HttpRequest *req = s->requests;
                bool waiting = req->route.pending && !req->sse.on;

                detach(req);
                if (req->sse.on)
                        http_request_sse_finish(req);
                else if (waiting) {
                        char *body;
                        size_t len;
                        if (jsonrpc_error_serialize(NULL, MCP_ERROR_SESSION_NOT_FOUND,
                                                    "Session not found: it has ended", &body, &len) >= 0)
                                (void) http_request_set_reply(req, MHD_HTTP_NOT_FOUND, "application/json", body,
                                                              len, NULL);
                        else {
                                req->peer_gone = true;
                                http_request_resume(req);
                        }
                }
        }
        /* Runs still going are stopped: nobody can receive them any more. */
        s->mcp = mcp_session_free(s->mcp);
        LIST_REMOVE(sessions, h->sessions, s);
        if (s->kind != HTTP_SESSION_STATELESS && h->n_sessions > 0)
                h->n_sessions--;
        free(s);
        http_pump_activity(h);
        return NULL;
}

HttpSession *http_session_find(HttpServer *h, HttpSessionKind kind, const char *id, const char *token_name) {
        assert(h);
        assert(id);

        /* Another node's id (its host went away, or a balancer misrouted
         * it) is as unknown as a made-up one: 404, and the client starts over.
         * So is another caller's: a session is used with the token that made it. */
        if (!node_id_owns(id))
                return NULL;
        LIST_FOREACH(sessions, s, h->sessions)
                if (s->kind == kind && streq(s->id, id) && streq(s->token_name, token_name ?: ""))
                        return s;
        return NULL;
}

/* Sandbox sessions made in it that may still live: its client's Python
 * state, which only their own idle timers (or the client) may end. */
static bool session_holds_state(HttpSession *s) {
        assert(s);

        return s->mcp && mcp_session_sandbox_sessions(s->mcp) > 0;
}

static bool session_idle(HttpSession *s) {
        assert(s);

        return !s->requests && (!s->mcp || mcp_session_in_flight(s->mcp) == 0);
}

/* Neither a request, a stream, a call nor a live sandbox session. */
static bool session_evictable(HttpSession *s) {
        assert(s);

        return s->kind == HTTP_SESSION_STREAMABLE && session_idle(s) && !session_holds_state(s);
}

/* Callers that may hold sessions: the named tokens and the single one. */
static size_t n_callers(const HttpServer *h) {
        assert(h);

        return h->auth.named.n + (h->auth.token ? 1 : 0);
}

bool http_session_make_room(HttpServer *h, HttpRequest *req) {
        HttpSession *oldest = NULL, *oldest_own = NULL;
        const char *token_name = req ? req->token_name : "";
        unsigned own = 0;

        assert(h);

        LIST_FOREACH(sessions, s, h->sessions)
                if (s->kind != HTTP_SESSION_STATELESS && streq(s->token_name, token_name))
                        own++;
        /* Where clients have tokens of their own, one caller may hold at
         * most half of the sessions: streams and state it keeps must leave
         * room for the others. (With one token everyone is that caller.) */
        if (n_callers(h) > 1 && own >= MAX(h->config.max_sessions / 2, 1U)) {
                LIST_FOREACH(sessions, s, h->sessions)
                        if (session_evictable(s) && streq(s->token_name, token_name) &&
                            (!oldest_own || s->last_used < oldest_own->last_used))
                                oldest_own = s;
                if (!oldest_own) {
                        log_struct(LOG_NOTICE,
                                   "MESSAGE=HTTP caller %s holds half of the sessions (%u), each holding a stream, a "
                                   "call or a sandbox session; refusing a new one.", token_name, own,
                                   "MCP_TRANSPORT=http",
                                   "MCP_CALLER=%s", token_name);
                        return false;
                }
                http_session_free(oldest_own);
                return true;
        }
        if (h->n_sessions < h->config.max_sessions)
                return true;
        /* A client that re-initializes without DELETE must not lock others
         * out: the longest unused session that holds nothing goes (its
         * client, if any, gets 404 and initializes again, losing nothing);
         * one of the newcomer's own caller first, so that a caller's flood
         * recycles its own sessions before anyone else's. One with a
         * stream, a call or a live sandbox session stays: no client may
         * destroy another's state, so then the newcomer waits. */
        LIST_FOREACH(sessions, s, h->sessions) {
                if (!session_evictable(s))
                        continue;
                if (!oldest || s->last_used < oldest->last_used)
                        oldest = s;
                if (streq(s->token_name, token_name) && (!oldest_own || s->last_used < oldest_own->last_used))
                        oldest_own = s;
        }
        if (!oldest) {
                log_struct(LOG_NOTICE,
                           "MESSAGE=Too many HTTP sessions (%u), each holding a stream, a call or a sandbox "
                           "session; refusing a new one.", h->n_sessions,
                           "MCP_TRANSPORT=http");
                return false;
        }
        log_info("Too many HTTP sessions (%u), ending the longest idle one that holds nothing.", h->n_sessions);
        http_session_free(oldest_own ?: oldest);
        return true;
}

void http_session_touch(HttpSession *s) {
        assert(s);

        s->last_used = now_usec();
}

int http_session_handle(HttpSession *s, HttpRequest *req, McpInbound *info) {
        int r;

        assert(info);

        assert(s);

        http_session_touch(s);
        /* The legacy transport (no req) sends everything on its stream. */
        if (req)
                req->route.mcp_origin = ++s->last_mcp_origin;
        s->current = req;
        r = mcp_session_handle_inbound(s->mcp, info, req ? req->route.mcp_origin : 0);
        s->current = NULL;
        return r;
}

void http_session_add_request(HttpSession *s, HttpRequest *req) {
        assert(s);
        assert(req);
        assert(!req->route.session);

        req->route.session = s;
        LIST_PREPEND(sess, s->requests, req);
        req->route.pending = !req->route.is_stream;
}

void http_session_request_gone(HttpRequest *req) {
        HttpSession *s = req->route.session;
        bool was_stream = req->route.is_stream;

        assert(req);

        if (!s)
                return;
        detach(req);
        switch (s->kind) {
        case HTTP_SESSION_STATELESS:
                /* 2026-07-28: a closed response stream is the cancellation. */
                http_session_free(s);
                break;
        case HTTP_SESSION_LEGACY:
                /* The stream was the only way to reach the client. */
                if (was_stream) {
                        log_debug("Legacy SSE stream closed, ending its session.");
                        http_session_free(s);
                }
                break;
        case HTTP_SESSION_STREAMABLE:
                /* A dropped POST is no cancellation (2025 revisions): the run
                 * goes on within its timeout, and its reply is dropped. */
                http_session_touch(s);
                break;
        }
}

void http_sessions_sweep(HttpServer *h) {
        uint64_t now = now_usec();

        assert(h);

        /* One whose sandbox sessions may live stays: their own idle timers
         * (MCP_EXEC_SESSION_IDLE_S) end them, and then it goes here. */
        LIST_FOREACH_SAFE(sessions, s, next, h->sessions) {
                if (s->kind != HTTP_SESSION_STREAMABLE || !session_idle(s) || session_holds_state(s) ||
                    now - s->last_used < h->config.session_idle_usec)
                        continue;
                log_struct(LOG_INFO, "MESSAGE=HTTP session unused for %" PRIu64 " s, ending it.",
                           (now - s->last_used) / USEC_PER_SEC,
                           "MCP_TRANSPORT=%s", kind_name(s->kind));
                http_session_free(s);
        }
}
