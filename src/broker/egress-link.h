/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's control connection to mcp-exec-egressd for one run or one
 * session (egress-proto.h): asks for the run's feed, then counts what
 * egressd reports of the run's connections until it is freed. Freeing it is
 * the run's end for egressd: it cuts every connection of the run. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "egress-proto.h"
#include "macro.h"

/* How long egressd (socket-activated: it may have to start) has to hand
 * over the feed. */
#define EGRESS_LINK_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* How long a run's result waits for egressd's final counts after its unit
 * is gone (egress_link_end()). egressd answers "end" in the same turn of its
 * loop, so this only bounds a stuck or overloaded egressd: the result then
 * goes out with what was reported. */
#define EGRESS_LINK_END_TIMEOUT_USEC (2 * USEC_PER_SEC)

/* What egressd reported, added up: of one link, and of all (/metrics). */
typedef struct EgressCounts {
        uint64_t connections[_EGRESS_VERDICT_MAX];
        uint64_t bytes_up, bytes_down;
} EgressCounts;

typedef struct EgressLink EgressLink;

/* Called once: error 0 when the feed is there (egress_link_take_feed()),
 * else -errno and a message for the caller (static or the link's own, valid
 * during the call). The link stays the caller's to free either way. */
typedef void (*egress_link_ready_t)(EgressLink *l, int error, const char *message, void *userdata);

typedef struct EgressLinkRequest {
        const char *socket_path;        /* EGRESS_SOCKET_PATH */
        const char *run_id;             /* 32 hex */
        const char *policy;
        uint64_t max_connections, max_bytes;
        uint64_t timeout_usec;          /* for the feed */
        EgressCounts *totals;           /* optional: every report is added here too */
        /* An upstream server's instance (mcp-exec-upstream-feed), not a
         * run: its server's name and unit instance; NULL for a run. */
        const char *upstream, *instance;
} EgressLinkRequest;

int egress_link_start(sd_event *e, const EgressLinkRequest *req, egress_link_ready_t ready, void *userdata,
                      EgressLink **ret);

bool egress_link_is_ready(const EgressLink *l);
/* The feed, once: the caller owns it. -EBADF if there is none (any more). */
int egress_link_take_feed(EgressLink *l);
/* The control connection, once the feed is there: the caller owns it (and
 * the run lasts as long as it is open); the link reads nothing more. -EBADF
 * if there is none. */
int egress_link_take_control(EgressLink *l);

/* Reads the reports queued now, then {"policy","connections":{verdict:n},
 * "bytes_up","bytes_down"}: all of the link's life, or since the last
 * egress_link_mark() if since_mark. */
int egress_link_stats(EgressLink *l, bool since_mark, json_object **ret);
void egress_link_mark(EgressLink *l);

/* The run's unit is gone: asks egressd to cut what the run still has open
 * and to send its final counts, which are added to the link's (connections
 * cut at the end, and reports a full socket lost). Returns 1 when done will
 * be called (from the event loop, once, within timeout_usec; the link stays
 * the caller's, who may free it in done); 0 when there is nothing to wait
 * for (no feed was ever handed over, or egressd is gone). */
typedef void (*egress_link_ended_t)(EgressLink *l, void *userdata);
int egress_link_end(EgressLink *l, uint64_t timeout_usec, egress_link_ended_t done, void *userdata);

EgressLink *egress_link_free(EgressLink *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressLink *, egress_link_free);

/* The counts as JSON (the "egress" of an exit event, without "policy"). */
int egress_counts_to_json(const EgressCounts *c, json_object **ret);
