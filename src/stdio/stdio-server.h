/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Local MCP sessions on /run/mcp-exec/stdio.sock (mcp-exec-stdio.socket):
 * one newline-delimited session per connection, for peers polkit allows
 * (org.mcp-exec.run). What one local user may hold is bounded: connections
 * in all and per uid, and the time to the first message, so that a user who
 * opens thousands of connections and never speaks locks out nobody else. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "mem-budget.h"
#include "macro.h"
#include "mcp-server.h"

typedef struct StdioServer StdioServer;

typedef struct StdioServerConfig {
        unsigned max_connections;       /* of every uid together */
        unsigned max_per_uid;           /* root is bounded only by max_connections */
        uint64_t hello_timeout_usec;    /* from accept to the first whole message */
        size_t max_line;                /* one message */
        MemBudget *budget;            /* messages being received, of all connections */
} StdioServerConfig;

/* Called when sessions come or go (for idle exit). */
typedef void (*stdio_server_activity_t)(StdioServer *s, void *userdata);

/* Serves listen_fd (taken). Connects to the system bus, for polkit. */
int stdio_server_new(sd_event *e, McpServer *mcp, int listen_fd, const StdioServerConfig *config,
                     stdio_server_activity_t on_activity, void *userdata, StdioServer **ret);
StdioServer *stdio_server_free(StdioServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(StdioServer *, stdio_server_free);

/* No connection: nothing would be lost by exiting. */
bool stdio_server_is_idle(const StdioServer *s);

/* True if connections wait in the listening socket's backlog. */
bool stdio_server_has_pending(const StdioServer *s);

/* Stops accepting; the backlog stays for the next instance. */
void stdio_server_quiesce(StdioServer *s);

/* What /metrics shows of the local socket. */
typedef struct StdioServerStats {
        unsigned connections;           /* open now */
        uint64_t refused_full;          /* past max_connections */
        uint64_t refused_uid;           /* past max_per_uid */
        uint64_t closed_silent;         /* no first message in time */
} StdioServerStats;

void stdio_server_get_stats(const StdioServer *s, StdioServerStats *ret);

/* The JSON-RPC error line a refused peer gets (newline not included). */
int stdio_refusal_line(uid_t uid, const char *reason, char **ret);
