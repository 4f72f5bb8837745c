/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A local peer that sends requests but never reads the replies: the
 * connection stops reading its requests while its replies are unread (so it
 * cannot make us hold more and more, up to the drop), the unread
 * replies count in the memory budget, and once the peer reads, everything is
 * answered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake-broker.h"
#include "line-conn.h"
#include "macro.h"
#include "mcp-internal.h"       /* mcp_server_set_progress_interval() */
#include "test-helpers.h"
#include "util.h"

#define N_REQUESTS 20000

static bool closed;

static void on_closed(LineConn *c, void *userdata) {
        closed = true;
}

static void run_ms(sd_event *e, unsigned ms) {
        uint64_t end = now_usec() + ms * USEC_PER_MSEC;

        while (now_usec() < end)
                ASSERT_TRUE(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

/* Writes what the socket takes of buf from *off on. */
static void write_some(int fd, const char *buf, size_t size, size_t *off) {
        while (*off < size) {
                ssize_t k = write(fd, buf + *off, size - *off);
                if (k < 0) {
                        ASSERT_TRUE(errno == EAGAIN);
                        return;
                }
                *off += (size_t) k;
        }
}

/* Reads what there is; the number of lines in it. */
static size_t count_lines(int fd) {
        char buf[65536];
        size_t n = 0;
        ssize_t k;

        while ((k = read(fd, buf, sizeof buf)) > 0)
                for (ssize_t i = 0; i < k; i++)
                        n += buf[i] == '\n';
        return n;
}

/* Issue 37: a peer that sends its calls and then reads nothing while their
 * progress comes (every millisecond here, 8 calls that never end) is
 * dropped once more than a small backlog waits unread (before: at 64 MiB),
 * and all it held is given back. */
static void test_unread_progress(void) {
        MemBudget budget = { .max = 64 << 20 };
        McpPeer peer = { .transport = "unix", .uid = 1001, .pid = 1 };
        McpServerConfig cfg;
        char token[201], line[512];
        FakeBroker *broker;
        McpServer *server;
        LineConn *c;
        sd_event *e;
        int sv[2];

        closed = false;
        memset(token, 't', sizeof token - 1);
        token[sizeof token - 1] = 0;
        ASSERT_TRUE(sd_event_new(&e) >= 0);
        ASSERT_EQ_INT(fake_broker_new(e, &broker), 0);
        cfg = (McpServerConfig) { .broker_socket = broker->path, .default_timeout_s = 30, .max_timeout_s = 300,
                                  .max_output_bytes = 1 << 20, .max_code_bytes = 1 << 20, .max_concurrent = 4,
                                  .max_queue = 8, .budget = &budget };
        ASSERT_EQ_INT(mcp_server_new(e, &cfg, &server), 0);
        mcp_server_set_progress_interval(server, 1000);
        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        ASSERT_EQ_INT(line_conn_new(e, server, sv[0], sv[0], &peer, 1 << 20, on_closed, NULL, &c), 0);
        line_conn_set_budget(c, &budget);
        ASSERT_EQ_INT(line_conn_start(c), 0);

        (void) snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                                           "{\"protocolVersion\":\"2025-06-18\"}}\n");
        ASSERT_TRUE(write(sv[1], line, strlen(line)) == (ssize_t) strlen(line));
        for (int i = 1; i <= 8; i++) {
                (void) snprintf(line, sizeof line,
                                "{\"jsonrpc\":\"2.0\",\"id\":%i,\"method\":\"tools/call\",\"params\":{"
                                "\"name\":\"exec\",\"arguments\":{\"code\":\"#hang\"},"
                                "\"_meta\":{\"progressToken\":\"%s\"}}}\n", i, token);
                ASSERT_TRUE(write(sv[1], line, strlen(line)) == (ssize_t) strlen(line));
        }
        for (int i = 0; i < 300 && !closed; i++)
                run_ms(e, 10);
        ASSERT_TRUE(closed);
        line_conn_free(c);
        ASSERT_EQ_U64(budget.used, 0);
        mcp_server_free(server);
        fake_broker_free(broker);
        safe_close(sv[1]);
        sd_event_unref(e);
}

int main(void) {
        McpServerConfig cfg = { .default_timeout_s = 30, .max_timeout_s = 300, .max_output_bytes = 1 << 20,
                                .max_code_bytes = 1 << 20, .max_concurrent = 1 };
        MemBudget budget = { .max = 64 << 20 };
        McpPeer peer = { .transport = "stdio", .uid = 1000, .pid = 1 };
        _cleanup_free_ char *requests = NULL;
        size_t size = 0, off = 0, answered = 0;
        McpServer *server;
        LineConn *c;
        sd_event *e;
        int sv[2];

        /* Requests that each get an error reply (no initialize first). */
        requests = malloc((size_t) N_REQUESTS * 64);
        ASSERT_TRUE(requests);
        for (int i = 0; i < N_REQUESTS; i++)
                size += (size_t) sprintf(requests + size, "{\"jsonrpc\":\"2.0\",\"id\":%i,\"method\":\"tools/list\"}\n", i);

        ASSERT_TRUE(sd_event_new(&e) >= 0);
        cfg.budget = &budget;
        ASSERT_EQ_INT(mcp_server_new(e, &cfg, &server), 0);
        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        ASSERT_EQ_INT(line_conn_new(e, server, sv[0], sv[0], &peer, 1 << 20, on_closed, NULL, &c), 0);
        line_conn_set_budget(c, &budget);
        ASSERT_EQ_INT(line_conn_start(c), 0);

        /* The peer writes and never reads: the server stops reading it long
         * before all its requests are in. */
        for (int i = 0; i < 200 && off < size; i++) {
                write_some(sv[1], requests, size, &off);
                run_ms(e, 5);
        }
        ASSERT_FALSE(closed);
        if (off >= size)
                ASSERT_FAIL_("the peer got all %zu bytes of requests in without reading a reply", size);
        /* What it holds unread counts, and is bounded by the pause, not by
         * the backlog at which a peer is dropped. */
        ASSERT_TRUE(budget.used > 0);
        ASSERT_TRUE(budget.used < 2 << 20);
        ASSERT_TRUE(mem_budget_caller_used(&budget, "uid:1000") == budget.used);

        /* Once it reads, everything is answered. */
        for (int i = 0; i < 2000 && answered < N_REQUESTS; i++) {
                write_some(sv[1], requests, size, &off);
                answered += count_lines(sv[1]);
                run_ms(e, 1);
        }
        ASSERT_EQ_U64(off, size);
        ASSERT_EQ_U64(answered, N_REQUESTS);
        ASSERT_FALSE(closed);

        line_conn_free(c);
        ASSERT_EQ_U64(budget.used, 0);
        mcp_server_free(server);
        safe_close(sv[1]);
        sd_event_unref(e);

        test_unread_progress();
        return 0;
}
