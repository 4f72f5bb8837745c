/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One question to the broker on a connection of its own: {"op":"info"}, what
 * the sandbox offers (limits, Python version, modules), once at start for
 * the tool description; {"op":"stats"} (run-stats.h) for /metrics and
 * /healthz. The answer is the event of the same name. */

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "macro.h"

typedef struct BrokerInfo BrokerInfo;

/* info is the broker's reply object, or NULL if it could not be had. Called
 * once; it may free the BrokerInfo. */
typedef void (*broker_info_done_t)(json_object *info, void *userdata);

/* Sends {"op":op}; done gets {"event":op,…}, or NULL on anything else, on
 * EOF or after timeout_usec. Fails at once if the socket cannot be reached. */
int broker_query_start(sd_event *e, const char *socket_path, const char *op, uint64_t timeout_usec,
                       broker_info_done_t done, void *userdata, BrokerInfo **ret);
/* {"op":"info"}, waiting long enough for the broker's self-check. */
int broker_info_start(sd_event *e, const char *socket_path, broker_info_done_t done, void *userdata,
                      BrokerInfo **ret);
BrokerInfo *broker_info_free(BrokerInfo *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(BrokerInfo *, broker_info_free);
