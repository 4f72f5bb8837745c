/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the input is the text of servers.d/NAME.conf.
 * server_config_parse() must not crash nor leak; a refusal is one line that
 * names the file; what it accepts keeps every documented limit, and nothing
 * it accepts holds a control character but tab (it goes into unit files). */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server-config.h"
#include "strv.h"

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
