/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "launch-common.h"

/* Prints the sandbox as seen from inside on stdout; 0, or LAUNCH_EXIT_FAILED.
 * inaccessible: a directory the run must not be able to read (the raw
 * wheelhouse, InaccessiblePaths=), or NULL. */
int launch_probe(const char *inaccessible);
