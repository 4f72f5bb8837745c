/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The pieces of mcp-exec-upstream-http (the bridge between the gateway's
 * stdio MCP connection and a Streamable HTTP server) that need no network:
 * what a response's Content-Type says, response header lines, the session
 * id the server gives, credential files as header values, messages as one
 * line. */

#include <stdbool.h>
#include <stddef.h>

/* The largest credential taken as a header's value (a long JWT fits). */
#define HTTP_CREDENTIAL_VALUE_MAX (16U * 1024U)
/* Mcp-Session-Id: visible ASCII (the spec's 0x21 to 0x7E), at most this. */
#define HTTP_SESSION_ID_MAX 256U

typedef enum HttpBodyKind {
        HTTP_BODY_OTHER,
        HTTP_BODY_JSON,                 /* application/json: one JSON-RPC message (or a batch) */
        HTTP_BODY_SSE,                  /* text/event-stream: messages as events */
} HttpBodyKind;

/* From a Content-Type value (parameters and case ignored); NULL: other. */
HttpBodyKind http_body_kind(const char *content_type);

bool http_session_id_is_valid(const char *s, size_t n);

/* If the header line ("Name: value", CRLF or not) is the header name
 * (case-insensitive): 1 with its value, blanks trimmed, in *ret_value and
 * *ret_len (pointing into line). Else 0. */
int http_header_match(const char *line, size_t n, const char *name, const char **ret_value, size_t *ret_len);

/* A credential file's content as a header value: one final LF or CRLF
 * dropped, the rest printable ASCII (blanks inside), not empty, at most
 * HTTP_CREDENTIAL_VALUE_MAX. 0 with a copy in *ret; -EINVAL (a line break
 * or control character inside would split the header: never sent); -ENOMEM. */
int http_credential_value(const char *data, size_t n, char **ret);

/* A JSON text with its CRs and LFs turned into blanks: where JSON allows
 * them at all (between tokens), they are whitespace, so the message is the
 * same and fits on one line of the stdio transport. */
void http_message_one_line(char *s, size_t n);
