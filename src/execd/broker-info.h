/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Asks the broker what the sandbox offers (limits, Python version, modules)
 * once at start, for the tool description. */

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "macro.h"

typedef struct BrokerInfo BrokerInfo;

/* info is the broker's reply object, or NULL if it could not be had. */
typedef void (*broker_info_done_t)(json_object *info, void *userdata);

int broker_info_start(sd_event *e, const char *socket_path, broker_info_done_t done, void *userdata,
                      BrokerInfo **ret);
BrokerInfo *broker_info_free(BrokerInfo *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(BrokerInfo *, broker_info_free);
