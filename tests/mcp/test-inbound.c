/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/inbound.c: the facts a transport gets about an
 * incoming message, which it acts on without reading JSON-RPC. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "macro.h"
#include "mcp-server.h"
#include "test-helpers.h"

#define META_2026 \
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"progressToken\":\"t\"}"

static void inbound(const char *s, McpInbound *ret) {
        ASSERT_EQ_INT(mcp_inbound_parse(s, strlen(s), ret), 0);
}

TEST(test_parse_error) {
        McpInbound i = {};

        ASSERT_EQ_INT(mcp_inbound_parse("{\"jsonrpc\":", 11, &i), -EBADMSG);
        ASSERT_TRUE(!i.msg);
        ASSERT_TRUE(strneq(i.error, "Parse error: ", 13));
        ASSERT_EQ_INT(i.error_code, JSONRPC_PARSE_ERROR);
        mcp_inbound_done(&i);
        ASSERT_TRUE(!i.error);
        ASSERT_EQ_INT(mcp_inbound_parse(NULL, 0, &i), -EBADMSG);
        mcp_inbound_done(&i);

        /* Nesting past the limit is a parse error (400), too many values an
         * Invalid Request (413): both found before json-c builds anything. */
        {
                char deep[2 * 70 + 1];
                memset(deep, '[', 70);
                memset(deep + 70, ']', 70);
                deep[140] = 0;
                ASSERT_EQ_INT(mcp_inbound_parse(deep, 140, &i), -EBADMSG);
                ASSERT_EQ_INT(i.error_code, JSONRPC_PARSE_ERROR);
                ASSERT_TRUE(strneq(i.error, "Parse error: JSON nested too deeply", 35));
                mcp_inbound_done(&i);
        }
        {
                size_t n = JSONRPC_MAX_VALUES;  /* and the array: one more */
                char *s = malloc(2 * n + 2), *p = s;
                ASSERT_TRUE(s);
                *p++ = '[';
                for (size_t k = 0; k < n; k++) {
                        *p++ = '0';
                        *p++ = k + 1 < n ? ',' : ']';
                }
                ASSERT_EQ_INT(mcp_inbound_parse(s, (size_t) (p - s), &i), -E2BIG);
                ASSERT_TRUE(!i.msg && !i.batch && i.n_requests == 0);
                ASSERT_EQ_INT(i.error_code, JSONRPC_INVALID_REQUEST);
                ASSERT_TRUE(strneq(i.error, "Invalid Request: ", 17));
                mcp_inbound_done(&i);
                ASSERT_TRUE(!i.error && i.error_code == 0);
                free(s);
        }

        inbound("null", &i);
        ASSERT_TRUE(!i.msg && !i.method && i.n_requests == 0);
        mcp_inbound_done(&i);
}

TEST(test_single) {
        _cleanup_(mcp_inbound_done) McpInbound call = {}, init = {}, discover = {}, legacy = {}, unknown = {},
                                               odd = {}, notif = {}, bad_id = {}, read = {}, prompt = {};

        inbound("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"," META_2026 "}}",
                &call);
        ASSERT_TRUE(call.msg && !call.batch && !call.error);
        ASSERT_EQ_INT(call.n_requests, 1);
        ASSERT_TRUE(call.progress && call.stateless);
        ASSERT_STREQ(call.method, "tools/call");
        ASSERT_STREQ(call.name, "exec");
        ASSERT_STREQ(call.protocol_version, "2026-07-28");
        ASSERT_EQ_INT(json_object_get_int(call.id), 3);

        /* initialize never is stateless, server/discover always is. */
        inbound("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{" META_2026 "}}", &init);
        ASSERT_TRUE(!init.stateless && init.n_requests == 1 && !init.name);
        inbound("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}", &discover);
        ASSERT_TRUE(discover.stateless && !discover.protocol_version && !discover.progress);

        /* _meta naming an initialize-era version: not stateless; one we do not
         * know, or no string at all: stateless (the core then refuses it). */
        inbound("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                "{\"io.modelcontextprotocol/protocolVersion\":\"2025-06-18\",\"progressToken\":1.5}}}",
                &legacy);
        ASSERT_TRUE(!legacy.stateless && !legacy.progress);    /* 1.5 is no token the core takes */
        ASSERT_STREQ(legacy.protocol_version, "2025-06-18");
        inbound("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                "{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\"}}}",
                &unknown);
        ASSERT_TRUE(unknown.stateless);
        inbound("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                "{\"io.modelcontextprotocol/protocolVersion\":5}}}",
                &odd);
        ASSERT_TRUE(odd.stateless && !odd.protocol_version);

        /* A notification gets no reply; a bad id makes no request. */
        inbound("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{" META_2026 "}}", &notif);
        ASSERT_TRUE(notif.n_requests == 0 && !notif.id && !notif.stateless && !notif.progress);
        ASSERT_STREQ(notif.method, "notifications/cancelled");
        inbound("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", &bad_id);
        ASSERT_TRUE(bad_id.n_requests == 0 && !bad_id.id && !bad_id.method);

        /* What Mcp-Name mirrors. */
        inbound("{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///x\","
                "\"name\":\"no\"}}",
                &read);
        ASSERT_STREQ(read.name, "file:///x");
        ASSERT_STREQ(json_object_get_string(read.id), "r");
        inbound("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"prompts/get\",\"params\":{\"name\":\"greet\"}}", &prompt);
        ASSERT_STREQ(prompt.name, "greet");
}

TEST(test_batch) {
        _cleanup_(mcp_inbound_done) McpInbound b = {}, quiet = {}, empty = {};

        inbound("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                "\"_meta\":{\"progressToken\":9}}},"
                "{\"foo\":1}]",
                &b);
        ASSERT_TRUE(b.batch && b.progress && !b.stateless);
        ASSERT_EQ_INT(b.n_requests, 2);
        /* The single-message facts stay empty for a batch. */
        ASSERT_TRUE(!b.method && !b.id && !b.name && !b.protocol_version);

        inbound("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]", &quiet);
        ASSERT_TRUE(quiet.batch && quiet.n_requests == 0 && !quiet.progress);
        inbound("[]", &empty);
        ASSERT_TRUE(empty.batch && empty.n_requests == 0);
}

int main(void) {
        RUN(test_parse_error);
        RUN(test_single);
        RUN(test_batch);
        return 0;
}
