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

/* info is {"python": "3.11.2", "modules": [...]} or NULL if discovery failed;
 * the callee takes a reference if it wants to keep it. */
typedef void (*discovery_done_t)(json_object *info, void *userdata);

int discovery_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, discovery_done_t done, void *userdata,
                    Discovery **ret);
Discovery *discovery_free(Discovery *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Discovery *, discovery_free);
