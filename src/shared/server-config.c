/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "server-config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress-policy.h"
#include "server-config-internal.h"
#include "parse-util.h"
#include "strv.h"
#include "utf8.h"
#include "util.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
/* Longest piece of a value quoted back in a message. */
#define QUOTE_MAX 80

/* A reason, for the caller to prefix with file, line and key. */
static int why(char **ret_why, const char *fmt, ...) _printf_(2, 3);
static int why(char **ret_why, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_why, fmt, ap) < 0)
                *ret_why = NULL;
        va_end(ap);
        return *ret_why ? -EINVAL : -ENOMEM;
}

int server_config_fail_at(char **ret_error, const char *path, unsigned line, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        if (!ret_error)
                return -EINVAL;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = line > 0 ? asprintf(ret_error, "%s:%u: %s", path, line, msg) : asprintf(ret_error, "%s: %s", path, msg);
        return r < 0 ? -ENOMEM : -EINVAL;
}

ServerConfig *server_config_free(ServerConfig *c) {
        if (!c)
                return NULL;
        free(c->name);
        free(c->description);
        strv_free(c->argv);
        free(c->url);
        strv_free(c->environment);
        for (size_t i = 0; i < c->n_credentials; i++) {
                free(c->credentials[i].id);
                free(c->credentials[i].path);
        }
        free(c->credentials);
        for (size_t i = 0; i < c->n_credential_env; i++) {
                free(c->credential_env[i].env);
                free(c->credential_env[i].id);
        }
        free(c->credential_env);
        strv_free(c->headers);
        for (size_t i = 0; i < c->n_credential_headers; i++) {
                free(c->credential_headers[i].env);
                free(c->credential_headers[i].id);
        }
        free(c->credential_headers);
        strv_free(c->callers);
        strv_free(c->tools);
        strv_free(c->confirmed);
        free(c->egress_policy);
        return mfree(c);
}

static bool is_lower_or_digit(char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_alnum(char ch) {
        return is_lower_or_digit(ch) || (ch >= 'A' && ch <= 'Z');
}

bool server_name_is_valid(const char *name) {
        size_t l = name ? strlen(name) : 0;

        if (l == 0 || l > SERVER_NAME_MAX || !(name[0] >= 'a' && name[0] <= 'z'))
                return false;
        for (size_t i = 1; i < l; i++)
                if (!is_lower_or_digit(name[i]) && name[i] != '_')
                        return false;
        return true;
}

/* ---- words of list values ---- */

/* Splits value on blanks; a word may be in double quotes (then it may hold
 * blanks, and must be followed by a blank or the end). A quote inside an
 * unquoted word, or inside a quoted one, is refused rather than guessed. */
static int split_words(const char *value, size_t max, const char *what, const char *whats, char ***ret,
                       char **ret_why) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        size_t n = 0;
        const char *p = value;

        if (!l)
                return -ENOMEM;
        for (;;) {
                const char *start, *end;
                int r;

                p += strspn(p, " \t");
                if (!*p)
                        break;
                if (*p == '"') {
                        start = ++p;
                        end = strchr(start, '"');
                        if (!end)
                                return why(ret_why, "a quoted %s lacks its closing quote", what);
                        p = end + 1;
                        if (*p && *p != ' ' && *p != '\t')
                                return why(ret_why, "a quoted %s must be followed by a blank", what);
                } else {
                        start = p;
                        p += strcspn(p, " \t\"");
                        end = p;
                        if (*p == '"')
                                return why(ret_why, "a quote inside the %s '%.*s'", what,
                                           (int) MIN((size_t) (end - start), QUOTE_MAX), start);
                }
                if (++n > max)
                        return why(ret_why, "more than %zu %s", max, whats);
                r = strv_extend_n(&l, start, (size_t) (end - start));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* An absolute path without "//", "." or ".." components, no trailing '/'. */
static bool path_is_normalized_absolute(const char *s) {
        size_t l = strlen(s);

        if (l < 2 || l > SERVER_PATH_MAX || s[0] != '/' || s[l - 1] == '/')
                return false;
        for (const char *c = s; c; c = strchr(c + 1, '/')) {
                size_t n = strcspn(c + 1, "/");

                if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
                        return false;
        }
        return true;
}

/* KEY of an environment entry: [A-Za-z_][A-Za-z0-9_]{0,63}. */
static bool env_name_is_valid(const char *s, size_t n) {
        if (n == 0 || n > SERVER_ENV_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(s[i]) && s[i] != '_')
                        return false;
        return true;
}

/* Headers that the MCP transport (the bridge, mcp-exec-upstream-http) or
 * HTTP itself sets: an operator's value would make a request ambiguous. */
static const char *const reserved_headers[] = {
        "accept", "accept-encoding", "connection", "content-encoding", "content-length", "content-type",
        "expect", "host", "keep-alive", "last-event-id", "mcp-protocol-version", "mcp-session-id",
        "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
};

bool server_header_name_is_valid(const char *s, size_t n) {
        if (!s || n == 0 || n > SERVER_HEADER_NAME_MAX)
                return false;
        /* RFC 9110's token. */
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(s[i]) && !strchr("!#$%&'*+-.^_`|~", s[i]))
                        return false;
        for (size_t i = 0; i < ELEMENTSOF(reserved_headers); i++)
                if (strlen(reserved_headers[i]) == n && strncasecmp(reserved_headers[i], s, n) == 0)
                        return false;
        return true;
}

bool server_header_value_is_valid(const char *s, size_t n) {
        if (!s || n == 0 || n > SERVER_HEADER_VALUE_MAX || s[0] == ' ' || s[n - 1] == ' ')
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < ' ' || (unsigned char) s[i] >= 0x7f)
                        return false;
        return true;
}

/* ---- one parser per key ---- */

static int parse_description(ServerConfig *c, const char *v, char **ret_why) {
        if (strlen(v) > SERVER_DESCRIPTION_MAX)
                return why(ret_why, "longer than %d bytes", SERVER_DESCRIPTION_MAX);
        free(c->description);
        c->description = strdup(v);
        return c->description ? 0 : -ENOMEM;
}

static int parse_command(ServerConfig *c, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = split_words(v, SERVER_ARGV_MAX, "word", "words", &l, ret_why);
        if (r < 0)
                return r;
        if (!l[0])
                return why(ret_why, "empty, expected an absolute path and its arguments");
        if (!path_is_normalized_absolute(l[0]))
                return why(ret_why, "'%.*s' is not an absolute, normalized path (at most %d bytes)", QUOTE_MAX, l[0],
                           SERVER_PATH_MAX);
        c->argv = TAKE_PTR(l);
        return 0;
}

static int parse_environment(ServerConfig *c, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = split_words(v, SERVER_ENV_MAX, "entry", "entries", &l, ret_why);
        if (r < 0)
                return r;
        for (size_t i = 0; l[i]; i++) {
                size_t n = strcspn(l[i], "=");

                if (!l[i][n] || !env_name_is_valid(l[i], n))
                        return why(ret_why, "'%.*s' is not KEY=value (KEY: A-Z, a-z, 0-9 and _, at most %d)", QUOTE_MAX,
                                   l[i], SERVER_ENV_NAME_MAX);
                for (size_t j = 0; j < i; j++)
                        if (strneq(l[j], l[i], n + 1))
                                return why(ret_why, "%.*s is set twice", (int) n, l[i]);
        }
        c->environment = TAKE_PTR(l);
        return 0;
}

static bool credential_id_is_valid(const char *s, size_t n) {
        if (n == 0 || n > SERVER_CREDENTIAL_ID_MAX || s[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(s[i]) && !strchr("_.-", s[i]))
                        return false;
        return true;
}

/* Credential files: what LoadCredential= takes without any quoting. */
static bool credential_path_is_valid(const char *s) {
        for (const char *p = s; *p; p++)
                if (!is_alnum(*p) && !strchr("._+,=@/-", *p))
                        return false;
        return path_is_normalized_absolute(s);
}

static int parse_credentials(ServerConfig *c, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;
        int r;

        r = split_words(v, SERVER_CREDENTIALS_MAX, "credential", "credentials", &l, ret_why);
        if (r < 0)
                return r;
        n = strv_length(l);
        c->credentials = new0(ServerCredential, MAX(n, 1u));
        if (!c->credentials)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t k = strcspn(l[i], ":");

                if (!l[i][k] || !credential_id_is_valid(l[i], k) || !credential_path_is_valid(l[i] + k + 1))
                        return why(ret_why,
                                   "'%.*s' is not ID:PATH (ID: A-Z, a-z, 0-9, _, . and -, at most %d; PATH: absolute, "
                                   "of A-Z, a-z, 0-9 and ._+,=@/-)",
                                   QUOTE_MAX, l[i], SERVER_CREDENTIAL_ID_MAX);
                for (size_t j = 0; j < i; j++)
                        if (strlen(c->credentials[j].id) == k && strneq(c->credentials[j].id, l[i], k))
                                return why(ret_why, "the credential %.*s is named twice", (int) k, l[i]);
                c->credentials[i].id = strndup(l[i], k);
                c->credentials[i].path = strdup(l[i] + k + 1);
                c->n_credentials++;
                if (!c->credentials[i].id || !c->credentials[i].path)
                        return -ENOMEM;
        }
        return 0;
}

/* CREDENTIAL_ENV: ENV=ID; the ids are checked against CREDENTIALS once the
 * whole file is read. */
static int parse_credential_env(ServerConfig *c, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;
        int r;

        r = split_words(v, SERVER_CREDENTIALS_MAX, "entry", "entries", &l, ret_why);
        if (r < 0)
                return r;
        n = strv_length(l);
        c->credential_env = new0(ServerCredentialEnv, MAX(n, 1u));
        if (!c->credential_env)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t k = strcspn(l[i], "=");

                const char *id = l[i] + k + (l[i][k] ? 1 : 0);

                if (!l[i][k] || !env_name_is_valid(l[i], k) || !credential_id_is_valid(id, strlen(id)))
                        return why(ret_why, "'%.*s' is not ENV=ID", QUOTE_MAX, l[i]);
                for (size_t j = 0; j < i; j++)
                        if (strlen(c->credential_env[j].env) == k && strneq(c->credential_env[j].env, l[i], k))
                                return why(ret_why, "%.*s is set twice", (int) k, l[i]);
                c->credential_env[i].env = strndup(l[i], k);
                c->credential_env[i].id = strdup(l[i] + k + 1);
                c->n_credential_env++;
                if (!c->credential_env[i].env || !c->credential_env[i].id)
                        return -ENOMEM;
        }
        return 0;
}

/* HEADERS: Name=value words, sent with every request to a URL server. Not
 * secret (the file is readable by the gateway, the value a unit argument):
 * a secret header is CREDENTIAL_HEADERS'. */
static int parse_headers(ServerConfig *c, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = split_words(v, SERVER_HEADERS_MAX, "header", "headers", &l, ret_why);
        if (r < 0)
                return r;
        for (size_t i = 0; l[i]; i++) {
                size_t n = strcspn(l[i], "=");

                if (!l[i][n] || !server_header_name_is_valid(l[i], n) ||
                    !server_header_value_is_valid(l[i] + n + 1, strlen(l[i] + n + 1)))
                        return why(ret_why, "'%.*s' is not Name=value (Name: an HTTP header the transport does not "
                                   "set itself, at most %d; value: printable ASCII, at most %d)", QUOTE_MAX, l[i],
                                   SERVER_HEADER_NAME_MAX, SERVER_HEADER_VALUE_MAX);
                for (size_t j = 0; j < i; j++)
                        if (strncasecmp(l[j], l[i], n + 1) == 0)
                                return why(ret_why, "the header %.*s is set twice", (int) n, l[i]);
        }
        c->headers = TAKE_PTR(l);
        return 0;
}

/* CREDENTIAL_HEADERS: Name=ID; the header's value is the credential's
 * content. The ids are checked against CREDENTIALS once the file is read. */
static int parse_credential_headers(ServerConfig *c, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;
        int r;

        r = split_words(v, SERVER_HEADERS_MAX, "header", "headers", &l, ret_why);
        if (r < 0)
                return r;
        n = strv_length(l);
        c->credential_headers = new0(ServerCredentialEnv, MAX(n, 1u));
        if (!c->credential_headers)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t k = strcspn(l[i], "=");
                const char *id = l[i] + k + (l[i][k] ? 1 : 0);

                if (!l[i][k] || !server_header_name_is_valid(l[i], k) || !credential_id_is_valid(id, strlen(id)))
                        return why(ret_why, "'%.*s' is not Name=ID (Name: an HTTP header the transport does not set "
                                   "itself)", QUOTE_MAX, l[i]);
                for (size_t j = 0; j < i; j++)
                        if (strlen(c->credential_headers[j].env) == k &&
                            strncasecmp(c->credential_headers[j].env, l[i], k) == 0)
                                return why(ret_why, "the header %.*s is set twice", (int) k, l[i]);
                c->credential_headers[i].env = strndup(l[i], k);
                c->credential_headers[i].id = strdup(id);
                c->n_credential_headers++;
                if (!c->credential_headers[i].env || !c->credential_headers[i].id)
                        return -ENOMEM;
        }
        return 0;
}

/* http:// or https://, a host, no user information (a secret never sits in
 * this file), printable ASCII without blanks. */
static int parse_url(ServerConfig *c, const char *v, char **ret_why) {
        const char *host, *end;
        size_t l = strlen(v);

        if (l > SERVER_URL_MAX)
                return why(ret_why, "longer than %d bytes", SERVER_URL_MAX);
        for (const char *p = v; *p; p++)
                if ((unsigned char) *p <= ' ' || (unsigned char) *p >= 0x7f || *p == '"' || *p == '\\')
                        return why(ret_why, "expected printable ASCII without blanks, quotes or backslashes");
        if (strneq(v, "http://", 7))
                host = v + 7;
        else if (strneq(v, "https://", 8))
                host = v + 8;
        else
                return why(ret_why, "expected http://HOST[:PORT]/PATH or https://...");
        end = host + strcspn(host, "/?#");
        if (end == host)
                return why(ret_why, "no host");
        if (memchr(host, '@', (size_t) (end - host)))
                return why(ret_why, "user information in the URL: put secrets in CREDENTIALS, not in this file");
        free(c->url);
        c->url = strdup(v);
        return c->url ? 0 : -ENOMEM;
}

static int parse_callers(ServerConfig *c, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        /* Set but empty: nobody (non-NULL, empty). */
        r = split_words(v, SERVER_CALLERS_MAX, "caller", "callers", &l, ret_why);
        if (r < 0)
                return r;
        STRV_FOREACH(x, l)
                if (!egress_caller_is_valid(*x, strlen(*x)))
                        return why(ret_why, "invalid caller '%.*s', expected uid:N, http:token:NAME or http:loopback",
                                   QUOTE_MAX, *x);
        c->callers = TAKE_PTR(l);
        return 0;
}

static int parse_globs(char ***target, const char *v, char **ret_why) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = split_words(v, SERVER_GLOBS_MAX, "pattern", "patterns", &l, ret_why);
        if (r < 0)
                return r;
        STRV_FOREACH(x, l) {
                size_t n = strlen(*x);
                bool ok = n > 0 && n <= SERVER_GLOB_MAX;

                for (size_t i = 0; ok && i < n; i++)
                        ok = (unsigned char) (*x)[i] > ' ' && (unsigned char) (*x)[i] < 0x7f;
                if (!ok)
                        return why(ret_why, "'%.*s' is not a tool name pattern (1 to %d printable ASCII characters)",
                                   QUOTE_MAX, *x, SERVER_GLOB_MAX);
        }
        strv_free(*target);
        *target = TAKE_PTR(l);
        return 0;
}

static int parse_tools(ServerConfig *c, const char *v, char **ret_why) {
        return parse_globs(&c->tools, v, ret_why);
}

static int parse_confirmed(ServerConfig *c, const char *v, char **ret_why) {
        return parse_globs(&c->confirmed, v, ret_why);
}

static int parse_instance(ServerConfig *c, const char *v, char **ret_why) {
        if (streq(v, "per-caller"))
                c->instance = SERVER_INSTANCE_PER_CALLER;
        else if (streq(v, "shared"))
                c->instance = SERVER_INSTANCE_SHARED;
        else
                return why(ret_why, "expected per-caller or shared");
        return 0;
}

static int parse_network(ServerConfig *c, const char *v, char **ret_why) {
        if (streq(v, "none"))
                c->network = SERVER_NETWORK_NONE;
        else if (streq(v, "host"))
                c->network = SERVER_NETWORK_HOST;
        else if (strneq(v, "egress:", 7)) {
                const char *p = v + 7;
                size_t n = strlen(p);

                if (n == 0 || n > 32 || strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_") != n)
                        return why(ret_why, "egress:POLICY expects a policy name of 1 to 32 of a-z, 0-9 and _");
                /* Whether the policy exists is egressd's configuration: the
                 * instance does not start without it (mcp-exec-upstream-feed),
                 * and the gateway keeps the server off. */
                assert(!c->egress_policy);      /* a key set twice is refused before */
                c->egress_policy = strdup(p);
                if (!c->egress_policy)
                        return -ENOMEM;
                c->network = SERVER_NETWORK_EGRESS;
        } else
                return why(ret_why, "expected none, host or egress:POLICY");
        return 0;
}

typedef struct Key {
        const char *name;
        int (*parse)(ServerConfig *c, const char *value, char **ret_why);
        size_t offset;                  /* numbers: where in ServerConfig */
        bool size;                      /* numbers: 64K, 8M, ... */
        uint64_t min, max;
} Key;

#define NUMBER(n, field, is_size, lo, hi) { n, NULL, offsetof(ServerConfig, field), is_size, lo, hi }

static const Key keys[] = {
        { "DESCRIPTION", parse_description, 0, false, 0, 0 },
        { "COMMAND", parse_command, 0, false, 0, 0 },
        { "ENVIRONMENT", parse_environment, 0, false, 0, 0 },
        { "CREDENTIALS", parse_credentials, 0, false, 0, 0 },
        { "CREDENTIAL_ENV", parse_credential_env, 0, false, 0, 0 },
        { "URL", parse_url, 0, false, 0, 0 },
        { "HEADERS", parse_headers, 0, false, 0, 0 },
        { "CREDENTIAL_HEADERS", parse_credential_headers, 0, false, 0, 0 },
        { "CALLERS", parse_callers, 0, false, 0, 0 },
        { "TOOLS", parse_tools, 0, false, 0, 0 },
        { "CONFIRMED", parse_confirmed, 0, false, 0, 0 },
        { "INSTANCE", parse_instance, 0, false, 0, 0 },
        { "NETWORK", parse_network, 0, false, 0, 0 },
        NUMBER("MAX_CALLS", max_calls, false, 1, 100000),
        /* The gateway holds one answer whole: a bound it can afford. */
        NUMBER("MAX_BYTES", max_bytes, true, 4 * KiB, 64 * MiB),
        NUMBER("MAX_CONCURRENT", max_concurrent, false, 1, 64),
        NUMBER("CALL_TIMEOUT_S", call_timeout_s, false, 1, 3600),
        NUMBER("MEMORY_MAX", memory_max, true, 16 * MiB, 1024 * GiB),
        NUMBER("TASKS_MAX", tasks_max, false, 4, 65536),
        NUMBER("IDLE_S", idle_s, false, 1, 86400),
};

static int parse_number(const Key *k, ServerConfig *c, const char *v, char **ret_why) {
        uint64_t x;

        if ((k->size ? parse_size(v, &x) : parse_uint(v, &x)) < 0 || x < k->min || x > k->max) {
                if (k->size)
                        return why(ret_why, "'%.*s' is not a size from %" PRIu64 "K to %" PRIu64 "M", QUOTE_MAX, v,
                                   k->min / KiB, k->max / MiB);
                return why(ret_why, "'%.*s' is not a number from %" PRIu64 " to %" PRIu64, QUOTE_MAX, v, k->min,
                           k->max);
        }
        *(uint64_t *) ((uint8_t *) c + k->offset) = x;
        return 0;
}

/* ---- lines ---- */

/* The value after '=': one bare word, or "..." with \" and \\; nothing but
 * blanks after it. Returns a copy in *ret. */
static int unquote_value(const char *s, size_t n, char **ret, char **ret_why) {
        _cleanup_free_ char *v = malloc(n + 1);
        size_t i = 0, o = 0;

        if (!v)
                return -ENOMEM;
        if (n > 0 && s[0] == '"') {
                for (i = 1; i < n && s[i] != '"'; i++) {
                        if (s[i] == '\\') {
                                if (i + 1 >= n || (s[i + 1] != '"' && s[i + 1] != '\\'))
                                        return why(ret_why, "only \\\" and \\\\ may follow a backslash");
                                i++;
                        }
                        v[o++] = s[i];
                }
                if (i >= n)
                        return why(ret_why, "the value lacks its closing quote");
                i++;
        } else
                for (; i < n && s[i] != ' ' && s[i] != '\t'; i++) {
                        if (s[i] == '"' || s[i] == '\\')
                                return why(ret_why, "a quote or backslash in an unquoted value: quote it");
                        v[o++] = s[i];
                }
        for (; i < n; i++)
                if (s[i] != ' ' && s[i] != '\t')
                        return why(ret_why, "text after the value (a value with blanks needs double quotes)");
        v[o] = 0;
        *ret = TAKE_PTR(v);
        return 0;
}

static int parse_line(ServerConfig *c, unsigned *seen, const char *l, size_t n, unsigned line, char **ret_why) {
        _cleanup_free_ char *value = NULL;
        const char *eq;
        size_t i, kl;
        int r;

        while (n > 0 && (*l == ' ' || *l == '\t'))
                l++, n--;
        if (n == 0 || *l == '#')
                return 0;
        for (i = 0; i < n; i++)
                if ((unsigned char) l[i] < ' ' && l[i] != '\t')
                        return why(ret_why, "a control character (0x%02x)", (unsigned) (unsigned char) l[i]);
                else if (l[i] == 0x7f)
                        return why(ret_why, "a control character (0x7f)");
        eq = memchr(l, '=', n);
        if (!eq)
                return why(ret_why, "expected KEY=VALUE, a comment or a blank line");
        kl = (size_t) (eq - l);
        for (i = 0; i < ELEMENTSOF(keys); i++)
                if (strlen(keys[i].name) == kl && strneq(keys[i].name, l, kl))
                        break;
        if (i == ELEMENTSOF(keys))
                return why(ret_why, "unknown key '%.*s'", (int) MIN(kl, QUOTE_MAX), l);
        if (seen[i] > 0)
                return why(ret_why, "%s is set twice (first on line %u)", keys[i].name, seen[i]);
        seen[i] = line;
        r = unquote_value(eq + 1, n - kl - 1, &value, ret_why);
        if (r >= 0)
                r = keys[i].parse ? keys[i].parse(c, value, ret_why) : parse_number(keys + i, c, value, ret_why);
        if (r == -EINVAL) {
                /* "KEY: why" */
                _cleanup_free_ char *w = *ret_why;
                return why(ret_why, "%s: %s", keys[i].name, w);
        }
        return r;
}

static unsigned key_line(const unsigned *seen, const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (streq(keys[i].name, name))
                        return seen[i];
        return 0;
}

/* Is every id of l (n entries) one of c's CREDENTIALS? NULL, or the first
 * that is not. */
static const char *unknown_credential(const ServerConfig *c, const ServerCredentialEnv *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                bool found = false;

                for (size_t j = 0; j < c->n_credentials; j++)
                        found = found || streq(c->credentials[j].id, l[i].id);
                if (!found)
                        return l[i].id;
        }
        return NULL;
}

/* Is the header named (case-insensitively) in HEADERS? */
static bool header_in_headers(const ServerConfig *c, const char *name) {
        size_t n = strlen(name);

        STRV_FOREACH(h, c->headers)
                if (strncasecmp(*h, name, n) == 0 && (*h)[n] == '=')
                        return true;
        return false;
}

/* What no single line can tell: COMMAND or URL, and what goes with each. */
static int check_whole(ServerConfig *c, const unsigned *seen, unsigned *ret_line, char **ret_why) {
        /* A URL server's unit is the bridge (mcp-exec-upstream-http): its
         * CREDENTIALS become header values, MEMORY_MAX and TASKS_MAX its caps;
         * what the bridge has no use for stays stdio's. */
        static const char *const stdio_only[] = { "ENVIRONMENT", "CREDENTIAL_ENV", "NETWORK" };
        static const char *const url_only[] = { "HEADERS", "CREDENTIAL_HEADERS" };
        const char *id;

        *ret_line = 0;
        if (!c->argv && !c->url)
                return why(ret_why, "neither COMMAND (a stdio server) nor URL (a Streamable HTTP server)");
        if (c->argv && c->url) {
                *ret_line = MAX(key_line(seen, "COMMAND"), key_line(seen, "URL"));
                return why(ret_why, "both COMMAND and URL: a server is one or the other");
        }
        for (size_t i = 0; c->url && i < ELEMENTSOF(stdio_only); i++)
                if ((*ret_line = key_line(seen, stdio_only[i])) > 0)
                        return why(ret_why, "%s: only for a stdio server (COMMAND), this one has a URL",
                                   stdio_only[i]);
        for (size_t i = 0; c->argv && i < ELEMENTSOF(url_only); i++)
                if ((*ret_line = key_line(seen, url_only[i])) > 0)
                        return why(ret_why, "%s: only for a Streamable HTTP server (URL), this one has a COMMAND",
                                   url_only[i]);
        *ret_line = key_line(seen, "CREDENTIAL_ENV");
        if ((id = unknown_credential(c, c->credential_env, c->n_credential_env)))
                return why(ret_why, "CREDENTIAL_ENV: %s is not one of CREDENTIALS", id);
        for (size_t i = 0; i < c->n_credential_env; i++)
                STRV_FOREACH(e, c->environment)
                        if (strneq(*e, c->credential_env[i].env, strlen(c->credential_env[i].env)) &&
                            (*e)[strlen(c->credential_env[i].env)] == '=')
                                return why(ret_why, "CREDENTIAL_ENV: %s is also in ENVIRONMENT",
                                           c->credential_env[i].env);
        *ret_line = key_line(seen, "CREDENTIAL_HEADERS");
        if ((id = unknown_credential(c, c->credential_headers, c->n_credential_headers)))
                return why(ret_why, "CREDENTIAL_HEADERS: %s is not one of CREDENTIALS", id);
        for (size_t i = 0; i < c->n_credential_headers; i++)
                if (header_in_headers(c, c->credential_headers[i].env))
                        return why(ret_why, "CREDENTIAL_HEADERS: %s is also in HEADERS", c->credential_headers[i].env);
        *ret_line = 0;
        return 0;
}

static int config_new(const char *name, ServerConfig **ret) {
        _cleanup_(server_config_freep) ServerConfig *c = new0(ServerConfig, 1);

        if (!c)
                return -ENOMEM;
        *c = (ServerConfig) {
                .max_calls = SERVER_DEFAULT_MAX_CALLS,
                .max_bytes = SERVER_DEFAULT_MAX_BYTES,
                .max_concurrent = SERVER_DEFAULT_MAX_CONCURRENT,
                .call_timeout_s = SERVER_DEFAULT_CALL_TIMEOUT_S,
                .memory_max = SERVER_DEFAULT_MEMORY_MAX,
                .tasks_max = SERVER_DEFAULT_TASKS_MAX,
                .idle_s = SERVER_DEFAULT_IDLE_S,
        };
        c->name = strdup(name);
        c->description = strdup("");
        c->tools = new0(char *, 2);
        if (!c->name || !c->description || !c->tools || !(c->tools[0] = strdup("*")))
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int server_config_parse(const char *name, const char *path, const char *text, size_t len, ServerConfig **ret,
                        char **ret_error) {
        _cleanup_(server_config_freep) ServerConfig *c = NULL;
        _cleanup_free_ char *reason = NULL;
        unsigned seen[ELEMENTSOF(keys)] = {}, line = 0;
        int r;

        assert(path);
        assert(text || len == 0);
        assert(ret);

        if (!server_name_is_valid(name))
                return server_config_fail_at(ret_error, path, 0,
                                      "'%s' is not a server name (1 to %d of a-z, 0-9 and _, starting with a letter)",
                                      name ?: "", SERVER_NAME_MAX);
        if (len > SERVER_FILE_MAX)
                return server_config_fail_at(ret_error, path, 0, "larger than %d bytes", SERVER_FILE_MAX);
        r = config_new(name, &c);
        if (r < 0)
                return r;
        for (size_t pos = 0; pos < len;) {
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - text - pos) : len - pos;

                line++;
                if (n > SERVER_LINE_MAX)
                        return server_config_fail_at(ret_error, path, line, "longer than %d bytes", SERVER_LINE_MAX);
                if (!utf8_is_valid(text + pos, n) || memchr(text + pos, 0, n))
                        return server_config_fail_at(ret_error, path, line, "not UTF-8 text");
                r = parse_line(c, seen, text + pos, n, line, &reason);
                if (r == -EINVAL)
                        return server_config_fail_at(ret_error, path, line, "%s", reason);
                if (r < 0)
                        return r;
                pos += n + 1;
        }
        r = check_whole(c, seen, &line, &reason);
        if (r == -EINVAL)
                return server_config_fail_at(ret_error, path, line, "%s", reason);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

/* ---- policy ---- */

bool server_config_allows_caller(const ServerConfig *c, const char *caller) {
        assert(c);

        if (!c->callers)
                return true;
        STRV_FOREACH(x, c->callers)
                if (caller && streq(*x, caller))
                        return true;
        return false;
}

bool server_config_egress_allows_caller(const ServerConfig *c, const EgressConfig *egress, const char *caller) {
        const EgressPolicy *p;

        assert(c);

        if (c->network != SERVER_NETWORK_EGRESS)
                return true;
        p = egress ? egress_config_find(egress, c->egress_policy) : NULL;
        if (!p)
                return false;
        if (!p->callers)
                return true;
        if (c->instance != SERVER_INSTANCE_SHARED)
                return caller && egress_policy_allows_caller(p, caller);
        /* The one instance serves every caller of the server. */
        if (!c->callers)
                return false;
        STRV_FOREACH(x, c->callers)
                if (!egress_policy_allows_caller(p, *x))
                        return false;
        return true;
}

static bool globs_match(char **globs, const char *name) {
        STRV_FOREACH(g, globs)
                if (name && fnmatch(*g, name, 0) == 0)
                        return true;
        return false;
}

bool server_config_allows_tool(const ServerConfig *c, const char *tool) {
        assert(c);
        return globs_match(c->tools, tool);
}

bool server_config_tool_confirmed(const ServerConfig *c, const char *tool) {
        assert(c);
        return globs_match(c->confirmed, tool);
}

const char *server_instance_to_string(ServerInstance i) {
        return i == SERVER_INSTANCE_SHARED ? "shared" : "per-caller";
}
