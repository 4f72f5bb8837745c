/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the stdio framing (src/stdio/line-conn.c). The input is
 * the byte stream a client writes on its connection, followed by EOF; the
 * connection runs on a real socketpair and event loop with a small line
 * limit, until it reports closed. The broker socket does not exist. */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>
#include <systemd/sd-event.h>

#include "line-conn.h"
#include "log.h"
#include "mcp-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_closed(LineConn *c, void *userdata) {
        *(bool *) userdata = true;
}

static void drain(int fd) {
        char buf[4096];
        while (read(fd, buf, sizeof buf) > 0)
                ;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static bool initialized = false;
        sd_event *e = NULL;
        McpServer *server = NULL;
        LineConn *c = NULL;
        bool closed = false;
        int sv[2];

        if (size > 32 * 1024)
                return 0;
        if (!initialized) {
                log_set_max_level(getenv("FUZZ_DEBUG") ? LOG_DEBUG : LOG_CRIT);
                /* As mcp-execd does (a peer or run that went away must not
                 * kill us): without it SIGPIPE ends the fuzzer silently. */
                (void) signal(SIGPIPE, SIG_IGN);
                initialized = true;
        }

        McpServerConfig config = {
                .broker_socket = "/nonexistent/mcp-exec-fuzz/broker.sock",
                .default_timeout_s = 5, .max_timeout_s = 10,
                .max_output_bytes = 4096, .max_stdin_bytes = 4096, .max_code_bytes = 4096,
                .max_concurrent = 2, .max_queue = 2,
                .python_version = "3.11.2",
        };
        McpPeer peer = { .transport = "unix", .uid = 1000, .pid = 42 };

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                abort();
        int sz = 256 * 1024;
        (void) setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        (void) setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
        for (size_t off = 0; off < size;) {
                ssize_t k = write(sv[0], data + off, size - off);
                if (k <= 0)
                        abort();
                off += k;
        }
        (void) shutdown(sv[0], SHUT_WR);

        if (sd_event_new(&e) < 0 || mcp_server_new(e, &config, &server) < 0)
                abort();
        /* line_conn takes the fd (for in and out alike). */
        if (line_conn_new(e, server, sv[1], sv[1], &peer, 1024, on_closed, &closed, &c) < 0)
                abort();
        if (line_conn_start(c) < 0)
                abort();

        for (int i = 0; i < 1000 && !closed; i++) {
                if (sd_event_run(e, 0) < 0)
                        break;
                drain(sv[0]);
        }
        if (!closed && getenv("FUZZ_DEBUG"))
                fprintf(stderr, "connection did not close\n");

        c = line_conn_free(c);
        for (int i = 0; i < 5; i++)
                (void) sd_event_run(e, 0);
        server = mcp_server_free(server);
        (void) sd_event_run(e, 0);
        e = sd_event_unref(e);
        close(sv[0]);
        return 0;
}
