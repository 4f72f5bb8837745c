/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's view for /healthz and /metrics ({"op":"stats"}), asked
 * without blocking and kept for a moment: a storm of health checks from
 * several load balancers costs the broker one question a second. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "run-stats.h"

/* How long an answer (or the broker's silence) is taken as the truth. */
#define NODE_STATUS_MAX_AGE_USEC (1 * USEC_PER_SEC)
/* How long the broker has to answer; it answers at once unless overloaded. */
#define NODE_STATUS_TIMEOUT_USEC (2 * USEC_PER_SEC)

typedef struct NodeStatus NodeStatus;

/* Called when a question asked by node_status_get() has its answer (or
 * none came); node_status_get() then returns 1. */
typedef void (*node_status_ready_t)(NodeStatus *n, void *userdata);

int node_status_new(sd_event *e, const char *broker_socket, node_status_ready_t ready, void *userdata,
                    NodeStatus **ret);
NodeStatus *node_status_free(NodeStatus *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(NodeStatus *, node_status_free);

/* 1 if the last answer is fresh: *ret_stats is it (borrowed, until the next
 * call), or NULL if the broker could not be reached or did not answer. 0 if
 * not: a question is under way (one, however many ask), and ready() follows. */
int node_status_get(NodeStatus *n, const RunStats **ret_stats);
