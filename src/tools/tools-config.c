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

#include "log.h"
#include "server-config.h"
#include "strv.h"
#include "util.h"

bool tools_server_name_is_valid(const char *s) {
        return s && server_name_is_valid(s);
}

void tools_server_config_done(ToolsServerConfig *c) {
        if (!c)
                return;
        free(c->name);
        free(c->description);
        free(c->socket_path);
        free(c->egress_policy);
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

/* The gateway's view of one server the shared parser accepted. */
static int from_server_config(const ServerConfig *sc, const char *upstream_dir, ToolsServerConfig *ret) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {
                .shared = sc->instance == SERVER_INSTANCE_SHARED,
                .http = sc->url != NULL,
                .max_calls = sc->max_calls,
                .max_bytes = sc->max_bytes,
                .max_concurrent = sc->max_concurrent,
                .call_timeout_s = sc->call_timeout_s,
                .idle_s = sc->idle_s,
        };

        assert(sc);
        assert(ret);

        c.name = strdup(sc->name);
        c.description = strdup(sc->description ?: "");
        if (!c.name || !c.description || asprintf(&c.socket_path, "%s/%s.sock", upstream_dir, sc->name) < 0)
                return -ENOMEM;
        /* NULL stays NULL (every caller; no confirmed tools); an empty
         * CALLERS stays empty (nobody). */
        if (sc->callers && !(c.callers = strv_copy((const char *const *) sc->callers)))
                return -ENOMEM;
        if (!(c.tools = strv_copy((const char *const *) sc->tools)))
                return -ENOMEM;
        if (sc->confirmed && !(c.confirmed = strv_copy((const char *const *) sc->confirmed)))
                return -ENOMEM;
        if (sc->egress_policy && !(c.egress_policy = strdup(sc->egress_policy)))
                return -ENOMEM;
        *ret = c;
        c = (ToolsServerConfig) {};
        return 0;
}

int tools_server_config_parse(const char *name, const char *text, const char *upstream_dir, ToolsServerConfig *ret,
                              char **ret_error) {
        _cleanup_(server_config_freep) ServerConfig *sc = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        assert(name);
        assert(text);
        assert(upstream_dir);
        assert(ret);

        if (asprintf(&path, "%s.conf", name) < 0)
                return -ENOMEM;
        r = server_config_parse(name, path, text, strlen(text), &sc, ret_error);
        if (r < 0)
                return r;
        return from_server_config(sc, upstream_dir, ret);
}

int tools_config_load(const char *dir, const char *upstream_dir, ToolsServerConfig **ret, size_t *ret_n) {
        _cleanup_(server_configs_done) ServerConfigs all = {};
        ToolsServerConfig *s = NULL;
        size_t n = 0;
        int r;

        assert(dir);
        assert(ret);
        assert(ret_n);

        r = server_configs_load(dir, &all);
        if (r < 0)
                return log_error_errno(r, "Cannot read %s: %m", dir);
        STRV_FOREACH(e, all.errors)
                log_error("%s; that server is off.", *e);
        if (all.n_servers > 0) {
                s = new0(ToolsServerConfig, all.n_servers);
                if (!s)
                        return -ENOMEM;
        }
        /* In name order, as the shared loader gives them. */
        for (size_t i = 0; i < all.n_servers; i++, n++) {
                r = from_server_config(all.servers[i], upstream_dir, &s[n]);
                if (r < 0) {
                        tools_config_free(s, n);
                        return r;
                }
        }
        *ret = s;
        *ret_n = n;
        return 0;
}
