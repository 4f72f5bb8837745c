/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Strict parsers for numbers from the environment, the command line and the
 * wire: decimal digits only, no sign, no blanks, no junk. -EINVAL for a value
 * that is not one, -ERANGE for one that does not fit. */

#include <stdint.h>

int parse_uint(const char *s, uint64_t *ret);          /* decimal */
int parse_size(const char *s, uint64_t *ret);          /* 123, 64K, 256M, 1G, 2T (1024-based) */
int parse_percent(const char *s, uint64_t *ret);       /* "100%" or "100" */

/* A TCP port, 0 to 65535 (0: any); -EINVAL for anything else. */
int parse_port(const char *s, uint16_t *ret);
