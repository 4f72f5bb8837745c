/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Code mode as the exec tool describes it (issue 40): which of the
 * operator's upstream servers (servers.d, server-config.h) a caller's code
 * may call through `mcp_servers`, one line each, so that tools/list stays
 * small however many upstream tools there are: the code reads a tool's
 * signature itself (mcp_servers.describe()). A caller a server's CALLERS do
 * not list does not see it, nor one its egress policy's do not admit
 * (NETWORK=egress:POLICY, as the gateway serves it). The directory is read
 * again when it changed: a stat() of it and of its files per tools/list. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "egress-policy.h"
#include "macro.h"

typedef struct ToolServers ToolServers;

/* dir: servers.d (SERVERS_DIR). Nothing is read until the first refresh. */
int tool_servers_new(const char *dir, ToolServers **ret);
ToolServers *tool_servers_free(ToolServers *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ToolServers *, tool_servers_free);

/* The egress policies (the owner's, outliving s): a server with
 * NETWORK=egress:POLICY is described only to callers the gateway serves it
 * to (server_config_egress_allows_caller()). NULL: to none. */
void tool_servers_set_egress(ToolServers *s, const EgressConfig *egress);

/* Reads the directory again if it or one of its files changed. s may be NULL. */
void tool_servers_refresh(ToolServers *s);

/* Code mode is set up: at least one valid server. */
bool tool_servers_enabled(const ToolServers *s);

/* Whether what callers see differs between them (a server lists CALLERS,
 * or has an egress policy, whose CALLERS narrow its own):
 * then a list of tools is not for a shared cache. */
bool tool_servers_per_caller(const ToolServers *s);

/* Appends to the exec tool's description the servers caller may use and
 * how code calls them; nothing when there are none for it. */
void tool_servers_describe(FILE *f, const ToolServers *s, const char *caller);

/* The exec tool's definition def for caller: its description with
 * tool_servers_describe() added. 0, or -ENOMEM. */
int tool_servers_annotate(json_object *def, const ToolServers *s, const char *caller);
