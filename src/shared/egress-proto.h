/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How a run reaches mcp-exec-egressd (issue 22). The sandbox has no network
 * (PrivateNetwork=yes, only lo); three parties and two connections:
 *
 * 1. Control: the broker (root) connects to EGRESS_SOCKET_PATH, a
 *    SOCK_SEQPACKET socket that only root may open (egressd checks
 *    SO_PEERCRED uid 0 too). One control connection is one run. JSON packets
 *    as in packet.h (packet_send()/packet_recv()):
 *
 *      broker → egressd  {"op":"run","run_id":"<32 hex>","policy":"pypi",
 *                         "max_connections":N,"max_bytes":N}
 *      egressd → broker  {"event":"feed"}  + 1 fd: the run's feed (below)
 *                   or   {"event":"error","message":"…"} and close
 *      egressd → broker  {"event":"conn","verdict":"…","host":"…","port":N,
 *                         "bytes_up":N,"bytes_down":N}   once per ended
 *                         connection (verdict: egress_verdict_to_string())
 *
 *      broker → egressd  {"op":"end"}  when the run's unit is gone:
 *      egressd → broker  {"event":"ended","connections":{verdict:n},
 *                         "bytes_up":N,"bytes_down":N}
 *                         after cutting what the run still had open: the
 *                         counts of every connection the run had, so that
 *                         its result counts the ones cut at its end too
 *                         (issue 37); then egressd forgets the run.
 *
 *    An upstream server's instance with NETWORK=egress:POLICY (servers.d,
 *    docs/upstream-servers.md) is a run too: mcp-exec-upstream-feed (root,
 *    its unit's ExecStartPre=+) adds "upstream":"NAME" (the server) and
 *    "instance":"…" (the unit's instance) to the run packet, and keeps the
 *    control connection in the unit's file descriptor store, so the run
 *    lasts exactly as long as the instance. No "conn" reports go to it
 *    (nobody reads them); the journal has each connection, with
 *    MCP_UPSTREAM= and MCP_UPSTREAM_INSTANCE= instead of the run's id.
 *
 *    The broker closing it is the run's end too: egressd then cuts every
 *    connection of the run at once and forgets it. egressd takes policy and
 *    caps from its own configuration (egress-policy.h): the broker names the
 *    policy, caps may only be lower than the configured ones.
 *
 * 2. Feed: a SOCK_SEQPACKET socketpair egressd makes per run; the broker
 *    hands its other end to the run's launcher beside the run's other fds.
 *    The launcher's trusted parent listens on EGRESS_LISTEN_ADDR:PORT in the
 *    run's namespace, accepts, and passes each accepted TCP socket over the
 *    feed as one packet "conn" + 1 fd (SCM_RIGHTS), then closes its copy:
 *    egressd serves the connection directly, nobody copies bytes in the
 *    sandbox. egressd accepts only connected SOCK_STREAM AF_INET/AF_INET6
 *    sockets there and one fd per packet; anything else is closed and the
 *    feed goes on. A run's connections count against its max_connections
 *    from the moment egressd takes them off the feed, idle or not: one over
 *    it is answered 403 and closed at once (issue 37).
 *
 * The code gets HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and lower case) =
 * EGRESS_PROXY_URL. */

#include <stdint.h>

#define EGRESS_SOCKET_PATH "/run/mcp-exec/egress.sock"
#define EGRESS_LISTEN_ADDR "127.0.0.1"
#define EGRESS_LISTEN_PORT 3128
#define EGRESS_PROXY_URL "http://127.0.0.1:3128"
#define EGRESS_FEED_MSG "conn"
/* An upstream run's "upstream" (a servers.d name, [a-z][a-z0-9_]{0,31}) and
 * "instance" (a unit instance: [A-Za-z0-9:_.\\-], at most this long). */
#define EGRESS_UPSTREAM_NAME_MAX 32
#define EGRESS_UPSTREAM_INSTANCE_MAX 128

/* What became of one connection; each has one wire name. */
typedef enum EgressVerdict {
        EGRESS_VERDICT_ALLOWED,         /* "allowed": served (maybe cut by the byte cap later: see cut) */
        EGRESS_VERDICT_POLICY,          /* "policy": host or port not in the policy; never resolved */
        EGRESS_VERDICT_IP_LITERAL,      /* "ip-literal" */
        EGRESS_VERDICT_NON_PUBLIC,      /* "non-public": the name resolved to a non-public address */
        EGRESS_VERDICT_SNI,             /* "sni-mismatch": ClientHello SNI absent or not the CONNECT host */
        EGRESS_VERDICT_CAP,             /* "cap": connection or byte cap of the run reached */
        EGRESS_VERDICT_BAD_REQUEST,     /* "bad-request": not a proxy request we serve */
        EGRESS_VERDICT_UPSTREAM,        /* "upstream-failed": lookup or connect failed */
        _EGRESS_VERDICT_MAX,
        _EGRESS_VERDICT_INVALID = -22,
} EgressVerdict;

const char *egress_verdict_to_string(EgressVerdict v);
EgressVerdict egress_verdict_from_string(const char *s);
