/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The `language` argument of exec and session_create (issue 42): "python"
 * (the default), "bash", "javascript", among those the broker has
 * (McpServerConfig.languages). No I/O here. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "language.h"
#include "mcp-config.h"

/* LANGUAGE_BIT()s of the languages runs may use: Python always. */
uint32_t tool_languages(const McpServerConfig *c);

/* Appends to the exec tool's description what "language" offers; nothing
 * when the server has Python alone. */
void tool_language_describe(FILE *f, const McpServerConfig *c);

/* Adds the "language" property to exec's input schema's properties
 * (session: session_create's), when the server has more than Python (the
 * schema is then what it always was); -ENOMEM. */
int tool_language_schema_add(const McpServerConfig *c, json_object *properties, bool session);

/* The argument v (NULL or null: not given, *ret NULL) checked against the
 * server's languages, and against packages (the call's "packages", NULL for
 * none: Python's only): 0 with *ret its name (static), -EINVAL with
 * *ret_error for the model, naming what the server has, or -ENOMEM. */
int tool_language_parse(const McpServerConfig *c, json_object *v, json_object *packages, const char **ret,
                        char **ret_error);
