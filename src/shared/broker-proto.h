/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's wire protocol, on a SOCK_SEQPACKET unix socket: one JSON object
 * per packet, file descriptors alongside as SCM_RIGHTS. One connection is one
 * run; closing it cancels the run.
 *
 *   client → broker  {"op":"run","timeout_s":N,"tag":"…"}  + fds [stdin, stdout, stderr]
 *   broker → client  {"event":"started","run_id":"…","unit":"…"}
 *   broker → client  {"event":"exit", …result fields…}
 *   broker → client  {"event":"error","code":"…","message":"…"}
 *   client → broker  {"op":"info"}  →  {"event":"info", …limits…}
 *
 * stdin carries the launcher frame (launch-frame.h) followed by the program's
 * stdin; stdout and stderr are the program's, straight from the sandbox. */

#include <json-c/json.h>

#include "json-cleanup.h"
#include <stddef.h>

#define BROKER_SOCKET_PATH "/run/mcp-exec/broker.sock"
#define BROKER_MAX_PACKET (64U * 1024U)
#define BROKER_MAX_FDS 3

/* A non-blocking connection to the broker at path (BROKER_SOCKET_PATH). With
 * socket activation the broker need not run yet: systemd holds the queue. A
 * full backlog is an error (-EAGAIN), never a stall. */
int broker_connect(const char *path);

/* Sends msg with n_fds descriptors; never raises SIGPIPE. */
int broker_send(int fd, json_object *msg, const int *fds, size_t n_fds);

/* Receives one packet. Returns 1 with *ret_msg set (a JSON object), 0 on EOF,
 * -EAGAIN when nothing is waiting, -EBADMSG for a malformed or truncated
 * packet. Received fds are O_CLOEXEC; on any failure none stay open. */
int broker_recv(int fd, json_object **ret_msg, int *ret_fds, size_t max_fds, size_t *ret_n_fds);

