/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tool-result.h"

#include <assert.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

/* The pieces of a CallToolResult that every tool builds with. */

json_object *tool_text_content(const char *text, size_t len) {
        _cleanup_json_ json_object *content = json_object_new_array(), *block = json_object_new_object();

        assert(text);

        if (!content || !block || json_add_string(block, "type", "text") < 0 ||
            json_add(block, "text", json_object_new_string_len(text, (int) len)) < 0 ||
            json_append(content, TAKE_PTR(block)) < 0)
                return NULL;
        return TAKE_PTR(content);
}

json_object *tool_error_result(const char *text) {
        _cleanup_json_ json_object *result = json_object_new_object();

        assert(text);

        if (!result || json_add(result, "content", tool_text_content(text, strlen(text))) < 0 ||
            json_add_bool(result, "isError", true) < 0)
                return NULL;
        return TAKE_PTR(result);
}
