/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The `language` argument of exec and session_create (issue 42). */
#include "tool-arg-language.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "json-util.h"
#include "language.h"
#include "macro.h"
#include "tool-exec.h"

uint32_t tool_languages(const McpServerConfig *c) {
        return c->languages | LANGUAGE_BIT(LANGUAGE_PYTHON);
}

/* The languages beside Python, if the server has any (issue 42). */
void tool_language_describe(FILE *f, const McpServerConfig *c) {
        uint32_t set = tool_languages(c);

        if (set == LANGUAGE_BIT(LANGUAGE_PYTHON))
                return;
        fputs("With \"language\" it runs", f);
        if (set & LANGUAGE_BIT(LANGUAGE_BASH))
                fputs(" a bash script (\"bash\": jq, sqlite3, awk and the usual tools where installed)", f);
        if ((set & LANGUAGE_BIT(LANGUAGE_BASH)) && (set & LANGUAGE_BIT(LANGUAGE_JAVASCRIPT)))
                fputs(" or", f);
        if (set & LANGUAGE_BIT(LANGUAGE_JAVASCRIPT))
                fputs(" JavaScript (\"javascript\": Node.js, CommonJS, top-level await)", f);
        fputs(" instead, in the same sandbox with the same limits; \"packages\" are Python's only. A figure is any "
              "PNG or SVG file the program writes to /tmp/outputs.\n", f);
}

static json_object *language_schema(const McpServerConfig *c, bool session) {
        _cleanup_json_ json_object *s = NULL, *e = json_object_new_array();
        uint32_t set = tool_languages(c);

        for (Language l = 0; e && l < _LANGUAGE_MAX; l++)
                if ((set & LANGUAGE_BIT(l)) && json_append(e, json_object_new_string(language_to_string(l))) < 0)
                        return NULL;
        if (!e || json_build(&s, JB_STR("type", "string"), JB_OBJ("enum", TAKE_PTR(e)),
                             JB_STR("default", "python"),
                             JB_STR("description",
                                    session ? "The language of the session's code, fixed for all its calls: python "
                                              "(the default), bash (its variables, functions and working directory "
                                              "stay), javascript (its global scope stays)."
                                            : "The language of code: python (the default), bash (a script run by "
                                              "bash), javascript (Node.js). With session: the session's own, given "
                                              "or not."),
                             JB_END) < 0)
                return NULL;
        return TAKE_PTR(s);
}

int tool_language_schema_add(const McpServerConfig *c, json_object *properties, bool session) {
        json_object *s;

        if (tool_languages(c) == LANGUAGE_BIT(LANGUAGE_PYTHON))
                return 0;
        s = language_schema(c, session);
        if (!s)
                return -ENOMEM;
        return json_add(properties, "language", s);
}

int tool_language_parse(const McpServerConfig *c, json_object *v, json_object *packages, const char **ret,
                        char **ret_error) {
        char have[64];
        Language l;

        *ret = NULL;
        if (!v || json_object_is_type(v, json_type_null))
                return 0;
        (void) language_set_to_string(tool_languages(c), have, sizeof have);
        if (!json_object_is_type(v, json_type_string) || language_from_string(json_object_get_string(v), &l) < 0)
                return tool_arg_error(ret_error, "\"language\" must be one of this server's languages: %s", have);
        if (!(tool_languages(c) & LANGUAGE_BIT(l)))
                return tool_arg_error(ret_error,
                                      "\"language\": %s is not available on this server (not installed, or turned "
                                      "off by its operator); it has %s",
                                      language_to_string(l), have);
        /* A wheelhouse has Python's packages. */
        if (l != LANGUAGE_PYTHON && packages && !json_object_is_type(packages, json_type_null))
                return tool_arg_error(ret_error, "\"packages\" are Python's only: not with \"language\": %s",
                                      language_to_string(l));
        *ret = language_to_string(l);
        return 0;
}
