/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A run's "packages" (issue 23, package-spec.h): the launcher's trusted
 * parent runs the installer (mcp-exec-install.py, next to --bootstrap) after
 * it got the run and before it reads the code, and sends what it did as
 * RESULT_FRAME_PACKAGES before the code runs. On failure the code does not
 * run at all.
 *
 * Where the packages go: pip's --prefix SANDBOX_PACKAGES_PREFIX, on the
 * run's own /tmp. pip puts them in the interpreter's default "prefix"
 * install scheme with base = SANDBOX_PACKAGES_PREFIX, which Debian patches
 * (posix_local): SANDBOX_PACKAGES_PREFIX/local/lib/python3.X/dist-packages
 * and scripts in SANDBOX_PACKAGES_PREFIX/local/bin. Only Python computes it,
 * with sysconfig, in site_dirs() of mcp-exec-install.py and _site_dirs() of
 * mcp-exec-bootstrap.py (the same lines: they must agree; the launch tests
 * import what one installs through the other). The bootstrap, given
 * --packages=PREFIX (only with --wheelhouse), puts that directory on
 * sys.path after the standard library and before the system's packages as
 * a venv would, when it exists at "go" or appears later (a pip install in
 * the code).
 *
 * The installer process: PYTHON -I -B mcp-exec-install.py in its own process
 * group, environment built from nothing; the request as JSON on its stdin
 * (specs never in argv), its answer as one JSON object on stdout (at most
 * LAUNCH_INSTALL_ANSWER_MAX), pip's output on stderr, of which we keep the
 * tail (RESULT_PACKAGES_LOG_MAX) as the frame's data. At the deadline the
 * whole group is killed and the install reported as timed out. */

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "launch-collect.h"
#include "launch-common.h"

#define LAUNCH_INSTALLER_NAME "mcp-exec-install.py"
#define LAUNCH_INSTALL_ANSWER_MAX (64U * 1024U)

/* What one install did, for the frame. */
typedef struct LaunchInstall {
        bool ok;
        bool timed_out;                 /* the deadline came first */
        char *error;                    /* when !ok */
        json_object *requested, *installed, *already, *replaced;        /* arrays */
        char *log;                      /* pip's output, its tail */
        size_t log_len;
        uint64_t duration_usec;
} LaunchInstall;

void launch_install_done(LaunchInstall *i);

/* The installer process (launch-installer.c): sends request, waits until
 * deadline (CLOCK_MONOTONIC µs, 0: none) for the answer, fills i->log and
 * returns the answer (a JSON object), or NULL with *ret_error set to a
 * static text (it died, said nothing readable, or timed out). */
json_object *launch_installer_run(const LaunchArgs *a, json_object *request, uint64_t deadline,
                                  LaunchInstall *i, const char **ret_error);

/* Whether the broker's run message carries "packages". */
bool launch_packages_wanted(json_object *run);

/* Installs what run's "packages" asks for, except the specs in *session
 * (a session's earlier installs: listed as "already"; NULL for a plain run),
 * to which the new ones are added on success. allow_replace: whether a
 * system distribution may be shadowed (a session after its first code: no).
 * Fills *ret (ret->ok says whether the code may run); -ENOMEM only. */
int launch_packages_install(const LaunchArgs *a, json_object *run, char ***session, bool allow_replace,
                            uint64_t deadline, LaunchInstall *ret);

/* The RESULT_FRAME_PACKAGES frame, its lists cut to fit the meta. */
void launch_packages_send(const LaunchInstall *i, bool fresh_interpreter, ResultWriter *w);
