/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Packages on demand (issue 23): what a caller may ask for in "packages" on
 * exec and session_create, and where the operator's wheelhouse is.
 *
 * A spec is a requirement in a strict subset of PEP 508: a project name,
 * optional extras, optional version clauses, and nothing else:
 *
 *     polars   scikit-learn==1.5.*   requests[socks]>=2.31,<3   numpy~=1.26
 *
 * No URLs ("@"), no markers (";"), no spaces, no leading "-": a spec ends
 * up as one line of a pip requirements file in the sandbox, where a line
 * starting with "-" would be an option (--index-url, -r /etc/...). The
 * same check runs in the front end (to answer early and clearly), in the
 * broker (it never forwards anything else) and in the installer. */

#include <stdbool.h>
#include <stddef.h>

#define PACKAGE_SPEC_MAX 128            /* bytes of one spec */
#define PACKAGES_MAX 64                 /* the highest MCP_EXEC_MAX_PACKAGES */

/* The default MCP_EXEC_WHEELHOUSE: the operator's raw downloads, which runs
 * never see (InaccessiblePaths=, sandbox-properties.c; issue 41). */
#define WHEELHOUSE_DEFAULT "/var/lib/mcp-exec/wheels"
/* The default MCP_EXEC_PACKAGE_STORE: what `mcp-exec wheels` prepared of
 * the listed wheels (verified copies, unpacked trees, index.json; layout in
 * docs/packages.md), which runs see read-only at the same path
 * (ProtectSystem=strict) and install from: the launcher's --wheelhouse. */
#define PACKAGE_STORE_DEFAULT "/var/lib/mcp-exec/packages"
#define PACKAGE_STORE_INDEX "index.json"
/* In the wheelhouse: one line per usable wheel, as sha256sum(1) writes them,
 * "<64 lowercase hex>  <file name>.whl", sorted by file name. Written (by
 * rename) only by `mcp-exec wheels`; a wheel that is not listed is never
 * installed, and one whose hash differs is refused. */
#define WHEELHOUSE_MANIFEST "SHA256SUMS"

/* Where a run's (or session's) packages go, on its own /tmp: its user base
 * (PYTHONUSERBASE), so that every interpreter of the run sees them and the
 * system's packages still count as installed. Its site directory is what the
 * interpreter's "user" scheme says (SANDBOX_PACKAGES_PREFIX
 * "/lib/python3.X/site-packages", scripts in "/bin"), computed the same way
 * by the installer and the bootstrap (launch-packages.h). */
#define SANDBOX_PACKAGES_PREFIX "/tmp/.local"

/* A spec as above, 1..PACKAGE_SPEC_MAX bytes, s[0..len) with no NUL. */
bool package_spec_valid(const char *s, size_t len);

/* The spec's project name, normalized as PEP 503 says (lower case, runs of
 * "-", "_", "." as one "-"): "Scikit_Learn==1.5" -> "scikit-learn".
 * -EINVAL if !package_spec_valid(). */
int package_spec_name(const char *spec, char **ret_name);

/* MCP_EXEC_WHEELHOUSE: absolute, no "." or ".." or "//" components, no
 * trailing "/", at most 255 bytes, and not under a tree that a run
 * sees writable or not at all (/tmp, /var/tmp, /run, /dev, /proc, /sys,
 * /home, /root). */
bool wheelhouse_path_valid(const char *path);

/* a and b (both valid paths) are the same directory or one holds the other:
 * MCP_EXEC_WHEELHOUSE and MCP_EXEC_PACKAGE_STORE may not, as runs are denied
 * the one and read the other. */
bool paths_overlap(const char *a, const char *b);
