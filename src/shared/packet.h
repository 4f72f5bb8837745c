/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The framing of every local channel between the daemons: a SOCK_SEQPACKET
 * unix socket carrying one JSON object per packet, with file descriptors
 * alongside as SCM_RIGHTS. The front end and the broker (broker-proto.h), the
 * broker and each launcher (launch-run.h), the broker and the mount daemon
 * (tmpfs-proto.h), the broker and the egress daemon (egress-proto.h) all
 * speak it; what the objects mean is each protocol's own. */

#include <json-c/json.h>

#include <stddef.h>

/* The largest JSON object of one packet, in bytes. */
#define PACKET_MAX_SIZE (64U * 1024U)
/* The most fds of one packet, either way: a client sends the broker at most
 * four (the run's stdin, stdout, stderr, result channel); the broker hands the
 * launcher a fifth for an egress run, the feed (egress-proto.h), and a sixth
 * for a run with tools, its connection to the gateway (tools-link.h). */
#define PACKET_MAX_FDS 6

/* A non-blocking connection to the SEQPACKET socket at path. With socket
 * activation the daemon need not run yet: systemd holds the queue. A full
 * backlog is an error (-EAGAIN), never a stall. */
int packet_connect(const char *path);

/* Sends msg with n_fds descriptors (at most PACKET_MAX_FDS) as one packet;
 * -EMSGSIZE past PACKET_MAX_SIZE; never raises SIGPIPE. */
int packet_send(int fd, json_object *msg, const int *fds, size_t n_fds);

/* Receives one packet. Returns 1 with *ret_msg set (a JSON object), 0 on EOF,
 * -EAGAIN when nothing is waiting, -EBADMSG for a malformed or truncated
 * packet or more than max_fds descriptors. Received fds are O_CLOEXEC; on any
 * failure none stay open. */
int packet_recv(int fd, json_object **ret_msg, int *ret_fds, size_t max_fds, size_t *ret_n_fds);
