/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Configuration shared by the broker and the front end. Every value comes
 * from an MCP_EXEC_* environment variable (the units load
 * /etc/mcp-exec/mcp-exec.conf with EnvironmentFile=-); names and defaults of
 * the Go server are kept so its users can switch. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "parse-util.h"

typedef struct Config {
        char *transport;                /* MCP_EXEC_TRANSPORT: "", "stdio", "http" or "sse" (both HTTP transports) */
        char *addr;                     /* MCP_EXEC_ADDR, default ":8080" */
        uint64_t default_timeout_s;     /* MCP_EXEC_DEFAULT_TIMEOUT_S, 30 */
        uint64_t max_timeout_s;         /* MCP_EXEC_MAX_TIMEOUT_S, 300 */
        uint64_t max_output_bytes;      /* MCP_EXEC_MAX_OUTPUT_BYTES, stdout+stderr together, 1 MiB */
        uint64_t max_stdin_bytes;       /* MCP_EXEC_MAX_STDIN_BYTES, 1 MiB */
        uint64_t max_code_bytes;        /* MCP_EXEC_MAX_CODE_BYTES, 1 MiB */
        char *python;                   /* MCP_EXEC_PYTHON as given, "python3" */
        uint64_t memory_max;            /* MCP_EXEC_MEMORY_MAX, 256M */
        uint64_t tasks_max;             /* MCP_EXEC_TASKS_MAX, 128 */
        uint64_t cpu_quota_percent;     /* MCP_EXEC_CPU_QUOTA, 100% */
        uint64_t file_size_max;         /* MCP_EXEC_FILE_SIZE_MAX (LimitFSIZE), 64M */
        uint64_t tmp_size_max;          /* MCP_EXEC_TMP_SIZE_MAX (the run's own /tmp), 64M */
        uint64_t max_concurrent;        /* MCP_EXEC_MAX_CONCURRENT, default: number of cores */
        uint64_t max_queue;             /* MCP_EXEC_MAX_QUEUE, runs waiting for a slot, 64 */
        /* Figures and files: what comes back of a run, and what goes in. The
         * launcher enforces them in the sandbox, the front end again on what
         * it receives (result-reader.h). */
        uint64_t max_images;            /* MCP_EXEC_MAX_IMAGES, figures and image files returned, 8 */
        uint64_t max_image_bytes;       /* MCP_EXEC_MAX_IMAGE_BYTES, one image, 1 MiB */
        uint64_t max_files_out;         /* MCP_EXEC_MAX_FILES_OUT, other files returned, 16 */
        uint64_t max_result_bytes;      /* MCP_EXEC_MAX_RESULT_BYTES, all returned images and files, 4 MiB */
        uint64_t max_input_bytes;       /* MCP_EXEC_MAX_INPUT_BYTES, all input files together, 4 MiB */
        uint64_t frontend_budget;       /* MCP_EXEC_FRONTEND_BUDGET, what clients make a front end hold, 64 MiB */
        uint64_t pool_size;             /* MCP_EXEC_POOL_SIZE, warm units kept ready, 2 */
        uint64_t pool_idle_s;           /* MCP_EXEC_POOL_IDLE_S, a warm unit's (and the broker's) idle life, 600 */
        char *preload;                  /* MCP_EXEC_PRELOAD as given: comma-separated modules; NULL: unset */
        uint32_t languages;             /* MCP_EXEC_LANGUAGES: LANGUAGE_BIT()s of those on, all by default */
        uint64_t session_idle_s;        /* MCP_EXEC_SESSION_IDLE_S, a session's life without calls, 600 */
        uint64_t session_max_s;         /* MCP_EXEC_SESSION_MAX_S, a session's whole life, 3600 */
        /* Tasks (MCP tasks, issue 21): runs that outlive the request. */
        uint64_t task_max_timeout_s;    /* MCP_EXEC_TASK_MAX_TIMEOUT_S, a task's run, 3600; >= max_timeout_s */
        uint64_t task_ttl_max_s;        /* MCP_EXEC_TASK_TTL_MAX_S, longest a task and its result are kept, 7200 */
        uint64_t max_tasks;             /* MCP_EXEC_MAX_TASKS, live tasks in all, 64; 0: no tasks */
        uint64_t max_tasks_per_caller;  /* MCP_EXEC_MAX_TASKS_PER_CALLER, of one token or uid, 16 */
        uint64_t task_after_ms;         /* MCP_EXEC_TASK_AFTER_MS, 2026-07-28: a call running this long becomes
                                         * a task, 1000 */
        uint64_t max_sessions;          /* MCP_EXEC_MAX_SESSIONS, live sessions in all, 16; 0: no sessions */
        uint64_t max_sessions_per_caller; /* MCP_EXEC_MAX_SESSIONS_PER_CALLER, of one token or uid, 4 */
        /* MCP_EXEC_MAX_SESSIONS_PER_SCOPE, of one MCP session (Mcp-Session-Id,
         * SSE stream) of a caller: half the per-caller cap, rounded up, so
         * that one client of a shared token cannot take all of it. */
        uint64_t max_sessions_per_scope;
        /* Front end only: what one client may hold of it. */
        uint64_t http_max_connections;  /* MCP_EXEC_HTTP_MAX_CONNECTIONS, 256 */
        uint64_t http_header_timeout_s; /* MCP_EXEC_HTTP_HEADER_TIMEOUT_S, request line and headers, 10 */
        uint64_t http_timeout_s;        /* MCP_EXEC_HTTP_TIMEOUT_S, the body; an idle connection, 30 */
        uint64_t stdio_max_connections; /* MCP_EXEC_STDIO_MAX_CONNECTIONS, local sessions, 256 */
        uint64_t stdio_max_per_uid;     /* MCP_EXEC_STDIO_MAX_PER_UID, local sessions of one uid, 32 */
        uint64_t stdio_hello_timeout_s; /* MCP_EXEC_STDIO_HELLO_TIMEOUT_S, a local session's first message, 30 */
        char *node_id;                  /* MCP_EXEC_NODE_ID, [a-z0-9-]{1,32}; "": from the machine id */
        char *allowed_hosts;            /* MCP_EXEC_ALLOWED_HOSTS, comma-separated host[:port]; "" none */
        char *auth_tokens_file;         /* MCP_EXEC_AUTH_TOKENS_FILE, named HTTP tokens, /etc/mcp-exec/tokens;
                                         * "" none */
        /* Packages on demand (issue 23, package-spec.h, wheelhouse.h). */
        char *wheelhouse;               /* MCP_EXEC_WHEELHOUSE, /var/lib/mcp-exec/wheels; "": no packages */
        /* MCP_EXEC_PACKAGE_STORE, /var/lib/mcp-exec/packages: what runs install
         * from (issue 41); apart from the wheelhouse, which runs never see. */
        char *package_store;
        uint64_t max_packages;          /* MCP_EXEC_MAX_PACKAGES, specs per call or session, 16; 0: no packages */
        uint64_t max_install_bytes;     /* MCP_EXEC_MAX_INSTALL_BYTES, unpacked size of one install, 48M;
                                         * <= MCP_EXEC_TMP_SIZE_MAX */
} Config;

/* Fills *ret from envp ("NAME=VALUE" strings, NULL-terminated; pass environ).
 * On a bad value returns -EINVAL and, if ret_error is set, a one-line message
 * naming the variable. */
int config_parse(char *const *envp, Config *ret, char **ret_error);

void config_done(Config *c);

/* For the parsers of this configuration (config.c, egress-policy.c): the
 * value of NAME in envp, or NULL; and a one-line error in *ret_error (if
 * set), returning -EINVAL. */
const char *config_env_lookup(char *const *envp, const char *name);
int config_fail(char **ret_error, const char *fmt, ...) _printf_(2, 3);

/* One entry of MCP_EXEC_ALLOWED_HOSTS: a DNS name or an IPv4 address, or an
 * IPv6 address in brackets, optionally with ":port" (1..65535). */
bool config_host_entry_is_valid(const char *s, size_t len);

/* Resolves the interpreter to an absolute, canonical, executable path that
 * lies under /usr (the only tree the sandbox may execute from). A bare name
 * is looked up in /usr/local/bin and /usr/bin, never in $PATH. */
int config_resolve_python(const char *value, char **ret_path, char **ret_error);

/* Names of every variable config_parse() knows, NULL-terminated. */
extern const char *const config_known_names[];

/* True if assignment ("NAME=VALUE") is an MCP_EXEC_* name we do not know:
 * a likely typo that callers should warn about. */
bool config_is_unknown_assignment(const char *assignment);
