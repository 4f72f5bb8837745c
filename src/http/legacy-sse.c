/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The HTTP+SSE transport of 2024-11-05, for clients that never moved on:
 * GET /sse opens a session and tells where to POST (a relative URL, as
 * clients refuse another origin); POST /messages?sessionId= answers 202 and
 * the reply goes out on the stream as a "message" event. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "http-internal.h"
#include "http-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "revision.h"

static bool bad_protocol_header(HttpRequest *req) {
        const char *v = http_request_header(req, "MCP-Protocol-Version");

        assert(req);

        return v && !mcp_revision_find(v);
}

mhd_result legacy_sse_open(HttpRequest *req) {
        HttpServer *h = req->server;
        _cleanup_free_ char *endpoint = NULL;
        HttpSession *s;

        assert(req);

        /* As GET /mcp: only a client that reads an event stream gets a
         * session, not whatever fetches a URL. */
        if (!http_accepts(http_request_header(req, "Accept"), "text/event-stream"))
                return http_request_error(req, MHD_HTTP_NOT_ACCEPTABLE, JSONRPC_SERVER_ERROR,
                                          "Not Acceptable: Accept must list text/event-stream");
        if (bad_protocol_header(req))
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION,
                                          "Bad Request: unsupported MCP-Protocol-Version");
        /* Ends no session that holds something: 503 and Retry-After then. */
        if (!http_session_make_room(h, req))
                return http_request_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_ERROR,
                                          "Service Unavailable: too many sessions in use; retry later");
        if (http_session_new(h, HTTP_SESSION_LEGACY, req, &s) < 0)
                return MHD_NO;
        req->route.is_stream = true;
        http_session_add_request(s, req);
        s->stream = req;
        if (asprintf(&endpoint, "event: endpoint\ndata: /messages?sessionId=%s\n\n", s->id) < 0) {
                http_session_free(s);
                return MHD_NO;
        }
        log_struct(LOG_INFO, "MESSAGE=Legacy SSE session opened, %u sessions in use.", h->n_sessions,
                   "MCP_TRANSPORT=sse");
        /* On failure MHD closes the connection, and the session goes with it. */
        return http_request_start_sse(req, endpoint);
}

mhd_result legacy_messages_post(HttpRequest *req) {
        const char *id = MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "sessionId");
        _cleanup_(mcp_inbound_done) McpInbound info = {};
        HttpSession *s;
        int r;

        assert(req);

        if (!id)
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, JSONRPC_SERVER_ERROR,
                                          "Bad Request: the sessionId query parameter is required");
        s = http_session_find(req->server, HTTP_SESSION_LEGACY, id, req->token_name);
        if (!s || !s->stream)
                return http_request_error(req, MHD_HTTP_NOT_FOUND, MCP_ERROR_SESSION_NOT_FOUND, "Session not found");
        if (bad_protocol_header(req))
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION,
                                          "Bad Request: unsupported MCP-Protocol-Version");
        /* Unreadable input is refused here rather than on the stream. */
        r = http_request_parse(req, &info);
        if (r < 0)
                return http_request_refuse_unparsed(req, r, &info);
        if (http_session_handle(s, NULL, &info) < 0)
                return MHD_NO;
        return http_request_empty(req, MHD_HTTP_ACCEPTED);
}
