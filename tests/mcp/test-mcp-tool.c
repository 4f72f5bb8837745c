/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/mcp-tool.[ch], the tool table: which tools a
 * configuration offers, in which order, and the unknown-tool error built
 * from the table (the words the hand-kept list of earlier versions had). */

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mcp-tool.h"
#include "test-helpers.h"

static const McpServerConfig without_sessions = { .max_concurrent = 2, .max_queue = 4 };
static const McpServerConfig with_sessions = { .max_concurrent = 2, .max_queue = 4, .max_sessions = 16 };

TEST(test_table) {
        /* tools/list gives them in this order. */
        ASSERT_STREQ(mcp_tools[0]->name, "exec");
        ASSERT_STREQ(mcp_tools[1]->name, "session_create");
        ASSERT_STREQ(mcp_tools[2]->name, "session_close");
        ASSERT_TRUE(!mcp_tools[3]);
        /* Only the session tools talk to the broker directly. */
        ASSERT_TRUE(!tool_exec.broker_op);
        ASSERT_STREQ(tool_session_create.broker_op, "session_create");
        ASSERT_STREQ(tool_session_close.broker_op, "session_close");
        for (const McpTool *const *t = mcp_tools; *t; t++)
                ASSERT_TRUE((*t)->definition && (*t)->parse && (!(*t)->broker_op || (*t)->broker_done));
}

TEST(test_find) {
        ASSERT_TRUE(mcp_tool_find(&without_sessions, "exec") == &tool_exec);
        ASSERT_TRUE(!mcp_tool_find(&without_sessions, "session_create"));
        ASSERT_TRUE(!mcp_tool_find(&without_sessions, "session_close"));
        ASSERT_TRUE(mcp_tool_find(&with_sessions, "exec") == &tool_exec);
        ASSERT_TRUE(mcp_tool_find(&with_sessions, "session_create") == &tool_session_create);
        ASSERT_TRUE(mcp_tool_find(&with_sessions, "session_close") == &tool_session_close);
        ASSERT_TRUE(!mcp_tool_find(&with_sessions, "Exec"));
        ASSERT_TRUE(!mcp_tool_find(&with_sessions, ""));
}

TEST(test_unknown_text) {
        char *m, name[101];

        m = mcp_tool_unknown_text(&without_sessions, "nope");
        ASSERT_STREQ(m, "Unknown tool: nope (the tools are only \"exec\")");
        free(m);
        m = mcp_tool_unknown_text(&with_sessions, "nope");
        ASSERT_STREQ(m, "Unknown tool: nope (the tools are \"exec\", \"session_create\" and \"session_close\")");
        free(m);
        /* The name as given is cut to 64 characters. */
        memset(name, 'a', sizeof name - 1);
        name[sizeof name - 1] = 0;
        m = mcp_tool_unknown_text(&without_sessions, name);
        ASSERT_TRUE(m && strlen(m) == strlen("Unknown tool:  (the tools are only \"exec\")") + 64);
        free(m);
}

int main(void) {
        RUN(test_table);
        RUN(test_find);
        RUN(test_unknown_text);
        return 0;
}
