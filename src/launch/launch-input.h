/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A run's input as the caller's stdin brings it: the code frame
 * (launch-frame.h) into a sealed memfd, then, with a version-2 frame, the
 * input files into the working directory (/tmp). What follows on stdin is
 * the program's. */

#include <stdbool.h>
#include <stdint.h>

/* replace: a file of the same name may exist (a session's earlier call) and is
 * replaced; otherwise names are new. Returns 0 with *ret_memfd set, or
 * LAUNCH_EXIT_FAILED after saying why on the diagnostics fd. */
int launch_read_input(int in, uint64_t max_code, uint64_t max_input, bool replace, int *ret_memfd);
