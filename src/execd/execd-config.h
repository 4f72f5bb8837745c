/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The MCP server's settings as the front end derives them: the operator's
 * configuration (config.h), narrowed by what the broker says it enforces
 * (its "info" reply, broker-proto.h). Pure functions, without the daemon. */

#include <stddef.h>

#include "broker-proto.h"
#include "config.h"
#include "mcp-config.h"

/* The longest message a client may send (a line, an HTTP body), from the
 * configured sizes of code, stdin and input files. */
size_t execd_max_line(const Config *c);

/* Fills *ret with c's limits, narrowed by info (every member unset when the
 * broker did not answer): the sandbox's limits are the broker's, ours only a
 * fallback; timeouts and code size the smaller of both; sessions only as the
 * broker offers them. Strings and lists are borrowed from c and info. The
 * pointers to live objects (broker_socket, budget, egress, packages) are left
 * NULL for the caller. */
void execd_server_config(const Config *c, const BrokerSandboxInfo *info, McpServerConfig *ret);
