/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/tools-link.[ch] (code mode, issue 40) against a
 * fake mcp-exec-toolsd on a socket of the test's own: the run request the
 * broker sends with the gateway's end of the run's connection, the run's end
 * it keeps, each way the gateway fails (refusal, silence, hang-up, a broken
 * protocol), the counts at the run's end and what of them is kept, and
 * tools_configured(). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "packet.h"
#include "test-helpers.h"
#include "tools-link.h"
#include "util.h"

#define RUN_ID "0123456789abcdef0123456789abcdef"

typedef struct Outcome {
        bool called;
        int error;
        char message[256];
} Outcome;

static void on_ready(ToolsLink *l, int error, const char *message, void *userdata) {
        Outcome *o = userdata;

        ASSERT_FALSE(o->called);
        o->called = true;
        o->error = error;
        (void) snprintf(o->message, sizeof o->message, "%s", message ?: "");
}

static char path[108];

static int fake_gateway(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(fd >= 0);
        (void) snprintf(path, sizeof path, "/tmp/test-tools-link-%d.sock", (int) getpid());
        (void) unlink(path);
        memcpy(sa.sun_path, path, strlen(path) + 1);
        ASSERT_EQ_INT(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        ASSERT_EQ_INT(listen(fd, 8), 0);
        return fd;
}

static ToolsLink *start(sd_event *e, Outcome *o, uint64_t timeout_usec) {
        ToolsLink *l = NULL;

        ASSERT_EQ_INT(tools_link_start(e, path, RUN_ID, "http:token:alice", timeout_usec, on_ready, o, &l), 0);
        return l;
}

static void wait_for(sd_event *e, Outcome *o) {
        for (unsigned i = 0; i < 1000 && !o->called; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_TRUE(o->called);
}

static void send_json(int fd, const char *text) {
        _cleanup_json_ json_object *j = json_tokener_parse(text);

        ASSERT_TRUE(j);
        ASSERT_EQ_INT(packet_send(fd, j, NULL, 0), 0);
}

/* The broker's request as the gateway gets it; *ret_run_end: the gateway's
 * end of the run's connection. */
static int accept_request(int listener, int *ret_run_end) {
        _cleanup_json_ json_object *req = NULL;
        int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC), fds[2] = { -EBADF, -EBADF }, type = 0;
        socklen_t len = sizeof type;
        size_t n = 0;

        ASSERT_TRUE(conn >= 0);
        ASSERT_EQ_INT(fd_nonblock(conn, false), 0);
        ASSERT_EQ_INT(packet_recv(conn, &req, fds, 2, &n), 1);
        ASSERT_STREQ(json_get_string(req, "op"), "run");
        ASSERT_STREQ(json_get_string(req, "run"), RUN_ID);
        ASSERT_STREQ(json_get_string(req, "caller"), "http:token:alice");
        ASSERT_EQ_INT((int) n, 1);
        ASSERT_EQ_INT(getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &len), 0);
        ASSERT_EQ_INT(type, SOCK_STREAM);
        *ret_run_end = fds[0];
        return conn;
}

TEST(test_accepted) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Outcome o = {};
        ToolsLink *l;
        int listener = fake_gateway(), conn, gw, run;
        char buf[8];

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        l = start(e, &o, 5 * USEC_PER_SEC);
        conn = accept_request(listener, &gw);
        ASSERT_FALSE(tools_link_is_settled(l));
        ASSERT_EQ_INT(tools_link_take_run_fd(l), -EBADF);      /* not before the gateway said yes */
        send_json(conn, "{\"ok\":true,\"servers\":[\"everything\"]}");
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, 0);
        ASSERT_TRUE(tools_link_is_settled(l));

        /* The run's end talks to the gateway's end. */
        run = tools_link_take_run_fd(l);
        ASSERT_TRUE(run >= 0);
        ASSERT_EQ_INT(tools_link_take_run_fd(l), -EBADF);      /* once */
        ASSERT_EQ_INT((int) write(run, "ping", 4), 4);
        ASSERT_EQ_INT((int) read(gw, buf, sizeof buf), 4);
        ASSERT_TRUE(memcmp(buf, "ping", 4) == 0);

        /* Freeing the link is the run's end: the gateway sees EOF. */
        l = tools_link_free(l);
        ASSERT_EQ_INT((int) read(conn, buf, sizeof buf), 0);
        close(run);
        close(gw);
        close(conn);
        close(listener);
        (void) unlink(path);
}

TEST(test_failures) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        ToolsLink *l = NULL;
        int listener = fake_gateway(), conn, gw;

        ASSERT_EQ_INT(sd_event_new(&e), 0);

        /* Refused, with the gateway's reason (made printable). */
        {
                Outcome o = {};
                l = start(e, &o, 5 * USEC_PER_SEC);
                conn = accept_request(listener, &gw);
                send_json(conn, "{\"ok\":false,\"error\":\"no servers for you\\n\"}");
                wait_for(e, &o);
                ASSERT_EQ_INT(o.error, -EPERM);
                ASSERT_TRUE(strstr(o.message, "refused the run: no servers for you"));
                ASSERT_EQ_INT(tools_link_take_run_fd(l), -EBADF);
                l = tools_link_free(l);
                close(conn);
                close(gw);
        }
        /* Silence: the run goes on without tools after the bound. */
        {
                Outcome o = {};
                l = start(e, &o, 50 * USEC_PER_MSEC);
                conn = accept_request(listener, &gw);
                wait_for(e, &o);
                ASSERT_EQ_INT(o.error, -ETIMEDOUT);
                ASSERT_EQ_INT(tools_link_take_run_fd(l), -EBADF);
                l = tools_link_free(l);
                close(conn);
                close(gw);
        }
        /* A hang-up, and a packet that is no answer. */
        {
                Outcome o = {};
                l = start(e, &o, 5 * USEC_PER_SEC);
                conn = accept_request(listener, &gw);
                close(conn);
                wait_for(e, &o);
                ASSERT_EQ_INT(o.error, -ECONNRESET);
                l = tools_link_free(l);
                close(gw);
        }
        {
                Outcome o = {};
                l = start(e, &o, 5 * USEC_PER_SEC);
                conn = accept_request(listener, &gw);
                send_json(conn, "{\"op\":\"counts\",\"servers\":{}}");
                wait_for(e, &o);
                ASSERT_EQ_INT(o.error, -EBADMSG);
                ASSERT_EQ_INT(tools_link_take_run_fd(l), -EBADF);
                l = tools_link_free(l);
                close(conn);
                close(gw);
        }
        /* No gateway at all: the start fails, and says so. */
        close(listener);
        (void) unlink(path);
        ASSERT_TRUE(tools_link_start(e, path, RUN_ID, "uid:0", USEC_PER_SEC, on_ready, NULL, &l) < 0);
        /* A run id that is not one. */
        ASSERT_EQ_INT(tools_link_start(e, path, "short", "uid:0", USEC_PER_SEC, on_ready, NULL, &l), -EINVAL);
}

static void on_ended(ToolsLink *l, void *userdata) {
        unsigned *calls = userdata;

        (*calls)++;
}

/* An accepted link, and the gateway's end of its control connection. */
static ToolsLink *ready_link(sd_event *e, int listener, int *ret_conn) {
        Outcome o = {};
        ToolsLink *l = start(e, &o, 5 * USEC_PER_SEC);
        int gw, conn = accept_request(listener, &gw);

        close(gw);
        send_json(conn, "{\"ok\":true,\"servers\":[]}");
        wait_for(e, &o);
        ASSERT_EQ_INT(o.error, 0);
        *ret_conn = conn;
        return l;
}

static json_object *end_with(sd_event *e, int listener, const char *counts) {
        _cleanup_json_ json_object *req = NULL;
        unsigned calls = 0;
        int conn;
        ToolsLink *l = ready_link(e, listener, &conn);
        json_object *got;

        ASSERT_EQ_INT(tools_link_end(l, 10 * USEC_PER_SEC, on_ended, &calls), 1);
        ASSERT_EQ_INT(tools_link_end(l, 10 * USEC_PER_SEC, on_ended, &calls), 0);     /* once */
        ASSERT_EQ_INT(packet_recv(conn, &req, NULL, 0, NULL), 1);
        ASSERT_STREQ(json_get_string(req, "op"), "end");
        if (counts)
                send_json(conn, counts);
        else
                close(conn);
        for (unsigned i = 0; i < 100 && calls == 0; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) calls, 1);
        got = tools_link_counts(l);
        tools_link_free(l);
        if (counts)
                close(conn);
        return got;
}

TEST(test_end) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        int listener = fake_gateway();
        json_object *got;

        ASSERT_EQ_INT(sd_event_new(&e), 0);

        /* The counts, as the result carries them: known fields only, none
         * negative. */
        got = end_with(e, listener,
                       "{\"op\":\"counts\",\"servers\":{\"everything\":{\"calls\":200,\"errors\":1,"
                       "\"refused\":2,\"ms\":35,\"secret\":\"x\"},\"memory\":{\"calls\":-5}}}");
        ASSERT_TRUE(got);
        ASSERT_STREQ(json_serialize(got, NULL),
                     "{\"everything\":{\"calls\":200,\"errors\":1,\"refused\":2,\"ms\":35},"
                     "\"memory\":{\"calls\":0,\"errors\":0,\"refused\":0,\"ms\":0}}");
        json_object_put(got);

        /* A name servers.d could not have, or not an object: none at all. */
        ASSERT_FALSE(end_with(e, listener, "{\"op\":\"counts\",\"servers\":{\"../x\":{\"calls\":1}}}"));
        ASSERT_FALSE(end_with(e, listener, "{\"op\":\"counts\",\"servers\":[1,2]}"));
        ASSERT_FALSE(end_with(e, listener, "{\"op\":\"counts\",\"servers\":{\"a\":7}}"));

        /* A hang-up instead: done at once, no counts. */
        ASSERT_FALSE(end_with(e, listener, NULL));

        close(listener);
        (void) unlink(path);
}

typedef struct Counted {
        unsigned calls;
        char since[512];        /* the counts as serialized, "" for none */
} Counted;

static void on_counted(ToolsLink *l, json_object *since, void *userdata) {
        Counted *c = userdata;

        c->calls++;
        (void) snprintf(c->since, sizeof c->since, "%s", since ? json_serialize(since, NULL) : "");
}

/* Asks, checks the question as the gateway gets it, answers (or not) and
 * waits for done: what it was given. */
static const char *query(sd_event *e, ToolsLink *l, int conn, int64_t want_id, const char *answer, Counted *c) {
        _cleanup_json_ json_object *req = NULL;
        unsigned before = c->calls;

        ASSERT_EQ_INT(tools_link_query(l, answer ? 10 * USEC_PER_SEC : 50 * USEC_PER_MSEC, on_counted, c), 1);
        ASSERT_EQ_INT(tools_link_query(l, USEC_PER_SEC, on_counted, c), -EBUSY);     /* one at a time */
        ASSERT_EQ_INT(packet_recv(conn, &req, NULL, 0, NULL), 1);
        ASSERT_STREQ(json_get_string(req, "op"), "counts");
        ASSERT_EQ_INT((int) json_get_int64(req, "id", -1), (int) want_id);
        if (answer)
                send_json(conn, answer);
        for (unsigned i = 0; i < 100 && c->calls == before; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) c->calls, (int) before + 1);
        return c->since;
}

static const ToolServerStats *totals_of(const ToolStats *t, const char *name) {
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->servers[i].name, name))
                        return &t->servers[i];
        return NULL;
}

/* A session's calls: each gets the counts since the one before, the run
 * going on; an answer not in time leaves the call without, and still moves
 * the mark; the totals get every count once. */
TEST(test_query) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_json_ json_object *req = NULL;
        int listener = fake_gateway(), conn;
        ToolStats totals = {};
        Counted c = {};
        unsigned ended = 0;
        ToolsLink *l;
        json_object *got;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        l = ready_link(e, listener, &conn);
        tools_link_count_into(l, &totals);

        ASSERT_STREQ(query(e, l, conn, 1, "{\"op\":\"counts\",\"id\":1,\"servers\":{}}", &c), "{}");
        ASSERT_STREQ(query(e, l, conn, 2,
                           "{\"op\":\"counts\",\"id\":2,\"servers\":{\"everything\":{\"calls\":3,"
                           "\"errors\":1,\"refused\":0,\"ms\":20}}}", &c),
                     "{\"everything\":{\"calls\":3,\"errors\":1,\"refused\":0,\"ms\":20}}");
        /* The next call's are its own: the difference, and a server new to it. */
        ASSERT_STREQ(query(e, l, conn, 3,
                           "{\"op\":\"counts\",\"id\":3,\"servers\":{\"everything\":{\"calls\":5,"
                           "\"errors\":1,\"refused\":1,\"ms\":30},\"memory\":{\"calls\":1,\"errors\":0,"
                           "\"refused\":0,\"ms\":2}}}", &c),
                     "{\"everything\":{\"calls\":2,\"errors\":0,\"refused\":1,\"ms\":10},"
                     "\"memory\":{\"calls\":1,\"errors\":0,\"refused\":0,\"ms\":2}}");
        /* Not in time: the call goes without; the late answer moves the mark. */
        ASSERT_STREQ(query(e, l, conn, 4, NULL, &c), "");
        send_json(conn, "{\"op\":\"counts\",\"id\":4,\"servers\":{\"everything\":{\"calls\":9,"
                        "\"errors\":1,\"refused\":1,\"ms\":40},\"memory\":{\"calls\":1,\"errors\":0,"
                        "\"refused\":0,\"ms\":2}}}");
        /* An answer to no question, and one again to an answered one: ignored. */
        send_json(conn, "{\"op\":\"counts\",\"id\":99,\"servers\":{\"everything\":{\"calls\":1000}}}");
        send_json(conn, "{\"op\":\"counts\",\"id\":3,\"servers\":{\"everything\":{\"calls\":1000}}}");
        ASSERT_STREQ(query(e, l, conn, 5,
                           "{\"op\":\"counts\",\"id\":5,\"servers\":{\"everything\":{\"calls\":10,"
                           "\"errors\":1,\"refused\":1,\"ms\":41},\"memory\":{\"calls\":1,\"errors\":0,"
                           "\"refused\":0,\"ms\":2}}}", &c),
                     "{\"everything\":{\"calls\":1,\"errors\":0,\"refused\":0,\"ms\":1}}");
        /* Malformed counts: the call goes without, the mark stays. */
        ASSERT_STREQ(query(e, l, conn, 6, "{\"op\":\"counts\",\"id\":6,\"servers\":{\"../x\":{}}}", &c), "");

        /* The run's end after: its final counts whole, the totals once each. */
        ASSERT_EQ_INT(tools_link_end(l, 10 * USEC_PER_SEC, on_ended, &ended), 1);
        ASSERT_EQ_INT(tools_link_query(l, USEC_PER_SEC, on_counted, &c), 0);          /* ending: nothing to ask */
        ASSERT_EQ_INT(packet_recv(conn, &req, NULL, 0, NULL), 1);
        ASSERT_STREQ(json_get_string(req, "op"), "end");
        send_json(conn, "{\"op\":\"counts\",\"servers\":{\"everything\":{\"calls\":12,\"errors\":2,"
                        "\"refused\":1,\"ms\":50},\"memory\":{\"calls\":1,\"errors\":0,\"refused\":0,"
                        "\"ms\":2}}}");
        for (unsigned i = 0; i < 100 && ended == 0; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) ended, 1);
        got = tools_link_counts(l);
        ASSERT_TRUE(got);
        ASSERT_EQ_INT((int) json_get_int64(json_get(got, "everything"), "calls", 0), 12);
        json_object_put(got);
        ASSERT_EQ_INT((int) totals.n, 2);
        ASSERT_EQ_INT((int) totals_of(&totals, "everything")->calls, 12);
        ASSERT_EQ_INT((int) totals_of(&totals, "everything")->errors, 2);
        ASSERT_EQ_INT((int) totals_of(&totals, "everything")->refused, 1);
        ASSERT_EQ_INT((int) totals_of(&totals, "everything")->ms, 50);
        ASSERT_EQ_INT((int) totals_of(&totals, "memory")->calls, 1);
        tools_link_free(l);
        close(conn);

        /* A hang-up while a question waits: done at once, without counts;
         * nothing to ask after. */
        l = ready_link(e, listener, &conn);
        c = (Counted) {};
        ASSERT_EQ_INT(tools_link_query(l, 10 * USEC_PER_SEC, on_counted, &c), 1);
        close(conn);
        for (unsigned i = 0; i < 100 && c.calls == 0; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) c.calls, 1);
        ASSERT_STREQ(c.since, "");
        ASSERT_EQ_INT(tools_link_query(l, USEC_PER_SEC, on_counted, &c), 0);
        tools_link_free(l);

        close(listener);
        (void) unlink(path);
}

/* A run's final counts go into the totals too; a name past the bound is not
 * kept, the others are. */
TEST(test_totals) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_json_ json_object *req = NULL;
        int listener = fake_gateway(), conn;
        ToolStats totals = {};
        unsigned ended = 0;
        ToolsLink *l;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        for (unsigned i = 0; i < TOOL_STATS_SERVERS_MAX - 1; i++) {
                char name[16];
                (void) snprintf(name, sizeof name, "s%u", i);
                ASSERT_EQ_INT(tool_stats_add(&totals, name, &(ToolServerStats) { .calls = 1 }), 0);
        }
        l = ready_link(e, listener, &conn);
        tools_link_count_into(l, &totals);
        ASSERT_EQ_INT(tools_link_end(l, 10 * USEC_PER_SEC, on_ended, &ended), 1);
        ASSERT_EQ_INT(packet_recv(conn, &req, NULL, 0, NULL), 1);
        send_json(conn, "{\"op\":\"counts\",\"servers\":{\"s0\":{\"calls\":2,\"errors\":0,\"refused\":0,"
                        "\"ms\":1},\"new\":{\"calls\":3,\"errors\":0,\"refused\":0,\"ms\":1},"
                        "\"newer\":{\"calls\":4,\"errors\":0,\"refused\":0,\"ms\":1}}}");
        for (unsigned i = 0; i < 100 && ended == 0; i++)
                ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) ended, 1);
        ASSERT_EQ_INT((int) totals.n, TOOL_STATS_SERVERS_MAX);
        ASSERT_EQ_INT((int) totals_of(&totals, "s0")->calls, 3);
        ASSERT_EQ_INT((int) totals_of(&totals, "new")->calls, 3);
        ASSERT_FALSE(totals_of(&totals, "newer"));
        ASSERT_EQ_INT(tool_stats_add(&totals, "Bad", &(ToolServerStats) {}), -EINVAL);
        tools_link_free(l);
        close(conn);
        close(listener);
        (void) unlink(path);
}

typedef struct Asked {
        unsigned n;
        BrokerConfirmAsk last;
} Asked;

static void on_confirm(ToolsLink *l, const BrokerConfirmAsk *ask, void *userdata) {
        Asked *a = userdata;

        a->n++;
        a->last = *ask;
}

/* The gateway's next answer on conn, read back. */
static BrokerConfirmAnswer answer_on(int conn) {
        _cleanup_json_ json_object *j = NULL;
        BrokerConfirmAnswer a = {};

        ASSERT_EQ_INT(packet_recv(conn, &j, NULL, 0, NULL), 1);
        ASSERT_STREQ(json_get_string(j, "op"), "confirmed");
        ASSERT_EQ_INT(broker_confirm_answer_parse(j, &a), 0);
        return a;
}

static void pump(sd_event *e, Asked *a, unsigned want) {
        for (unsigned i = 0; i < 100 && a->n < want; i++)
                ASSERT_TRUE(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

/* Questions to confirm a destructive tool: relayed only where someone can
 * answer, answers only to open questions, at most four open. */
TEST(test_confirm) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        BrokerConfirmAnswer got, yes = { .accept = true };
        Asked asked = {};
        int listener = fake_gateway(), conn;
        ToolsLink *l;

        ASSERT_EQ_INT(sd_event_new(&e), 0);

        /* Nobody to ask (the CLI, a session's call): no at once. */
        l = ready_link(e, listener, &conn);
        send_json(conn, "{\"op\":\"confirm\",\"id\":1,\"server\":\"files\",\"tool\":\"edit_file\"}");
        ASSERT_TRUE(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        got = answer_on(conn);
        ASSERT_EQ_U64(got.id, 1);
        ASSERT_FALSE(got.accept);
        ASSERT_CONTAINS(got.reason, "elicitation");
        yes.id = 1;
        ASSERT_EQ_INT(tools_link_confirm_answer(l, &yes), -ENOENT);
        tools_link_free(l);
        close(conn);

        l = ready_link(e, listener, &conn);
        tools_link_on_confirm(l, on_confirm, &asked);
        for (int i = 1; i <= 5; i++) {
                char m[128];
                (void) snprintf(m, sizeof m, "{\"op\":\"confirm\",\"id\":%d,\"server\":\"files\",\"tool\":\"t%d\"}",
                                i, i);
                send_json(conn, m);
        }
        pump(e, &asked, 4);
        ASSERT_TRUE(sd_event_run(e, 50 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) asked.n, 4);
        ASSERT_STREQ(asked.last.tool, "t4");
        /* The fifth: too many open, no at once. */
        got = answer_on(conn);
        ASSERT_EQ_U64(got.id, 5);
        ASSERT_FALSE(got.accept);
        ASSERT_CONTAINS(got.reason, "too many");

        /* An answer to an id never asked goes nowhere; an open one goes
         * through once. */
        yes.id = 9;
        ASSERT_EQ_INT(tools_link_confirm_answer(l, &yes), -ENOENT);
        yes.id = 2;
        ASSERT_EQ_INT(tools_link_confirm_answer(l, &yes), 0);
        got = answer_on(conn);
        ASSERT_EQ_U64(got.id, 2);
        ASSERT_TRUE(got.accept);
        ASSERT_EQ_INT(tools_link_confirm_answer(l, &yes), -ENOENT);

        /* Room again: the next question is asked. */
        send_json(conn, "{\"op\":\"confirm\",\"id\":6,\"server\":\"files\",\"tool\":\"t6\"}");
        pump(e, &asked, 5);
        ASSERT_EQ_INT((int) asked.n, 5);
        ASSERT_EQ_U64(asked.last.id, 6);

        /* A session's call ends: every open question is answered no. */
        tools_link_confirm_close_all(l, "the session's call ended");
        for (unsigned i = 0; i < 4; i++) {
                got = answer_on(conn);
                ASSERT_FALSE(got.accept);
                ASSERT_STREQ(got.reason, "the session's call ended");
        }
        yes.id = 6;
        ASSERT_EQ_INT(tools_link_confirm_answer(l, &yes), -ENOENT);
        send_json(conn, "{\"op\":\"confirm\",\"id\":8,\"server\":\"files\",\"tool\":\"t8\"}");
        pump(e, &asked, 6);
        ASSERT_EQ_INT((int) asked.n, 6);

        /* A malformed question, or one asked twice, breaks the protocol. */
        send_json(conn, "{\"op\":\"confirm\",\"id\":8,\"server\":\"files\",\"tool\":\"t8\"}");
        for (unsigned i = 0; i < 10; i++)
                ASSERT_TRUE(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        ASSERT_EQ_INT((int) asked.n, 6);
        {
                char b[8];
                ASSERT_EQ_INT((int) read(conn, b, sizeof b), 0);       /* closed */
        }
        tools_link_free(l);
        close(conn);
        close(listener);
        (void) unlink(path);
}

TEST(test_configured) {
        char dir[] = "/tmp/test-tools-link-XXXXXX", file[256];
        int fd;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_FALSE(tools_configured("/nonexistent/servers.d"));
        ASSERT_FALSE(tools_configured(dir));
        (void) snprintf(file, sizeof file, "%s/.hidden.conf", dir);
        ASSERT_TRUE((fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) >= 0);
        close(fd);
        (void) snprintf(file, sizeof file, "%s/README", dir);
        ASSERT_TRUE((fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) >= 0);
        close(fd);
        (void) snprintf(file, sizeof file, "%s/x.conf.d", dir);
        ASSERT_EQ_INT(mkdir(file, 0755), 0);
        ASSERT_FALSE(tools_configured(dir));
        (void) snprintf(file, sizeof file, "%s/everything.conf", dir);
        ASSERT_TRUE((fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) >= 0);
        close(fd);
        ASSERT_TRUE(tools_configured(dir));
        (void) unlink(file);
        (void) snprintf(file, sizeof file, "%s/x.conf.d", dir);
        (void) rmdir(file);
        (void) snprintf(file, sizeof file, "%s/README", dir);
        (void) unlink(file);
        (void) snprintf(file, sizeof file, "%s/.hidden.conf", dir);
        (void) unlink(file);
        ASSERT_EQ_INT(rmdir(dir), 0);
}

int main(void) {
        RUN(test_accepted);
        RUN(test_failures);
        RUN(test_end);
        RUN(test_query);
        RUN(test_totals);
        RUN(test_confirm);
        RUN(test_configured);
        return 0;
}
