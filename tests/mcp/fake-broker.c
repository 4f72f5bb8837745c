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
#include "test-images.h"
#include "util.h"


static void run_close_output(FakeRun *r) {
        r->out_fd = safe_close(r->out_fd);
        r->err_fd = safe_close(r->err_fd);
}

static void run_close_channel(FakeRun *r) {
        r->res_io = sd_event_source_disable_unref(r->res_io);
        r->res_fd = safe_close(r->res_fd);
}

static void run_stop(FakeRun *r) {
        r->in_io = sd_event_source_disable_unref(r->in_io);
        r->timer = sd_event_source_disable_unref(r->timer);
        r->in_fd = safe_close(r->in_fd);
        run_close_output(r);
        run_close_channel(r);
}

static void run_free(FakeRun *r) {
        run_stop(r);
        r->sock_io = sd_event_source_disable_unref(r->sock_io);
        r->sock = safe_close(r->sock);
        json_object_put(r->request);
        json_object_put(r->confirm_answers);
        frame_buf_done(&r->channel);
        free(r->input);
        free(r);
}

static void send_event(FakeRun *r, json_object *ev) {
        /* The client may be gone already (EPIPE): the real broker shrugs too. */
        (void) packet_send(r->sock, ev, NULL, 0);
        json_object_put(ev);
}

static void write_all(int fd, const char *s, size_t n) {
        /* Small amounts into an empty pipe: never blocks. The client may be
         * gone already (EPIPE), which a real broker shrugs off too; the
         * tests check what the client received. */
        if (n > 0)
                (void) loop_write(fd, s, n);
}

static void send_exit(FakeRun *r) {
        json_object *ev;
        bool killed = r->timed_out || r->oom;

        if (r->finished)
                return;
        ev = json_object_new_object();
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
        if (json_get_string(r->request, "network")) {
                /* As the broker reports egressd's counts; a verdict the
                 * front end does not know must not reach the model. */
                json_object *eg = json_tokener_parse("{\"connections\":{\"allowed\":2,\"martian\":1},"
                                                     "\"bytes_up\":5,\"bytes_down\":6,\"extra\":true}");
                json_object_object_add(eg, "policy", json_object_new_string(json_get_string(r->request, "network")));
                json_object_object_add(ev, "egress", eg);
        }
        if (r->broker->tools)
                json_object_object_add(ev, "tool_calls", json_tokener_parse("{\"everything\":{\"calls\":2,"
                                                                            "\"errors\":0,\"refused\":0,\"ms\":1}}"));
        send_event(r, ev);
        r->finished = true;
        /* One connection, one run: the broker hangs up after the exit. */
        r->timer = sd_event_source_disable_unref(r->timer);
        r->sock_io = sd_event_source_disable_unref(r->sock_io);
        r->sock = safe_close(r->sock);
}

static int on_late_exit(sd_event_source *s, uint64_t usec, void *userdata) {
        FakeRun *r = userdata;

        r->timer = sd_event_source_disable_unref(r->timer);
        send_exit(r);
        return 0;
}

/* Writes the result channel as the reader takes it (it shares our loop, so
 * writing it all at once could block forever). */
static int on_channel(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FakeRun *r = userdata;

        while (r->channel_written < r->channel.size) {
                ssize_t k = write(fd, r->channel.data + r->channel_written, r->channel.size - r->channel_written);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k < 0)
                        break;          /* EPIPE: the reader has had enough */
                r->channel_written += (size_t) k;
        }
        /* The launcher is gone: its end of the channel closes with it. */
        run_close_channel(r);
        r->channel_done = true;
        if (r->exit_late_ms > 0) {
                /* The unit's teardown takes a while: the exit comes later. */
                r->timer = sd_event_source_disable_unref(r->timer);
                ASSERT_TRUE(sd_event_add_time_relative(r->broker->event, &r->timer, CLOCK_MONOTONIC,
                                                       r->exit_late_ms * USEC_PER_MSEC, 0, on_late_exit, r) >= 0);
                return 0;
        }
        send_exit(r);
        return 0;
}

static int on_exit_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        FakeRun *r = userdata;

        write_all(r->out_fd, r->out, strlen(r->out));
        if (r->echo)
                write_all(r->out_fd, r->stdin_data, r->stdin_len);
        write_all(r->err_fd, r->err, strlen(r->err));
        run_close_output(r);
        r->timer = sd_event_source_disable_unref(r->timer);

        if (r->res_fd < 0) {
                send_exit(r);
                return 0;
        }
        if (r->exit_first)
                send_exit(r);
        ASSERT_EQ_INT(fd_nonblock(r->res_fd, true), 0);
        ASSERT_TRUE(sd_event_add_io(r->broker->event, &r->res_io, r->res_fd, EPOLLOUT, on_channel, r) >= 0);
        return 0;
}

static int unhex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A frame for an output at path ("/tmp/outputs/…"), meta built by json-c. */
static void put_output(FrameBuf *b, ResultFrameType type, const char *path, size_t path_len, const void *data,
                       size_t n) {
        json_object *m = json_object_new_object();

        ASSERT_TRUE(m);
        if (type == RESULT_FRAME_IMAGE)
                json_object_object_add(m, "source", json_object_new_string("file"));
        json_object_object_add(m, "path", json_object_new_string_len(path, (int) path_len));
        frame_put(b, type, json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN), data, n);
        json_object_put(m);
}

/* The channel's frames from the directives (after the flags are known). */
static void script_channel(FakeRun *r) {
        const char *p = r->code, *end = r->code + r->code_len;
        FrameBuf body = {}, pre = {};
        bool huge = false;

        /* Killed at a timeout or by the OOM killer: the launcher says nothing. */
        if (r->timed_out || r->oom)
                return;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = (size_t) ((nl ?: end) - p);
                char line[300], meta[400];

                (void) snprintf(line, sizeof line, "%.*s", (int) MIN(n, sizeof line - 1), p);
                p += n + (nl ? 1 : 0);
                if (strneq(line, "#packages ", 10))
                        /* The installer's report comes before the code runs. */
                        frame_put(&pre, RESULT_FRAME_PACKAGES, line + 10, FAKE_PIP_LOG, strlen(FAKE_PIP_LOG));
                else if (streq(line, "#figure")) {
                        (void) snprintf(meta, sizeof meta, "{\"source\":\"figure\",\"index\":%u}", ++r->figures);
                        frame_put(&body, RESULT_FRAME_IMAGE, meta, png_3x2, sizeof png_3x2);
                } else if (strneq(line, "#notimage ", 10))
                        put_output(&body, RESULT_FRAME_IMAGE, line + 10, strlen(line + 10), "not an image", 12);
                else if (strneq(line, "#image ", 7)) {
                        const char *path = line + 7, *ext = strrchr(path, '.') ?: "";
                        const void *d = "not an image";
                        size_t len = 12;
                        if (streq(ext, ".png")) d = png_3x2, len = sizeof png_3x2;
                        else if (streq(ext, ".jpg")) d = jpeg_3x2, len = sizeof jpeg_3x2;
                        else if (streq(ext, ".gif")) d = gif_3x2, len = sizeof gif_3x2;
                        else if (streq(ext, ".webp")) d = webp_lossy_3x2, len = sizeof webp_lossy_3x2;
                        put_output(&body, RESULT_FRAME_IMAGE, path, strlen(path), d, len);
                } else if (strneq(line, "#file ", 6)) {
                        char *sp = strchr(line + 6, ' ');
                        const char *text = sp ? sp + 1 : "";
                        if (sp)
                                *sp = 0;
                        put_output(&body, RESULT_FRAME_FILE, line + 6, strlen(line + 6), text, strlen(text));
                } else if (strneq(line, "#blob ", 6))
                        put_output(&body, RESULT_FRAME_FILE, line + 6, strlen(line + 6), "\x00\x01\xfe\xff", 4);
                else if (strneq(line, "#skip ", 6)) {
                        char *sp = strchr(line + 6, ' ');
                        if (sp)
                                *sp = 0;
                        (void) snprintf(meta, sizeof meta, "{\"path\":\"%s\",\"reason\":\"%s\"}", line + 6,
                                        sp ? sp + 1 : "");
                        frame_put(&body, RESULT_FRAME_SKIPPED, meta, NULL, 0);
                } else if (streq(line, "#returnfiles"))
                        for (size_t i = 0; i < r->n_files; i++) {
                                char path[300];
                                int l = snprintf(path, sizeof path, "/tmp/outputs/%.*s", (int) r->files[i].name_len,
                                                 r->files[i].name);
                                put_output(&body, RESULT_FRAME_FILE, path, (size_t) l, r->files[i].data,
                                           r->files[i].size);
                        }
                else if (strneq(line, "#raw ", 5)) {
                        for (const char *h = line + 5; unhex(h[0]) >= 0 && unhex(h[1]) >= 0; h += 2) {
                                uint8_t byte = (uint8_t) (unhex(h[0]) << 4 | unhex(h[1]));
                                frame_buf_put(&body, &byte, 1);
                        }
                } else if (strneq(line, "#flood ", 7)) {
                        unsigned count = (unsigned) atoi(line + 7);
                        for (unsigned i = 0; i < count; i++) {
                                (void) snprintf(meta, sizeof meta, "{\"path\":\"/tmp/outputs/f%u\",\"reason\":\"flood\"}", i);
                                frame_put(&body, RESULT_FRAME_SKIPPED, meta, NULL, 0);
                        }
                } else if (streq(line, "#huge")) {
                        static const char m[] = "{\"path\":\"/tmp/outputs/sparse\"}";
                        frame_put_raw(&body, RESULT_FRAME_FILE, sizeof m - 1, UINT64_C(1) << 40, m, sizeof m - 1, NULL, 0);
                        huge = true;
                }
        }

        frame_buf_put(&r->channel, pre.data, pre.size);
        frame_buf_done(&pre);
        if (!r->no_status) {
                char meta[64];
                if (r->status_signal > 0)
                        (void) snprintf(meta, sizeof meta, "{\"signal\":%d}", r->status_signal);
                else
                        (void) snprintf(meta, sizeof meta, "{\"exit_code\":%d,\"duration_us\":5000}",
                                        r->status_exit >= 0 ? r->status_exit : r->exit_code);
                frame_put(&r->channel, RESULT_FRAME_STATUS, meta, NULL, 0);
        }
        frame_buf_put(&r->channel, body.data, body.size);
        frame_buf_done(&body);
        if (!r->no_end && !huge)
                frame_put(&r->channel, RESULT_FRAME_END, NULL, NULL, 0);
}

static void parse_script(FakeRun *r) {
        const char *p = r->code, *end = r->code + r->code_len;

        r->status_exit = -1;
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
                else if (strneq(line, "#status-exit ", 13))
                        r->status_exit = atoi(line + 13);
                else if (strneq(line, "#status-signal ", 15))
                        r->status_signal = atoi(line + 15);
                else if (streq(line, "#nostatus"))
                        r->no_status = true;
                else if (streq(line, "#noend"))
                        r->no_end = true;
                else if (streq(line, "#exitfirst"))
                        r->exit_first = true;
                else if (strneq(line, "#confirm ", 9))
                        (void) snprintf(r->confirm, sizeof r->confirm, "%s", line + 9);
                else if (strneq(line, "#exitlate ", 10))
                        r->exit_late_ms = (unsigned) atoi(line + 10);
                p += n + (nl ? 1 : 0);
        }
        if (r->res_fd >= 0)
                script_channel(r);
}

/* A version-2 frame's input files, from p on; the rest is the program's
 * stdin. False if they are not all there. */
static bool parse_files(FakeRun *r, const char **p, const char *end) {
        uint32_t count;

        if ((size_t) (end - *p) < LAUNCH_FILES_HEADER_SIZE || launch_files_parse((const uint8_t *) *p, &count) < 0)
                return false;
        *p += LAUNCH_FILES_HEADER_SIZE;
        for (uint32_t i = 0; i < count; i++) {
                uint16_t name_len;
                uint64_t size;

                if ((size_t) (end - *p) < LAUNCH_FILE_ENTRY_HEADER_SIZE ||
                    launch_file_entry_parse((const uint8_t *) *p, UINT64_MAX, &name_len, &size) < 0)
                        return false;
                *p += LAUNCH_FILE_ENTRY_HEADER_SIZE;
                if ((uint64_t) (end - *p) < name_len + size || !launch_file_name_valid(*p, name_len))
                        return false;
                r->files[r->n_files++] = (FakeInputFile) { .name = *p, .name_len = name_len, .data = *p + name_len,
                                                           .size = (size_t) size };
                *p += name_len + size;
        }
        return true;
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
            launch_frame_parse_version((const uint8_t *) r->input, r->input_len, UINT64_MAX, &code_len, &r->version) <
                    0 ||
            LAUNCH_FRAME_HEADER_SIZE + code_len > r->input_len)
                return 0;
        r->code = r->input + LAUNCH_FRAME_HEADER_SIZE;
        r->code_len = code_len;
        r->stdin_data = r->code + code_len;
        /* Files only where the client knows the broker takes them. */
        if (r->version == LAUNCH_FRAME_VERSION_FILES) {
                ASSERT_TRUE(r->broker->result_channel && r->res_fd >= 0);
                if (!parse_files(r, &r->stdin_data, r->input + r->input_len))
                        return 0;
        }
        r->stdin_len = (size_t) (r->input + r->input_len - r->stdin_data);
        r->input_done = true;

        parse_script(r);
        if (r->confirm[0] && json_get_bool(r->request, "confirm")) {
                char server[100] = "", tool[100] = "";
                json_object *ev = json_object_new_object();

                ASSERT_EQ_INT(sscanf(r->confirm, "%99s %99s", server, tool), 2);
                json_object_object_add(ev, "event", json_object_new_string("confirm"));
                json_object_object_add(ev, "id", json_object_new_int(7));
                json_object_object_add(ev, "server", json_object_new_string(server));
                json_object_object_add(ev, "tool", json_object_new_string(tool));
                send_event(r, ev);
                return 0;               /* the exit once the answer is there (on_sock) */
        }
        if (r->confirm[0])
                (void) snprintf(r->out + strlen(r->out), sizeof r->out - strlen(r->out), "confirm: not asked\n");
        if (!r->hang)
                ASSERT_TRUE(sd_event_add_time_relative(r->broker->event, &r->timer, CLOCK_MONOTONIC,
                                                       r->delay_ms * USEC_PER_MSEC, 1, on_exit_timer, r) >= 0);
        return 0;
}

static int on_sock(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FakeRun *r = userdata;
        FakeBroker *b = r->broker;
        json_object *msg = NULL, *ev;
        int fds[PACKET_MAX_FDS];
        size_t n_fds = 0;
        int k;

        k = packet_recv(fd, &msg, fds, PACKET_MAX_FDS, &n_fds);
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
                if (b->result_channel)
                        json_object_object_add(ev, "result_channel", json_object_new_boolean(true));
                send_event(r, ev);
                json_object_put(msg);
                return 0;
        }
        if (streq_ptr(json_object_get_string(json_object_object_get(msg, "op")), "confirm_answer") && n_fds == 0) {
                if (!r->confirm_answers)
                        r->confirm_answers = json_object_new_array();
                ASSERT_EQ_INT(json_object_array_add(r->confirm_answers, msg), 0);
                /* The first answer to the question ends the run. */
                if (json_object_array_length(r->confirm_answers) == 1 && !r->finished) {
                        (void) snprintf(r->out + strlen(r->out), sizeof r->out - strlen(r->out),
                                        "confirm: accept=%d reason=%s\n", json_get_bool(msg, "accept"),
                                        json_get_string(msg, "reason") ?: "");
                        ASSERT_TRUE(sd_event_add_time_relative(b->event, &r->timer, CLOCK_MONOTONIC, 0, 1,
                                                               on_exit_timer, r) >= 0);
                }
                return 0;
        }
        if (streq_ptr(json_object_get_string(json_object_object_get(msg, "op")), "session_create") && n_fds == 0) {
                json_object_put(b->session_create);
                b->session_create = msg;
                ev = json_object_new_object();
                json_object_object_add(ev, "event", json_object_new_string("session"));
                json_object_object_add(ev, "session", json_object_new_string(FAKE_SESSION_ID));
                json_object_object_add(ev, "idle_timeout_s", json_object_new_int(600));
                json_object_object_add(ev, "max_lifetime_s", json_object_new_int(3600));
                json_object_object_add(ev, "memory_max_bytes", json_object_new_int64(256 << 20));
                send_event(r, ev);
                return 0;
        }
        ASSERT_TRUE(!r->request);               /* one run per connection */
        /* A session's call runs as a run does here. */
        if (!streq_ptr(json_object_get_string(json_object_object_get(msg, "op")), "session_exec"))
                ASSERT_STREQ(json_object_get_string(json_object_object_get(msg, "op")), "run");
        /* A fourth fd only to a broker that said it takes one. */
        ASSERT_EQ_INT(n_fds, b->result_channel ? 4 : 3);
        r->request = msg;
        r->in_fd = fds[0];
        r->out_fd = fds[1];
        r->err_fd = fds[2];
        if (n_fds == 4)
                r->res_fd = fds[3];

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
        if (b->tools)
                json_object_object_add(ev, "tools", json_object_new_boolean(true));
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
        *r = (FakeRun) { .broker = b, .index = b->n_runs, .sock = cfd, .in_fd = -EBADF, .out_fd = -EBADF, .err_fd = -EBADF,
                         .res_fd = -EBADF };
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
        json_object_put(b->session_create);
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
