/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The MCP stdio transport: newline-delimited JSON-RPC on a read fd and a write
 * fd (a connected unix socket, or our own stdin/stdout). Every buffer is
 * bounded: an over-long line is answered with an error and skipped, and a
 * peer that does not read its replies is dropped. */

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "mem-budget.h"
#include "mcp-server.h"

typedef struct LineConn LineConn;

/* Called once when the connection is over (peer gone, or EOF with nothing
 * left in flight and everything written). The owner then frees it. */
typedef void (*line_conn_closed_t)(LineConn *c, void *userdata);

int line_conn_new(sd_event *e, McpServer *server, int in_fd, int out_fd, const McpPeer *peer,
                  size_t max_line, line_conn_closed_t closed, void *userdata, LineConn **ret);
LineConn *line_conn_free(LineConn *c);

/* Writes one line (a JSON-RPC message) and closes after it is flushed; for
 * refusing a peer before any session exists. */
int line_conn_send_and_close(LineConn *c, const char *json);

/* Lines longer than MEM_BUDGET_FREE draw on budget while they come in
 * (shared by the daemon's connections); past it they are refused. */
void line_conn_set_budget(LineConn *c, MemBudget *budget);

/* True once a whole message came from the peer. */
bool line_conn_has_received(const LineConn *c);

/* Starts reading and serving. Separate from _new() so the owner can first
 * decide (polkit) whether this peer gets a session at all. */
int line_conn_start(LineConn *c);
