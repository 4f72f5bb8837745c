/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the input is the text of servers.d/NAME.conf.
 * server_config_parse() must not crash nor leak; a refusal is one line that
 * names the file; what it accepts keeps every documented limit, and nothing
 * it accepts holds a control character but tab (it goes into unit files).
 * For an accepted stdio server, the generator's service unit
 * (upstream-units.h) is made too: every line is a comment, a section or
 * Key=..., none ends in a backslash (a continuation), and ExecStart= and
 * Environment=, read back as systemd reads them (quotes, \\ \", %%, $$),
 * give exactly the file's words. */

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server-config.h"
#include "strv.h"
#include "upstream-units.h"

/* One double-quoted word of a unit line at *p, unquoted as systemd does
 * (\\ and \" in quotes; then the specifier %% and, in ExecStart=, $$). A
 * lone % or $ would be substituted by systemd: abort. */
static char *unquote_word(const char **p, bool dollar) {
        const char *s = *p;
        char *r = malloc(strlen(s) + 1), *o = r;

        if (!r || *s++ != '"')
                abort();
        for (; *s != '"'; s++) {
                if (!*s)
                        abort();
                if (*s == '\\') {
                        s++;
                        if (*s != '\\' && *s != '"')
                                abort();
                } else if (*s == '%' || (dollar && *s == '$')) {
                        if (s[1] != *s)
                                abort();
                        s++;
                }
                *o++ = *s;
        }
        *o = 0;
        s++;
        if (*s == ' ')
                s++;
        *p = s;
        return r;
}

static void expect_word(const char **p, const char *want, bool dollar) {
        char *w = unquote_word(p, dollar);

        if (strcmp(w, want) != 0)
                abort();
        free(w);
}

/* A URL server's ExecStart=: the bridge, its caps, headers (credentials by
 * id), "--", the URL, each one word. */
static void check_exec_http(const char **p, const ServerConfig *c) {
        char w[SERVER_LINE_MAX + 64];

        expect_word(p, UPSTREAM_HTTP_BRIDGE, true);
        snprintf(w, sizeof w, "--max-bytes=%" PRIu64, c->max_bytes);
        expect_word(p, w, true);
        snprintf(w, sizeof w, "--timeout=%" PRIu64, c->call_timeout_s);
        expect_word(p, w, true);
        STRV_FOREACH(h, c->headers) {
                snprintf(w, sizeof w, "--header=%s", *h);
                expect_word(p, w, true);
        }
        for (size_t i = 0; i < c->n_credential_headers; i++) {
                snprintf(w, sizeof w, "--credential-header=%s=%s", c->credential_headers[i].env,
                         c->credential_headers[i].id);
                expect_word(p, w, true);
        }
        expect_word(p, "--", true);
        expect_word(p, c->url, true);
}

static void check_unit(const ServerConfig *c) {
        char *text = NULL;
        const char *l, *p, *eq;
        size_t n_env = 0;

        if (upstream_service_unit(c, "/etc/mcp-exec/servers.d", "/usr/libexec/mcp-exec/mcp-exec-upstream-exec",
                                  &text) < 0)
                return;         /* out of memory */
        for (l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n')) {
                size_t n = strcspn(l, "\n");

                if (n == 0 || l[0] == '#' || l[0] == '[')
                        continue;
                eq = memchr(l, '=', n);
                if (!eq || l[n - 1] == '\\' ||
                    strspn(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != (size_t) (eq - l))
                        abort();
                if (strncmp(l, "ExecStart=", 10) == 0) {
                        p = l + 10;
                        if (c->url)
                                check_exec_http(&p, c);
                        else if (c->n_credential_env > 0) {
                                expect_word(&p, "/usr/libexec/mcp-exec/mcp-exec-upstream-exec", true);
                                for (size_t i = 0; i < c->n_credential_env; i++) {
                                        char pair[256];
                                        snprintf(pair, sizeof pair, "%s=%s", c->credential_env[i].env,
                                                 c->credential_env[i].id);
                                        expect_word(&p, pair, true);
                                }
                                expect_word(&p, "--", true);
                        }
                        STRV_FOREACH(a, c->argv)
                                expect_word(&p, *a, true);
                        if (*p != '\n')
                                abort();
                } else if (strncmp(l, "Environment=", 12) == 0) {
                        p = l + 12;
                        if (n_env >= strv_length(c->environment))
                                abort();
                        expect_word(&p, c->environment[n_env++], false);
                        if (*p != '\n')
                                abort();
                }
        }
        if (n_env != strv_length(c->environment))
                abort();
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t max) {
        if (!s || strlen(s) > max)
                abort();
        for (const char *p = s; *p; p++)
                if (((unsigned char) *p < ' ' && *p != '\t') || *p == 0x7f)
                        abort();
}

static void check_config(const ServerConfig *c) {
        if (!c->argv == !c->url)
                abort();
        check_text(c->description, SERVER_DESCRIPTION_MAX);
        if (c->argv) {
                if (strv_length(c->argv) == 0 || strv_length(c->argv) > SERVER_ARGV_MAX || c->argv[0][0] != '/')
                        abort();
                STRV_FOREACH(a, c->argv)
                        check_text(*a, SERVER_LINE_MAX);
        }
        if (c->url) {
                /* No user information (a secret) in the authority; '@' may be in the path. */
                const char *host = strstr(c->url, "://");
                if (strlen(c->url) > SERVER_URL_MAX || strchr(c->url, ' ') || !host ||
                    memchr(host + 3, '@', strcspn(host + 3, "/?#")))
                        abort();
        }
        if (strv_length(c->environment) > SERVER_ENV_MAX || strv_length(c->tools) > SERVER_GLOBS_MAX ||
            strv_length(c->confirmed) > SERVER_GLOBS_MAX || strv_length(c->callers) > SERVER_CALLERS_MAX)
                abort();
        STRV_FOREACH(e, c->environment) {
                check_text(*e, SERVER_LINE_MAX);
                if (!strchr(*e, '='))
                        abort();
        }
        if (c->n_credentials > SERVER_CREDENTIALS_MAX || c->n_credential_env > SERVER_CREDENTIALS_MAX)
                abort();
        for (size_t i = 0; i < c->n_credentials; i++) {
                check_text(c->credentials[i].id, SERVER_CREDENTIAL_ID_MAX);
                check_text(c->credentials[i].path, SERVER_PATH_MAX);
                if (c->credentials[i].path[0] != '/' || strpbrk(c->credentials[i].path, " %\\\"'$;"))
                        abort();
        }
        for (size_t i = 0; i < c->n_credential_env; i++) {
                bool found = false;
                for (size_t j = 0; j < c->n_credentials; j++)
                        found = found || strcmp(c->credentials[j].id, c->credential_env[i].id) == 0;
                if (!found)
                        abort();
        }
        if (strv_length(c->headers) > SERVER_HEADERS_MAX || c->n_credential_headers > SERVER_HEADERS_MAX ||
            ((c->headers || c->n_credential_headers > 0) && !c->url))
                abort();
        STRV_FOREACH(h, c->headers) {
                size_t n = strcspn(*h, "=");
                if (!(*h)[n] || !server_header_name_is_valid(*h, n) ||
                    !server_header_value_is_valid(*h + n + 1, strlen(*h + n + 1)))
                        abort();
        }
        for (size_t i = 0; i < c->n_credential_headers; i++) {
                bool found = false;
                for (size_t j = 0; j < c->n_credentials; j++)
                        found = found || strcmp(c->credentials[j].id, c->credential_headers[i].id) == 0;
                if (!found || !server_header_name_is_valid(c->credential_headers[i].env,
                                                           strlen(c->credential_headers[i].env)))
                        abort();
        }
        if (c->network == SERVER_NETWORK_EGRESS)
                abort();        /* refused as not supported yet */
        if (c->max_calls < 1 || c->max_concurrent < 1 || c->call_timeout_s < 1 || c->idle_s < 1)
                abort();
        /* The matchers take any name. */
        (void) server_config_allows_tool(c, "read_file");
        (void) server_config_allows_caller(c, "uid:1000");
        (void) server_config_tool_confirmed(c, "write_file");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ServerConfig *c = NULL;
        char *error = NULL;
        int r;

        r = server_config_parse("fuzz", "/etc/mcp-exec/servers.d/fuzz.conf", (const char *) data, size, &c, &error);
        if (r == 0) {
                if (!c || error)
                        abort();
                check_config(c);
                check_unit(c);
                server_config_free(c);
        } else if (r == -EINVAL) {
                if (c || !error || strncmp(error, "/etc/mcp-exec/servers.d/fuzz.conf:", 34) != 0 ||
                    strchr(error, '\n'))
                        abort();
                free(error);
        } else if (r != -ENOMEM)
                abort();
        return 0;
}
