/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A run's "packages" (issues 23 and 41, package-spec.h): the launcher's
 * trusted parent runs the installer (mcp-exec-install.py, next to
 * --bootstrap) after it got the run and before it reads the code, and sends
 * what it did as RESULT_FRAME_PACKAGES before the code runs. On failure the
 * code does not run at all.
 *
 * Where the packages come from: --wheelhouse names the package store when it
 * holds LAUNCH_STORE_INDEX (docs/packages.md: the operator's tool unpacked
 * each listed wheel there once, checked, content-addressed, read-only), else
 * a plain wheelhouse (its SHA256SUMS), which only pip installs from. From the
 * store the installer resolves the specs against the index itself and adds
 * the chosen trees to the run's site by a .pth: nothing is copied, no pip,
 * unless the index alone cannot decide; the store's checked wheel copies,
 * LAUNCH_STORE_WHEELS, are pip's (the installer's and the code's).
 *
 * Where the packages go: the run's user site, PYTHONUSERBASE =
 * SANDBOX_PACKAGES_PREFIX on its own /tmp (P/lib/python3.X/site-packages,
 * scripts in P/bin), so that every interpreter the code starts (python3 -c,
 * -m, console scripts by name on PATH, multiprocessing) sees them as the
 * code does. Only Python computes the path, with sysconfig, in site_dirs() of
 * mcp-exec-install.py and _site_dirs() of mcp-exec-bootstrap.py (the same
 * lines: they must agree; the launch tests import what one installs through
 * the other). The bootstrap (-I: no user site of its own), given
 * --packages=PREFIX (only with --wheelhouse), does what site.py does for the
 * others, that directory and its .pth files, after the standard library and
 * before the system's packages, when it exists at "go" or appears later (a
 * pip install in the code).
 *
 * The installer process: PYTHON -I -B mcp-exec-install.py in its own process
 * group, environment built from nothing; the request as JSON on its stdin
 * (specs never in argv), its answer as one JSON object on stdout (at most
 * LAUNCH_INSTALL_ANSWER_MAX), pip's output on stderr, of which we keep the
 * tail (RESULT_PACKAGES_LOG_MAX) as the frame's data. At the deadline the
 * whole group is killed and the install reported as timed out. A warm unit
 * starts it ahead, beside its interpreter (launch_installer_prespawn()): its
 * start and imports are then off the caller's time; it waits for its
 * request, and goes when the run has no packages. */

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "launch-collect.h"
#include "launch-common.h"

#define LAUNCH_INSTALLER_NAME "mcp-exec-install.py"
#define LAUNCH_INSTALL_ANSWER_MAX (64U * 1024U)
/* In the package store (docs/packages.md). */
#define LAUNCH_STORE_INDEX "index.json"
#define LAUNCH_STORE_WHEELS "wheels"

/* What one install did, for the frame. */
typedef struct LaunchInstall {
        bool ok;
        bool timed_out;                 /* the deadline came first */
        char *error;                    /* when !ok */
        json_object *requested, *installed, *already, *replaced;        /* arrays */
        json_object *modules;           /* the top-level modules it added; "*": any */
        bool pth;                       /* and a .pth file (code run at start) */
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

/* Starts the installer ahead, waiting for its request (for the next
 * launch_installer_run()); -errno if it could not (then that one starts
 * its own). */
int launch_installer_prespawn(const LaunchArgs *a);

/* Ends the one started ahead, if any (the run has no packages). */
void launch_installer_drop(void);

/* Whether the broker's run message carries "packages". */
bool launch_packages_wanted(json_object *run);

/* Whether a->wheelhouse is a package store (holds LAUNCH_STORE_INDEX). */
bool launch_packages_store(const LaunchArgs *a);

/* Whether what i installed may not be what an interpreter that imported
 * preloaded (the top-level modules its preload imported or looked for,
 * "a,b,…" or "-"; NULL: unknown) would import: one of its modules among
 * them, or a .pth. Then a fresh interpreter must run the code. */
bool launch_packages_stale(const LaunchInstall *i, const char *preloaded);

/* Installs what run's "packages" asks for, except the specs in *session
 * (a session's earlier installs: listed as "already"; NULL for a plain run),
 * to which the new ones are added on success. allow_replace: whether a
 * system distribution may be shadowed (a session after its first code: no).
 * Fills *ret (ret->ok says whether the code may run); -ENOMEM only. */
int launch_packages_install(const LaunchArgs *a, json_object *run, char ***session, bool allow_replace,
                            uint64_t deadline, LaunchInstall *ret);

/* The RESULT_FRAME_PACKAGES frame, its lists cut to fit the meta. */
void launch_packages_send(const LaunchInstall *i, bool fresh_interpreter, ResultWriter *w);
