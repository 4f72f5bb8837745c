/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What mcp-exec-toolsd needs of /etc/mcp-exec/servers.d/NAME.conf
 * (CODEMODE.md): the interim, minimal reader of the gateway's own, until the
 * shared parser (src/shared/server-config.[ch]) replaces it. Only the keys
 * the gateway acts on are interpreted; the unit's keys (COMMAND,
 * ENVIRONMENT, CREDENTIALS, CREDENTIAL_ENV, NETWORK, MEMORY_MAX, TASKS_MAX)
 * are accepted and left to the generator. A file with an unknown key, a
 * duplicate or a bad value is logged with its line and that server is off. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define TOOLS_SERVERS_MAX 64U
#define TOOLS_SERVER_NAME_MAX 32U
#define TOOLS_CONF_FILE_MAX (64U * 1024U)

typedef struct ToolsServerConfig {
        char *name;                     /* [a-z][a-z0-9_]{0,31} */
        char *description;              /* "" when unset */
        char *socket_path;              /* UPSTREAM_DIR/NAME.sock */
        char **callers;                 /* NULL: every caller */
        char **tools;                   /* glob allow-list, default "*" */
        char **confirmed;               /* destructive tools allowed without confirmation; NULL: none */
        bool shared;                    /* INSTANCE=shared */
        bool http;                      /* URL= instead of COMMAND=: served only if HAVE_HTTP_UPSTREAM */
        char *egress_policy;            /* NETWORK=egress:POLICY; NULL otherwise (tools_policy_apply_egress()) */
        uint64_t max_calls;             /* MAX_CALLS, per run, 200 */
        uint64_t max_bytes;             /* MAX_BYTES, results per run, 8M; also the largest answer */
        uint64_t max_concurrent;        /* MAX_CONCURRENT, per run, 4 */
        uint64_t call_timeout_s;        /* CALL_TIMEOUT_S, 30 */
        uint64_t idle_s;                /* IDLE_S, 300 */
} ToolsServerConfig;

void tools_server_config_done(ToolsServerConfig *c);

/* Parses one file's text for the server name. 0 with *ret filled; -EINVAL
 * with a message naming the line in *ret_error. */
int tools_server_config_parse(const char *name, const char *text, const char *upstream_dir, ToolsServerConfig *ret,
                              char **ret_error);

/* Every valid DIR/NAME.conf, sorted by name; bad ones are logged and left
 * out. A missing directory is no server. */
int tools_config_load(const char *dir, const char *upstream_dir, ToolsServerConfig **ret, size_t *ret_n);
void tools_config_free(ToolsServerConfig *s, size_t n);

/* A valid server name: [a-z][a-z0-9_]{0,31}. */
bool tools_server_name_is_valid(const char *s);
