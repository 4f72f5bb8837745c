/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-brokerd: the small root broker. Socket-activated on
 * /run/mcp-exec/broker.sock, it accepts only root and the front end's user,
 * and does exactly one thing: run a piece of code in a transient service with
 * the fixed sandbox property set, limits clamped to the configured maxima;
 * or, for a session, many pieces one after the other in one such service.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "build-config.h"
#include "daemon-util.h"
#include "log.h"
#include "main-func.h"
#include "manager.h"
#include "parse-util.h"
#include "pool.h"
#include "strv.h"
#include "util.h"

static const char *arg_listen;
static uint64_t arg_idle_sec = 30;
static const char *arg_launcher = LIBEXECDIR "/mcp-exec-launch";
static const char *arg_bootstrap = LIBEXECDIR "/mcp-exec-bootstrap.py";

static void help(void) {
        printf("mcp-exec-brokerd [OPTIONS]\n\n"
               "The mcp-exec broker: runs code in transient systemd services on request.\n"
               "Normally socket-activated by mcp-exec-broker.socket.\n\n"
               "  -h --help               Show this help\n"
               "     --listen=PATH        Listen on PATH instead of a socket-activated fd\n"
               "     --idle-exit-sec=SEC  Exit after SEC idle seconds when socket-activated (0: never)\n"
               "     --launcher=PATH      The in-sandbox launcher (default " LIBEXECDIR "/mcp-exec-launch)\n");
}

static int on_option(int c, char *arg) {
        assert(c == 'L');

        arg_launcher = arg;
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option extra[] = {
                { "launcher", required_argument, NULL, 'L' },
                {},
        };

        return daemon_parse_argv(&(DaemonArgv) {
                .help = help, .extra = extra, .on_extra = on_option,
                .listen = &arg_listen, .idle_exit_sec = &arg_idle_sec,
        }, argc, argv);
}

/* We cannot start (a bad configuration): close what is queued on the socket
 * systemd passed us. Left there, each client would wait out its whole timeout
 * while systemd starts us again, once a second (Restart=, see the unit);
 * closed, its run fails at once ("the broker closed the connection"), and the
 * journal says why. Bounded: a client that keeps connecting is for our next start. */
static void refuse_queued(void) {
        _cleanup_strv_free_ char **names = NULL;
        int n = sd_listen_fds_with_names(false, &names), sock = -EBADF, n_sock = 0;

        /* Beside it, maybe warm units our last idle exit stored (pool.h):
         * left there, for a start that can check them. */
        for (int i = 0; i < n; i++)
                if (!names || !names[i] || (strncmp(names[i], POOL_STORE_WARM_PREFIX,
                                                    strlen(POOL_STORE_WARM_PREFIX)) != 0 &&
                                            strcmp(names[i], POOL_STORE_STATE_NAME) != 0))
                        sock = SD_LISTEN_FDS_START + i, n_sock++;
        if (n_sock != 1 || fd_nonblock(sock, true) < 0)
                return;
        for (unsigned i = 0; i < 4096; i++) {
                int fd = accept4(sock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0 && errno == EINTR)
                        continue;
                if (fd < 0)
                        break;
                (void) safe_close(fd);
        }
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        ManagerArgs args;
        int r;

        log_open("mcp-exec-brokerd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        args = (ManagerArgs) {
                .listen = arg_listen,
                .idle_exit_sec = arg_idle_sec,
                .launcher = arg_launcher,
                .bootstrap = arg_bootstrap,
        };
        r = manager_new(&args, &m);
        if (r < 0) {
                refuse_queued();
                return r;
        }
        r = manager_start(m);
        if (r < 0)
                return r;

        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1");
        return r;
}

DEFINE_MAIN_FUNCTION(run);
