/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-egressd: the egress proxy of runs given a `network` policy
 * (issue 22, egress-proto.h). Socket-activated on /run/mcp-exec/egress.sock
 * by mcp-exec-egress.socket; only root (the broker) connects, one control
 * connection per run. It runs as a dynamic user without capabilities, behind
 * IPAddressDeny= of every non-public range (a belt: it checks each address
 * itself), and exits when no run has used it for a while.
 *
 * It decides on the host name and port before any lookup, never resolves a
 * denied name, refuses IP literals and names with any non-public address,
 * connects to exactly the address it checked, and requires a CONNECT's TLS
 * server name to be the CONNECT host. Bytes are relayed, never logged.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "config.h"
#include "daemon-util.h"
#include "egress-address.h"
#include "egress-policy.h"
#include "egress-proto.h"
#include "egress-server.h"
#include "log.h"
#include "macro.h"
#include "main-func.h"
#include "parse-util.h"

extern char **environ;

static const char *arg_listen;
static uint64_t arg_idle_sec = 60;

/* The unit's IPAddressDeny= also stops us reaching a resolver on a denied
 * address (127.0.0.53 of systemd-resolved's stub, a LAN router): say so at
 * the start rather than as lookups failing one by one. */
static void check_resolvers(const EgressConfig *cfg) {
        _cleanup_(fclosep) FILE *f = fopen("/etc/resolv.conf", "re");
        char line[512];

        if (!f)
                return;
        while (fgets(line, sizeof line, f)) {
                char addr[INET6_ADDRSTRLEN + 1] = "";
                union {
                        struct sockaddr sa;
                        struct sockaddr_in in;
                        struct sockaddr_in6 in6;
                } u = {};
                socklen_t len;

                if (sscanf(line, " nameserver %46s", addr) != 1)
                        continue;
                if (inet_pton(AF_INET, addr, &u.in.sin_addr) == 1) {
                        u.in.sin_family = AF_INET;
                        len = sizeof u.in;
                } else if (inet_pton(AF_INET6, addr, &u.in6.sin6_addr) == 1) {
                        u.in6.sin6_family = AF_INET6;
                        len = sizeof u.in6;
                } else
                        continue;
                if (!egress_address_is_public(&u.sa, len, cfg))
                        log_warning("The nameserver %s in /etc/resolv.conf is in a range mcp-exec-egress.service "
                                    "denies (IPAddressDeny=); lookups through it fail. Allow it with a drop-in "
                                    "for mcp-exec-egress.service: [Service] IPAddressAllow=%s",
                                    addr, addr);
        }
}

/* Runs at once: one control connection per run and per session the
 * broker allows, read from the same file (EnvironmentFile=). Then the
 * descriptors those runs may hold (egress_fd_budget()) must fit the
 * open-file limit, LimitNOFILE= of the unit: the soft limit is raised to
 * what they need, and a configuration that needs more than the hard one is
 * refused (fail closed), rather than a flood of one run reaching EMFILE and
 * taking every other run's network with it (issue 37). */
static int setup_budget(const EgressConfig *egress, uint64_t *ret_runs_max) {
        _cleanup_free_ char *error = NULL;
        struct rlimit rl;
        uint64_t runs_max, need;
        Config c;
        int r;

        assert(egress);
        assert(ret_runs_max);

        r = config_parse(environ, &c, &error);
        if (r < 0)
                return log_error_errno(r, "Bad configuration: %s", error ?: "invalid");
        runs_max = c.max_concurrent + c.max_sessions + EGRESS_RUNS_SLACK;
        config_done(&c);
        /* Upstream instances (NETWORK=egress:POLICY) have their own share. */
        need = egress_fd_budget(runs_max + EGRESS_UPSTREAMS_MAX, egress->max_connections);

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return log_error_errno(errno, "Cannot read the open-file limit: %m");
        if (rl.rlim_cur < need && rl.rlim_max >= need) {
                rl.rlim_cur = need;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        return log_error_errno(errno, "Cannot raise the open-file limit to %" PRIu64 ": %m", need);
        }
        if (rl.rlim_cur < need)
                return log_error_errno(
                        EMFILE,
                        "Up to %" PRIu64 " runs (MCP_EXEC_MAX_CONCURRENT + MCP_EXEC_MAX_SESSIONS + %u) "
                        "and %u upstream instances with %" PRIu64
                        " connections each (MCP_EXEC_EGRESS_MAX_CONNECTIONS) need %" PRIu64
                        " descriptors, above the open-file limit %" PRIu64 ": refusing to start. Lower "
                        "them, or raise LimitNOFILE= of mcp-exec-egress.service.",
                        runs_max, EGRESS_RUNS_SLACK, EGRESS_UPSTREAMS_MAX, egress->max_connections, need,
                        (uint64_t) rl.rlim_cur);
        log_debug("Up to %" PRIu64 " runs, %" PRIu64 " descriptors of %" PRIu64 ".", runs_max, need,
                  (uint64_t) rl.rlim_cur);
        *ret_runs_max = runs_max;
        return 0;
}

static void help(void) {
        printf("mcp-exec-egressd [OPTIONS]\n\n"
               "The egress proxy of mcp-exec runs with a network policy.\n"
               "Normally socket-activated by mcp-exec-egress.socket.\n\n"
               "  -h --help               Show this help\n"
               "     --listen=PATH        Listen on PATH instead of a socket-activated fd (tests)\n"
               "     --idle-exit-sec=SEC  Exit after SEC seconds without runs when socket-activated (0: never)\n");
}

static int parse_argv(int argc, char *argv[]) {
        return daemon_parse_argv(&(DaemonArgv) {
                .help = help, .listen = &arg_listen, .idle_exit_sec = &arg_idle_sec,
        }, argc, argv);
}

static int run(int argc, char *argv[]) {
        _cleanup_(egress_server_freep) EgressServer *s = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_free_ char *error = NULL;
        EgressConfig config = {};
        uint64_t runs_max = 0;
        int r, fd, activated;

        log_open("mcp-exec-egressd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = egress_config_parse(environ, &config, &error);
        if (r < 0) {
                log_error_errno(r, "Bad egress configuration: %s", error ?: "invalid");
                daemon_refuse_queued();   /* the broker's feed request fails at once */
                return r;
        }
        if (config.n_policies == 0)
                log_warning("No egress policy is configured (MCP_EXEC_EGRESS_POLICY_*): every run is refused.");
        check_resolvers(&config);
        r = setup_budget(&config, &runs_max);
        if (r < 0) {
                egress_config_done(&config);
                daemon_refuse_queued();
                return r;
        }

        activated = daemon_listen_unix(arg_listen ?: EGRESS_SOCKET_PATH, 64, &fd);
        if (activated < 0) {
                egress_config_done(&config);
                return activated;
        }
        r = event_new_daemon(&e);
        if (r < 0) {
                egress_config_done(&config);
                return log_error_errno(r, "Failed to allocate event loop: %m");
        }
        r = egress_server_new(e, &config, fd, activated > 0, arg_idle_sec * USEC_PER_SEC, runs_max, &s);
        egress_config_done(&config);
        if (r < 0)
                return log_error_errno(r, "Failed to start serving: %m");

        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        r = sd_event_loop(e);
        (void) sd_notify(false, "STOPPING=1");
        return r;
}

DEFINE_MAIN_FUNCTION(run);
