/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The line a local peer gets when polkit says no: polkit's reason is free
 * text (a D-Bus error message), and quotes, backslashes or control characters
 * in it must not break the JSON-RPC line. */
#include <json-c/json.h>
#include <string.h>

#include "stdio-server.h"
#include "test-helpers.h"

static void check(const char *reason) {
        char *line = NULL;
        json_object *j, *e, *v;

        ASSERT_EQ_INT(stdio_refusal_line(1000, reason, &line), 0);
        ASSERT_TRUE(!strchr(line, '\n'));
        j = json_tokener_parse(line);
        ASSERT_TRUE(j);
        ASSERT_TRUE(json_object_object_get_ex(j, "error", &e));
        ASSERT_TRUE(json_object_object_get_ex(e, "code", &v) && json_object_get_int(v) == -32001);
        ASSERT_TRUE(json_object_object_get_ex(e, "message", &v));
        ASSERT_TRUE(strstr(json_object_get_string(v), "uid 1000"));
        ASSERT_TRUE(strstr(json_object_get_string(v), reason));
        ASSERT_TRUE(json_object_object_get_ex(j, "id", &v) && v == NULL);
        json_object_put(j);
        free(line);
}

int main(void) {
        check("not authorized");
        check("Action \"org.mcp-exec.run\" is not registered");
        check("back\\slash and a\nnewline and a\ttab");
        check("");
        return 0;
}
