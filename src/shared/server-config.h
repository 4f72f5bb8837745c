/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The operator's upstream MCP servers for code mode (issue 40): one file per
 * server, /etc/mcp-exec/servers.d/NAME.conf, read by the generator of their
 * units (mcp-exec-servers-generator) and by the gateway (mcp-exec-toolsd).
 *
 * NAME is the file name less ".conf": [a-z][a-z0-9_]{0,31}, since it becomes
 * a Python module name and part of unit names. The text is KEY=VALUE lines
 * as in mcp-exec.conf: '#' starts a comment line, blank lines are skipped, a
 * value is one bare word or a double-quoted string (in which \" and \\ are
 * the only escapes). Keys (docs in CODEMODE.md / the README):
 *
 *   DESCRIPTION  COMMAND  ENVIRONMENT  CREDENTIALS  CREDENTIAL_ENV  URL
 *   HEADERS  CREDENTIAL_HEADERS  CALLERS  TOOLS  CONFIRMED  INSTANCE
 *   NETWORK  MAX_CALLS  MAX_BYTES  MAX_CONCURRENT  CALL_TIMEOUT_S
 *   MEMORY_MAX  TASKS_MAX  IDLE_S
 *
 * List values (COMMAND, ENVIRONMENT, CREDENTIALS, CREDENTIAL_ENV, HEADERS,
 * CREDENTIAL_HEADERS, CALLERS, TOOLS, CONFIRMED) are words separated by
 * blanks; a word in double quotes
 * may hold blanks (inside a quoted value the quotes are written \").
 *
 * Strict: an unknown key, a bad value, a key set twice, a line that is none
 * of the above, a control character or invalid UTF-8 anywhere is an error
 * that names the file and the line, and that server is off; the others are
 * not affected. Everything the generator writes into unit files is checked
 * here first (absolute COMMAND, credential ids and paths of a safe alphabet),
 * so nothing in a valid file can change a unit's meaning. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "build-config.h"
#include "egress-policy.h"
#include "macro.h"

#define SERVERS_DIR SYSCONFDIR "/mcp-exec/servers.d"

#define SERVER_NAME_MAX 32              /* [a-z][a-z0-9_]{0,31} */
#define SERVERS_MAX 64                  /* files of servers.d read, in name order */
#define SERVER_FILE_MAX (64 * 1024)
#define SERVER_LINE_MAX 4096            /* bytes of one line, newline excluded */
#define SERVER_DESCRIPTION_MAX 200
#define SERVER_ARGV_MAX 64              /* words of COMMAND */
#define SERVER_ENV_MAX 32               /* entries of ENVIRONMENT */
#define SERVER_ENV_NAME_MAX 64
#define SERVER_CREDENTIALS_MAX 16       /* of CREDENTIALS, and of CREDENTIAL_ENV */
#define SERVER_CREDENTIAL_ID_MAX 64
#define SERVER_PATH_MAX 1024            /* COMMAND's program, a credential's file */
#define SERVER_URL_MAX 1024
#define SERVER_HEADERS_MAX 16           /* of HEADERS, and of CREDENTIAL_HEADERS */
#define SERVER_HEADER_NAME_MAX 64
#define SERVER_HEADER_VALUE_MAX 1024
#define SERVER_CALLERS_MAX 1024
#define SERVER_GLOBS_MAX 64             /* of TOOLS, and of CONFIRMED */
#define SERVER_GLOB_MAX 128

#define SERVER_DEFAULT_MAX_CALLS 200
#define SERVER_DEFAULT_MAX_BYTES (UINT64_C(8) << 20)
#define SERVER_DEFAULT_MAX_CONCURRENT 4
#define SERVER_DEFAULT_CALL_TIMEOUT_S 30
#define SERVER_DEFAULT_MEMORY_MAX (UINT64_C(256) << 20)
#define SERVER_DEFAULT_TASKS_MAX 64
#define SERVER_DEFAULT_IDLE_S 300

typedef enum ServerInstance {
        SERVER_INSTANCE_PER_CALLER,     /* one upstream instance per caller (default) */
        SERVER_INSTANCE_SHARED,         /* one for all callers */
} ServerInstance;

typedef enum ServerNetwork {
        SERVER_NETWORK_NONE,            /* PrivateNetwork=yes (default) */
        SERVER_NETWORK_HOST,            /* the host's network */
        SERVER_NETWORK_EGRESS,          /* egress:POLICY: through mcp-exec-egressd (docs/upstream-servers.md) */
} ServerNetwork;

typedef struct ServerCredential {
        char *id;                       /* [A-Za-z0-9_-][A-Za-z0-9_.-]{0,63} */
        char *path;                     /* absolute, normalized, [A-Za-z0-9._+,=@/-] */
} ServerCredential;

typedef struct ServerCredentialEnv {
        char *env;                      /* the variable the server reads */
        char *id;                       /* one of the server's credentials */
} ServerCredentialEnv;

typedef struct ServerConfig {
        char *name;
        char *description;              /* "" when unset */
        char **argv;                    /* COMMAND: argv[0] absolute; NULL for a URL server */
        char *url;                      /* URL: NULL for a stdio server */
        char **environment;             /* "KEY=value", NULL-terminated; NULL: none */
        ServerCredential *credentials;
        size_t n_credentials;
        ServerCredentialEnv *credential_env;
        size_t n_credential_env;
        char **headers;                 /* HEADERS: "Name=value" sent to a URL server; NULL: none */
        ServerCredentialEnv *credential_headers;        /* CREDENTIAL_HEADERS: .env is the header's name */
        size_t n_credential_headers;
        char **callers;                 /* NULL: every caller; empty: nobody */
        char **tools;                   /* globs, default "*" */
        char **confirmed;               /* globs; NULL: none */
        ServerInstance instance;
        ServerNetwork network;
        char *egress_policy;            /* NETWORK=egress:POLICY only */
        uint64_t max_calls;             /* per run */
        uint64_t max_bytes;             /* per run, and one answer */
        uint64_t max_concurrent;        /* calls of one run at once */
        uint64_t call_timeout_s;
        uint64_t memory_max;            /* the upstream instance's MemoryMax= */
        uint64_t tasks_max;             /* its TasksMax= */
        uint64_t idle_s;                /* the gateway closes an idle connection (instance) after it */
} ServerConfig;

/* The valid servers of a directory, in name order, and one message
 * ("PATH:LINE: why" or "PATH: why") per file that was refused. */
typedef struct ServerConfigs {
        ServerConfig **servers;
        size_t n_servers;
        char **errors;                  /* NULL-terminated; NULL: none */
} ServerConfigs;

ServerConfig *server_config_free(ServerConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(ServerConfig *, server_config_free);

/* [a-z][a-z0-9_]{0,31}: a Python module name and a unit name part. */
bool server_name_is_valid(const char *name);

/* An HTTP header the operator may set for a URL server: a token of at most
 * SERVER_HEADER_NAME_MAX, not one the MCP transport or HTTP itself sets
 * (Accept, Content-Type, Mcp-Session-Id, Host, ...). */
bool server_header_name_is_valid(const char *s, size_t n);
/* A header's value: printable ASCII (blanks inside), at most
 * SERVER_HEADER_VALUE_MAX, no blank at either end. */
bool server_header_value_is_valid(const char *s, size_t n);

/* Parses the text of servers.d/NAME.conf; path only names the file in
 * messages. -EINVAL with a one-line "PATH:LINE: why" in *ret_error (if set)
 * for a bad file or name; -ENOMEM. */
int server_config_parse(const char *name, const char *path, const char *text, size_t len, ServerConfig **ret,
                        char **ret_error);

/* Reads and parses dir/NAME.conf: a regular file (no symlink), no larger
 * than SERVER_FILE_MAX, that neither group nor others may write. */
int server_config_load(const char *dir, const char *name, ServerConfig **ret, char **ret_error);

/* Every dir/NAME.conf (names starting with '.' and not ending in ".conf" are
 * not looked at; more than SERVERS_MAX files: the rest are refused). A
 * missing directory is no servers. Bad files only add to ret->errors:
 * returns -errno only if dir cannot be read or memory runs out. */
int server_configs_load(const char *dir, ServerConfigs *ret);
void server_configs_done(ServerConfigs *s);
const ServerConfig *server_configs_find(const ServerConfigs *s, const char *name);

/* May caller ("uid:1000", "http:token:alice", "http:loopback") use c? */
bool server_config_allows_caller(const ServerConfig *c, const char *caller);
/* NETWORK=egress:POLICY (docs/upstream-servers.md): whether the server's
 * instance may act for caller with the policy's network, the gateway's rule
 * (tools_policy_apply_egress()): the policy exists in egress (NULL: none
 * does) and admits caller (INSTANCE=per-caller) or every caller of the
 * server (shared). True for a server without egress. */
bool server_config_egress_allows_caller(const ServerConfig *c, const EgressConfig *egress, const char *caller);
/* Does TOOLS allow the upstream tool named tool (fnmatch globs)? */
bool server_config_allows_tool(const ServerConfig *c, const char *tool);
/* Does CONFIRMED allow the destructive tool without asking? */
bool server_config_tool_confirmed(const ServerConfig *c, const char *tool);

const char *server_instance_to_string(ServerInstance i);
