/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The `network` argument of exec and session_create (issue 22): the name of
 * one of the operator's egress policies (egress-policy.h). The caller picks
 * a policy; it never adds a host. What the tools say about the policies,
 * and the checks of a name against the configuration and the caller. No
 * I/O here. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "egress-policy.h"

/* Egress is on: at least one policy is configured. */
bool tool_network_enabled(const EgressConfig *e);

/* Appends to a tool description what "network" offers: each policy with its
 * hosts and ports (cut short past a few KiB). Nothing when egress is off. */
void tool_network_describe(FILE *f, const EgressConfig *e);

/* The input schema's "network" property, or NULL when egress is off (the
 * schema is then what it always was). Sets *ret to NULL or a new object;
 * -ENOMEM. */
int tool_network_schema(const EgressConfig *e, json_object **ret);

/* May caller use the policy named network? 0 if so; -EINVAL with *ret_error
 * set to a text for the model when egress is off, there is no such policy
 * (the text names those there are) or the policy does not list the caller;
 * -ENOMEM. network NULL: no network asked, always 0. */
int tool_network_check(const EgressConfig *e, const char *network, const char *caller, char **ret_error);

/* The isError texts, fixed parts (tests compare against them). */
#define TOOL_NETWORK_OFF_TEXT                                                                                   \
        "network access is not enabled on this server (no egress policy configured); runs have no network"
