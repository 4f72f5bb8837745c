/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/egress-link.[ch] (issue 22) against a fake
 * mcp-exec-egressd on a socket of the test's own: the run request the
 * broker sends, the feed it takes, the connection reports it adds up (per
 * link, since a mark, and into the totals), and each way the link fails
 * (egressd's error, a wrong feed, no answer, no egressd). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker-proto.h"
#include "egress-link.h"
#include "json-util.h"
#include "macro.h"
#include "test-helpers.h"
#include "util.h"

#define RUN_ID "0123456789abcdef0123456789abcdef"

typedef struct Outcome {
        bool called;
        int error;
        char message[256];
} Outcome;

static void on_ready(EgressLink *l, int error, const char *message, void *userdata) {
        Outcome *o = userdata;

        ASSERT_FALSE(o->called);
        o->called = true;
        o->error = error;
        (void) snprintf(o->message, sizeof o->message, "%s", message ?: "");
}

static char path[108];

static int fake_egressd(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(fd >= 0);
        (void) snprintf(path, sizeof path, "/tmp/test-egress-link-%d.sock", (int) getpid());
        (void) unlink(path);
        memcpy(sa.sun_path, path, strlen(path) + 1);
        ASSERT_EQ_INT(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        ASSERT_EQ_INT(listen(fd, 8), 0);
        return fd;
}

static EgressLink *start(sd_event *e, EgressCounts *totals, Outcome *o, uint64_t timeout_usec) {
        EgressLinkRequest req = {
                .socket_path = path,
                .run_id = RUN_ID,
                .policy = "pypi",
                .max_connections = 3,
                .max_bytes = 1000,
                .timeout_usec = timeout_usec,
                .totals = totals,
        };
        EgressLink *l = NULL;

        ASSERT_EQ_INT(egress_link_start(e, &req, on_ready, o, &l), 0);
        return l;
}

/* Runs the loop until o is called (bounded). */
static void wait_for(sd_event *e, Outcome *o) {
        for (unsigned i = 0; i < 1000 && !o->called; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_TRUE(o->called);
}

static void send_json(int fd, const char *text, const int *fds, size_t n_fds) {
        _cleanup_json_ json_object *j = json_tokener_parse(text);

        ASSERT_TRUE(j);
        ASSERT_EQ_INT(packet_send(fd, j, fds, n_fds), 0);
}

/* The broker's request, as egressd gets it. */
static int accept_request(int listener) {
        _cleanup_json_ json_object *req = NULL;
        int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        size_t n = 0;

        ASSERT_TRUE(conn >= 0);
        ASSERT_EQ_INT(fd_nonblock(conn, false), 0);
        ASSERT_EQ_INT(packet_recv(conn, &req, NULL, 0, &n), 1);
        ASSERT_STREQ(json_get_string(req, "op"), "run");
        ASSERT_STREQ(json_get_string(req, "run_id"), RUN_ID);
        ASSERT_STREQ(json_get_string(req, "policy"), "pypi");
        ASSERT_EQ_INT((int) json_get_int64(req, "max_connections", -1), 3);
        ASSERT_EQ_INT((int) json_get_int64(req, "max_bytes", -1), 1000);
        return conn;
}

TEST(test_feed_and_reports) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        EgressCounts totals = {};
        Outcome o = {};
        EgressLink *l;
        json_object *stats = NULL;
        int listener = fake_egressd(), conn, sp[2], feed, type = 0;
        socklen_t len = sizeof type;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        l = start(e, &totals, &o, 5 * USEC_PER_SEC);
        conn = accept_request(listener);
        ASSERT_FALSE(egress_link_is_ready(l));
        ASSERT_EQ_INT(egress_link_take_feed(l), -EBADF);

        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
        send_json(conn, "{\"event\":\"feed\"}", &sp[1], 1);
        close(sp[1]);
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, 0);
        ASSERT_TRUE(egress_link_is_ready(l));
        feed = egress_link_take_feed(l);
        ASSERT_TRUE(feed >= 0);
        ASSERT_EQ_INT(getsockopt(feed, SOL_SOCKET, SO_TYPE, &type, &len), 0);
        ASSERT_EQ_INT(type, SOCK_SEQPACKET);
        ASSERT_EQ_INT(egress_link_take_feed(l), -EBADF);       /* once */
        close(feed);

        send_json(conn, "{\"event\":\"conn\",\"verdict\":\"allowed\",\"host\":\"pypi.org\",\"port\":443,"
                        "\"bytes_up\":10,\"bytes_down\":20}", NULL, 0);
        egress_link_mark(l);
        send_json(conn, "{\"event\":\"conn\",\"verdict\":\"policy\",\"host\":\"x.org\",\"port\":443,"
                        "\"bytes_up\":0,\"bytes_down\":0}", NULL, 0);
        /* A verdict we do not know still counts, as a bad request. */
        send_json(conn, "{\"event\":\"conn\",\"verdict\":\"martian\",\"bytes_up\":-5,\"bytes_down\":7}", NULL, 0);

        /* Stats read what is queued: no loop iteration needed. */
        ASSERT_EQ_INT(egress_link_stats(l, false, &stats), 0);
        ASSERT_STREQ(json_serialize(stats, NULL),
                     "{\"connections\":{\"allowed\":1,\"policy\":1,\"bad-request\":1},\"bytes_up\":10,"
                     "\"bytes_down\":27,\"policy\":\"pypi\"}");
        json_object_put(stats);
        ASSERT_EQ_INT(egress_link_stats(l, true, &stats), 0);
        ASSERT_STREQ(json_serialize(stats, NULL),
                     "{\"connections\":{\"policy\":1,\"bad-request\":1},\"bytes_up\":0,\"bytes_down\":7,"
                     "\"policy\":\"pypi\"}");
        json_object_put(stats);
        ASSERT_EQ_U64(totals.connections[EGRESS_VERDICT_ALLOWED], 1);
        ASSERT_EQ_U64(totals.connections[EGRESS_VERDICT_BAD_REQUEST], 1);
        ASSERT_EQ_U64(totals.bytes_down, 27);

        /* Freeing it closes the control connection: egressd sees EOF. */
        egress_link_free(l);
        {
                char b;
                ASSERT_EQ_INT((int) recv(conn, &b, 1, 0), 0);
        }
        close(conn);
        close(listener);
        (void) unlink(path);
}

TEST(test_failures) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        int listener = fake_egressd(), conn, p[2];
        EgressLink *l = NULL;
        Outcome o = {};
        EgressLinkRequest req = { .socket_path = "/nonexistent/egress.sock", .run_id = RUN_ID, .policy = "pypi",
                                  .timeout_usec = USEC_PER_SEC };

        ASSERT_EQ_INT(sd_event_new(&e), 0);

        /* egressd refuses: its reason, cleaned, comes through. */
        l = start(e, NULL, &o, 5 * USEC_PER_SEC);
        conn = accept_request(listener);
        send_json(conn, "{\"event\":\"error\",\"message\":\"no policy pypi\\n\"}", NULL, 0);
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, -EPERM);
        ASSERT_CONTAINS(o.message, "refused the run: no policy pypi");
        ASSERT_TRUE(!strchr(o.message, '\n'));
        ASSERT_FALSE(egress_link_is_ready(l));
        l = egress_link_free(l);
        close(conn);

        /* A feed that is no SOCK_SEQPACKET socket is a broken protocol. */
        o = (Outcome) {};
        l = start(e, NULL, &o, 5 * USEC_PER_SEC);
        conn = accept_request(listener);
        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
        send_json(conn, "{\"event\":\"feed\"}", &p[0], 1);
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, -EBADMSG);
        ASSERT_EQ_INT(egress_link_take_feed(l), -EBADF);
        l = egress_link_free(l);
        close(conn);
        close(p[0]);
        close(p[1]);

        /* egressd hangs up without a feed. */
        o = (Outcome) {};
        l = start(e, NULL, &o, 5 * USEC_PER_SEC);
        conn = accept_request(listener);
        close(conn);
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, -ECONNRESET);
        l = egress_link_free(l);

        /* egressd never answers: the timeout ends it. */
        o = (Outcome) {};
        l = start(e, NULL, &o, 50 * USEC_PER_MSEC);
        conn = accept_request(listener);
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, -ETIMEDOUT);
        l = egress_link_free(l);
        close(conn);

        /* No egressd at all: the start fails at once. */
        ASSERT_TRUE(egress_link_start(e, &req, on_ready, &o, &l) < 0);

        close(listener);
        (void) unlink(path);
}

typedef struct Ended {
        unsigned calls;
        bool free_it;
} Ended;

static void on_ended(EgressLink *l, void *userdata) {
        Ended *d = userdata;

        d->calls++;
        if (d->free_it)
                egress_link_free(l);    /* as client.c does: the link may go in done */
}

/* A link with its feed handed over, and egressd's end of it. */
static EgressLink *ready_link(sd_event *e, int listener, EgressCounts *totals, int *ret_conn) {
        Outcome o = {};
        EgressLink *l = start(e, totals, &o, 5 * USEC_PER_SEC);
        int conn = accept_request(listener), sp[2];

        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
        send_json(conn, "{\"event\":\"feed\"}", &sp[1], 1);
        close(sp[1]);
        close(sp[0]);
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, 0);
        *ret_conn = conn;
        return l;
}

static void expect_end_op(int conn) {
        _cleanup_json_ json_object *req = NULL;

        ASSERT_EQ_INT(packet_recv(conn, &req, NULL, 0, NULL), 1);
        ASSERT_STREQ(json_get_string(req, "op"), "end");
}

/* Issue 37: the result counts what was cut at the run's end. */
TEST(test_end) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        EgressCounts totals = {};
        json_object *stats = NULL;
        Ended d = {};
        EgressLink *l;
        int listener = fake_egressd(), conn;

        ASSERT_EQ_INT(sd_event_new(&e), 0);

        /* Without a feed there is nothing to wait for. */
        {
                Outcome o = {};
                l = start(e, NULL, &o, 5 * USEC_PER_SEC);
                conn = accept_request(listener);
                ASSERT_EQ_INT(egress_link_end(l, USEC_PER_SEC, on_ended, &d), 0);
                l = egress_link_free(l);
                close(conn);
        }

        /* egressd reports one connection, then its final counts: two
         * allowed (a tunnel cut at the end) and 900 bytes down. */
        l = ready_link(e, listener, &totals, &conn);
        send_json(conn, "{\"event\":\"conn\",\"verdict\":\"allowed\",\"host\":\"a\",\"port\":443,"
                        "\"bytes_up\":10,\"bytes_down\":100}", NULL, 0);
        ASSERT_EQ_INT(egress_link_end(l, 10 * USEC_PER_SEC, on_ended, &d), 1);
        ASSERT_EQ_INT(egress_link_end(l, 10 * USEC_PER_SEC, on_ended, &d), 0);        /* once */
        expect_end_op(conn);
        send_json(conn, "{\"event\":\"ended\",\"connections\":{\"allowed\":2,\"cap\":5},"
                        "\"bytes_up\":10,\"bytes_down\":900}", NULL, 0);
        for (unsigned i = 0; i < 100 && d.calls == 0; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) d.calls, 1);
        ASSERT_EQ_INT(egress_link_stats(l, false, &stats), 0);
        ASSERT_STREQ(json_serialize(stats, NULL),
                     "{\"connections\":{\"allowed\":2,\"cap\":5},\"bytes_up\":10,\"bytes_down\":900,"
                     "\"policy\":\"pypi\"}");
        json_object_put(stats);
        ASSERT_EQ_U64(totals.connections[EGRESS_VERDICT_ALLOWED], 2);
        ASSERT_EQ_U64(totals.connections[EGRESS_VERDICT_CAP], 5);
        ASSERT_EQ_U64(totals.bytes_down, 900);
        l = egress_link_free(l);
        close(conn);

        /* egressd never answers: done within the bound, with what was
         * reported; freeing the link in done is fine. */
        d = (Ended) { .free_it = true };
        l = ready_link(e, listener, NULL, &conn);
        ASSERT_EQ_INT(egress_link_end(l, 50 * USEC_PER_MSEC, on_ended, &d), 1);
        for (unsigned i = 0; i < 100 && d.calls == 0; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) d.calls, 1);
        close(conn);

        /* egressd hangs up instead: done, not a wait for the bound. */
        d = (Ended) { .free_it = true };
        l = ready_link(e, listener, NULL, &conn);
        ASSERT_EQ_INT(egress_link_end(l, 3600 * USEC_PER_SEC, on_ended, &d), 1);
        close(conn);
        for (unsigned i = 0; i < 100 && d.calls == 0; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) d.calls, 1);

        close(listener);
        (void) unlink(path);
}

int main(void) {
        RUN(test_feed_and_reports);
        RUN(test_failures);
        RUN(test_end);
        return 0;
}
