/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/client.[ch] without systemd: one connection of a
 * Manager that has no bus, driven through its socket. What the op table lets
 * through in which state, the errors of a bad run or call (the fd and
 * timeout checks run and session_exec share), and that a connection whose
 * one request failed is closed. */

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker-proto.h"
#include "client.h"
#include "json-util.h"
#include "manager.h"
#include "test-helpers.h"

typedef struct Fixture {
        Manager m;
        int peer;                       /* the caller's end */
} Fixture;

static void fixture_init(Fixture *f) {
        int sv[2];

        *f = (Fixture) {};
        f->m.listen_fd = -EBADF;
        f->m.config.default_timeout_s = 30;
        f->m.config.max_timeout_s = 300;
        f->m.config.task_max_timeout_s = 3600;
        f->m.config.max_concurrent = 2;
        ASSERT_EQ_INT(sd_event_new(&f->m.event), 0);
        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        ASSERT_EQ_INT(client_new(&f->m, sv[0], getpid(), 0), 0);
        f->peer = sv[1];
}

static void fixture_done(Fixture *f) {
        while (f->m.clients)
                client_free(f->m.clients);
        ASSERT_EQ_INT(f->m.n_clients, 0);
        f->m.event = sd_event_unref(f->m.event);
        f->peer = safe_close(f->peer);
}

/* Sends req (with fds) and lets the broker's side handle it. */
static void request(Fixture *f, const char *req, const int *fds, size_t n_fds) {
        _cleanup_json_ json_object *j = json_tokener_parse(req);

        ASSERT_TRUE(j);
        ASSERT_EQ_INT(broker_send(f->peer, j, fds, n_fds), 0);
        for (unsigned i = 0; i < 8; i++)
                ASSERT_TRUE(sd_event_run(f->m.event, 0) >= 0);
}

/* The next reply: its event, and for an error its message. */
static void expect_reply(Fixture *f, const char *event, const char *message) {
        _cleanup_json_ json_object *j = NULL;
        int fds[BROKER_MAX_FDS];
        size_t n_fds = 0;

        ASSERT_EQ_INT(broker_recv(f->peer, &j, fds, ELEMENTSOF(fds), &n_fds), 1);
        ASSERT_EQ_INT(n_fds, 0);
        ASSERT_STREQ(json_get_string(j, "event"), event);
        if (message)
                ASSERT_STREQ(json_get_string(j, "message"), message);
}

static void expect_closed(Fixture *f) {
        _cleanup_json_ json_object *j = NULL;
        int fds[BROKER_MAX_FDS];

        ASSERT_EQ_INT(broker_recv(f->peer, &j, fds, ELEMENTSOF(fds), NULL), 0);
        ASSERT_TRUE(!f->m.clients);
}

static void expect_open(Fixture *f) {
        _cleanup_json_ json_object *j = NULL;
        int fds[BROKER_MAX_FDS];

        ASSERT_EQ_INT(broker_recv(f->peer, &j, fds, ELEMENTSOF(fds), NULL), -EAGAIN);
        ASSERT_TRUE(f->m.clients);
        ASSERT_EQ_INT(f->m.clients->state, CLIENT_NEW);
}

/* Questions and ops that need a run: the connection stays open. */
TEST(test_new_connection) {
        Fixture f;

        fixture_init(&f);
        request(&f, "{}", NULL, 0);
        expect_reply(&f, "error", "missing op");
        expect_open(&f);
        request(&f, "{\"op\":\"frobnicate\"}", NULL, 0);
        expect_reply(&f, "error", "unknown op");
        /* Valid ops, but not before a run: as unknown as any. */
        request(&f, "{\"op\":\"detach\"}", NULL, 0);
        expect_reply(&f, "error", "unknown op");
        request(&f, "{\"op\":\"cancel\"}", NULL, 0);
        expect_reply(&f, "error", "unknown op");
        expect_open(&f);
        request(&f, "{\"op\":\"stats\"}", NULL, 0);
        expect_reply(&f, "stats", NULL);
        expect_open(&f);
        fixture_done(&f);
}

/* One connection, one request: a run that cannot start ends it. */
TEST(test_bad_run) {
        int p[2], file;
        Fixture f;

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
        file = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(file >= 0);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\"}", NULL, 0);
        expect_reply(&f, "error",
                     "a run needs three or four pipe or socket fds: stdin, stdout, stderr and the result channel");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\"}", (int[]) { p[0], p[1], file }, 3);
        expect_reply(&f, "error", "a run's fds must be pipes or sockets");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\",\"timeout_s\":-1}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "timeout_s must be a non-negative integer");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\",\"timeout_s\":\"5\"}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "timeout_s must be a non-negative integer");
        expect_closed(&f);
        fixture_done(&f);

        /* The self-check failed: refused, with its reason. */
        fixture_init(&f);
        f.m.probe_state = SELF_CHECK_FAILED;
        request(&f, "{\"op\":\"run\",\"timeout_s\":5}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "the sandbox self-check failed");
        expect_closed(&f);
        ASSERT_EQ_U64(f.m.stats.runs[RUN_OUTCOME_REFUSED], 1);
        fixture_done(&f);

        safe_close(p[0]);
        safe_close(p[1]);
        safe_close(file);
}

/* session_exec shares the checks, in its own words; then the session must
 * be the caller's. */
TEST(test_bad_call) {
        int p[2];
        Fixture f;

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_exec\"}", (int[]) { p[0] }, 1);
        expect_reply(&f, "error",
                     "a call needs three or four pipe or socket fds: stdin, stdout, stderr and the result channel");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_exec\",\"timeout_s\":1.5}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "timeout_s must be a non-negative integer");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_exec\",\"session\":\"00000000000000000000000000000000\",\"caller\":\"uid:0\"}",
                (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "no such session: it ended (closed, expired, or lost), or it is not yours");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_close_scope\",\"caller\":\"uid:0\"}", NULL, 0);
        expect_reply(&f, "error", "closing a scope needs a caller and a scope");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_close_scope\",\"caller\":\"uid:0\",\"scope\":\"s\"}", NULL, 0);
        expect_reply(&f, "closed", NULL);
        expect_closed(&f);
        fixture_done(&f);

        safe_close(p[0]);
        safe_close(p[1]);
}

/* The timeout: absent or 0 is the default, the rest is clamped. */
TEST(test_parse_timeout) {
        struct {
                const char *req;
                uint64_t want;
        } cases[] = {
                { "{}", 30 },
                { "{\"timeout_s\":0}", 30 },
                { "{\"timeout_s\":1}", 1 },
                { "{\"timeout_s\":299}", 299 },
                /* A task's run may take longer: the broker's cap is the task maximum. */
                { "{\"timeout_s\":301}", 301 },
                { "{\"timeout_s\":100000}", 3600 },
        };
        Fixture f;

        fixture_init(&f);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_json_ json_object *j = json_tokener_parse(cases[i].req);
                uint64_t t = 0;

                ASSERT_EQ_INT(client_parse_timeout(f.m.clients, j, &t), 0);
                ASSERT_EQ_U64(t, cases[i].want);
        }
        expect_open(&f);
        fixture_done(&f);
}

int main(void) {
        RUN(test_new_connection);
        RUN(test_bad_run);
        RUN(test_bad_call);
        RUN(test_parse_timeout);
        return 0;
}
