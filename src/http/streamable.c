/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Streamable HTTP at /mcp: the 2025 revisions with a session per
 * Mcp-Session-Id, and the stateless 2026-07-28 on the same endpoint. Which
 * era a POST belongs to is decided from MCP-Protocol-Version, the session
 * header and the body, as the core decides it per request. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-internal.h"
#include "http-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "revision.h"

/* An error built by the core (taken) as the whole response. */
static mhd_result reply_message(HttpRequest *req, unsigned status, json_object *m) {
        char *body;
        size_t len;

        assert(req);

        /* m may be NULL (out of memory): serializing fails, MHD_NO. */
        if (jsonrpc_serialize(m, &body, &len) < 0)
                return MHD_NO;
        return http_request_json(req, status, body, len, NULL);
}

/* MCP-Protocol-Version: 0 if absent, 1 if known, -EINVAL if not. */
static int protocol_header(HttpRequest *req, const McpRevision **ret_rev, const char **ret_value) {
        const char *v = http_request_header(req, "MCP-Protocol-Version");

        assert(req);
        assert(ret_value);

        *ret_value = v;
        *ret_rev = NULL;
        if (!v)
                return 0;
        *ret_rev = mcp_revision_find(v);
        return *ret_rev ? 1 : -EINVAL;
}

static mhd_result unsupported_version(HttpRequest *req, json_object *id, const char *requested) {
        assert(req);
        assert(requested);

        return reply_message(req, MHD_HTTP_BAD_REQUEST,
                             mcp_error_unsupported_version(id, requested, strlen(requested)));
}

/* 2026-07-28 mirrors body fields in headers, and they must agree. */
static const char *stateless_header_problem(HttpRequest *req, const McpInbound *i, const char *hv) {
        const char *mm, *mn, *mp;
        _cleanup_free_ char *decoded = NULL;

        assert(req);
        assert(i);

        if (!hv)
                return "Header mismatch: the MCP-Protocol-Version header is missing";
        if (!i->protocol_version || !streq(i->protocol_version, hv))
                return "Header mismatch: MCP-Protocol-Version does not match the _meta protocol version";
        mm = http_request_header(req, "Mcp-Method");
        if (!mm)
                return "Header mismatch: the Mcp-Method header is missing";
        if (!streq(mm, i->method))
                return "Header mismatch: Mcp-Method does not match the method";
        if (!i->name)
                return NULL;
        mn = http_request_header(req, "Mcp-Name");
        if (!mn)
                return "Header mismatch: the Mcp-Name header is missing";
        decoded = mcp_header_value_decode(mn);
        if (!decoded || !streq(decoded, i->name))
                return "Header mismatch: Mcp-Name does not match the body";
        /* The session handle, which a load balancer may route by. */
        mp = http_request_header(req, "Mcp-Param-Session");
        if (i->param_session && !mp)
                return "Header mismatch: the Mcp-Param-Session header is missing";
        if (!i->param_session && mp)
                return "Header mismatch: Mcp-Param-Session is given, but the arguments have no session";
        if (mp) {
                _cleanup_free_ char *d = mcp_header_value_decode(mp);
                if (!d || !streq(d, i->param_session))
                        return "Header mismatch: Mcp-Param-Session does not match the body";
        }
        return NULL;
}

/* Hands the body to the session and answers: now if the reply is there, by
 * SSE if the client wants progress, else once the reply comes. */
static mhd_result post_run(HttpRequest *req, HttpSession *s, McpInbound *info, bool *ret_initialized) {
        HttpServer *h = req->server;

        assert(req);
        assert(s);
        assert(info);

        /* initialize (ret_initialized set) is answered at once, and its
         * Mcp-Session-Id must be in the headers: never by SSE. */
        bool want_sse = info->n_requests > 0 && info->progress && !ret_initialized;
        /* A tools/call of a client that may be asked to confirm (code mode's
         * destructive tools): its questions go on this POST's stream; a
         * task's go on the stream of the client's tasks/result. */
        if (!want_sse && !ret_initialized && info->n_requests == 1 &&
            (streq_ptr(info->method, "tools/call") || streq_ptr(info->method, "tasks/result")) &&
            s->mcp && mcp_session_can_ask(s->mcp) &&
            s->n_streams < h->config.max_streams_per_session)
                want_sse = true;

        if (info->n_requests > 0) {
                if (want_sse && s->n_streams >= h->config.max_streams_per_session)
                        return http_request_error(req, MHD_HTTP_TOO_MANY_REQUESTS, JSONRPC_SERVER_ERROR,
                                                  "Too Many Requests: too many streams open in this session");
                http_session_add_request(s, req);
        }
        /* Before the core runs: a call still queued reports progress at once. */
        if (want_sse && http_request_start_sse(req, NULL) == MHD_NO)
                return MHD_NO;

        if (http_session_handle(s, req, info) < 0)
                return MHD_NO;

        if (ret_initialized)
                *ret_initialized = mcp_session_protocol_version(s->mcp) != NULL;

        if (want_sse)
                return MHD_YES;
        if (req->reply.ready) {
                if (req->reply.session_header && ret_initialized && !*ret_initialized)
                        req->reply.session_header = false;
                return http_request_queue_reply(req);
        }
        if (!req->route.pending)
                return http_request_empty(req, MHD_HTTP_ACCEPTED);
        /* No timeout applies while suspended: the run has its own. */
        req->state = REQUEST_WAITING;
        http_request_suspend(req);
        return MHD_YES;
}

static mhd_result post_stateless(HttpRequest *req, McpInbound *info, const char *hv) {
        const char *problem;
        HttpSession *s;
        mhd_result m;

        assert(req);
        assert(info);

        if (info->batch)
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
                                          "Invalid Request: protocol 2026-07-28 has no batches");
        /* No notification of this revision means anything over HTTP. */
        if (info->n_requests == 0)
                return http_request_empty(req, MHD_HTTP_ACCEPTED);
        problem = stateless_header_problem(req, info, hv);
        if (problem)
                return reply_message(req, MHD_HTTP_BAD_REQUEST,
                                     jsonrpc_error_new(info->id, MCP_ERROR_HEADER_MISMATCH, problem, NULL));
        /* One session per request: it ends with the response stream. */
        if (http_session_new(req->server, HTTP_SESSION_STATELESS, req, &s) < 0)
                return MHD_NO;
        m = post_run(req, s, info, NULL);
        if (m == MHD_NO && !req->route.session)
                http_session_free(s);
        return m;
}

static mhd_result post_initialize(HttpRequest *req, McpInbound *info) {
        HttpServer *h = req->server;
        bool initialized = false;
        HttpSession *s;
        mhd_result m;

        assert(req);
        assert(info);

        if (!http_session_make_room(h, req))
                return http_request_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                                          "Service Unavailable: too many sessions in use; retry later");
        if (http_session_new(h, HTTP_SESSION_STREAMABLE, req, &s) < 0)
                return MHD_NO;
        req->reply.session_header = true;
        m = post_run(req, s, info, &initialized);
        if (!initialized) {
                /* The error went out without a session id; nothing to keep. */
                http_session_free(s);
                return m;
        }
        log_struct(LOG_INFO,
                   "MESSAGE=HTTP session opened (protocol %s), %u in use.", mcp_session_protocol_version(s->mcp),
                   h->n_sessions,
                   "MCP_TRANSPORT=http",
                   "MCP_PROTOCOL_VERSION=%s", mcp_session_protocol_version(s->mcp));
        return m;
}

static mhd_result mcp_post(HttpRequest *req) {
        _cleanup_(mcp_inbound_done) McpInbound info = {};
        const McpRevision *rev;
        const char *hv, *sid;
        HttpSession *s;
        int r;

        assert(req);

        r = http_request_parse(req, &info);
        if (r < 0)
                return http_request_refuse_unparsed(req, r, &info);

        if (protocol_header(req, &rev, &hv) < 0)
                return unsupported_version(req, info.id, hv);
        sid = http_request_header(req, "Mcp-Session-Id");

        /* 2026-07-28 has no sessions: a session id there is ignored. */
        if (rev ? rev->stateless : (!sid && info.stateless))
                return post_stateless(req, &info, hv);

        if (!sid) {
                if (!info.batch && info.method && streq(info.method, "initialize") && info.n_requests == 1)
                        return post_initialize(req, &info);
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, JSONRPC_SERVER_ERROR,
                                          "Bad Request: Mcp-Session-Id header is required (initialize first)");
        }
        s = http_session_find(req->server, HTTP_SESSION_STREAMABLE, sid, req->token_name);
        if (!s)
                return http_request_error(req, MHD_HTTP_NOT_FOUND, MCP_ERROR_SESSION_NOT_FOUND, "Session not found");
        return post_run(req, s, &info, NULL);
}

/* GET and DELETE: no stateless counterpart, and a session is required. */
static mhd_result session_of(HttpRequest *req, HttpSession **ret) {
        const McpRevision *rev;
        const char *hv, *sid;

        assert(req);
        assert(ret);

        *ret = NULL;
        if (protocol_header(req, &rev, &hv) < 0)
                return unsupported_version(req, NULL, hv);
        if (rev && rev->stateless)
                return http_request_error(req, MHD_HTTP_METHOD_NOT_ALLOWED, JSONRPC_SERVER_ERROR,
                                          "Method Not Allowed: protocol 2026-07-28 knows only POST");
        sid = http_request_header(req, "Mcp-Session-Id");
        if (!sid)
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, JSONRPC_SERVER_ERROR,
                                          "Bad Request: Mcp-Session-Id header is required");
        *ret = http_session_find(req->server, HTTP_SESSION_STREAMABLE, sid, req->token_name);
        if (!*ret)
                return http_request_error(req, MHD_HTTP_NOT_FOUND, MCP_ERROR_SESSION_NOT_FOUND, "Session not found");
        return MHD_YES;
}

static mhd_result mcp_get(HttpRequest *req) {
        HttpSession *s;
        mhd_result m = session_of(req, &s);

        assert(req);

        if (!s)
                return m;
        /* One stream for server-initiated messages; a second would split them. */
        if (s->stream)
                return http_request_error(req, MHD_HTTP_CONFLICT, JSONRPC_SERVER_ERROR,
                                          "Conflict: this session already has a GET stream");
        if (s->n_streams >= req->server->config.max_streams_per_session)
                return http_request_error(req, MHD_HTTP_TOO_MANY_REQUESTS, JSONRPC_SERVER_ERROR,
                                          "Too Many Requests: too many streams open in this session");
        /* Last-Event-ID is ignored: streams are not resumable. */
        req->route.is_stream = true;
        http_session_add_request(s, req);
        s->stream = req;
        http_session_touch(s);
        return http_request_start_sse(req, NULL);
}

static mhd_result mcp_delete(HttpRequest *req) {
        HttpSession *s;
        mhd_result m = session_of(req, &s);

        assert(req);

        if (!s)
                return m;
        log_struct(LOG_INFO, "MESSAGE=HTTP session ended by the client.", "MCP_TRANSPORT=http");
        http_session_free(s);
        return http_request_empty(req, MHD_HTTP_OK);
}

mhd_result streamable_handle(HttpRequest *req) {
        assert(req);

        if (streq(req->method, "POST"))
                return mcp_post(req);
        if (streq(req->method, "GET"))
                return mcp_get(req);
        return mcp_delete(req);
}
