/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Named tokens for the HTTP transport: one per client or team, each its own
 * caller (ownership of sandbox sessions, their per-caller cap, /metrics
 * labels). They come from a file (MCP_EXEC_AUTH_TOKENS_FILE, by default
 * /etc/mcp-exec/tokens), one "NAME TOKEN" a line, '#' starts a comment. The
 * file is read at start and again on SIGHUP (systemctl reload). Names may
 * appear in logs and metrics; tokens never do, and no error quotes a line. */

#include <stdbool.h>
#include <stddef.h>

#define HTTP_TOKEN_NAME_MAX 32U
/* The single token (credential auth-token, MCP_EXEC_AUTH_TOKEN) is the caller of this name. */
#define HTTP_TOKEN_DEFAULT_NAME "default"
#define HTTP_TOKENS_MAX 1024U
#define HTTP_TOKENS_FILE_MAX ((size_t) 1024 * 1024)

typedef struct HttpToken {
        char name[HTTP_TOKEN_NAME_MAX + 1];
        char *token;
} HttpToken;

typedef struct HttpTokens {
        HttpToken *entries;
        size_t n;
} HttpTokens;

void http_tokens_done(HttpTokens *t);

/* [a-z0-9_-]{1,32}, and not a reserved name ("default", "loopback"). */
bool http_token_name_is_valid(const char *name);

/* Parses the text of a tokens file. -EINVAL with *ret_error set to a
 * message (static, or in buf) that names the line number, never its text. */
int http_tokens_parse(const char *text, size_t len, HttpTokens *ret, char *buf, size_t bufsize,
                      const char **ret_error);

/* Reads and parses path. A missing file is no tokens (0, empty). Refused
 * (-EPERM) when others may read or write it: it must be root:mcp-exec 0640
 * or stricter. */
int http_tokens_load(const char *path, HttpTokens *ret, char *buf, size_t bufsize, const char **ret_error);
