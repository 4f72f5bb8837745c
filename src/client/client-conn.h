/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The command's side of one MCP session over the local stdio socket
 * (/run/mcp-exec/stdio.sock, or $MCP_EXEC_STDIO_SOCKET): connect, read the
 * server's lines, send requests and wait for their answers. What goes wrong
 * is said on stderr here, where a person sees it. */

#include <json-c/json.h>
#include <stddef.h>

#include "macro.h"

/* The fd on success (said on stderr otherwise, with what to do). */
int client_connect(void);

/* The daemon refuses a peer with one JSON-RPC error with id null and
 * closes: if line (n bytes) is one, say its message on stderr. */
void client_check_denied(const char *line, size_t n);

typedef struct LineReader LineReader;

/* Connects to the local server; the reader starts empty. */
int line_reader_open(LineReader **ret);
LineReader *line_reader_free(LineReader *lr);
DEFINE_TRIVIAL_CLEANUP_FUNC(LineReader *, line_reader_free);

int client_send(LineReader *lr, json_object *j);

/* Waits for the response with the given id, skipping what else comes
 * (notifications); NULL at EOF or on a refusal (said on stderr). */
json_object *client_wait_response(LineReader *lr, int id);

/* initialize with this protocol version, then notifications/initialized.
 * On failure it is said on stderr. */
int client_initialize(LineReader *lr, const char *protocol_version);

/* Sends the request (params taken; NULL: none) and waits for its answer,
 * the whole JSON-RPC response (result or error). On failure it is said on
 * stderr. */
int client_request(LineReader *lr, int id, const char *method, json_object *params, json_object **ret);
