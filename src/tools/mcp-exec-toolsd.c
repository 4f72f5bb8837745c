/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-toolsd: the gateway between runs and other MCP servers' tools
 * (code mode, issue 40; tools-proto.h is the wire). Socket-activated on
 * /run/mcp-exec/tools.sock by mcp-exec-tools.socket; only root (the broker)
 * connects, one control connection per run, and hands over the run's end
 * of a socketpair. It runs as a dynamic user in the mcp-exec-tools group
 * (which may open the upstreams' sockets), without network: each upstream
 * is its own socket-activated unit per connection, a stdio server itself
 * or, for a Streamable HTTP one (URL=), its bridge mcp-exec-upstream-http.
 *
 * It reads /etc/mcp-exec/servers.d/ at start. Every call is checked
 * against the caller and the server's allow-lists, capped per run, timed
 * out, cancelled when the run ends, and journaled without its arguments or
 * result.
 */
#include <assert.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "build-config.h"
#include "daemon-util.h"
#include "log.h"
#include "macro.h"
#include "main-func.h"
#include "egress-policy.h"
#include "tools-config.h"
#include "tools-policy.h"
#include "tools-internal.h"
#include "tools-proto.h"

extern char **environ;

static const char *arg_listen;
static uint64_t arg_idle_sec = 60;
static const char *arg_config_dir;
static const char *arg_upstream_dir;

static void help(void) {
        printf("mcp-exec-toolsd [OPTIONS]\n\n"
               "The gateway between mcp-exec runs and other MCP servers' tools.\n"
               "Normally socket-activated by mcp-exec-tools.socket.\n\n"
               "  -h --help               Show this help\n"
               "     --listen=PATH        Listen on PATH instead of a socket-activated fd (tests)\n"
               "     --idle-exit-sec=SEC  Exit after SEC seconds without runs when socket-activated (0: never)\n"
               "     --config-dir=DIR     Read DIR instead of " TOOLS_SERVERS_DIR " (tests, with --listen)\n"
               "     --upstream-dir=DIR   Upstream sockets in DIR, not " TOOLS_UPSTREAM_DIR
               " (tests, with --listen)\n");
}

static int on_option(int c, char *arg) {
        if (c == 'C')
                arg_config_dir = arg;
        else {
                assert(c == 'U');
                arg_upstream_dir = arg;
        }
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option extra[] = {
                { "config-dir", required_argument, NULL, 'C' },
                { "upstream-dir", required_argument, NULL, 'U' },
                {},
        };
        int r;

        r = daemon_parse_argv(&(DaemonArgv) {
                .help = help, .extra = extra, .on_extra = on_option,
                .listen = &arg_listen, .idle_exit_sec = &arg_idle_sec,
        }, argc, argv);
        /* The test hooks never apply to the installed daemon: a unit that
         * passed them would serve servers the operator did not configure. */
        if (r > 0 && !arg_listen && (arg_config_dir || arg_upstream_dir))
                return log_error_errno(EINVAL, "--config-dir= and --upstream-dir= are for tests: only with --listen=.");
        return r;
}

/* NETWORK=egress:POLICY servers are served only to callers their policy
 * admits (tools_policy_apply_egress()); the policies are egressd's, from
 * the same file (EnvironmentFile=). A bad egress configuration turns every
 * such server off, not on for everyone. */
static int apply_egress(ToolsServerConfig *servers, size_t n_servers) {
        _cleanup_free_ char *error = NULL;
        EgressConfig egress = {};
        bool have = false, ok;
        int r;

        for (size_t i = 0; i < n_servers; i++)
                have = have || servers[i].egress_policy;
        if (!have)
                return 0;
        ok = egress_config_parse(environ, &egress, &error) >= 0;
        if (!ok)
                log_error("Bad egress configuration: %s; every server with NETWORK=egress is off.",
                          error ?: "invalid");
        for (size_t i = 0; i < n_servers; i++) {
                const char *why = NULL;

                r = tools_policy_apply_egress(&servers[i], ok ? &egress : NULL, &why);
                if (r < 0) {
                        egress_config_done(&egress);
                        return log_oom();
                }
                if (why)
                        log_error("Server %s (NETWORK=egress:%s): %s; it is off for every caller.", servers[i].name,
                                  servers[i].egress_policy, why);
        }
        egress_config_done(&egress);
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        ToolsServerConfig *servers = NULL;
        size_t n_servers = 0;
        int r, fd, activated;

        log_open("mcp-exec-toolsd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = tools_config_load(arg_config_dir ?: TOOLS_SERVERS_DIR, arg_upstream_dir ?: TOOLS_UPSTREAM_DIR, &servers,
                              &n_servers);
        if (r >= 0)
                r = apply_egress(servers, n_servers);
        if (r < 0) {
                tools_config_free(servers, n_servers);
                return r;
        }
        for (size_t i = 0; !HAVE_HTTP_UPSTREAM && i < n_servers; i++)
                if (servers[i].http)
                        log_warning("Server %s: URL= (Streamable HTTP) needs a build with libcurl "
                                    "(mcp-exec-upstream-http), which this one is not; it is off.", servers[i].name);
        if (n_servers == 0)
                log_notice("No server in %s: every run gets no tools.", arg_config_dir ?: TOOLS_SERVERS_DIR);

        activated = daemon_listen_unix(arg_listen ?: TOOLS_SOCKET_PATH, 64, &fd);
        if (activated < 0) {
                tools_config_free(servers, n_servers);
                return activated;
        }
        r = event_new_daemon(&e);
        if (r >= 0)
                r = manager_new(e, &servers, &n_servers, fd, activated > 0, arg_idle_sec * USEC_PER_SEC, &m);
        tools_config_free(servers, n_servers);
        if (r < 0)
                return log_error_errno(r, "Failed to start serving: %m");

        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        r = sd_event_loop(e);
        (void) sd_notify(false, "STOPPING=1");
        return r;
}

DEFINE_MAIN_FUNCTION(run);
