/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-execd: the MCP front end. Runs as the unprivileged user mcp-exec,
 * socket-activated; speaks MCP and asks the broker to run code. It never talks
 * to systemd's manager itself.
 *
 * Sockets, told apart by FileDescriptorName=:
 *   stdio  /run/mcp-exec/stdio.sock: one newline-delimited MCP session per
 *          connection, for peers polkit allows (org.mcp-exec.run)
 *   http   127.0.0.1:8080 (mcp-exec.socket): Streamable HTTP at /mcp and the
 *          legacy HTTP+SSE transport, guarded by a token (src/http/)
 * With --stdio (or MCP_EXEC_TRANSPORT=stdio) it serves one session on its own
 * stdin and stdout instead; MCP_EXEC_TRANSPORT=http without socket activation
 * binds MCP_EXEC_ADDR itself.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <systemd/sd-daemon.h>

#include "broker-proto.h"
#include "build-config.h"
#include "daemon-util.h"
#include "execd-manager.h"
#include "log.h"
#include "main-func.h"

static bool arg_stdio;
static const char *arg_broker_socket = BROKER_SOCKET_PATH;

static void help(void) {
        printf("mcp-execd [OPTIONS]\n\n"
               "The mcp-exec MCP server. Normally socket-activated (mcp-exec-stdio.socket,\n"
               "mcp-exec.socket).\n\n"
               "Without systemd, MCP_EXEC_TRANSPORT=http serves HTTP on MCP_EXEC_ADDR (default\n"
               "127.0.0.1:8080; \":8080\" means every interface, which needs a token).\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show the version\n"
               "     --stdio            Serve one MCP session on stdin/stdout\n"
               "     --broker=PATH      The broker's socket (default " BROKER_SOCKET_PATH ")\n");
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "stdio", no_argument, NULL, 's' },
                { "broker", required_argument, NULL, 'r' },
                {},
        };
        int c;

        assert(argv);

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("mcp-execd %s\n", PACKAGE_VERSION);
                        return 0;
                case 's':
                        arg_stdio = true;
                        break;
                case 'r':
                        arg_broker_socket = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument: %s", argv[optind]);
        return 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        ManagerArgs args;
        int r;

        log_open("mcp-execd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        /* We hold every client's token, code and output in memory: no other
         * process of our uid (the other front end, whatever runs as
         * mcp-exec) may read it through /proc/PID/mem, ptrace or a core
         * dump. The units also deny process_vm_readv/writev. */
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return log_error_errno(errno, "Cannot make ourselves non-dumpable: %m");

        args = (ManagerArgs) {
                .broker_socket = arg_broker_socket,
                .stdio = arg_stdio,
        };
        r = manager_new(&args, &m);
        if (r < 0) {
                /* Socket-activated, clients wait on our sockets while
                 * systemd starts us again and again: close them, so that
                 * they fail at once (the journal has why). */
                if (!arg_stdio)
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
