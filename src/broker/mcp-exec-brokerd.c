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
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "build-config.h"
#include "daemon-util.h"
#include "log.h"
#include "main-func.h"
#include "manager.h"
#include "parse-util.h"
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
                daemon_refuse_queued();
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
