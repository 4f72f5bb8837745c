/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* The run's system call filter (syscall-filter.h), loaded by the launcher
 * before it parses an option or reads anything of a run (only the exit
 * watch's filter goes under it, launch-exitwatch.h): the launcher, the
 * interpreter and everything the code starts live under it, as under the
 * unit's SystemCallFilter= before. */

/* Loads the filter (and sets no_new_privs, which the unit's
 * NoNewPrivileges=yes has set already), or returns -errno: then the
 * launcher refuses to go on (fail closed). */
int launch_seccomp_load(void);

/* W^X (syscall-filter.h), stacked on the filter above, in every unit but
 * one started with --jit (a JavaScript unit: V8's JIT writes code it then
 * runs). Loaded right after it, before anything of a run is read; or
 * -errno, and the launcher refuses to go on. */
int launch_seccomp_load_wx(void);

/* Whether this process loaded it (the self-check's report, launch-probe.c). */
bool launch_seccomp_wx_loaded(void);
