/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The gateway's checks of a caller and a tool against a server's
 * configuration: no state, no sockets, so that they are tested alone. */

#include <json-c/json.h>
#include <stdbool.h>

#include "egress-policy.h"
#include "tools-config.h"

/* May caller ("uid:1000", "http:token:alice") use the server? */
bool tools_policy_allows_caller(const ToolsServerConfig *c, const char *caller);

/* NETWORK=egress:POLICY (docs/upstream-servers.md): an instance acts with
 * the policy's network for the callers it serves, so those callers must be
 * ones the policy's CALLERS admit, as a run's caller must be. Narrows the
 * server's CALLERS to them: a per-caller server keeps the callers both lists
 * admit; a shared one, whose one instance serves all its callers, is kept
 * only if the policy admits every one of them (a server for every caller
 * needs a policy for every caller), else it is off (CALLERS empty). A
 * policy egressd does not have (egress NULL: the configuration is bad) is
 * off too. Returns 0, or 1 with *ret_why (static) when the server is now
 * off for everyone; -ENOMEM. Nothing for a server without egress. */
int tools_policy_apply_egress(ToolsServerConfig *c, const EgressConfig *egress, const char **ret_why);

/* Is the tool name in the server's TOOLS glob allow-list? */
bool tools_policy_allows_tool(const ToolsServerConfig *c, const char *name);

/* Does the tool (as tools/list gave it) say it may destroy? The spec's
 * defaults count: destructiveHint is true unless said false, and a tool
 * with readOnlyHint true is never destructive. Annotations are hints from
 * the upstream: an absent or mistyped one fails closed. */
bool tools_policy_is_destructive(json_object *tool);

/* NULL if a call of tool (as listed) may go upstream, else the refusal's
 * text (static): not allowed, or destructive and not in CONFIRMED. */
const char *tools_policy_check_call(const ToolsServerConfig *c, json_object *tool);

/* The same for the tool named name in tools (the upstream's whole list):
 * NULL, or the refusal's text. A name listed more than once is checked
 * against each entry: the upstream runs the one tool of that name, and
 * which entry describes it is not the list's order to say (fail closed). */
const char *tools_policy_check_named(const ToolsServerConfig *c, json_object *tools, const char *name);

/* What a call of the tool named name (in the upstream's list tools) needs. */
typedef enum ToolsVerdict {
        TOOLS_VERDICT_ALLOWED,          /* not destructive */
        TOOLS_VERDICT_OPERATOR,         /* destructive, in CONFIRMED */
        TOOLS_VERDICT_ASK,              /* destructive, not in CONFIRMED: only if the user confirms */
        TOOLS_VERDICT_REFUSED,          /* not in TOOLS, or no such tool */
} ToolsVerdict;

/* The verdict, and for TOOLS_VERDICT_ASK and _REFUSED the refusal's text
 * (static) in *ret_why. Every entry of the name counts, as above. */
ToolsVerdict tools_policy_verdict(const ToolsServerConfig *c, json_object *tools, const char *name,
                                  const char **ret_why);
