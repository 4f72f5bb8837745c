/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sessions of the HTTP transports and the routing of what the core sends:
 * a reply goes to the POST that carried its request (found by id), progress
 * to the POST whose request named the token, anything else to the session's
 * GET stream. On the legacy transport everything goes to the /sse stream. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "http-internal.h"
#include "http-util.h"
#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "util.h"

static const char *kind_name(HttpSessionKind k) {
        return k == HTTP_SESSION_LEGACY ? "sse" : k == HTTP_SESSION_STATELESS ? "http-stateless" : "http";
}

static bool ids_contain(json_object *ids, json_object *id) {
        for (size_t i = 0, n = ids ? json_object_array_length(ids) : 0; i < n; i++)
                if (jsonrpc_id_equal(json_object_array_get_idx(ids, i), id))
                        return true;
        return false;
}

static HttpRequest *find_by_id(HttpSession *s, json_object *id) {
        for (HttpRequest *r = s->requests; r; r = r->sess_next)
                if (r->pending && ids_contain(r->ids, id))
                        return r;
        return NULL;
}

static HttpRequest *find_by_token(HttpSession *s, json_object *token) {
        if (!jsonrpc_id_is_valid(token))
                return NULL;
        for (HttpRequest *r = s->requests; r; r = r->sess_next)
                if (r->pending && ids_contain(r->tokens, token))
                        return r;
        return NULL;
}

/* Where a message of the core goes; *ret_reply tells whether it ends a request. */
static HttpRequest *route(HttpSession *s, json_object *msg, bool *ret_reply) {
        const char *method;

        *ret_reply = true;
        if (json_object_is_type(msg, json_type_array)) {
                /* A batch's replies, all for the POST that carried it. */
                for (size_t i = 0, n = json_object_array_length(msg); i < n; i++) {
                        json_object *id = json_get(json_object_array_get_idx(msg, i), "id");
                        if (jsonrpc_id_is_valid(id))
                                return find_by_id(s, id);
                }
                return s->current;
        }
        method = json_get_string(msg, "method");
        if (!method) {
                json_object *id = json_get(msg, "id");
                /* id null: the message could not be read; its POST is the current one. */
                return jsonrpc_id_is_valid(id) ? find_by_id(s, id) : s->current;
        }
        *ret_reply = false;
        if (streq(method, "notifications/progress")) {
                HttpRequest *r = find_by_token(s, json_get(json_get(msg, "params"), "progressToken"));
                return r && r->sse ? r : NULL;
        }
        return s->stream;
}

/* The HTTP status for a JSON reply: the stateless revision maps some errors
 * to statuses, so a client can tell the eras apart. */
static unsigned reply_status(HttpSession *s, json_object *msg) {
        json_object *error = json_get(msg, "error"), *code;

        if (!error || json_object_is_type(msg, json_type_array))
                return MHD_HTTP_OK;
        if (!jsonrpc_id_is_valid(json_get(msg, "id")))
                return MHD_HTTP_BAD_REQUEST;
        if (s->kind != HTTP_SESSION_STATELESS || !json_object_object_get_ex(error, "code", &code))
                return MHD_HTTP_OK;
        switch (json_object_get_int(code)) {
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

static int session_send(McpSession *m, const char *json, size_t len, void *userdata) {
        HttpSession *s = userdata;
        _cleanup_json_ json_object *msg = NULL;
        HttpRequest *target;
        const char *why;
        bool reply;
        char *body;

        if (s->kind == HTTP_SESSION_LEGACY)
                return s->stream ? http_request_sse_event(s->stream, "message", json, len) : -EPIPE;

        if (jsonrpc_parse(json, len, &msg, &why) < 0)
                return log_oom();
        target = route(s, msg, &reply);
        if (!target) {
                /* Its POST is gone (the client hung up): nobody to tell. The
                 * session lives on; the client may ask again. */
                log_debug("HTTP session: nobody waits for a %s, dropped.", reply ? "reply" : "notification");
                return 0;
        }
        if (target->sse) {
                (void) http_request_sse_event(target, NULL, json, len);
                if (reply && target->pending) {
                        target->pending = false;
                        http_request_sse_finish(target);
                }
                return 0;
        }
        body = malloc(len);
        if (!body)
                return log_oom();
        memcpy(body, json, len);
        target->pending = false;
        http_request_set_reply(target, reply_status(s, msg), "application/json", body, len);
        return 0;
}

static const McpTransport http_transport = { .send = session_send };

static void on_session_idle(McpSession *m, void *userdata) {
        HttpSession *s = userdata;

        /* Expiry counts from the end of the last run; idle exit may start. */
        http_session_touch(s);
        http_server_activity(s->server);
}

int http_session_new(HttpServer *h, HttpSessionKind kind, HttpSession **ret) {
        McpPeer peer = { .transport = kind == HTTP_SESSION_LEGACY ? "sse" : "http", .uid = (uid_t) -1 };
        HttpSession *s;
        int r;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->server = h;
        s->kind = kind;
        s->last_used = now_usec();
        if (kind != HTTP_SESSION_STATELESS) {
                r = random_hex128(s->id);
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
        s->next = h->sessions;
        if (s->next)
                s->next->prev = s;
        h->sessions = s;
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
        http_server_activity(h);
        *ret = s;
        return 0;
}

static void detach(HttpRequest *req) {
        HttpSession *s = req->session;

        if (req->sess_prev)
                req->sess_prev->sess_next = req->sess_next;
        else
                s->requests = req->sess_next;
        if (req->sess_next)
                req->sess_next->sess_prev = req->sess_prev;
        req->sess_prev = req->sess_next = NULL;
        if (s->stream == req)
                s->stream = NULL;
        if (s->current == req)
                s->current = NULL;
        if (req->sse && s->n_streams > 0)
                s->n_streams--;
        req->session = NULL;
        req->pending = false;
}

HttpSession *http_session_free(HttpSession *s) {
        HttpServer *h;

        if (!s)
                return NULL;
        h = s->server;
        /* Whoever still waits on it gets an end, not silence. */
        while (s->requests) {
                HttpRequest *req = s->requests;
                bool waiting = req->pending && !req->sse;

                detach(req);
                if (req->sse)
                        http_request_sse_finish(req);
                else if (waiting) {
                        char *body;
                        size_t len;
                        if (jsonrpc_error_serialize(NULL, MCP_ERROR_SESSION_NOT_FOUND,
                                                    "Session not found: it has ended", &body, &len) >= 0)
                                http_request_set_reply(req, MHD_HTTP_NOT_FOUND, "application/json", body, len);
                        else {
                                req->peer_gone = true;
                                http_request_resume(req);
                        }
                }
        }
        /* Runs still going are stopped: nobody can receive them any more. */
        s->mcp = mcp_session_free(s->mcp);
        if (s->prev)
                s->prev->next = s->next;
        else
                h->sessions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        if (s->kind != HTTP_SESSION_STATELESS && h->n_sessions > 0)
                h->n_sessions--;
        free(s);
        http_server_activity(h);
        return NULL;
}

HttpSession *http_session_find(HttpServer *h, HttpSessionKind kind, const char *id) {
        if (isempty(id))
                return NULL;
        for (HttpSession *s = h->sessions; s; s = s->next)
                if (s->kind == kind && streq(s->id, id))
                        return s;
        return NULL;
}

static bool session_idle(HttpSession *s) {
        return !s->requests && (!s->mcp || mcp_session_in_flight(s->mcp) == 0);
}

bool http_session_make_room(HttpServer *h) {
        HttpSession *oldest = NULL;

        if (h->n_sessions < h->config.max_sessions)
                return true;
        /* A client that re-initializes without DELETE must not lock others
         * out: the longest unused idle session goes. */
        for (HttpSession *s = h->sessions; s; s = s->next)
                if (s->kind == HTTP_SESSION_STREAMABLE && session_idle(s) &&
                    (!oldest || s->last_used < oldest->last_used))
                        oldest = s;
        if (!oldest)
                return false;
        log_info("Too many HTTP sessions (%u), ending the longest idle one.", h->n_sessions);
        http_session_free(oldest);
        return true;
}

void http_session_touch(HttpSession *s) {
        s->last_used = now_usec();
}

int http_session_handle(HttpSession *s, HttpRequest *req, const char *body, size_t size) {
        int r;

        http_session_touch(s);
        s->current = req;
        r = mcp_session_handle(s->mcp, body, size);
        s->current = NULL;
        return r;
}

void http_session_add_request(HttpSession *s, HttpRequest *req) {
        req->session = s;
        req->sess_next = s->requests;
        if (s->requests)
                s->requests->sess_prev = req;
        s->requests = req;
        req->pending = !req->is_stream && req->ids && json_object_array_length(req->ids) > 0;
}

void http_session_request_gone(HttpRequest *req) {
        HttpSession *s = req->session;
        bool was_stream = req->is_stream;

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

void http_session_cancelled(HttpSession *s, json_object *request_id) {
        HttpRequest *req;

        if (!jsonrpc_id_is_valid(request_id))
                return;
        req = find_by_id(s, request_id);
        /* A batch still gets the replies of its other requests. */
        if (!req || !req->single)
                return;
        req->pending = false;
        if (req->sse)
                http_request_sse_finish(req);
        else
                /* No reply will come; an event stream that ends at once is a
                 * valid answer to a request. */
                http_request_set_reply(req, MHD_HTTP_OK, "text/event-stream", NULL, 0);
}

void http_sessions_sweep(HttpServer *h) {
        uint64_t now = now_usec();

        for (HttpSession *s = h->sessions, *next; s; s = next) {
                next = s->next;
                if (s->kind != HTTP_SESSION_STREAMABLE || !session_idle(s) ||
                    now - s->last_used < h->config.session_idle_usec)
                        continue;
                log_struct(LOG_INFO, "MESSAGE=HTTP session unused for %" PRIu64 " s, ending it.",
                           (now - s->last_used) / USEC_PER_SEC,
                           "MCP_TRANSPORT=%s", kind_name(s->kind));
                http_session_free(s);
        }
}
