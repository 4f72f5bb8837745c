/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit test for main_pid_runs() in src/broker/main-pid.c: GetProcesses'
 * a(sus) replies as systemd 257 gives them for a PrivatePIDs= run unit while
 * its executor hands the launcher over (seen with busctl in a Debian 13 box),
 * built on a bus that never connects (as test-sandbox-properties does). */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "main-pid.h"
#include "test-helpers.h"

#define LAUNCHER "/usr/libexec/mcp-exec/mcp-exec-launch"
#define CGROUP "/mcp-exec.slice/mcp-exec-run-0123456789abcdef0123456789abcdef.service"

static sd_bus *bus;
static int peer = -1;

/* A reply of n (pid, command line) pairs, sealed and ready to read. */
static sd_bus_message *reply(size_t n, ...) {
        sd_bus_message *m = NULL;
        va_list ap;

        ASSERT_EQ_INT(sd_bus_message_new_signal(bus, &m, "/org/freedesktop/systemd1/unit/x",
                                                "org.freedesktop.systemd1.Service", "Test"), 0);
        ASSERT_TRUE(sd_bus_message_open_container(m, 'a', "(sus)") >= 0);
        va_start(ap, n);
        for (size_t i = 0; i < n; i++) {
                uint32_t pid = va_arg(ap, uint32_t);
                const char *cmdline = va_arg(ap, const char *);
                ASSERT_TRUE(sd_bus_message_append(m, "(sus)", CGROUP, pid, cmdline) >= 0);
        }
        va_end(ap);
        ASSERT_TRUE(sd_bus_message_close_container(m) >= 0);
        ASSERT_EQ_INT(sd_bus_message_seal(m, 1, 0), 0);
        ASSERT_TRUE(sd_bus_message_rewind(m, true) >= 0);
        return m;
}

static int runs(sd_bus_message *m, uint32_t pid) {
        int r = main_pid_runs(m, pid, LAUNCHER);
        sd_bus_message_unref(m);
        return r;
}

/* Handed over: systemd's MainPID is the launcher, the executor may still be
 * there beside it. */
TEST(test_launcher) {
        ASSERT_EQ_INT(runs(reply(1, 4711u, LAUNCHER " --python=/usr/bin/python3 --max-code-bytes=1048576"), 4711), 1);
        ASSERT_EQ_INT(runs(reply(2, 4710u, "/usr/lib/systemd/systemd-executor --deserialize 3 --log-level info",
                                 4711u, LAUNCHER " --probe"), 4711), 1);
        ASSERT_EQ_INT(runs(reply(1, 4711u, LAUNCHER), 4711), 1);
}

/* Not (yet): MainPID is still the executor, or gone from the unit, or 0. */
TEST(test_not_launcher) {
        ASSERT_EQ_INT(runs(reply(2, 4710u, "/usr/lib/systemd/systemd-executor --deserialize 3 --log-level info",
                                 4711u, LAUNCHER " --probe"), 4710), 0);
        ASSERT_EQ_INT(runs(reply(1, 4711u, LAUNCHER), 4712), 0);
        ASSERT_EQ_INT(runs(reply(0), 4711), 0);
        ASSERT_EQ_INT(runs(reply(1, 4711u, LAUNCHER), 0), 0);
        /* The whole first word, not a prefix of it. */
        ASSERT_EQ_INT(runs(reply(1, 4711u, LAUNCHER "-evil --probe"), 4711), 0);
        ASSERT_EQ_INT(runs(reply(1, 4711u, "/usr/libexec/mcp-exec/mcp-exec"), 4711), 0);
        ASSERT_EQ_INT(runs(reply(1, 4711u, ""), 4711), 0);
}

/* Not a(sus): an error, not a guess. */
TEST(test_malformed) {
        sd_bus_message *m = NULL;

        ASSERT_EQ_INT(sd_bus_message_new_signal(bus, &m, "/x", "org.freedesktop.systemd1.Service", "Test"), 0);
        ASSERT_TRUE(sd_bus_message_append(m, "a(su)", 1, CGROUP, (uint32_t) 4711) >= 0);
        ASSERT_EQ_INT(sd_bus_message_seal(m, 1, 0), 0);
        ASSERT_TRUE(sd_bus_message_rewind(m, true) >= 0);
        ASSERT_TRUE(runs(m, 4711) < 0);
}

int main(void) {
        int sv[2], r;

        ASSERT_TRUE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_fd(bus, sv[0], sv[0]);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                fprintf(stderr, "no bus object here: %s, skipping\n", strerror(-r));
                return EXIT_TEST_SKIP;
        }
        peer = sv[1];
        RUN(test_launcher);
        RUN(test_not_launcher);
        RUN(test_malformed);
        bus = sd_bus_close_unref(bus);
        (void) close(peer);
        return 0;
}
