/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The node id: which host of several behind a load balancer holds a piece of
 * state. Every id a client sends back to reach state on this host (the
 * Mcp-Session-Id of the 2025 revisions, the legacy sessionId=, session
 * handles) is "<node>.<32 hex>", so that a load balancer can route it by its
 * prefix, without a stick table. */

#include <stdbool.h>

#define NODE_ID_MAX 32U                                 /* characters of a node id */
#define NODE_ID_HANDLE_MAX (NODE_ID_MAX + 1U + 32U + 1U) /* "<node>.<32 hex>" and its NUL */

/* 1..NODE_ID_MAX characters of [a-z0-9-]: safe in a header, a query string,
 * a log line and an HAProxy ACL as it is. */
bool node_id_is_valid(const char *s);

/* The default node id: 12 hex digits of the machine id hashed with our
 * application id (sd_id128_get_machine_app_specific()): stable on a machine,
 * different between machines, and not the machine id itself. */
int node_id_from_machine(char ret[static NODE_ID_MAX + 1]);

/* Sets this process's node id: value (MCP_EXEC_NODE_ID) when not empty,
 * -EINVAL if it is no valid id; else the default from the machine id. */
int node_id_init(const char *value);

/* This process's node id. Without node_id_init() (unit tests, fuzzers) the
 * machine's default, or "local" where there is no machine id. */
const char *node_id(void);

/* A new id of this node: "<node>.<128 random bits in hex>". */
int node_id_mint(char ret[static NODE_ID_HANDLE_MAX]);

/* True if id has the form node_id_mint() gives and our node's prefix. An id
 * of another node (or of none) is not ours to look up. */
bool node_id_owns(const char *id);
