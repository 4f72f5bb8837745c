/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pure helpers of the HTTP transport: header parsing, listen addresses, SSE
 * framing. No libmicrohttpd here, so the unit tests need none. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* True if the Accept header admits the media type ("application/json"),
 * exactly or through a wildcard, with q > 0. NULL or empty Accept means
 * anything (RFC 9110). */
bool http_accepts(const char *accept, const char *type);

/* True if the Content-Type's essence is type (case-insensitive, parameters
 * such as charset ignored). */
bool http_content_type_is(const char *content_type, const char *type);

/* The token of "Authorization: Bearer <token>" (scheme case-insensitive),
 * or NULL. Points into header. */
const char *http_bearer_token(const char *authorization);

/* Parses MCP_EXEC_ADDR: "host:port" with host an IPv4 literal, "[v6]",
 * "localhost" (taken as 127.0.0.1, never resolved), or empty for every
 * interface (":8080", as the Go server did: dual-stack "::"). */
int http_parse_address(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
bool sockaddr_is_loopback(const struct sockaddr *sa);
uint16_t sockaddr_port(const struct sockaddr *sa);

/* Appends one SSE event (optional "event:" line, data split at newlines so
 * the framing cannot be broken) to *buf. -ENOMEM on failure. */
/* The bytes sse_append_event() appends for this event. */
size_t sse_event_size(const char *event, const char *data, size_t len);
int sse_append_event(char **buf, size_t *size, size_t *alloc, const char *event, const char *data, size_t len);

/* Appends raw bytes; grows the buffer. */
int buf_append(char **buf, size_t *size, size_t *alloc, const char *data, size_t len);

/* True if every byte is visible ASCII (0x21..0x7e): session ids, tokens. */
bool str_is_visible_ascii(const char *s);

/* Decodes the Mcp-Name / Mcp-Param-* value encoding of 2026-07-28: plain
 * values as they are, "=?base64?...?=" decoded. Returns a new string, or NULL
 * for an invalid encoding (or out of memory). */
char *mcp_header_value_decode(const char *v);
