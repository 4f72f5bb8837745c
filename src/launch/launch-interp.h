/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The interpreter (mcp-exec-bootstrap.py), started before any code is known:
 * its environment, built from nothing, its matplotlib cache, and its "ready"
 * message. */

#include <stdbool.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "launch-common.h"

/* The interpreter's end of its control socket, in the interpreter. */
#define LAUNCH_CHILD_CONTROL_FD 3

/* The interpreter's environment, built from nothing (static storage: call
 * before a fork, use in the child). */
char **launch_child_env(const LaunchArgs *a);

/* Copies a prebuilt matplotlib font cache into the run's MPLCONFIGDIR, so that
 * no run builds its own (seconds). Best effort. */
void launch_seed_mpl_cache(const LaunchArgs *a);

/* Forks and execs the bootstrap with child_control as its control socket;
 * session: it keeps its globals from call to call (--session). Returns the
 * pid, or -errno. */
pid_t launch_spawn_interpreter(const LaunchArgs *a, int child_control, bool session);

/* The longest "ready" message read whole. */
#define LAUNCH_READY_MAX ((size_t) 64U * 1024U)

/* Waits for "ready OK,… FAILED:ERR,… MODULES" on control and returns it as
 * the broker's {"event":"ready",…}; NULL when the interpreter died first or
 * sent something else. MODULES, "a,b,…" (or "-"), are the top-level modules
 * outside the standard library that the preload imported or looked for in
 * vain (mcp-exec-bootstrap.py, _preload()): *ret_modules (if not NULL) gets
 * them, or NULL when they are unknown (not said, "*", or too long). */
json_object *launch_wait_ready(int control, char **ret_modules);
