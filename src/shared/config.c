/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "egress-policy.h"
#include "language.h"
#include "macro.h"
#include "node-id.h"
#include "package-spec.h"
#include "strv.h"

const char *const config_known_names[] = {
        "MCP_EXEC_TRANSPORT",      "MCP_EXEC_ADDR",           "MCP_EXEC_DEFAULT_TIMEOUT_S",
        "MCP_EXEC_MAX_TIMEOUT_S",  "MCP_EXEC_MAX_OUTPUT_BYTES", "MCP_EXEC_MAX_STDIN_BYTES",
        "MCP_EXEC_MAX_CODE_BYTES", "MCP_EXEC_PYTHON",         "MCP_EXEC_MEMORY_MAX",
        "MCP_EXEC_TASKS_MAX",      "MCP_EXEC_CPU_QUOTA",      "MCP_EXEC_FILE_SIZE_MAX",
        "MCP_EXEC_TMP_SIZE_MAX",   "MCP_EXEC_MAX_CONCURRENT", "MCP_EXEC_MAX_QUEUE",
        "MCP_EXEC_MAX_IMAGES",     "MCP_EXEC_MAX_IMAGE_BYTES", "MCP_EXEC_MAX_FILES_OUT",
        "MCP_EXEC_MAX_RESULT_BYTES", "MCP_EXEC_MAX_INPUT_BYTES", "MCP_EXEC_TASK_MAX_TIMEOUT_S",
        /* Read by the front end only; listed so they are not reported as unknown. */
        "MCP_EXEC_AUTH_TOKEN",     "MCP_EXEC_ALLOWED_ORIGINS", "MCP_EXEC_IDLE_EXIT_S",
        "MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN", "MCP_EXEC_HTTP_MAX_CONNECTIONS", "MCP_EXEC_HTTP_HEADER_TIMEOUT_S",
        "MCP_EXEC_HTTP_TIMEOUT_S", "MCP_EXEC_STDIO_MAX_CONNECTIONS", "MCP_EXEC_STDIO_MAX_PER_UID",
        "MCP_EXEC_STDIO_HELLO_TIMEOUT_S", "MCP_EXEC_POOL_SIZE", "MCP_EXEC_POOL_IDLE_S", "MCP_EXEC_PRELOAD",
        "MCP_EXEC_SESSION_IDLE_S", "MCP_EXEC_SESSION_MAX_S", "MCP_EXEC_MAX_SESSIONS",
        "MCP_EXEC_MAX_SESSIONS_PER_CALLER", "MCP_EXEC_MAX_SESSIONS_PER_SCOPE", "MCP_EXEC_AUTH_TOKENS_FILE",
        "MCP_EXEC_FRONTEND_BUDGET", "MCP_EXEC_TASK_TTL_MAX_S", "MCP_EXEC_MAX_TASKS", "MCP_EXEC_MAX_TASKS_PER_CALLER",
        "MCP_EXEC_TASK_AFTER_MS",
        "MCP_EXEC_NODE_ID",        "MCP_EXEC_ALLOWED_HOSTS",
        "MCP_EXEC_WHEELHOUSE",     "MCP_EXEC_MAX_PACKAGES",   "MCP_EXEC_MAX_INSTALL_BYTES",
        "MCP_EXEC_PACKAGE_STORE",  "MCP_EXEC_LANGUAGES",
        /* Egress (egress-policy.h); the named policies are matched by prefix. */
        "MCP_EXEC_EGRESS_MAX_CONNECTIONS", "MCP_EXEC_EGRESS_MAX_BYTES", "MCP_EXEC_EGRESS_TESTING_PUBLIC",
        /* Read by every program (log.c) and by the mcp-exec client. */
        "MCP_EXEC_LOG_LEVEL",      "MCP_EXEC_STDIO_SOCKET",
        NULL,
};

const char *config_env_lookup(char *const *envp, const char *name) {
        size_t l;

        assert(name);

        l = strlen(name);
        for (char *const *e = envp; e && *e; e++)
                if (strneq(*e, name, l) && (*e)[l] == '=')
                        return *e + l + 1;
        return NULL;
}

typedef enum Kind { KIND_UINT, KIND_SIZE, KIND_PERCENT } Kind;

typedef struct Spec {
        const char *name;
        Kind kind;
        size_t offset;
        uint64_t min, max;
        const char *hint;
} Spec;

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static const Spec specs[] = {
        { "MCP_EXEC_DEFAULT_TIMEOUT_S", KIND_UINT, offsetof(Config, default_timeout_s), 1, 86400, "seconds" },
        { "MCP_EXEC_MAX_TIMEOUT_S", KIND_UINT, offsetof(Config, max_timeout_s), 1, 86400, "seconds" },
        { "MCP_EXEC_TASK_MAX_TIMEOUT_S", KIND_UINT, offsetof(Config, task_max_timeout_s), 1, 7 * 86400, "seconds" },
        { "MCP_EXEC_TASK_TTL_MAX_S", KIND_UINT, offsetof(Config, task_ttl_max_s), 60, 7 * 86400, "seconds" },
        { "MCP_EXEC_MAX_TASKS", KIND_UINT, offsetof(Config, max_tasks), 0, 65536, "a count" },
        { "MCP_EXEC_MAX_TASKS_PER_CALLER", KIND_UINT, offsetof(Config, max_tasks_per_caller), 1, 65536, "a count" },
        { "MCP_EXEC_TASK_AFTER_MS", KIND_UINT, offsetof(Config, task_after_ms), 10, 60000, "milliseconds" },
        { "MCP_EXEC_MAX_OUTPUT_BYTES", KIND_SIZE, offsetof(Config, max_output_bytes), 1, 256 * MiB, "a size" },
        { "MCP_EXEC_MAX_STDIN_BYTES", KIND_SIZE, offsetof(Config, max_stdin_bytes), 0, 256 * MiB, "a size" },
        { "MCP_EXEC_MAX_CODE_BYTES", KIND_SIZE, offsetof(Config, max_code_bytes), 1, 64 * MiB, "a size" },
        { "MCP_EXEC_MEMORY_MAX", KIND_SIZE, offsetof(Config, memory_max), 16 * MiB, 1024 * GiB, "a size" },
        { "MCP_EXEC_TASKS_MAX", KIND_UINT, offsetof(Config, tasks_max), 1, 65536, "a count" },
        { "MCP_EXEC_CPU_QUOTA", KIND_PERCENT, offsetof(Config, cpu_quota_percent), 1, 100000, "a percentage" },
        { "MCP_EXEC_FILE_SIZE_MAX", KIND_SIZE, offsetof(Config, file_size_max), 4096, 1024 * GiB, "a size" },
        { "MCP_EXEC_TMP_SIZE_MAX", KIND_SIZE, offsetof(Config, tmp_size_max), MiB, 1024 * GiB, "a size" },
        { "MCP_EXEC_MAX_CONCURRENT", KIND_UINT, offsetof(Config, max_concurrent), 1, 1024, "a count" },
        { "MCP_EXEC_MAX_QUEUE", KIND_UINT, offsetof(Config, max_queue), 0, 65536, "a count" },
        /* Returned content travels base64 in one JSON-RPC message, which
         * clients take up to 10 MiB: 7 MiB is 9.33 MiB as base64. */
        { "MCP_EXEC_MAX_IMAGES", KIND_UINT, offsetof(Config, max_images), 0, 64, "a count" },
        { "MCP_EXEC_MAX_IMAGE_BYTES", KIND_SIZE, offsetof(Config, max_image_bytes), 1024, 7 * MiB, "a size" },
        { "MCP_EXEC_MAX_FILES_OUT", KIND_UINT, offsetof(Config, max_files_out), 0, 256, "a count" },
        { "MCP_EXEC_MAX_RESULT_BYTES", KIND_SIZE, offsetof(Config, max_result_bytes), 0, 7 * MiB, "a size" },
        { "MCP_EXEC_MAX_INPUT_BYTES", KIND_SIZE, offsetof(Config, max_input_bytes), 0, 256 * MiB, "a size" },
        { "MCP_EXEC_FRONTEND_BUDGET", KIND_SIZE, offsetof(Config, frontend_budget), 16 * MiB, 64 * GiB, "a size" },
        { "MCP_EXEC_POOL_SIZE", KIND_UINT, offsetof(Config, pool_size), 0, 64, "a count" },
        { "MCP_EXEC_POOL_IDLE_S", KIND_UINT, offsetof(Config, pool_idle_s), 10, 86400, "seconds" },
        { "MCP_EXEC_SESSION_IDLE_S", KIND_UINT, offsetof(Config, session_idle_s), 10, 7 * 86400, "seconds" },
        { "MCP_EXEC_SESSION_MAX_S", KIND_UINT, offsetof(Config, session_max_s), 60, 7 * 86400, "seconds" },
        { "MCP_EXEC_MAX_SESSIONS", KIND_UINT, offsetof(Config, max_sessions), 0, 4096, "a count" },
        { "MCP_EXEC_MAX_SESSIONS_PER_CALLER", KIND_UINT, offsetof(Config, max_sessions_per_caller), 1, 4096,
          "a count" },
        { "MCP_EXEC_MAX_SESSIONS_PER_SCOPE", KIND_UINT, offsetof(Config, max_sessions_per_scope), 1, 4096, "a count" },
        { "MCP_EXEC_HTTP_MAX_CONNECTIONS", KIND_UINT, offsetof(Config, http_max_connections), 16, 16384, "a count" },
        { "MCP_EXEC_HTTP_HEADER_TIMEOUT_S", KIND_UINT, offsetof(Config, http_header_timeout_s), 1, 300, "seconds" },
        { "MCP_EXEC_HTTP_TIMEOUT_S", KIND_UINT, offsetof(Config, http_timeout_s), 1, 3600, "seconds" },
        { "MCP_EXEC_STDIO_MAX_CONNECTIONS", KIND_UINT, offsetof(Config, stdio_max_connections), 1, 16384, "a count" },
        { "MCP_EXEC_STDIO_MAX_PER_UID", KIND_UINT, offsetof(Config, stdio_max_per_uid), 1, 16384, "a count" },
        { "MCP_EXEC_STDIO_HELLO_TIMEOUT_S", KIND_UINT, offsetof(Config, stdio_hello_timeout_s), 1, 3600, "seconds" },
        { "MCP_EXEC_MAX_PACKAGES", KIND_UINT, offsetof(Config, max_packages), 0, PACKAGES_MAX, "a count" },
        { "MCP_EXEC_MAX_INSTALL_BYTES", KIND_SIZE, offsetof(Config, max_install_bytes), MiB, 1024 * GiB, "a size" },
};

int config_fail(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

/* Module names as Python spells them ("matplotlib.pyplot"), comma-separated;
 * they end up in the launcher's argv, so nothing else may pass. */
static bool preload_valid(const char *v) {
        size_t n = 0;

        for (const char *p = v; *p; p++) {
                if (*p == ',' || *p == '.') {
                        if (p == v || p[-1] == ',' || p[-1] == '.' || p[1] == 0)
                                return false;
                        continue;
                }
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                      (*p >= '0' && *p <= '9' && p != v && p[-1] != ',' && p[-1] != '.')))
                        return false;
                if (++n > 1024)
                        return false;
        }
        return true;
}

static uint64_t default_concurrency(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (uint64_t) n : 1;
}

/* The documented defaults (docs/configuration.md). */
static Config config_defaults(void) {
        return (Config) {
                .default_timeout_s = 30,
                .max_timeout_s = 300,
                .task_max_timeout_s = 3600,
                .task_ttl_max_s = 7200,
                .max_tasks = 64,
                .max_tasks_per_caller = 16,
                .task_after_ms = 1000,
                .max_output_bytes = MiB,
                .max_stdin_bytes = MiB,
                .max_code_bytes = MiB,
                .memory_max = 256 * MiB,
                .tasks_max = 128,
                .cpu_quota_percent = 100,
                .file_size_max = 64 * MiB,
                .tmp_size_max = 64 * MiB,
                .max_concurrent = default_concurrency(),
                .max_queue = 64,
                .max_images = 8,
                .max_image_bytes = MiB,
                .max_files_out = 16,
                .max_result_bytes = 4 * MiB,
                .max_input_bytes = 4 * MiB,
                .frontend_budget = 64 * MiB,
                .pool_size = 2,
                .pool_idle_s = 600,
                .session_idle_s = 600,
                .session_max_s = 3600,
                .max_sessions = 16,
                .max_sessions_per_caller = 4,
                .http_max_connections = 256,
                .http_header_timeout_s = 10,
                .http_timeout_s = 30,
                .stdio_max_connections = 256,
                .stdio_max_per_uid = 32,
                .stdio_hello_timeout_s = 30,
                .max_packages = 16,
                .max_install_bytes = 48 * MiB,
        };
}

/* The numeric settings, by the table: each within its range. */
static int parse_numbers(char *const *envp, Config *c, char **ret_error) {
        assert(c);

        for (size_t i = 0; i < ELEMENTSOF(specs); i++) {
                const Spec *s = specs + i;
                const char *v;
                uint64_t x;
                int r;

                v = config_env_lookup(envp, s->name);
                if (!v)
                        continue;
                r = s->kind == KIND_SIZE      ? parse_size(v, &x)
                    : s->kind == KIND_PERCENT ? parse_percent(v, &x)
                                              : parse_uint(v, &x);
                if (r < 0 || x < s->min || x > s->max)
                        return config_fail(ret_error,
                                           "%s=%s: invalid value, expected %s between %" PRIu64 " and %" PRIu64,
                                           s->name, v, s->hint, s->min, s->max);
                *(uint64_t *) ((uint8_t *) c + s->offset) = x;
        }
        return 0;
}

/* What one number means for another: a default never above its maximum,
 * a share never above the whole. */
static int check_relations(char *const *envp, Config *c, char **ret_error) {
        assert(c);

        if (c->http_header_timeout_s > c->http_timeout_s)
                return config_fail(ret_error,
                            "MCP_EXEC_HTTP_HEADER_TIMEOUT_S=%" PRIu64 " exceeds MCP_EXEC_HTTP_TIMEOUT_S=%" PRIu64,
                            c->http_header_timeout_s, c->http_timeout_s);
        if (c->default_timeout_s > c->max_timeout_s)
                return config_fail(ret_error,
                                   "MCP_EXEC_DEFAULT_TIMEOUT_S=%" PRIu64 " exceeds MCP_EXEC_MAX_TIMEOUT_S=%" PRIu64,
                                   c->default_timeout_s, c->max_timeout_s);
        /* A task may run as long as a call, never shorter. */
        if (!config_env_lookup(envp, "MCP_EXEC_TASK_MAX_TIMEOUT_S"))
                c->task_max_timeout_s = MAX(c->task_max_timeout_s, c->max_timeout_s);
        if (c->task_max_timeout_s < c->max_timeout_s)
                return config_fail(ret_error,
                                   "MCP_EXEC_TASK_MAX_TIMEOUT_S=%" PRIu64 " is below MCP_EXEC_MAX_TIMEOUT_S=%" PRIu64,
                                   c->task_max_timeout_s, c->max_timeout_s);
        if (c->session_idle_s > c->session_max_s)
                return config_fail(ret_error,
                                   "MCP_EXEC_SESSION_IDLE_S=%" PRIu64 " exceeds MCP_EXEC_SESSION_MAX_S=%" PRIu64,
                                   c->session_idle_s, c->session_max_s);

        /* Unset: half the caller's, rounded up; never more than it. */
        if (!config_env_lookup(envp, "MCP_EXEC_MAX_SESSIONS_PER_SCOPE"))
                c->max_sessions_per_scope = (c->max_sessions_per_caller + 1) / 2;
        c->max_sessions_per_scope = MIN(c->max_sessions_per_scope, c->max_sessions_per_caller);

        /* What is installed lives on the run's /tmp: unset, it takes at most
         * three quarters of it; set, it must fit. */
        if (!config_env_lookup(envp, "MCP_EXEC_MAX_INSTALL_BYTES"))
                c->max_install_bytes = MIN(c->max_install_bytes, c->tmp_size_max / 4 * 3);
        else if (c->max_install_bytes > c->tmp_size_max)
                return config_fail(ret_error,
                                   "MCP_EXEC_MAX_INSTALL_BYTES=%" PRIu64 " exceeds MCP_EXEC_TMP_SIZE_MAX=%" PRIu64,
                                   c->max_install_bytes, c->tmp_size_max);
        return 0;
}

/* The settings that are words: each well-formed. */
static int check_words(char *const *envp, char **ret_error) {
        _cleanup_strv_free_ char **entries = NULL;
        const char *v;

        v = config_env_lookup(envp, "MCP_EXEC_AUTH_TOKENS_FILE");
        if (v && !isempty(v) && v[0] != '/')
                return config_fail(ret_error, "MCP_EXEC_AUTH_TOKENS_FILE=%s: must be an absolute path (or empty: none)",
                                   v);

        v = config_env_lookup(envp, "MCP_EXEC_TRANSPORT");
        if (v && !isempty(v) && !streq(v, "stdio") && !streq(v, "http") && !streq(v, "sse"))
                return config_fail(ret_error, "MCP_EXEC_TRANSPORT=%s: invalid value, expected stdio, http or sse", v);

        v = config_env_lookup(envp, "MCP_EXEC_NODE_ID");
        if (v && !isempty(v) && !node_id_is_valid(v))
                return config_fail(ret_error, "MCP_EXEC_NODE_ID=%s: invalid value, expected 1 to %u of a-z, 0-9 and -",
                                   v, NODE_ID_MAX);

        v = config_env_lookup(envp, "MCP_EXEC_ALLOWED_HOSTS");
        if (strv_split_list(v, &entries) < 0)
                return -ENOMEM;
        STRV_FOREACH(h, entries)
                if (!config_host_entry_is_valid(*h, strlen(*h)))
                        return config_fail(ret_error,
                                           "MCP_EXEC_ALLOWED_HOSTS=%s: invalid entry '%s', expected host or host:port",
                                           v, *h);

        v = config_env_lookup(envp, "MCP_EXEC_PYTHON");
        if (v && isempty(v))
                return config_fail(ret_error, "MCP_EXEC_PYTHON is empty");

        v = config_env_lookup(envp, "MCP_EXEC_WHEELHOUSE");
        if (v && !isempty(v) && !wheelhouse_path_valid(v))
                return config_fail(ret_error,
                                   "MCP_EXEC_WHEELHOUSE=%s: must be an absolute, normalized path that runs "
                                   "see read-only (not under /tmp, /var/tmp, /run, /dev, /proc, /sys, /home or /root), "
                                   "or empty: no packages",
                                   v);

        v = config_env_lookup(envp, "MCP_EXEC_PACKAGE_STORE");
        if (v && !wheelhouse_path_valid(v))
                return config_fail(ret_error,
                                   "MCP_EXEC_PACKAGE_STORE=%s: must be an absolute, normalized path that runs "
                                   "see read-only (not under /tmp, /var/tmp, /run, /dev, /proc, /sys, /home or /root)",
                                   v);
        {
                const char *w = config_env_lookup(envp, "MCP_EXEC_WHEELHOUSE") ?: WHEELHOUSE_DEFAULT;
                const char *st = v ?: PACKAGE_STORE_DEFAULT;
                /* Runs are denied the wheelhouse and read the store. */
                if (!isempty(w) && paths_overlap(w, st))
                        return config_fail(ret_error,
                                           "MCP_EXEC_PACKAGE_STORE=%s and MCP_EXEC_WHEELHOUSE=%s: the one may not "
                                           "be or hold the other (runs never see the wheelhouse)",
                                           st, w);
        }

        v = config_env_lookup(envp, "MCP_EXEC_LANGUAGES");
        if (v && language_set_parse(v, &(uint32_t) { 0 }) < 0)
                return config_fail(ret_error,
                                   "MCP_EXEC_LANGUAGES=%s: invalid value, expected comma-separated languages, each "
                                   "once, of python, bash and javascript, python among them",
                                   v);

        v = config_env_lookup(envp, "MCP_EXEC_PRELOAD");
        if (v && !preload_valid(v))
                return config_fail(ret_error,
                                   "MCP_EXEC_PRELOAD=%s: invalid value, expected comma-separated module names "
                                   "(letters, digits, '_' and '.')",
                                   v);
        return 0;
}

/* The words, checked, into c (with their defaults). */
static int copy_words(char *const *envp, Config *c) {
        const char *preload;

        assert(c);

        preload = config_env_lookup(envp, "MCP_EXEC_PRELOAD");
        if (preload && !(c->preload = strdup(preload)))
                return -ENOMEM;
        /* Checked above: every language when unset. */
        c->languages = LANGUAGES_ALL;
        if (config_env_lookup(envp, "MCP_EXEC_LANGUAGES"))
                (void) language_set_parse(config_env_lookup(envp, "MCP_EXEC_LANGUAGES"), &c->languages);
        c->transport = strdup(config_env_lookup(envp, "MCP_EXEC_TRANSPORT") ?: "");
        c->addr = strdup(config_env_lookup(envp, "MCP_EXEC_ADDR") ?: ":8080");
        c->python = strdup(config_env_lookup(envp, "MCP_EXEC_PYTHON") ?: "python3");
        c->node_id = strdup(config_env_lookup(envp, "MCP_EXEC_NODE_ID") ?: "");
        c->allowed_hosts = strdup(config_env_lookup(envp, "MCP_EXEC_ALLOWED_HOSTS") ?: "");
        c->auth_tokens_file = strdup(config_env_lookup(envp, "MCP_EXEC_AUTH_TOKENS_FILE") ?: "/etc/mcp-exec/tokens");
        c->wheelhouse = strdup(config_env_lookup(envp, "MCP_EXEC_WHEELHOUSE") ?: WHEELHOUSE_DEFAULT);
        c->package_store = strdup(config_env_lookup(envp, "MCP_EXEC_PACKAGE_STORE") ?: PACKAGE_STORE_DEFAULT);
        if (!c->transport || !c->addr || !c->python || !c->node_id || !c->allowed_hosts || !c->auth_tokens_file ||
            !c->wheelhouse || !c->package_store)
                return -ENOMEM;
        return 0;
}

int config_parse(char *const *envp, Config *ret, char **ret_error) {
        Config c = config_defaults();
        int r;

        assert(ret);

        r = parse_numbers(envp, &c, ret_error);
        if (r >= 0)
                r = check_relations(envp, &c, ret_error);
        if (r >= 0)
                r = check_words(envp, ret_error);
        if (r >= 0)
                r = copy_words(envp, &c);
        if (r < 0) {
                config_done(&c);
                return r;
        }

        *ret = c;
        return 0;
}

void config_done(Config *c) {
        if (!c)
                return;
        c->transport = (free(c->transport), NULL);
        c->addr = (free(c->addr), NULL);
        c->python = (free(c->python), NULL);
        c->preload = (free(c->preload), NULL);
        c->node_id = (free(c->node_id), NULL);
        c->allowed_hosts = (free(c->allowed_hosts), NULL);
        c->auth_tokens_file = (free(c->auth_tokens_file), NULL);
        c->wheelhouse = (free(c->wheelhouse), NULL);
        c->package_store = (free(c->package_store), NULL);
}

bool config_host_entry_is_valid(const char *s, size_t len) {
        const char *e = s + len, *colon;
        size_t n;

        assert(s);

        if (len == 0 || len > 255 + 6)
                return false;
        if (*s == '[') {
                const char *close = memchr(s, ']', len);
                if (!close || close == s + 1)
                        return false;
                n = (size_t) (close - s - 1);
                for (const char *p = s + 1; p < close; p++)
                        if (!strchr("0123456789abcdefABCDEF:.", *p))
                                return false;
                colon = close + 1;
                if (colon != e && *colon != ':')
                        return false;
        } else {
                colon = memchr(s, ':', len) ?: e;
                n = (size_t) (colon - s);
                if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
                        return false;
                for (const char *p = s; p < colon; p++)
                        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *p))
                                return false;
        }
        if (n == 0)
                return false;
        if (colon < e) {
                char port[6];
                uint16_t p;

                if ((size_t) (e - colon - 1) == 0 || (size_t) (e - colon - 1) >= sizeof port)
                        return false;
                memcpy(port, colon + 1, (size_t) (e - colon - 1));
                port[e - colon - 1] = 0;
                if (parse_port(port, &p) < 0 || p == 0)
                        return false;
        }
        return true;
}

int config_resolve_python(const char *value, char **ret_path, char **ret_error) {
        static const char *const search[] = { "/usr/local/bin", "/usr/bin" };
        _cleanup_free_ char *resolved = NULL;
        struct stat st;

        assert(ret_path);

        if (isempty(value))
                return config_fail(ret_error, "MCP_EXEC_PYTHON is empty");

        if (strchr(value, '/')) {
                if (value[0] != '/')
                        return config_fail(ret_error, "MCP_EXEC_PYTHON=%s: must be a bare name or an absolute path",
                                           value);
                resolved = realpath(value, NULL);
        } else
                for (size_t i = 0; i < ELEMENTSOF(search) && !resolved; i++) {
                        _cleanup_free_ char *p = NULL;

                        if (asprintf(&p, "%s/%s", search[i], value) < 0)
                                return -ENOMEM;
                        if (access(p, X_OK) >= 0)
                                resolved = realpath(p, NULL);
                }

        if (!resolved)
                return config_fail(ret_error, "MCP_EXEC_PYTHON=%s: no such executable in /usr/local/bin or /usr/bin",
                                   value);
        if (!strneq(resolved, "/usr/", 5))
                return config_fail(ret_error, "MCP_EXEC_PYTHON=%s: resolves to %s, which is outside /usr", value,
                                   resolved);
        if (stat(resolved, &st) < 0 || !S_ISREG(st.st_mode) || access(resolved, X_OK) < 0)
                return config_fail(ret_error, "MCP_EXEC_PYTHON=%s: %s is not an executable file", value, resolved);

        *ret_path = TAKE_PTR(resolved);
        return 0;
}

bool config_is_unknown_assignment(const char *assignment) {
        const char *eq;

        assert(assignment);

        if (!strneq(assignment, "MCP_EXEC_", 9))
                return false;
        eq = strchr(assignment, '=');
        if (!eq)
                return false;
        if (egress_config_is_policy_name(assignment))
                return false;
        for (const char *const *n = config_known_names; *n; n++)
                if (strlen(*n) == (size_t) (eq - assignment) && strneq(*n, assignment, (size_t) (eq - assignment)))
                        return false;
        return true;
}
