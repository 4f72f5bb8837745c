/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* mcp-exec-egressd's state: the configuration, the listening socket the
 * broker connects to (one control connection per run, egress-proto.h), the
 * runs, and the name resolver their connections share. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "egress-policy.h"
#include "egress-resolve.h"
#include "list.h"
#include "macro.h"

/* Runs at once: the broker's (MCP_EXEC_MAX_CONCURRENT runs and
 * MCP_EXEC_MAX_SESSIONS sessions, each one control connection) and this
 * many more: a run's control connection may still be closing in our queue
 * when the broker's next one arrives. */
#define EGRESS_RUNS_SLACK 8U
/* Upstream servers' instances with NETWORK=egress:POLICY at once, beside
 * the broker's runs (their own share: neither takes the other's): the
 * gateway holds at most 256 upstream connections, one instance each
 * (TOOLS_UPSTREAMS_MAX), so all of them fit. */
#define EGRESS_UPSTREAMS_MAX 256U
/* Client connections at once, all runs together. Each holds at most
 * EGRESS_TLS_PEEK_MAX + 16 KiB of buffers plus its struct (~33 KiB), so
 * 1024 stay near 34 MiB, under the unit's MemoryMax=64M with room for the
 * lookup threads' stacks and the sockets' own kernel buffers, which are
 * charged to the unit's cgroup too. A run's max_connections is per run. */
#define EGRESS_CONNS_MAX 1024U
/* ... of which upstream servers' instances hold at most half, together:
 * 256 of them with a run's cap each could otherwise take every one, and no
 * run would get a connection. */
#define EGRESS_UPSTREAM_CONNS_MAX (EGRESS_CONNS_MAX / 2)

/* The descriptor budget (issue 37): with runs_max the broker's runs and
 * EGRESS_UPSTREAMS_MAX upstream instances together (egress_server_new()
 * takes the former; what it accepts is both), egressd never holds more than
 *   EGRESS_FDS_FIXED + runs_max * EGRESS_FDS_PER_RUN
 *     + EGRESS_FDS_PER_CONN * MIN(runs_max * max_connections, EGRESS_CONNS_MAX)
 * because a run's connections count against its cap from the moment they
 * are taken off its feed and one over it is closed at once. The fixed ones:
 * stdio, the listening socket, the event loop's (epoll, timers, signals),
 * the journal's, the resolver's pipe, a feed packet's descriptors in hand,
 * a control connection refused over runs_max, and what each lookup thread
 * opens (resolv.conf, hosts, its DNS sockets: 4 at most). A run: its control
 * connection and its feed; a connection: the client's socket and the
 * upstream's. */
#define EGRESS_FDS_FIXED (64U + 4U * EGRESS_LOOKUPS_MAX)
#define EGRESS_FDS_PER_RUN 2U
#define EGRESS_FDS_PER_CONN 2U

uint64_t egress_fd_budget(uint64_t runs_max, uint64_t max_connections);

typedef struct EgressRun EgressRun;

typedef struct EgressServer {
        sd_event *event;
        EgressConfig config;
        EgressResolver *resolver;
        int listen_fd;
        bool socket_activated;
        uint64_t idle_usec;             /* 0: never exit */
        uint64_t runs_max;              /* the broker's runs at once; more are refused */
        sd_event_source *listen_io, *idle_timer;
        LIST_HEAD(EgressRun, runs);
        unsigned n_runs;                /* control connections: runs, upstreams, not yet either */
        unsigned n_broker_runs;         /* started runs of the broker's */
        unsigned n_upstreams;           /* started runs of upstream instances */
        unsigned n_conns;               /* client connections, all runs */
        unsigned n_upstream_conns;      /* of them, upstream instances' */
} EgressServer;

/* Takes config (cleared on success) and listen_fd (always). */
int egress_server_new(sd_event *e, EgressConfig *config, int listen_fd, bool socket_activated, uint64_t idle_usec,
                      uint64_t runs_max, EgressServer **ret);
EgressServer *egress_server_free(EgressServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressServer *, egress_server_free);

/* Called when runs come and go. */
void egress_server_update_idle(EgressServer *s);
