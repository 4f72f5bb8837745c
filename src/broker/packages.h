/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The "packages" of a run, a session and a session's call (issue 23,
 * broker-proto.h): what the broker takes from a client, and what it hands
 * the launcher. A list is a JSON array of distinct specs, each
 * package_spec_valid(); NULL stands for none. The broker forwards nothing
 * else: a spec the installer would read as an option never leaves here. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "config.h"
#include "macro.h"

/* Packages are on: a wheelhouse is configured and a call may name some. */
static inline bool packages_enabled(const Config *c) {
        return c && !isempty(c->wheelhouse) && c->max_packages > 0;
}

/* req's "packages": absent, null or [] give *ret = NULL; an array of at most
 * max distinct valid specs gives a new array of them. -EINVAL for anything
 * else (any spec at all when !enabled), with why in error (naming the
 * entry); -ENOMEM. */
int packages_parse(json_object *req, bool enabled, uint64_t max, json_object **ret, char *error, size_t error_size);

/* first's specs, then those of second's that first does not have: a new
 * array, or NULL if both are empty. */
int packages_merge(json_object *first, json_object *second, json_object **ret);

static inline size_t packages_count(json_object *packages) {
        return packages ? json_object_array_length(packages) : 0;
}

/* The launcher's "run" message gets "packages" and "packages_max_bytes"
 * when there are any. */
int packages_add_to_run(json_object *msg, json_object *packages, uint64_t max_bytes);
