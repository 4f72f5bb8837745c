/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The bridge between one stdio MCP connection (the gateway's, to this unit
 * instance: stdin and stdout are the socket) and a Streamable HTTP MCP
 * server (issue 40): each JSON-RPC line from the gateway is POSTed to the
 * URL; what the server answers (application/json, or a text/event-stream of
 * messages) goes back as lines. The session id the server gives initialize
 * and the protocol revision it chose go on every later request; the
 * server's GET stream (for notifications such as tools/list_changed) is
 * opened if it has one; notifications/cancelled also stops the cancelled
 * request's transfer; EOF from the gateway stops every transfer and ends the
 * session (DELETE). Every answer is capped (max_message), every request
 * timed out (timeout_s). A request that gets no answer (HTTP error, no
 * connection, over a cap) gets a JSON-RPC error in its place, so the
 * gateway's call fails with the reason rather than waiting. */

#include <stdint.h>
#include <systemd/sd-event.h>

typedef struct Bridge Bridge;

typedef struct BridgeOptions {
        const char *url;
        char **headers;                 /* "Name: value" lines sent with every request */
        uint64_t max_message;           /* one message from the server, and one from the gateway */
        uint64_t timeout_s;             /* one POST (the gateway times calls out first) */
        int in_fd, out_fd;
} BridgeOptions;

/* Copies what it needs of o; the fds become the bridge's (closed by it). */
int bridge_new(sd_event *e, const BridgeOptions *o, Bridge **ret);
Bridge *bridge_free(Bridge *b);
