/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-session.[ch] (the session tools' definitions,
 * handles, arguments and results) and src/mcp/sandbox-session-table.[ch] (the front
 * end's bookkeeping of the sessions it handed out). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json-util.h"
#include "node-id.h"
#include "revision.h"
#include "sandbox-session-table.h"
#include "test-helpers.h"
#include "tool-config.h"
#include "tool-exec.h"
#include "tool-session.h"

static const McpServerConfig config = {
        TOOL_CONFIG,
        .max_sessions = 16,
        .max_sessions_per_caller = 4,
        .session_idle_s = 600,
        .session_max_s = 3600,
};

#define ID "0123456789abcdef0123456789abcdef"

TEST(test_handles) {
        char id[TOOL_SESSION_ID_LEN + 1], other[128];
        _cleanup_free_ char *h = NULL;

        ASSERT_EQ_INT(node_id_init("exec1"), 0);
        ASSERT_EQ_INT(tool_session_format_handle(ID, &h), 0);
        ASSERT_STREQ(h, "exec1." ID);
        ASSERT_EQ_INT(tool_session_parse_handle(h, id), 0);
        ASSERT_STREQ(id, ID);

        /* Another node's handle is not ours to look up. */
        ASSERT_EQ_INT(tool_session_parse_handle("exec2." ID, id), -EXDEV);
        /* Not handles at all. */
        ASSERT_EQ_INT(tool_session_parse_handle(NULL, id), -EINVAL);
        ASSERT_EQ_INT(tool_session_parse_handle("", id), -EINVAL);
        ASSERT_EQ_INT(tool_session_parse_handle(ID, id), -EINVAL);
        ASSERT_EQ_INT(tool_session_parse_handle("exec1.", id), -EINVAL);
        ASSERT_EQ_INT(tool_session_parse_handle("exec1.0123456789ABCDEF0123456789abcdef", id), -EINVAL);
        ASSERT_EQ_INT(tool_session_parse_handle("exec1.0123456789abcdef0123456789abcde", id), -EINVAL);
        ASSERT_EQ_INT(tool_session_parse_handle("exec1.0123456789abcdef0123456789abcdef0", id), -EINVAL);
        ASSERT_EQ_INT(tool_session_parse_handle("exec1.0123456789abcdef0123456789abcdeg", id), -EINVAL);
        (void) snprintf(other, sizeof other, "../exec1.%s", ID);
        ASSERT_TRUE(tool_session_parse_handle(other, id) < 0);
        ASSERT_EQ_INT(tool_session_format_handle("short", &h), -EINVAL);
}

static bool has_mirror(json_object *def) {
        json_object *session = json_get(json_get(json_get(def, "inputSchema"), "properties"), "session");
        return streq_ptr(json_get_string(session, "x-mcp-header"), "Session");
}

TEST(test_definitions) {
        const McpRevision *old = mcp_revision_find("2025-06-18"), *stateless = mcp_revision_stateless();
        McpServerConfig none = config;

        none.max_sessions = 0;
        ASSERT_TRUE(tool_session_available(&config));
        ASSERT_FALSE(tool_session_available(&none));

        for (int i = 0; i < 2; i++) {
                const McpRevision *rev = i ? stateless : old;
                _cleanup_json_ json_object *create = tool_session_create_definition(&config, rev),
                                           *close = tool_session_close_definition(&config, rev),
                                           *exec = tool_exec_definition(&config, rev),
                                           *exec_none = tool_exec_definition(&none, rev);
                const char *d;

                ASSERT_TRUE(create && close && exec && exec_none);
                ASSERT_STREQ(json_get_string(create, "name"), TOOL_SESSION_CREATE_NAME);
                ASSERT_STREQ(json_get_string(close, "name"), TOOL_SESSION_CLOSE_NAME);
                /* The lifetime is stated where the model reads it. */
                d = json_get_string(create, "description");
                ASSERT_CONTAINS(d, "600 s without a call");
                ASSERT_CONTAINS(d, "3600 s after it started");
                ASSERT_CONTAINS(d, "256 MiB");
                ASSERT_CONTAINS(d, "dropped");
                ASSERT_CONTAINS(json_get_string(exec, "description"), "session_create");
                ASSERT_TRUE(json_get(json_get(json_get(exec, "inputSchema"), "properties"), "session"));
                ASSERT_FALSE(json_get(json_get(json_get(exec_none, "inputSchema"), "properties"), "session"));
                /* Mirrored for a load balancer only where the revision has it. */
                ASSERT_TRUE(has_mirror(exec) == (rev == stateless));
                ASSERT_TRUE(has_mirror(close) == (rev == stateless));
                ASSERT_TRUE(json_get(create, "outputSchema") != NULL);
        }
}

TEST(test_arguments) {
        _cleanup_json_ json_object *empty = json_tokener_parse("{}"), *extra = json_tokener_parse("{\"x\":1}"),
                                   *ok = json_tokener_parse("{\"session\":\"exec1." ID "\"}"),
                                   *num = json_tokener_parse("{\"session\":5}"),
                                   *more = json_tokener_parse("{\"session\":\"a\",\"code\":\"1\"}"),
                                   *exec = json_tokener_parse("{\"code\":\"1\",\"session\":\"exec1." ID "\"}"),
                                   *exec_bad = json_tokener_parse("{\"code\":\"1\",\"session\":[]}"),
                                   *exec_null = json_tokener_parse("{\"code\":\"1\",\"session\":null}"),
                                   *net = json_tokener_parse("{\"network\":\"pypi\"}"),
                                   *net_num = json_tokener_parse("{\"network\":1}"),
                                   *pkgs = json_tokener_parse("{\"packages\":[\"polars\"],\"network\":\"pypi\"}");
        McpServerConfig none = config;
        json_object *packages = NULL;
        const char *handle = NULL, *network = NULL;
        char *error = NULL;
        ExecArgs a = {};

        ASSERT_EQ_INT(tool_session_create_parse_arguments(NULL, &network, &packages, &error), 0);
        ASSERT_TRUE(network == NULL);
        ASSERT_EQ_INT(tool_session_create_parse_arguments(empty, &network, &packages, &error), 0);
        ASSERT_TRUE(network == NULL);
        ASSERT_EQ_INT(tool_session_create_parse_arguments(extra, &network, &packages, &error), -EINVAL);
        ASSERT_CONTAINS(error, "only \"network\", \"packages\" and \"language\"");
        error = mfree(error);
        ASSERT_EQ_INT(tool_session_create_parse_arguments(net, &network, &packages, &error), 0);
        ASSERT_STREQ(network, "pypi");
        ASSERT_EQ_INT(tool_session_create_parse_arguments(net_num, &network, &packages, &error), -EINVAL);
        ASSERT_CONTAINS(error, "egress policy");
        error = mfree(error);
        /* "packages" is taken as given, for tool_packages_check(). */
        ASSERT_EQ_INT(tool_session_create_parse_arguments(pkgs, &network, &packages, &error), 0);
        ASSERT_TRUE(packages == json_object_object_get(pkgs, "packages"));
        ASSERT_STREQ(network, "pypi");

        ASSERT_EQ_INT(tool_session_close_parse_arguments(ok, &handle, &error), 0);
        ASSERT_STREQ(handle, "exec1." ID);
        ASSERT_EQ_INT(tool_session_close_parse_arguments(empty, &handle, &error), -EINVAL);
        error = mfree(error);
        ASSERT_EQ_INT(tool_session_close_parse_arguments(num, &handle, &error), -EINVAL);
        error = mfree(error);
        ASSERT_EQ_INT(tool_session_close_parse_arguments(more, &handle, &error), -EINVAL);
        error = mfree(error);

        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, exec, &a, &error), 0);
        ASSERT_STREQ(a.session, "exec1." ID);
        exec_args_done(&a);
        a = (ExecArgs) {};
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, exec_null, &a, &error), 0);
        ASSERT_TRUE(a.session == NULL);
        exec_args_done(&a);
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, exec_bad, &a, &error), -EINVAL);
        ASSERT_CONTAINS(error, "session");
        error = mfree(error);
        /* Without sessions there is no such argument. */
        none.max_sessions = 0;
        ASSERT_EQ_INT(tool_exec_parse_arguments(&none, exec, &a, &error), -EINVAL);
        ASSERT_CONTAINS(error, "unknown argument \"session\"");
        error = mfree(error);
}

TEST(test_results) {
        _cleanup_json_ json_object *reply = json_tokener_parse(
                "{\"event\":\"session\",\"session\":\"" ID "\",\"idle_timeout_s\":600,\"max_lifetime_s\":3600,"
                "\"memory_max_bytes\":268435456}");
        _cleanup_json_ json_object *r = tool_session_created_result(mcp_revision_stateless(), "exec1." ID, reply),
                                   *c = tool_session_closed_result(mcp_revision_find("2024-11-05"), "exec1." ID);
        _cleanup_free_ char *busy = tool_session_failure_text(BROKER_ERROR_SESSION_BUSY, NULL),
                            *gone = tool_session_failure_text(BROKER_ERROR_SESSION_NOT_FOUND, "x"),
                            *limit = tool_session_failure_text(BROKER_ERROR_SESSION_LIMIT, "the cap");
        json_object *sc;

        ASSERT_TRUE(r && c);
        sc = json_get(r, "structuredContent");
        ASSERT_STREQ(json_get_string(sc, "session"), "exec1." ID);
        ASSERT_TRUE(json_get_int64(sc, "idle_timeout_s", 0) == 600);
        ASSERT_TRUE(json_get_int64(sc, "memory_max_bytes", 0) == 268435456);
        ASSERT_FALSE(json_get_bool(r, "isError"));
        /* 2024-11-05 has no structuredContent: the text block carries it. */
        ASSERT_FALSE(json_get(c, "structuredContent"));
        ASSERT_CONTAINS(json_get_string(json_object_array_get_idx(json_get(c, "content"), 0), "text"), "\"closed\":true");
        ASSERT_CONTAINS(busy, "busy");
        ASSERT_CONTAINS(gone, "session not found");
        ASSERT_CONTAINS(limit, "the cap");
}

TEST(test_bookkeeping) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_(sandbox_session_table_freep) SandboxSessionTable *t = NULL;
        const SandboxOwner uid0 = { "uid:0", "" }, scope1 = { "uid:0", "scope1" };

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        ASSERT_EQ_INT(sandbox_session_table_new(e, "/nonexistent/broker.sock", &t), 0);
        ASSERT_EQ_INT((int) sandbox_session_table_alive(t), 0);
        /* The entries outlive the broker's timers by a few seconds: 0 s
         * idle is 5 s here. */
        ASSERT_EQ_INT(sandbox_session_table_add(t, ID, &uid0, 0, 3600 * USEC_PER_SEC), 0);
        ASSERT_EQ_INT(sandbox_session_table_add(t, "fedcba9876543210fedcba9876543210", &scope1, 600 * USEC_PER_SEC,
                                                3600 * USEC_PER_SEC),
                      0);
        ASSERT_EQ_INT((int) sandbox_session_table_alive(t), 2);
        sandbox_session_table_touch(t, ID, &uid0);
        sandbox_session_table_remove(t, ID, &uid0);
        ASSERT_EQ_INT((int) sandbox_session_table_alive(t), 1);
        sandbox_session_table_remove(t, ID, &uid0);     /* twice is fine */
        /* Another scope's end leaves it; its own forgets it (the broker
         * request fails here, which only logs). */
        sandbox_session_table_close_scope(t, &(SandboxOwner) { "uid:0", "scope2" });
        ASSERT_EQ_INT((int) sandbox_session_table_alive(t), 1);
        sandbox_session_table_close_scope(t, &uid0);
        ASSERT_EQ_INT((int) sandbox_session_table_alive(t), 1);
        sandbox_session_table_close_scope(t, &scope1);
        ASSERT_EQ_INT((int) sandbox_session_table_alive(t), 0);
        /* Bounded: the oldest goes. */
        for (unsigned i = 0; i < SANDBOX_SESSION_TABLE_MAX + 10; i++) {
                char id[33];
                (void) snprintf(id, sizeof id, "%032x", i);
                ASSERT_EQ_INT(sandbox_session_table_add(t, id, &uid0, 600 * USEC_PER_SEC, 3600 * USEC_PER_SEC), 0);
        }
        ASSERT_EQ_INT((int) sandbox_session_table_alive(t), (int) SANDBOX_SESSION_TABLE_MAX);
}

int main(void) {
        RUN(test_handles);
        RUN(test_definitions);
        RUN(test_arguments);
        RUN(test_results);
        RUN(test_bookkeeping);
        return 0;
}
