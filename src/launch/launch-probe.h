/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "launch-common.h"

/* Prints the sandbox as seen from inside on stdout; 0, or LAUNCH_EXIT_FAILED. */
int launch_probe(void);
