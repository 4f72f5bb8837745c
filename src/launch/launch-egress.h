/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The launcher's side of a run's network by policy (issue 22,
 * egress-proto.h). The trusted parent owns the one listener in the run's
 * network namespace (EGRESS_LISTEN_ADDR:EGRESS_LISTEN_PORT), made before the
 * interpreter is forked, so the code never holds it; it accepts and passes
 * each connection over the feed to mcp-exec-egressd, which serves it. The
 * interpreter may connect() but never bind() nor listen(): a seccomp filter
 * it gets before exec. */

#include <poll.h>
#include <stdbool.h>

#include "launch-common.h"

/* The listener: 127.0.0.1:3128, SOCK_STREAM, non-blocking, CLOEXEC, no
 * SO_REUSEPORT (a second bind on the port fails). -errno. */
int launch_egress_listen(void);

/* In the forked child, before exec (async-signal-safe): makes bind(2) and
 * listen(2) (and io_uring_setup(2), whose ring would do both) fail with
 * EPERM for it and everything it starts. -errno, or
 * -EOPNOTSUPP on an architecture we have no filter for (fail closed). */
int launch_egress_seccomp(void);

/* The self-check of an egress run, before the launcher says ready: only lo,
 * no route out (a connect() to 192.0.2.1:80 fails with ENETUNREACH), and in
 * /proc/net/tcp and tcp6 exactly one listening socket, listener. 0, or
 * -errno with *ret_reason set to a static text. */
int launch_egress_check(int listener, const char **ret_reason);

/* A run's (or a session's) side of its network: the listener, the feed to
 * egressd, and the one connection a full feed could not take yet. A feed is
 * non-blocking: an egressd that is slow for a moment (a loaded machine, a
 * sanitizer build) only makes the run's connections wait in the backlog
 * while we wait for the feed to drain; a broken feed ends the network. */
typedef struct LaunchEgress {
        int listener;   /* ours, in the run's namespace; -EBADF: none */
        int feed;       /* to egressd; -EBADF: none yet (a session's comes after "ready") */
        int pending;    /* accepted, not yet passed on: -EBADF or one connection */
} LaunchEgress;

#define LAUNCH_EGRESS_NULL { .listener = -EBADF, .feed = -EBADF, .pending = -EBADF }

/* Closes all three: what is still in the backlog is refused. NULL is fine. */
void launch_egress_done(LaunchEgress *e);

/* What to poll for now: the feed's POLLOUT while a connection is pending,
 * else the listener's POLLIN; fd -1 (poll ignores it) without a feed. */
struct pollfd launch_egress_pollfd(const LaunchEgress *e);

/* After that pollfd woke: passes the pending connection, then accepts what
 * waits (at most a bounded number now) and passes each over the feed as one
 * EGRESS_FEED_MSG packet with its fd. A feed that is full keeps the
 * connection pending; a broken one closes everything: nothing is accepted
 * any more, connect() then fails with ECONNREFUSED. */
void launch_egress_dispatch(LaunchEgress *e);

/* The proxy variables of an egress run's interpreter, NULL-terminated. */
extern const char *const launch_egress_env[];
