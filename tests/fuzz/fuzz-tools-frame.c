/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the run protocol of mcp-exec-toolsd, end to end in the
 * daemon's own objects. Each input is the byte stream a run sends on its
 * tools connection, then EOF. A fresh sd-event loop gets a Manager with
 * three servers: "up" and "limited" have an upstream socket that listens
 * and never accepts (calls wait for a tool list that never comes: the
 * waiting, cancel and end paths), "gone" has none (calls fail at once,
 * kind upstream). The test plays the broker: "run" with the socket, the
 * input, then "end" and the Manager freed.
 *
 * Checks: ASan/UBSan/LSan over src/tools and tools-proto; every frame the
 * gateway sends is one JSON object of at most the largest answer with an
 * integer id; the counts answer comes; the frame parser's round trip
 * (append then parse) on every frame of the input it accepted.
 *
 * FUZZ_DEBUG=1 shows the daemon's log. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "json-util.h"
#include "log.h"
#include "packet.h"
#include "tools-config.h"
#include "tools-internal.h"
#include "tools-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz-tools-frame.XXXXXX";
static int listeners[2] = { -1, -1 };

static int listen_at(const char *name) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (fd < 0)
                abort();
        (void) snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s.sock", dir, name);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, 16) < 0)
                abort();
        return fd;
}

static void cleanup(void) {
        char path[sizeof dir + 32];

        for (size_t i = 0; i < 2; i++) {
                (void) snprintf(path, sizeof path, "%s/%s.sock", dir, i == 0 ? "up" : "limited");
                (void) unlink(path);
                close(listeners[i]);
        }
        (void) rmdir(dir);
}

static void setup_once(void) {
        const char *d = getenv("FUZZ_DEBUG");

        if (listeners[0] >= 0)
                return;
        log_set_max_level(d && d[0] == '1' ? LOG_DEBUG : LOG_CRIT);
        if (!mkdtemp(dir))
                abort();
        listeners[0] = listen_at("up");
        listeners[1] = listen_at("limited");
        atexit(cleanup);
}

static void add_server(ToolsServerConfig *s, size_t *n, const char *name, const char *text) {
        char *error = NULL;

        if (tools_server_config_parse(name, text, dir, &s[(*n)++], &error) < 0)
                abort();
}

/* What the upstreams' listeners hold is dropped between inputs. */
static void drain_listeners(void) {
        for (size_t i = 0; i < 2; i++)
                for (int fd; (fd = accept4(listeners[i], NULL, NULL, SOCK_CLOEXEC)) >= 0;)
                        close(fd);
}

static void spin(sd_event *e) {
        for (unsigned i = 0; i < 10000; i++)
                if (sd_event_run(e, 0) <= 0)
                        return;
}

/* Every frame the gateway sent: one object with an id, within the limit. */
static void check_answers(int fd) {
        static char buf[1 << 22];
        size_t len = 0, off = 0;
        ssize_t n;

        while ((n = read(fd, buf + len, sizeof buf - len)) > 0)
                len += (size_t) n;
        while (off < len) {
                json_object *o = NULL;
                size_t used = 0;
                int r = tools_frame_parse(buf + off, len - off, TOOLS_SERVERS_ANSWER_MAX, &o, &used);

                if (r != 1 || !json_object_is_type(json_get(o, "id"), json_type_int))
                        abort();
                json_object_put(o);
                off += used;
        }
}

/* The input's own frames: append(parse(frame)) parses to the same text. */
static void check_round_trip(const uint8_t *data, size_t size) {
        size_t off = 0;

        while (off < size) {
                Buffer b = BUFFER_INIT(TOOLS_RUN_FRAME_MAX * 2);
                json_object *o = NULL, *back = NULL;
                size_t used = 0, used2 = 0, n1, n2;

                if (tools_frame_parse(data + off, size - off, TOOLS_RUN_FRAME_MAX, &o, &used) != 1)
                        return;
                if (tools_frame_append(&b, o, TOOLS_RUN_FRAME_MAX * 2) < 0 ||
                    tools_frame_parse(b.data, b.size, TOOLS_RUN_FRAME_MAX * 2, &back, &used2) != 1 ||
                    used2 != b.size)
                        abort();
                const char *s1 = json_serialize(o, &n1), *s2 = json_serialize(back, &n2);
                if (n1 != n2 || memcmp(s1, s2, n1) != 0)
                        abort();
                json_object_put(o);
                json_object_put(back);
                buffer_free(&b);
                off += used;
        }
}

static void run_input(const uint8_t *data, size_t size) {
        ToolsServerConfig *servers = calloc(3, sizeof *servers);
        sd_event *e = NULL;
        Manager *m = NULL;
        json_object *msg = NULL;
        int ctl[2], run[2], dummy[2];
        size_t n = 0;

        if (!servers)
                abort();
        add_server(servers, &n, "gone", "COMMAND=/bin/x\nTOOLS=\"a* b\"\n");
        add_server(servers, &n, "limited", "COMMAND=/bin/x\nMAX_CALLS=2\nMAX_CONCURRENT=1\nMAX_BYTES=4K\n");
        add_server(servers, &n, "up", "COMMAND=/bin/x\nCALLERS=\"uid:1\"\nCONFIRMED=\"*\"\n");
        if (sd_event_new(&e) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, run) < 0 ||
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, dummy) < 0)
                abort();
        if (manager_new(e, &servers, &n, dummy[0], false, 0, &m) < 0 || control_new(m, ctl[0]) < 0)
                abort();
        if (json_build(&msg, JB_STR("op", "run"), JB_STR("run", "fuzz"), JB_STR("caller", "uid:1"), JB_END) < 0 ||
            packet_send(ctl[1], msg, &run[1], 1) < 0)
                abort();
        json_object_put(msg);
        close(run[1]);
        spin(e);
        /* The input, then EOF; the run's socket buffer holds max_len. */
        if (size > 0 && write(run[0], data, size) != (ssize_t) size)
                abort();
        (void) shutdown(run[0], SHUT_WR);
        spin(e);
        if (json_build(&msg, JB_STR("op", "end"), JB_END) < 0 || packet_send(ctl[1], msg, NULL, 0) < 0)
                abort();
        json_object_put(msg);
        spin(e);
        if (fcntl(run[0], F_SETFL, O_NONBLOCK) < 0)
                abort();
        check_answers(run[0]);
        manager_free(m);
        sd_event_unref(e);
        close(run[0]);
        close(ctl[1]);
        close(dummy[1]);
        tools_config_free(servers, n);
        drain_listeners();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        setup_once();
        check_round_trip(data, size);
        run_input(data, size);
        return 0;
}
