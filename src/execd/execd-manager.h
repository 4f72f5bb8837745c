/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The front end as one object, as the broker's Manager: its configuration,
 * the sockets (systemd's, or its own with MCP_EXEC_TRANSPORT=http), the
 * stdio and HTTP servers on one MCP server, the broker's "info" reply they
 * are set up from (execd-config.h merges it), /healthz and /metrics, the
 * idle exit, the watchdog and the reload of the named tokens on SIGHUP. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "broker-info.h"
#include "broker-proto.h"
#include "config.h"
#include "egress-policy.h"
#include "http-auth.h"
#include "http-server.h"
#include "line-conn.h"
#include "macro.h"
#include "mcp-server.h"
#include "mem-budget.h"
#include "node-status.h"
#include "stdio-server.h"
#include "tool-arg-packages.h"
#include "tool-servers.h"

/* What the command line says (mcp-execd.c). */
typedef struct ManagerArgs {
        const char *broker_socket;      /* borrowed for the Manager's life */
        bool stdio;                     /* serve one session on our own stdin and stdout */
} ManagerArgs;

typedef struct Manager {
        sd_event *event;
        const char *broker_socket;
        Config config;
        EgressConfig egress;            /* the operator's egress policies (issue 22) */
        ToolPackages *packages;         /* the operator's wheelhouse (issue 23) */
        ToolServers *servers;           /* code mode's upstream servers (issue 40) */
        McpServer *server;
        BrokerInfo *info_query;         /* the "info" question while it is open */
        BrokerSandboxInfo info;         /* its answer; all unset until then, or without one */
        MemBudget budget;               /* all that clients make us hold: input, calls, replies */
        int stdio_listen_fd;            /* taken by the stdio server */
        StdioServer *stdio;
        bool own_stdio_wanted;          /* --stdio or MCP_EXEC_TRANSPORT=stdio */
        LineConn *own_stdio;
        bool socket_activated;
        uint64_t idle_usec;
        sd_event_source *idle_timer, *watchdog_timer;
        uint64_t watchdog_usec;         /* WatchdogSec=, 0 if none */
        int http_listen_fd;             /* taken by the HTTP server */
        HttpAuth http_auth;             /* likewise */
        HttpServer *http;
        NodeStatus *status;             /* the broker's stats, for /healthz and /metrics */
} Manager;

/* Reads the configuration from the environment, takes the sockets (or binds
 * its own), and sets up the event loop, its signals and the watchdog. Logs
 * why not: a bad configuration, nothing to serve, a remote socket without a
 * token. Serves nothing yet. */
int manager_new(const ManagerArgs *args, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Asks the broker what its sandbox offers; with the answer (or at once, if
 * the broker cannot be reached) it serves. */
int manager_start(Manager *m);
