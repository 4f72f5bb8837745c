/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the sandbox offers, found by asking it rather than hard-coded: the
 * Python version and the importable top-level modules outside the standard
 * library, from one ordinary sandboxed run at broker start. */

#include <json-c/json.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "sandbox-properties.h"

typedef struct Discovery Discovery;

/* info is {"python": "3.11.2", "modules": [...], "path": [sys.path],
 * "mpl_fontlist": {"name", "data"} (when matplotlib is installed)} or NULL if
 * discovery failed; the callee takes a reference if it wants to keep it. */
typedef void (*discovery_done_t)(json_object *info, void *userdata);

int discovery_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, discovery_done_t done, void *userdata,
                    Discovery **ret);
Discovery *discovery_free(Discovery *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Discovery *, discovery_free);

/* The result of an earlier discovery kept in dir, if neither the interpreter
 * nor any directory of its path changed since (a package was installed,
 * upgraded or removed): then the broker need not run one at every start. */
json_object *discovery_cache_load(const char *dir, const char *python);
/* Keeps info in dir; its matplotlib font cache goes into a file of its own
 * there (info's "mpl_fontlist" is then its name). */
int discovery_cache_store(const char *dir, const char *python, json_object *info);

/* What a discovery depends on, as one string: the interpreter's inode, size
 * and mtime, and the mtime of each directory in paths (its sys.path). */
char *discovery_stamp(const char *python, json_object *paths);
