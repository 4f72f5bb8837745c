/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The `packages` argument of exec and session_create (issue 23): specs of
 * packages from the operator's wheelhouse (package-spec.h, wheelhouse.h),
 * installed offline in the sandbox before the code runs. What the tools say
 * about the wheelhouse, its schema, and the checks of an argument before
 * any unit is asked for. The wheelhouse's manifest is read again when it
 * changed: one stat() per tools/list and per call that asks for packages
 * (tool_packages_refresh()), nothing else touches the disk. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"

typedef struct ToolPackages ToolPackages;

/* wheelhouse: MCP_EXEC_WHEELHOUSE ("": packages off); max_packages:
 * MCP_EXEC_MAX_PACKAGES (0: off). Nothing is read until the first refresh. */
int tool_packages_new(const char *wheelhouse, uint64_t max_packages, ToolPackages **ret);
ToolPackages *tool_packages_free(ToolPackages *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(ToolPackages *, tool_packages_free);

/* Reads the manifest again if its identity, size or mtime changed since the
 * last look (or it came or went). p may be NULL. */
void tool_packages_refresh(ToolPackages *p);

/* Packages are on: a wheelhouse and a limit are configured, and the
 * manifest, as last read, lists at least one project. */
bool tool_packages_enabled(const ToolPackages *p);

/* Appends to a tool description what the wheelhouse holds (cut short past
 * a few KiB). Nothing when packages are off. */
void tool_packages_describe(FILE *f, const ToolPackages *p);

/* The input schema's "packages" property (an array of strings, maxItems
 * the limit), or NULL when packages are off. -ENOMEM. */
int tool_packages_schema(const ToolPackages *p, json_object **ret);

/* May the call have these packages (the argument as given: NULL or JSON
 * null for none)? 0 if so; -EINVAL with *ret_error set to a text for the
 * model when it is not an array of strings, a spec is not one
 * (package_spec_valid()), there are more than the limit, a project is
 * asked for twice, packages are off, or a project is not in the
 * wheelhouse (the text lists what is); -ENOMEM. An empty array asks for
 * nothing and passes. */
int tool_packages_check(const ToolPackages *p, json_object *packages, char **ret_error);

/* Whether the argument asks for any package (a non-empty array). */
bool tool_packages_requested(json_object *packages);

/* Fixed parts of the isError texts (tests compare against them). */
#define TOOL_PACKAGES_NOT_ARRAY_TEXT                                                                            \
        "\"packages\" must be an array of strings, each a package spec such as \"polars\" or "                  \
        "\"scikit-learn==1.5.*\""
#define TOOL_PACKAGES_SPEC_HINT                                                                                 \
        "expected NAME, NAME==VERSION, NAME[extra]>=V,<W (a project name, optional extras and version "         \
        "clauses; no URLs, options, markers or spaces)"
