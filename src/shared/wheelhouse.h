/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The operator's wheelhouse as the front end sees it (issue 23): what its
 * manifest (package-spec.h, WHEELHOUSE_MANIFEST) lists, by project, for the
 * tool's description and to refuse an unknown package before a unit is
 * asked for. Read-only: only `mcp-exec wheels` writes it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define WHEELHOUSE_MANIFEST_MAX (UINT64_C(1) << 20)     /* a bigger manifest is refused */
#define WHEELHOUSE_PROJECTS_MAX 4096

typedef struct WheelhouseProject {
        char *name;                     /* normalized (PEP 503) */
        char *versions;                 /* "1.0, 1.2": every version it has, comma-separated, sorted */
} WheelhouseProject;

typedef struct Wheelhouse {
        WheelhouseProject *projects;    /* sorted by name */
        size_t n_projects;
} Wheelhouse;

/* Reads dir/SHA256SUMS: -ENOENT if there is none (no wheelhouse yet),
 * -EBADMSG if a line is malformed (not "<64 hex>  <name>-<version>-….whl"),
 * -EFBIG over WHEELHOUSE_MANIFEST_MAX or WHEELHOUSE_PROJECTS_MAX. */
int wheelhouse_load(const char *dir, Wheelhouse **ret);
Wheelhouse *wheelhouse_free(Wheelhouse *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Wheelhouse *, wheelhouse_free);

/* The project of that normalized name, or NULL. */
const WheelhouseProject *wheelhouse_find(const Wheelhouse *w, const char *name);

/* "name (versions), …" for the tool's description and an unknown
 * package's error, at most max bytes (cut at an entry, "…" appended). */
int wheelhouse_describe(const Wheelhouse *w, size_t max, char **ret);
