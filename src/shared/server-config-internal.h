/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by server-config.c (parsing) and server-config-files.c (reading
 * servers.d): not for other callers. */

#include "macro.h"

/* *ret_error = "PATH:LINE: why", or "PATH: why" for line 0 (the whole file).
 * -EINVAL, or -ENOMEM when the message could not be made. */
int server_config_fail_at(char **ret_error, const char *path, unsigned line, const char *fmt, ...) _printf_(4, 5);
