/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tool-servers.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json-util.h"
#include "log.h"
#include "server-config.h"
#include "util.h"

struct ToolServers {
        char *dir;
        ServerConfigs configs;
        const EgressConfig *egress;     /* not ours */
        bool loaded;
        /* What was seen of the directory and its files at the last read: a
         * change of any of them reads it all again. */
        struct timespec dir_mtime;
        uint64_t files_sum;
};

int tool_servers_new(const char *dir, ToolServers **ret) {
        _cleanup_(tool_servers_freep) ToolServers *s = NULL;

        assert(dir);
        assert(ret);

        s = new0(ToolServers, 1);
        if (!s)
                return -ENOMEM;
        s->dir = strdup(dir);
        if (!s->dir)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

ToolServers *tool_servers_free(ToolServers *s) {
        if (!s)
                return NULL;
        server_configs_done(&s->configs);
        free(s->dir);
        free(s);
        return NULL;
}

/* A cheap fingerprint of the files of the last read: their inodes, sizes
 * and mtimes (a missing one counts as changed). */
void tool_servers_set_egress(ToolServers *s, const EgressConfig *egress) {
        assert(s);

        s->egress = egress;
}

/* As the gateway serves it: its CALLERS, and its egress policy's. */
static bool for_caller(const ToolServers *s, const ServerConfig *c, const char *caller) {
        return server_config_allows_caller(c, caller) && server_config_egress_allows_caller(c, s->egress, caller);
}

static uint64_t files_fingerprint(const ToolServers *s) {
        uint64_t sum = 1469598103934665603ULL;

        for (size_t i = 0; i < s->configs.n_servers; i++) {
                _cleanup_free_ char *p = NULL;
                struct stat st = {};

                if (asprintf(&p, "%s/%s.conf", s->dir, s->configs.servers[i]->name) < 0 || stat(p, &st) < 0)
                        return 0;
                sum = (sum ^ (uint64_t) st.st_ino) * 1099511628211ULL;
                sum = (sum ^ (uint64_t) st.st_size) * 1099511628211ULL;
                sum = (sum ^ ((uint64_t) st.st_mtim.tv_sec * 1000000000ULL + (uint64_t) st.st_mtim.tv_nsec)) *
                      1099511628211ULL;
        }
        return sum;
}

void tool_servers_refresh(ToolServers *s) {
        ServerConfigs fresh = {};
        struct stat st = {};
        int r;

        if (!s)
                return;
        if (stat(s->dir, &st) < 0)
                st = (struct stat) {};
        if (s->loaded && st.st_mtim.tv_sec == s->dir_mtime.tv_sec && st.st_mtim.tv_nsec == s->dir_mtime.tv_nsec &&
            files_fingerprint(s) == s->files_sum)
                return;
        r = server_configs_load(s->dir, &fresh);
        if (r == -ENOMEM) {
                (void) log_oom();
                return;         /* keep what we had; try again next time */
        }
        if (r < 0)
                log_warning_errno(r, "Cannot read %s: code mode is off until it can be read: %m", s->dir);
        /* The gateway and the generator say which files are bad, and why;
         * here only that some are. */
        else if (fresh.errors && fresh.errors[0])
                log_warning("%s: some servers are off (bad files); the gateway's journal says why.", s->dir);
        server_configs_done(&s->configs);
        s->configs = fresh;
        s->loaded = true;
        s->dir_mtime = st.st_mtim;
        s->files_sum = files_fingerprint(s);
}

bool tool_servers_enabled(const ToolServers *s) {
        return s && s->configs.n_servers > 0;
}

bool tool_servers_per_caller(const ToolServers *s) {
        if (!s)
                return false;
        for (size_t i = 0; i < s->configs.n_servers; i++)
                if (s->configs.servers[i]->callers || s->configs.servers[i]->network == SERVER_NETWORK_EGRESS)
                        return true;
        return false;
}

void tool_servers_describe(FILE *f, const ToolServers *s, const char *caller) {
        bool any = false;

        assert(f);

        if (!s || !caller)
                return;
        for (size_t i = 0; i < s->configs.n_servers; i++) {
                const ServerConfig *c = s->configs.servers[i];

                if (!for_caller(s, c, caller))
                        continue;
                if (!any)
                        fputs("- Tools of other MCP servers are Python functions in your code (code mode): "
                              "`import mcp_servers`; `print(mcp_servers.describe(\"NAME\"))` shows a server's "
                              "functions and their arguments; `from mcp_servers import NAME`, then "
                              "`NAME.tool_name(arg=...)` returns the tool's structured result (else its text) or "
                              "raises mcp_servers.ToolCallError; `await NAME.tool_name_async(...)` runs calls at "
                              "once. Only what you print comes back, and \"tool_calls\" in the result counts "
                              "the calls. Servers for you:\n",
                              f);
                any = true;
                /* The operator's words (checked printable UTF-8 by the
                 * parser), never an upstream's. */
                fprintf(f, "  - %s%s%s\n", c->name, isempty(c->description) ? "" : ": ", c->description ?: "");
        }
}

static bool any_for(const ToolServers *s, const char *caller) {
        for (size_t i = 0; s && caller && i < s->configs.n_servers; i++)
                if (for_caller(s, s->configs.servers[i], caller))
                        return true;
        return false;
}

int tool_servers_annotate(json_object *def, const ToolServers *s, const char *caller) {
        _cleanup_free_ char *text = NULL;
        const char *was;
        size_t size = 0;
        FILE *f;

        assert(def);

        /* Nothing for this caller: the description stays as it was. */
        if (!any_for(s, caller))
                return 0;
        was = json_get_string(def, "description") ?: "";
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        fputs(was, f);
        if (was[0] && was[strlen(was) - 1] != '\n')
                fputc('\n', f);
        tool_servers_describe(f, s, caller);
        if (fclose(f) != 0 || !text)
                return -ENOMEM;
        return json_add_string(def, "description", text);
}
