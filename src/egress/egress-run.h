/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One run: its control connection from the broker, its feed from the
 * run's launcher (egress-proto.h), its caps and its client connections. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "egress-policy.h"
#include "egress-proto.h"
#include "list.h"

typedef struct EgressServer EgressServer;
typedef struct EgressConn EgressConn;
typedef struct EgressRun EgressRun;

struct EgressRun {
        EgressServer *server;
        LIST_FIELDS(EgressRun, runs);
        int control_fd, feed_fd;
        sd_event_source *control_io, *feed_io, *timer;
        bool started;                   /* {"op":"run"} taken, feed sent */
        char run_id[33];
        /* An upstream server's instance (NETWORK=egress:POLICY, asked for by
         * mcp-exec-upstream-feed): its server and unit instance, journaled
         * instead of a run; "" for a broker's run. Nobody reads "conn"
         * reports on its control connection (it waits in the instance's
         * file descriptor store): none are sent. */
        char upstream[EGRESS_UPSTREAM_NAME_MAX + 1];
        char instance[EGRESS_UPSTREAM_INSTANCE_MAX + 1];
        const EgressPolicy *policy;     /* in server->config */
        uint64_t max_connections, max_bytes;
        /* Connections open now, counted from the moment egressd takes them
         * off the feed (idle ones too): one over max_connections is closed
         * at once, so no run holds more than its cap of egressd's
         * descriptors (mcp-exec-egressd.c: the budget). */
        uint64_t n_conns;
        uint64_t n_refused;             /* closed at once over the cap, for the journal's summary */
        uint64_t n_bad_handovers;       /* feed packets that were not one TCP connection */
        uint64_t bytes;                 /* both directions, all connections */
        /* Every connection that ended, by verdict, and its bytes: the
         * "ended" packet carries them, so that the result counts what a
         * full control socket lost. */
        uint64_t ended[_EGRESS_VERDICT_MAX];
        uint64_t bytes_up, bytes_down;
        bool ending;                    /* {"op":"end"} taken: "ended" waits for room on the control socket */
        LIST_HEAD(EgressConn, conns);
};

/* A control connection just accepted (fd taken): it waits for the run packet. */
int egress_run_new(EgressServer *s, int control_fd);
/* Cuts every connection of the run (each still logged) and forgets it. */
EgressRun *egress_run_free(EgressRun *r);

/* May a connection (counted since it was taken) be served now? NULL, or a
 * refusal text (static) naming the cap reached. */
const char *egress_run_admit(EgressRun *r);
/* Bytes the run may still move, both directions together. */
uint64_t egress_run_bytes_left(const EgressRun *r);
void egress_run_add_bytes(EgressRun *r, uint64_t n);

/* A connection ended: one journal entry, one report to the broker. */
void egress_run_conn_ended(EgressRun *r, EgressVerdict v, const char *host, uint16_t port, uint64_t bytes_up,
                           uint64_t bytes_down, bool cut);
