/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mcp-exec-upstream-feed POLICY NAME INSTANCE
 *
 * The ExecStartPre=+ of an upstream server's unit with NETWORK=egress:POLICY
 * (servers.d, docs/upstream-servers.md): runs as root, outside the unit's
 * sandbox but in its cgroup, before anything of the server exists. Asks
 * mcp-exec-egressd (its root-only control socket, as the broker does for a
 * run: egress-link.h) for a run of policy POLICY on behalf of the server
 * NAME's instance INSTANCE, and puts the control connection and the feed in
 * the unit's file descriptor store (FDSTORE=1, FileDescriptorStoreMax=,
 * NotifyAccess=exec): systemd hands them to ExecStart=, the trusted parent
 * (mcp-exec-upstream-exec --egress), and closes them when the unit ends,
 * which ends the run in egressd. systemd 253's OpenFile= would not do: it
 * is not in Debian 12's 252, and it cannot speak egressd's protocol.
 *
 * Its arguments are the generator's (a root-written unit), never the
 * server's: the server's code cannot ask for a feed (egressd takes root
 * only) nor pick another policy. Fails (status 1, the reason on stderr, in
 * the journal) if egressd refuses or does not answer in 5 s, or systemd
 * does not take the descriptors: then the instance does not start. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "egress-link.h"
#include "egress-proto.h"
#include "macro.h"
#include "main-func.h"
#include "server-config.h"
#include "upstream-units.h"

#define FEED_TIMEOUT_USEC (5 * USEC_PER_SEC)

typedef struct Wait {
        sd_event *event;
        int error;
        char message[300];
} Wait;

static void on_ready(EgressLink *l, int error, const char *message, void *userdata) {
        Wait *w = userdata;

        w->error = error;
        if (message)
                (void) snprintf(w->message, sizeof w->message, "%s", message);
        (void) sd_event_exit(w->event, 0);
}

static bool word_ok(const char *s, size_t max, const char *alphabet) {
        size_t n = strlen(s);

        return n > 0 && n <= max && strspn(s, alphabet) == n;
}

static int fail(const char *name, const char *why, int error) {
        fprintf(stderr, "mcp-exec-upstream-feed: %s: no network for this instance (NETWORK=egress): %s%s%s\n",
                name, why, error ? ": " : "", error ? strerror(error) : "");
        return EXIT_FAILURE;
}

/* Both descriptors into the unit's store, each by its name; the barrier
 * makes sure systemd took them while we still are its control process. */
static int store(const char *name, int control, int feed) {
        int r;

        r = sd_pid_notify_with_fds(0, false, "FDSTORE=1\nFDNAME=" UPSTREAM_FDNAME_CONTROL, &control, 1);
        if (r > 0)
                r = sd_pid_notify_with_fds(0, false, "FDSTORE=1\nFDNAME=" UPSTREAM_FDNAME_FEED, &feed, 1);
        if (r == 0)
                return fail(name, "no $NOTIFY_SOCKET (the unit needs NotifyAccess=exec)", 0);
        if (r > 0)
                r = sd_notify_barrier(false, FEED_TIMEOUT_USEC);
        if (r < 0)
                return fail(name, "systemd did not take the feed", -r);
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(egress_link_freep) EgressLink *link = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_close_ int control = -EBADF, feed = -EBADF;
        uint8_t rnd[16];
        char run_id[33];
        Wait w = { .error = -ETIMEDOUT };
        int r;

        if (argc != 4 || !word_ok(argv[1], 32, "abcdefghijklmnopqrstuvwxyz0123456789_") ||
            !server_name_is_valid(argv[2]) ||
            !word_ok(argv[3], EGRESS_UPSTREAM_INSTANCE_MAX,
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:_.\\-")) {
                fprintf(stderr, "usage: mcp-exec-upstream-feed POLICY NAME INSTANCE (a unit's ExecStartPre=+)\n");
                return EXIT_FAILURE;
        }
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
                return fail(argv[2], "no random run id", errno);
        for (size_t i = 0; i < sizeof rnd; i++)
                (void) snprintf(run_id + 2 * i, 3, "%02x", rnd[i]);

        r = sd_event_new(&e);
        w.event = e;
        if (r >= 0)
                r = egress_link_start(e, &(EgressLinkRequest) {
                        .socket_path = EGRESS_SOCKET_PATH, .run_id = run_id, .policy = argv[1],
                        .timeout_usec = FEED_TIMEOUT_USEC, .upstream = argv[2], .instance = argv[3],
                }, on_ready, &w, &link);
        if (r < 0)
                return fail(argv[2], "cannot reach mcp-exec-egressd (" EGRESS_SOCKET_PATH ")", -r);
        r = sd_event_loop(e);
        if (r < 0)
                return fail(argv[2], "event loop failed", -r);
        if (w.error < 0)
                return fail(argv[2], w.message[0] ? w.message : "mcp-exec-egressd gave no feed", 0);
        feed = egress_link_take_feed(link);
        control = egress_link_take_control(link);
        if (feed < 0 || control < 0)
                return fail(argv[2], "mcp-exec-egressd gave no feed", 0);
        r = store(argv[2], control, feed);
        if (r != 0)
                return r;
        fprintf(stderr, "mcp-exec-upstream-feed: %s: egress policy %s through mcp-exec-egressd\n", argv[2], argv[1]);
        return 0;
}

DEFINE_MAIN_FUNCTION(run);
