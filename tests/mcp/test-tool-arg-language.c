/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-arg-language.[ch] (issue 42): the `language`
 * argument of exec and session_create against what the server has, its
 * isError texts, and the schemas with and without other languages. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "language.h"
#include "macro.h"
#include "mcp-tool.h"
#include "revision.h"
#include "test-helpers.h"
#include "tool-arg-language.h"
#include "tool-config.h"
#include "tool-exec.h"
#include "tool-session.h"

static McpServerConfig python_only = { TOOL_CONFIG, .max_sessions = 4 };
static McpServerConfig with_bash = {
        TOOL_CONFIG,
        .max_sessions = 4,
        .languages = LANGUAGE_BIT(LANGUAGE_PYTHON) | LANGUAGE_BIT(LANGUAGE_BASH),
};

static int parse(const McpServerConfig *c, const char *json, const char **ret, char **ret_error) {
        _cleanup_json_ json_object *args = json_tokener_parse(json);

        ASSERT_TRUE(args != NULL);
        return tool_language_parse(c, json_get(args, "language"), json_get(args, "packages"), ret, ret_error);
}

TEST(test_parse) {
        const char *l = "x";
        char *error = NULL;

        ASSERT_EQ_INT(parse(&with_bash, "{}", &l, &error), 0);
        ASSERT_TRUE(l == NULL);
        ASSERT_EQ_INT(parse(&with_bash, "{\"language\":null}", &l, &error), 0);
        ASSERT_TRUE(l == NULL);
        ASSERT_EQ_INT(parse(&with_bash, "{\"language\":\"bash\"}", &l, &error), 0);
        ASSERT_STREQ(l, "bash");
        ASSERT_EQ_INT(parse(&python_only, "{\"language\":\"python\"}", &l, &error), 0);
        ASSERT_STREQ(l, "python");
        ASSERT_EQ_INT(parse(&with_bash, "{\"language\":\"python\",\"packages\":[\"x\"]}", &l, &error), 0);

        ASSERT_EQ_INT(parse(&with_bash, "{\"language\":\"cobol\"}", &l, &error), -EINVAL);
        ASSERT_CONTAINS(error, "python,bash");
        error = mfree(error);
        ASSERT_EQ_INT(parse(&with_bash, "{\"language\":7}", &l, &error), -EINVAL);
        error = mfree(error);
        ASSERT_EQ_INT(parse(&with_bash, "{\"language\":\"javascript\"}", &l, &error), -EINVAL);
        ASSERT_CONTAINS(error, "not available");
        ASSERT_CONTAINS(error, "it has python,bash");
        error = mfree(error);
        /* Python only (an older broker, or the operator's choice): 0 is Python. */
        ASSERT_EQ_INT(parse(&python_only, "{\"language\":\"bash\"}", &l, &error), -EINVAL);
        ASSERT_CONTAINS(error, "it has python");
        error = mfree(error);
        ASSERT_EQ_INT(parse(&with_bash, "{\"language\":\"bash\",\"packages\":[\"x\"]}", &l, &error), -EINVAL);
        ASSERT_CONTAINS(error, "Python's only");
        error = mfree(error);
}

TEST(test_exec_tool) {
        _cleanup_json_ json_object *args = json_tokener_parse("{\"code\":\"echo hi\",\"language\":\"bash\"}"),
                                   *bad = json_tokener_parse("{\"code\":\"echo hi\",\"language\":\"ruby\"}");
        McpToolArgs a = {};
        char *error = NULL;

        ASSERT_EQ_INT(tool_exec.parse(&with_bash, args, &a, &error), 0);
        ASSERT_STREQ(a.exec.language, "bash");
        mcp_tool_args_done(&a);
        a = (McpToolArgs) {};
        ASSERT_EQ_INT(tool_exec.parse(&with_bash, bad, &a, &error), -EINVAL);
        ASSERT_CONTAINS(error, "languages");
        free(error);
        mcp_tool_args_done(&a);
}

TEST(test_schemas) {
        const McpRevision *rev = mcp_revision_find("2025-06-18");
        _cleanup_json_ json_object *plain = tool_exec_definition(&python_only, rev),
                                   *more = tool_exec_definition(&with_bash, rev),
                                   *create = tool_session_create_definition(&with_bash, rev);
        json_object *l;

        ASSERT_TRUE(plain && more && create);
        /* Python alone: the schema and description are what they always were. */
        ASSERT_TRUE(json_get(json_get(json_get(plain, "inputSchema"), "properties"), "language") == NULL);
        ASSERT_TRUE(strstr(json_get_string(plain, "description"), "\"language\"") == NULL);
        l = json_get(json_get(json_get(more, "inputSchema"), "properties"), "language");
        ASSERT_TRUE(l != NULL);
        ASSERT_EQ_INT(json_object_array_length(json_get(l, "enum")), 2);
        ASSERT_STREQ(json_object_get_string(json_object_array_get_idx(json_get(l, "enum"), 1)), "bash");
        ASSERT_CONTAINS(json_get_string(more, "description"), "a bash script");
        ASSERT_TRUE(json_get(json_get(json_get(create, "inputSchema"), "properties"), "language") != NULL);
}

int main(void) {
        RUN(test_parse);
        RUN(test_exec_tool);
        RUN(test_schemas);
        return 0;
}
