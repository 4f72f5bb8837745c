/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The session tools: session_create and session_close, and the session
 * handle exec takes. A handle is "<node>.<32 hex>" (node-id.h): the node
 * lets a load balancer route it, the hex is the broker's 128-bit random id.
 * The definitions, argument checks, results and the front end's table of
 * handles given out (sandbox-session-table.h); no I/O here. */

#include <json-c/json.h>

#include "broker-proto.h"
#include "mcp-config.h"
#include "revision.h"

#define TOOL_SESSION_CREATE_NAME "session_create"
#define TOOL_SESSION_CLOSE_NAME "session_close"
#define TOOL_SESSION_ID_LEN 32

typedef struct McpTool McpTool;
/* Their entries in the tool table (mcp-tool.h). */
extern const McpTool tool_session_create, tool_session_close;

/* Sessions are offered when the broker has them (config->max_sessions > 0). */
bool tool_session_available(const McpServerConfig *c);

json_object *tool_session_create_definition(const McpServerConfig *c, const McpRevision *rev);
json_object *tool_session_close_definition(const McpServerConfig *c, const McpRevision *rev);

/* A handle of ours into the broker's id. -EINVAL for anything that is not a
 * handle; -EXDEV for another node's (a load balancer sent it astray). */
int tool_session_parse_handle(const char *handle, char ret_id[static TOOL_SESSION_ID_LEN + 1]);
/* The handle of the broker's id, on this node. */
int tool_session_format_handle(const char *id, char **ret);

/* session_create takes nothing but an optional "network" (an egress
 * policy's name, checked later with the caller: tool-arg-network.h), *ret_network
 * borrowed from arguments or NULL, and optional "packages" (checked later
 * with the wheelhouse: tool-arg-packages.h), *ret_packages borrowed or NULL;
 * session_close {"session": handle}:
 * -EINVAL with *ret_error for the model. A handle that is well-formed but
 * not ours is not an argument error: it is gone. */
int tool_session_create_parse_arguments(json_object *arguments, const char **ret_network, json_object **ret_packages,
                                        char **ret_error);
int tool_session_close_parse_arguments(json_object *arguments, const char **ret_handle, char **ret_error);

/* Results: the new session (the broker's reply gives the limits), closed. */
json_object *tool_session_created_result(const McpRevision *rev, const char *handle, json_object *reply);
json_object *tool_session_closed_result(const McpRevision *rev, const char *handle);

/* The isError text for a session that is not there (for whatever reason). */
extern const char tool_session_gone_text[];
/* What to tell the model when the broker refused a session request. */
char *tool_session_failure_text(BrokerError error, const char *message);
