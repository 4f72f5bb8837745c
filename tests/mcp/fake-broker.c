/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fake-broker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "launch-frame.h"
#include "macro.h"
#include "broker-proto.h"
#include "test-helpers.h"
#include "util.h"


static void run_close_output(FakeRun *r) {
        r->out_fd = safe_close(r->out_fd);
        r->err_fd = safe_close(r->err_fd);
}

static void run_stop(FakeRun *r) {
        r->in_io = sd_event_source_disable_unref(r->in_io);
        r->timer = sd_event_source_disable_unref(r->timer);
        r->in_fd = safe_close(r->in_fd);
        run_close_output(r);
}

static void run_free(FakeRun *r) {
        run_stop(r);
        r->sock_io = sd_event_source_disable_unref(r->sock_io);
        r->sock = safe_close(r->sock);
        json_object_put(r->request);
        free(r->input);
        free(r);
}

static void send_event(FakeRun *r, json_object *ev) {
        /* The client may be gone already (EPIPE): the real broker shrugs too. */
        (void) broker_send(r->sock, ev, NULL, 0);
        json_object_put(ev);
}

static void write_all(int fd, const char *s, size_t n) {
        /* Small amounts into an empty pipe: never blocks. The client may be
         * gone already (EPIPE), which a real broker shrugs off too; the
         * tests check what the client received. */
        if (n > 0)
                (void) loop_write(fd, s, n);
}

static int on_exit_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        FakeRun *r = userdata;
        json_object *ev = json_object_new_object();
        bool killed = r->timed_out || r->oom;

        write_all(r->out_fd, r->out, strlen(r->out));
        if (r->echo)
                write_all(r->out_fd, r->stdin_data, r->stdin_len);
        write_all(r->err_fd, r->err, strlen(r->err));
        run_close_output(r);

        json_object_object_add(ev, "event", json_object_new_string("exit"));
        json_object_object_add(ev, "run_id", json_object_new_string("fake-run"));
        json_object_object_add(ev, "exit_code", json_object_new_int(killed ? -1 : r->exit_code));
        json_object_object_add(ev, "signal", killed ? json_object_new_string("SIGKILL") : NULL);
        json_object_object_add(ev, "timed_out", json_object_new_boolean(r->timed_out));
        json_object_object_add(ev, "oom_killed", json_object_new_boolean(r->oom));
        json_object_object_add(ev, "cancelled", json_object_new_boolean(false));
        json_object_object_add(ev, "duration_ms", json_object_new_int(7));
        json_object_object_add(ev, "cpu_ms", json_object_new_int(3));
        json_object_object_add(ev, "memory_peak_bytes", json_object_new_int(4096));
        send_event(r, ev);
        r->finished = true;
        /* One connection, one run: the broker hangs up after the exit. */
        r->timer = sd_event_source_disable_unref(r->timer);
        r->sock_io = sd_event_source_disable_unref(r->sock_io);
        r->sock = safe_close(r->sock);
        return 0;
}

static void parse_script(FakeRun *r) {
        const char *p = r->code, *end = r->code + r->code_len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = (size_t) ((nl ?: end) - p);
                char line[300];

                (void) snprintf(line, sizeof line, "%.*s", (int) MIN(n, sizeof line - 1), p);
                if (strneq(line, "#out ", 5))
                        (void) snprintf(r->out + strlen(r->out), sizeof r->out - strlen(r->out), "%s\n", line + 5);
                else if (strneq(line, "#err ", 5))
                        (void) snprintf(r->err + strlen(r->err), sizeof r->err - strlen(r->err), "%s\n", line + 5);
                else if (streq(line, "#echo"))
                        r->echo = true;
                else if (strneq(line, "#exit ", 6))
                        r->exit_code = atoi(line + 6);
                else if (strneq(line, "#sleep ", 7))
                        r->delay_ms = (unsigned) atoi(line + 7);
                else if (streq(line, "#hang"))
                        r->hang = true;
                else if (streq(line, "#timeout"))
                        r->timed_out = true;
                else if (streq(line, "#oom"))
                        r->oom = true;
                p += n + (nl ? 1 : 0);
        }
}

static int on_input(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FakeRun *r = userdata;
        uint64_t code_len;

        for (;;) {
                ssize_t k;

                if (r->input_alloc - r->input_len < 4096) {
                        r->input_alloc = MAX(r->input_alloc * 2, (size_t) 65536);
                        r->input = realloc(r->input, r->input_alloc);
                        ASSERT_TRUE(r->input);
                }
                k = read(fd, r->input + r->input_len, r->input_alloc - r->input_len);
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                r->input_len += (size_t) k;
        }

        /* EOF: the client wrote the frame, the code and the program's stdin. */
        r->in_io = sd_event_source_disable_unref(r->in_io);
        r->in_fd = safe_close(r->in_fd);
        /* A client that hung up mid-way leaves a partial frame: no run. */
        if (r->client_closed ||
            launch_frame_parse((const uint8_t *) r->input, r->input_len, UINT64_MAX, &code_len) < 0 ||
            LAUNCH_FRAME_HEADER_SIZE + code_len > r->input_len)
                return 0;
        r->code = r->input + LAUNCH_FRAME_HEADER_SIZE;
        r->code_len = code_len;
        r->stdin_data = r->code + code_len;
        r->stdin_len = r->input_len - LAUNCH_FRAME_HEADER_SIZE - code_len;
        r->input_done = true;

        parse_script(r);
        if (!r->hang)
                ASSERT_TRUE(sd_event_add_time_relative(r->broker->event, &r->timer, CLOCK_MONOTONIC,
                                                       r->delay_ms * USEC_PER_MSEC, 1, on_exit_timer, r) >= 0);
        return 0;
}

static int on_sock(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FakeRun *r = userdata;
        FakeBroker *b = r->broker;
        json_object *msg = NULL, *ev;
        int fds[BROKER_MAX_FDS];
        size_t n_fds = 0;
        int k;

        k = broker_recv(fd, &msg, fds, BROKER_MAX_FDS, &n_fds);
        if (k == -EAGAIN)
                return 0;
        if (k <= 0) {
                /* The client hung up: as the real broker, stop the "unit". */
                if (!r->finished)
                        r->client_closed = true;
                run_stop(r);
                r->sock_io = sd_event_source_disable_unref(r->sock_io);
                return 0;
        }
        if (streq_ptr(json_object_get_string(json_object_object_get(msg, "op")), "info") && n_fds == 0) {
                ev = json_object_new_object();
                json_object_object_add(ev, "event", json_object_new_string("info"));
                json_object_object_add(ev, "version", json_object_new_string("fake"));
                json_object_object_add(ev, "sandbox", json_object_new_string("ok"));
                json_object_object_add(ev, "python_version", json_object_new_string("3.11.2"));
                send_event(r, ev);
                json_object_put(msg);
                return 0;
        }
        ASSERT_TRUE(!r->request);               /* one run per connection */
        ASSERT_STREQ(json_object_get_string(json_object_object_get(msg, "op")), "run");
        ASSERT_EQ_INT(n_fds, 3);
        r->request = msg;
        r->in_fd = fds[0];
        r->out_fd = fds[1];
        r->err_fd = fds[2];

        if (b->fail_code) {
                ev = json_object_new_object();
                json_object_object_add(ev, "event", json_object_new_string("error"));
                json_object_object_add(ev, "code", json_object_new_string(b->fail_code));
                json_object_object_add(ev, "message", json_object_new_string(b->fail_message ?: "scripted failure"));
                b->fail_code = b->fail_message = NULL;
                run_stop(r);
                send_event(r, ev);
                r->finished = r->errored = true;
                return 0;
        }

        ev = json_object_new_object();
        json_object_object_add(ev, "event", json_object_new_string("started"));
        json_object_object_add(ev, "run_id", json_object_new_string("fake-run"));
        json_object_object_add(ev, "unit", json_object_new_string("fake-run.service"));
        send_event(r, ev);

        ASSERT_EQ_INT(fd_nonblock(r->in_fd, true), 0);
        ASSERT_TRUE(sd_event_add_io(b->event, &r->in_io, r->in_fd, EPOLLIN, on_input, r) >= 0);
        return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FakeBroker *b = userdata;
        FakeRun *r;
        int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (cfd < 0)
                return 0;
        ASSERT_TRUE(b->n_runs < ELEMENTSOF(b->runs));
        r = calloc(1, sizeof *r);
        ASSERT_TRUE(r);
        *r = (FakeRun) { .broker = b, .index = b->n_runs, .sock = cfd, .in_fd = -EBADF, .out_fd = -EBADF, .err_fd = -EBADF };
        b->runs[b->n_runs++] = r;
        ASSERT_TRUE(sd_event_add_io(b->event, &r->sock_io, cfd, EPOLLIN, on_sock, r) >= 0);
        return 0;
}

int fake_broker_new(sd_event *e, FakeBroker **ret) {
        FakeBroker *b = calloc(1, sizeof *b);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        ASSERT_TRUE(b);
        b->event = sd_event_ref(e);
        (void) snprintf(b->dir, sizeof b->dir, "/tmp/test-mcp-broker.XXXXXX");
        ASSERT_TRUE(mkdtemp(b->dir));
        (void) snprintf(b->path, sizeof b->path, "%s/broker.sock", b->dir);
        ASSERT_TRUE(strlen(b->path) < sizeof sa.sun_path);
        memcpy(sa.sun_path, b->path, strlen(b->path) + 1);
        b->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        ASSERT_TRUE(b->listen_fd >= 0);
        ASSERT_EQ_INT(bind(b->listen_fd, (struct sockaddr *) &sa, sizeof sa), 0);
        ASSERT_EQ_INT(listen(b->listen_fd, 64), 0);
        ASSERT_TRUE(sd_event_add_io(e, &b->listen_io, b->listen_fd, EPOLLIN, on_accept, b) >= 0);
        *ret = b;
        return 0;
}

FakeBroker *fake_broker_free(FakeBroker *b) {
        if (!b)
                return NULL;
        for (unsigned i = 0; i < b->n_runs; i++)
                run_free(b->runs[i]);
        sd_event_source_disable_unref(b->listen_io);
        safe_close(b->listen_fd);
        (void) unlink(b->path);
        (void) rmdir(b->dir);
        sd_event_unref(b->event);
        free(b);
        return NULL;
}

unsigned fake_broker_n_started(const FakeBroker *b) {
        unsigned n = 0;
        for (unsigned i = 0; i < b->n_runs; i++)
                n += b->runs[i]->input_done;
        return n;
}

unsigned fake_broker_n_cancelled(const FakeBroker *b) {
        unsigned n = 0;
        for (unsigned i = 0; i < b->n_runs; i++)
                n += b->runs[i]->client_closed;
        return n;
}
