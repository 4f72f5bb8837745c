/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a transport needs to know of an incoming message before a session
 * has it: the HTTP transport picks the era, the session and the answer's
 * form from these facts and never reads JSON-RPC itself. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "macro.h"
#include "mcp-server.h"
#include "revision.h"

int mcp_progress_token_check(json_object *token) {
        int64_t v;

        if (json_object_is_type(token, json_type_string))
                return json_object_get_string_len(token) <= MCP_PROGRESS_TOKEN_MAX ? 1 : -E2BIG;
        if (!json_object_is_type(token, json_type_int))
                return 0;
        /* json-c keeps values above INT64_MAX as uint64, and gives those
         * as INT64_MAX here: out of range as well. */
        v = json_object_get_int64(token);
        return v >= -MCP_PROGRESS_TOKEN_INT_MAX && v <= MCP_PROGRESS_TOKEN_INT_MAX ? 1 : -E2BIG;
}

void mcp_inbound_done(McpInbound *i) {
        if (!i)
                return;
        json_object_put(i->msg);
        free(i->error);
        *i = (McpInbound) {};
}

/* The value the HTTP Mcp-Name header mirrors (2026-07-28). */
static const char *mirrored_name(const char *method, json_object *params) {
        if (streq(method, "tools/call") || streq(method, "prompts/get"))
                return json_get_string(params, "name");
        if (streq(method, "resources/read"))
                return json_get_string(params, "uri");
        /* The task extension: so a load balancer routes by the task id. */
        if (streq(method, "tasks/get") || streq(method, "tasks/update") || streq(method, "tasks/cancel"))
                return json_get_string(params, "taskId");
        return NULL;
}

/* The value Mcp-Param-Session mirrors (2026-07-28, x-mcp-header of exec's
 * and session_close's "session"): absent unless a string. */
static const char *mirrored_session(const char *method, json_object *params) {
        if (!streq(method, "tools/call"))
                return NULL;
        return json_get_string(json_get(params, "arguments"), "session");
}

static void add(McpInbound *i, json_object *m) {
        JsonRpcMessage c;
        json_object *meta;

        jsonrpc_classify(m, &c);
        meta = json_get(c.params, "_meta");
        if (!json_object_is_type(meta, json_type_object))
                meta = NULL;
        if (!i->batch) {
                i->id = jsonrpc_id_is_valid(c.id) ? c.id : NULL;
                if (c.kind == JSONRPC_REQUEST || c.kind == JSONRPC_NOTIFICATION) {
                        i->method = c.method;
                        i->protocol_version = json_get_string(meta, MCP_META_PROTOCOL_VERSION);
                        i->name = mirrored_name(c.method, c.params);
                        i->param_session = mirrored_session(c.method, c.params);
                        i->stateless = c.kind == JSONRPC_REQUEST && mcp_request_is_stateless(c.method, meta);
                }
        }
        if (c.kind != JSONRPC_REQUEST)
                return;
        i->n_requests++;
        /* As the core takes it: a string or an integer within bounds (one
         * past them gets an error, at once, not a stream). */
        if (mcp_progress_token_check(json_get(meta, "progressToken")) > 0)
                i->progress = true;
        /* A subscription is nothing but notifications: a stream too. */
        if (streq(c.method, "subscriptions/listen"))
                i->progress = true;
}

int mcp_inbound_parse(const char *data, size_t len, McpInbound *ret) {
        McpInbound i = {};
        const char *why;
        int r;

        assert(data || len == 0);
        assert(ret);

        r = jsonrpc_parse(data ?: "", len, &i.msg, &why);
        if (r == -EBADMSG || r == -E2BIG) {
                i.error_code = r == -E2BIG ? JSONRPC_INVALID_REQUEST : JSONRPC_PARSE_ERROR;
                if (asprintf(&i.error, "%s: %s", r == -E2BIG ? "Invalid Request" : "Parse error", why) < 0)
                        return -ENOMEM;
                *ret = i;
                return r;
        }
        if (r < 0)
                return r;
        if (json_object_is_type(i.msg, json_type_array)) {
                i.batch = true;
                for (size_t k = 0, n = json_object_array_length(i.msg); k < n; k++)
                        add(&i, json_object_array_get_idx(i.msg, k));
        } else
                add(&i, i.msg);
        *ret = i;
        return 0;
}
