/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* GET /healthz: whether this node can run code now. A load balancer takes it
 * out of rotation on 503 (HAProxy's option httpchk), so it says yes only if
 * a call sent here now would run: the broker answers, its sandbox self-check
 * passed, and this front end's queue has room. Pure: unit-tested. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run-stats.h"

typedef enum HealthState {
        HEALTH_OK,                      /* "ok" */
        HEALTH_BROKER_UNREACHABLE,      /* "broker-unreachable": no answer to {"op":"stats"} */
        HEALTH_SELF_CHECK_PENDING,      /* "self-check-pending": the broker just started */
        HEALTH_SELF_CHECK_FAILED,       /* "self-check-failed": it refuses every run */
        HEALTH_QUEUE_FULL,              /* "queue-full": a call now would be refused as busy */
        _HEALTH_MAX,
        _HEALTH_INVALID = -EINVAL,
} HealthState;

const char *health_state_to_string(HealthState s);

typedef struct HealthInput {
        const char *node;
        const RunStats *broker;         /* NULL: the broker did not answer */
        uint64_t calls_running, calls_waiting;  /* this front end's queue */
        uint64_t max_running, max_waiting;
} HealthInput;

HealthState health_decide(const HealthInput *in);

/* The answer: 200 or 503; "ok\n" or "unavailable\n" as text/plain, or with
 * details a JSON object saying why (for an operator with the token). */
int health_answer(const HealthInput *in, bool details, unsigned *ret_status, const char **ret_content_type,
                  char **ret_body, size_t *ret_size);
