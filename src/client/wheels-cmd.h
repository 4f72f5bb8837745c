/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* `mcp-exec wheels add|sync|list|verify`: the operator fills the wheelhouse
 * (issue 23, package-spec.h). The work is done by a Python script in the
 * private lib dir (mcp-exec-wheels.py), run by the interpreter runs use, so
 * that pip picks wheels for it. */

/* Its exit status when the script cannot even be started. */
#define EXIT_WHEELS_FAILED 4

/* argv[0] is "wheels". Execs the script; returns only on failure, with
 * the exit status. */
int wheels_cmd(int argc, char *argv[]);
