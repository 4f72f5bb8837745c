/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tools-config.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dirent-util.h"
#include "log.h"
#include "parse-util.h"
#include "strv.h"
#include "util.h"

#define DEFAULT_MAX_CALLS 200U
#define DEFAULT_MAX_BYTES (UINT64_C(8) * 1024 * 1024)
#define DEFAULT_MAX_CONCURRENT 4U
#define DEFAULT_CALL_TIMEOUT_S 30U
#define DEFAULT_IDLE_S 300U
/* Upper bounds: what one run may make the gateway hold stays bounded. */
#define MAX_MAX_BYTES (UINT64_C(64) * 1024 * 1024)
#define MAX_MAX_CALLS 100000U
#define MAX_MAX_CONCURRENT 64U
#define MAX_TIMEOUT_S 3600U
#define MAX_IDLE_S 86400U
#define WORDS_MAX 64U

static const char *const known_keys[] = {
        "DESCRIPTION", "COMMAND", "ENVIRONMENT", "CREDENTIALS", "CREDENTIAL_ENV", "URL", "CALLERS", "TOOLS",
        "CONFIRMED", "INSTANCE", "NETWORK", "MAX_CALLS", "MAX_BYTES", "MAX_CONCURRENT", "CALL_TIMEOUT_S",
        "MEMORY_MAX", "TASKS_MAX", "IDLE_S",
};

bool tools_server_name_is_valid(const char *s) {
        size_t n;

        if (!s || !(s[0] >= 'a' && s[0] <= 'z'))
                return false;
        n = strlen(s);
        if (n > TOOLS_SERVER_NAME_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
                        return false;
        return true;
}

void tools_server_config_done(ToolsServerConfig *c) {
        if (!c)
                return;
        free(c->name);
        free(c->description);
        free(c->socket_path);
        strv_free(c->callers);
        strv_free(c->tools);
        strv_free(c->confirmed);
        *c = (ToolsServerConfig) {};
}

void tools_config_free(ToolsServerConfig *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                tools_server_config_done(&s[i]);
        free(s);
}

/* Space-separated words of printable ASCII; NULL for none. */
static int split_words(const char *v, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (const char *p = v; *p;) {
                size_t k;

                p += strspn(p, " ");
                k = strcspn(p, " ");
                if (k == 0)
                        break;
                for (size_t i = 0; i < k; i++)
                        if (p[i] < '!' || p[i] > '~')
                                return -EINVAL;
                if (++n > WORDS_MAX || k > 256)
                        return -EINVAL;
                if (strv_extend_n(&l, p, k) < 0)
                        return -ENOMEM;
                p += k;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int parse_number(const char *v, bool size, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t n;
        int r = size ? parse_size(v, &n) : parse_uint(v, &n);

        if (r < 0 || n < min || n > max)
                return -EINVAL;
        *ret = n;
        return 0;
}

static bool printable_utf8_line(const char *v) {
        for (const unsigned char *p = (const unsigned char *) v; *p; p++)
                if (*p < ' ' || *p == 0x7f)
                        return false;
        return strlen(v) <= 200;
}

static int assign(ToolsServerConfig *c, const char *key, const char *v) {
        if (streq(key, "DESCRIPTION")) {
                if (!printable_utf8_line(v))
                        return -EINVAL;
                free(c->description);
                return (c->description = strdup(v)) ? 0 : -ENOMEM;
        }
        if (streq(key, "URL")) {
                c->http = true;
                return 0;
        }
        if (streq(key, "CALLERS")) {
                int r = split_words(v, &c->callers);
                /* Set but empty: nobody, as for egress policies (fail closed). */
                if (r >= 0 && !c->callers && !(c->callers = new0(char *, 1)))
                        return -ENOMEM;
                return r;
        }
        if (streq(key, "TOOLS")) {
                c->tools = strv_free(c->tools);
                return split_words(v, &c->tools);
        }
        if (streq(key, "CONFIRMED"))
                return split_words(v, &c->confirmed);
        if (streq(key, "INSTANCE")) {
                if (!streq(v, "shared") && !streq(v, "per-caller"))
                        return -EINVAL;
                c->shared = streq(v, "shared");
                return 0;
        }
        if (streq(key, "MAX_CALLS"))
                return parse_number(v, false, 1, MAX_MAX_CALLS, &c->max_calls);
        if (streq(key, "MAX_BYTES"))
                return parse_number(v, true, 1024, MAX_MAX_BYTES, &c->max_bytes);
        if (streq(key, "MAX_CONCURRENT"))
                return parse_number(v, false, 1, MAX_MAX_CONCURRENT, &c->max_concurrent);
        if (streq(key, "CALL_TIMEOUT_S"))
                return parse_number(v, false, 1, MAX_TIMEOUT_S, &c->call_timeout_s);
        if (streq(key, "IDLE_S"))
                return parse_number(v, false, 1, MAX_IDLE_S, &c->idle_s);
        return 0;       /* a key of the unit's: the generator's to judge */
}

/* KEY=VALUE or KEY="VALUE": splits line in place. */
static int split_line(char *line, char **ret_key, char **ret_value) {
        char *eq = strchr(line, '='), *v;
        size_t n;

        if (!eq)
                return -EINVAL;
        *eq = 0;
        v = eq + 1;
        n = strlen(v);
        if (n > 0 && v[0] == '"') {
                if (n < 2 || v[n - 1] != '"' || memchr(v + 1, '"', n - 2) || memchr(v + 1, '\\', n - 2))
                        return -EINVAL;
                v[n - 1] = 0;
                v++;
        }
        *ret_key = line;
        *ret_value = v;
        return 0;
}

static int parse_line(ToolsServerConfig *c, char *line, bool seen[static ELEMENTSOF(known_keys)],
                      const char **ret_why) {
        char *key, *v;
        size_t i;
        int r;

        if (split_line(line, &key, &v) < 0) {
                *ret_why = "expected KEY=VALUE";
                return -EINVAL;
        }
        for (i = 0; i < ELEMENTSOF(known_keys); i++)
                if (streq(known_keys[i], key))
                        break;
        if (i == ELEMENTSOF(known_keys)) {
                *ret_why = "unknown key";
                return -EINVAL;
        }
        if (seen[i]) {
                *ret_why = "duplicate key";
                return -EINVAL;
        }
        seen[i] = true;
        r = assign(c, key, v);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                *ret_why = "bad value";
        return r;
}

static void set_defaults(ToolsServerConfig *c) {
        c->max_calls = DEFAULT_MAX_CALLS;
        c->max_bytes = DEFAULT_MAX_BYTES;
        c->max_concurrent = DEFAULT_MAX_CONCURRENT;
        c->call_timeout_s = DEFAULT_CALL_TIMEOUT_S;
        c->idle_s = DEFAULT_IDLE_S;
}

int tools_server_config_parse(const char *name, const char *text, const char *upstream_dir, ToolsServerConfig *ret,
                              char **ret_error) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {};
        _cleanup_free_ char *copy = strdup(text);
        bool seen[ELEMENTSOF(known_keys)] = {};
        unsigned lineno = 0;

        assert(name);
        assert(upstream_dir);
        assert(ret);

        if (!copy)
                return -ENOMEM;
        if (!tools_server_name_is_valid(name))
                return config_fail(ret_error, "%s: not a server name ([a-z][a-z0-9_]{0,31})", name);
        set_defaults(&c);
        for (char *p = copy, *nl; p; p = nl) {
                const char *why = NULL;
                char *line = p;
                int r;

                nl = strchr(p, '\n');
                if (nl)
                        *nl++ = 0;
                lineno++;
                line += strspn(line, " \t");
                if (line[0] == 0 || line[0] == '#')
                        continue;
                line[strcspn(line, "\r")] = 0;
                r = parse_line(&c, line, seen, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return config_fail(ret_error, "%s.conf line %u: %s", name, lineno, why);
        }
        if (!c.tools && !(c.tools = strv_copy((const char *const[]) { "*", NULL })))
                return -ENOMEM;
        c.name = strdup(name);
        c.description = c.description ?: strdup("");
        if (asprintf(&c.socket_path, "%s/%s.sock", upstream_dir, name) < 0)
                c.socket_path = NULL;
        if (!c.name || !c.description || !c.socket_path)
                return -ENOMEM;
        *ret = c;
        c = (ToolsServerConfig) {};
        return 0;
}

static int read_conf(int dfd, const char *file, char **ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *text = NULL;
        size_t len;
        char *t;
        int fd, r;

        fd = openat(dfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "re");
        if (!f) {
                safe_close(fd);
                return -errno;
        }
        r = read_full_stream(f, TOOLS_CONF_FILE_MAX, &text, &len);
        if (r < 0)
                return r;
        if (memchr(text, 0, len))
                return -EBADMSG;
        /* read_full_stream() gives bytes, not a string. */
        t = realloc(text, len + 1);
        if (!t)
                return -ENOMEM;
        text = NULL;
        t[len] = 0;
        *ret = t;
        return 0;
}

static int cmp_name(const void *a, const void *b) {
        return strcmp(((const ToolsServerConfig *) a)->name, ((const ToolsServerConfig *) b)->name);
}

int tools_config_load(const char *dir, const char *upstream_dir, ToolsServerConfig **ret, size_t *ret_n) {
        _cleanup_(closedirp) DIR *d = NULL;
        ToolsServerConfig *s = NULL;
        size_t n = 0;

        assert(dir);
        assert(ret);
        assert(ret_n);

        d = opendir(dir);
        if (!d && errno != ENOENT)
                return log_error_errno(errno, "Cannot open %s: %m", dir);
        for (struct dirent *de; d && (de = readdir(d));) {
                _cleanup_free_ char *text = NULL, *error = NULL, *name = NULL;
                size_t len = strlen(de->d_name);
                int r;

                if (len <= 5 || !streq(de->d_name + len - 5, ".conf") || de->d_name[0] == '.')
                        continue;
                if (n >= TOOLS_SERVERS_MAX) {
                        log_error("More than %u servers in %s: %s and the rest are off.", TOOLS_SERVERS_MAX, dir,
                                  de->d_name);
                        break;
                }
                name = strndup(de->d_name, len - 5);
                if (!name)
                        return tools_config_free(s, n), -ENOMEM;
                r = read_conf(dirfd(d), de->d_name, &text);
                if (r < 0) {
                        log_error_errno(r, "Cannot read %s/%s, that server is off: %m", dir, de->d_name);
                        continue;
                }
                ToolsServerConfig *grown = realloc(s, (n + 1) * sizeof *s);
                if (!grown)
                        return tools_config_free(s, n), -ENOMEM;
                s = grown;
                r = tools_server_config_parse(name, text, upstream_dir, &s[n], &error);
                if (r == -ENOMEM)
                        return tools_config_free(s, n), r;
                if (r < 0) {
                        log_error("%s/%s, that server is off.", dir, error ?: de->d_name);
                        continue;
                }
                n++;
        }
        if (n > 0)
                qsort(s, n, sizeof *s, cmp_name);
        *ret = s;
        *ret_n = n;
        return 0;
}
