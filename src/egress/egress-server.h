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

/* Runs at once: well above the broker's own limit on concurrent runs. */
#define EGRESS_RUNS_MAX 128U
/* Client connections at once, all runs together. Each holds at most
 * EGRESS_TLS_PEEK_MAX + 16 KiB of buffers plus its struct (~33 KiB), so
 * 1024 stay near 34 MiB, under the unit's MemoryMax=64M with room for the
 * lookup threads' stacks and the sockets' own kernel buffers, which are
 * charged to the unit's cgroup too. A run's max_connections is per run. */
#define EGRESS_CONNS_MAX 1024U

typedef struct EgressRun EgressRun;

typedef struct EgressServer {
        sd_event *event;
        EgressConfig config;
        EgressResolver *resolver;
        int listen_fd;
        bool socket_activated;
        uint64_t idle_usec;             /* 0: never exit */
        sd_event_source *listen_io, *idle_timer;
        LIST_HEAD(EgressRun, runs);
        unsigned n_runs;
        unsigned n_conns;               /* client connections, all runs */
} EgressServer;

/* Takes config (cleared on success) and listen_fd (always). */
int egress_server_new(sd_event *e, EgressConfig *config, int listen_fd, bool socket_activated, uint64_t idle_usec,
                      EgressServer **ret);
EgressServer *egress_server_free(EgressServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressServer *, egress_server_free);

/* Called when runs come and go. */
void egress_server_update_idle(EgressServer *s);
