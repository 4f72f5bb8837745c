/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What each protocol revision has, so the rest of the core asks about
 * features and never compares version strings. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* The _meta keys of the stateless revision (2026-07-28). */
#define MCP_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"

typedef struct McpRevision {
        const char *version;
        bool stateless;         /* 2026-07-28: version and capabilities in each request's _meta, no initialize */
        bool batches;           /* JSON-RPC batches: 2025-03-26 only */
        bool annotations;       /* Tool.annotations: 2025-03-26 on */
        bool progress_message;  /* notifications/progress "message": 2025-03-26 on */
        bool titles;            /* "title" on Tool and Implementation: 2025-06-18 on */
        bool structured;        /* Tool.outputSchema and structuredContent: 2025-06-18 on */
        bool logging;           /* logging/setLevel (and ping): the initialize-based revisions */
        bool tasks;             /* the core's experimental tasks (tools/call "task", the tasks/ methods): 2025-11-25 */
        bool elicitation;       /* elicitation/create during a request: 2025-06-18 and 2025-11-25 */
        bool elicitation_modes; /* its "mode" (form, url): 2025-11-25 */
} McpRevision;

/* NULL for a version we do not speak. */
const McpRevision *mcp_revision_find(const char *version);

/* The newest revision reachable through initialize: the answer to a client
 * asking initialize for a version we do not know (or for the stateless one,
 * which has no initialize). */
const McpRevision *mcp_revision_latest_legacy(void);

/* The stateless revision. */
const McpRevision *mcp_revision_stateless(void);

/* Every version we speak, newest first, as a JSON array of strings: the
 * "supported" list of errors and of server/discover. */
json_object *mcp_revision_supported_json(void);

/* Which era a request belongs to is decided per request: _meta naming a
 * protocol version we do not know from initialize means the stateless one
 * (which then checks the version), and server/discover exists only there.
 * meta is params._meta when that is an object, else NULL. */
bool mcp_request_is_stateless(const char *method, json_object *meta);

/* The error for a protocol version we do not speak (the len bytes at
 * requested): -32022 with the list of those we do. id NULL is null. NULL on
 * out of memory. */
json_object *mcp_error_unsupported_version(json_object *id, const char *requested, size_t len);

/* Every revision we speak, oldest first, NULL-terminated; the last is the
 * newest. An initialize asking for a version we do not know is answered with
 * the newest that has initialize (2025-11-25): the last one, 2026-07-28, is
 * stateless and reached through per-request _meta instead. */
extern const char *const mcp_protocol_versions[];
