/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A pass over a message's bytes before json-c sees it. json-c allocates
 * each value as it reads it (an empty object costs about 790 bytes, an
 * empty array 150), so a body that fits the size limit can still take
 * gigabytes: a 4 MB array of {} needs 1.1 GB. The scan counts what json-c
 * would allocate without allocating anything itself, and stops at the first
 * byte past a limit.
 *
 * It judges no syntax: valid JSON is counted exactly, anything else is
 * counted as if it were (every token a value, every bracket a level), which
 * never counts less than json-c allocates before it finds the error. */

#include <stddef.h>

typedef struct JsonScan {
        size_t values;          /* objects, arrays, strings, numbers, literals; each key counts too */
        size_t keys;            /* of objects (informational) */
        unsigned depth;         /* the deepest value's level; the top level is 1 */
} JsonScan;

/* 0 when data stays within both limits; -E2BIG past max_values, -ELOOP past
 * max_depth (json-c's meaning of its depth: a value at level max_depth + 1 is
 * too deep). ret, which may be NULL, holds the counts up to where the scan
 * stopped. */
int json_scan(const char *data, size_t len, size_t max_values, unsigned max_depth, JsonScan *ret);
