/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "exec-client.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "json-util.h"
#include "launch-frame.h"
#include "macro.h"
#include "output.h"
#include "broker-proto.h"
#include "utf8.h"
#include "util.h"

/* After the exit event, how long to wait for the last output to drain. The
 * unit's cgroup is gone by then, so only buffered bytes remain. */
#define DRAIN_GRACE_USEC (2 * USEC_PER_SEC)
/* Beyond the run's own timeout, how long before we give up on the broker. */
#define BROKER_SLACK_USEC (60 * USEC_PER_SEC)

struct ExecClient {
        sd_event *event;
        int sock, in_fd, out_fd, err_fd;
        sd_event_source *sock_io, *in_io, *out_io, *err_io, *timer;

        /* What still has to go into the sandbox's stdin. */
        uint8_t header[LAUNCH_FRAME_HEADER_SIZE];
        const char *code, *stdin_data;
        size_t code_len, stdin_len, written;

        OutputCapture out;
        uint64_t max_output_bytes;
        bool got_final, out_eof, err_eof, finished, cancelled;
        uint64_t start_usec;
        ExecResult result;
        exec_done_t done;
        void *userdata;
};

static void exec_result_done(ExecResult *r) {
        assert(r);

        free(r->error_message);
        free(r->stdout_text);
        free(r->stderr_text);
        free(r->signal);
        free(r->run_id);
        *r = (ExecResult) {};
}

static void close_input(ExecClient *c) {
        assert(c);

        c->in_io = sd_event_source_disable_unref(c->in_io);
        c->in_fd = safe_close(c->in_fd);
}

static void finish(ExecClient *c) {
        ExecResult *r = &c->result;

        if (c->finished)
                return;
        c->finished = true;
        close_input(c);
        c->sock_io = sd_event_source_disable_unref(c->sock_io);
        c->out_io = sd_event_source_disable_unref(c->out_io);
        c->err_io = sd_event_source_disable_unref(c->err_io);
        c->timer = sd_event_source_disable_unref(c->timer);

        if (r->error == BROKER_ERROR_NONE) {
                r->stdout_text = utf8_sanitize(c->out.data[OUTPUT_STDOUT] ?: "", c->out.size[OUTPUT_STDOUT], &r->stdout_len);
                r->stderr_text = utf8_sanitize(c->out.data[OUTPUT_STDERR] ?: "", c->out.size[OUTPUT_STDERR], &r->stderr_len);
                r->truncated = c->out.truncated;
                if (!r->stdout_text || !r->stderr_text) {
                        r->error = BROKER_ERROR_INTERNAL;
                        r->error_message = strdup("out of memory");
                }
        }
        r->cancelled = r->cancelled || c->cancelled;
        c->done(c, r, c->userdata);
}

static void fail(ExecClient *c, BrokerError error, const char *message) {
        assert(error > BROKER_ERROR_NONE && error < _BROKER_ERROR_MAX);

        if (c->finished || c->result.error != BROKER_ERROR_NONE)
                return;
        c->result.error = error;
        c->result.error_message = strdup(message);
        finish(c);
}

static void maybe_finish(ExecClient *c) {
        assert(c);

        if (c->got_final && c->out_eof && c->err_eof)
                finish(c);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ExecClient *c = userdata;

        if (c->got_final)
                finish(c);      /* drain grace over: report what we have */
        else
                fail(c, BROKER_ERROR_LOST, "the broker did not report the end of the run in time");
        return 0;
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ExecClient *c = userdata;
        OutputStream which = fd == c->out_fd ? OUTPUT_STDOUT : OUTPUT_STDERR;
        uint8_t buf[64 * 1024];

        for (unsigned i = 0; i < 16; i++) {
                ssize_t k = read(fd, buf, sizeof buf);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        k = 0;
                }
                if (k == 0) {
                        if (which == OUTPUT_STDOUT) {
                                c->out_eof = true;
                                c->out_io = sd_event_source_disable_unref(c->out_io);
                        } else {
                                c->err_eof = true;
                                c->err_io = sd_event_source_disable_unref(c->err_io);
                        }
                        maybe_finish(c);
                        return 0;
                }
                /* Past the limit the bytes are read and dropped, so a flood
                 * never blocks the program nor grows our memory. */
                if (output_capture_append(&c->out, which, buf, (size_t) k) < 0) {
                        fail(c, BROKER_ERROR_INTERNAL, "out of memory");
                        return 0;
                }
        }
        return 0;
}

static int on_input(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ExecClient *c = userdata;

        for (;;) {
                const uint8_t *p;
                size_t n, off = c->written;
                ssize_t k;

                if (off < sizeof c->header) {
                        p = c->header + off;
                        n = sizeof c->header - off;
                } else if ((off -= sizeof c->header) < c->code_len) {
                        p = (const uint8_t *) c->code + off;
                        n = c->code_len - off;
                } else if ((off -= c->code_len) < c->stdin_len) {
                        p = (const uint8_t *) c->stdin_data + off;
                        n = c->stdin_len - off;
                } else {
                        close_input(c);         /* EOF for the program */
                        return 0;
                }

                k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        /* EPIPE: the program stopped reading its stdin; fine. */
                        close_input(c);
                        return 0;
                }
                c->written += (size_t) k;
        }
}

static int on_socket(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ExecClient *c = userdata;
        _cleanup_json_ json_object *msg = NULL;
        const char *event;
        int r;

        r = broker_recv(fd, &msg, NULL, 0, NULL);
        if (r == -EAGAIN)
                return 0;
        if (r <= 0) {
                c->sock_io = sd_event_source_disable_unref(c->sock_io);
                if (!c->got_final)
                        fail(c, BROKER_ERROR_UNAVAILABLE, "the broker closed the connection before the run ended");
                return 0;
        }
        event = json_get_string(msg, "event");
        if (!event)
                return 0;

        if (streq(event, "started")) {
                free(c->result.run_id);
                c->result.run_id = strdup_or_null(json_get_string(msg, "run_id"));
                /* Only now the code goes in: the broker watches the unit
                 * from here on (see the broker's OOM watch). */
                if (c->in_fd >= 0 && !c->in_io &&
                    sd_event_add_io(c->event, &c->in_io, c->in_fd, EPOLLOUT, on_input, c) < 0)
                        fail(c, BROKER_ERROR_INTERNAL, "cannot watch the sandbox's stdin");
        } else if (streq(event, "exit")) {
                ExecResult *res = &c->result;
                c->got_final = true;
                res->exit_code = (int) json_get_int64(msg, "exit_code", -1);
                res->signal = strdup_or_null(json_get_string(msg, "signal"));
                res->timed_out = json_get_bool(msg, "timed_out");
                res->oom_killed = json_get_bool(msg, "oom_killed");
                res->cancelled = json_get_bool(msg, "cancelled");
                res->duration_ms = (uint64_t) MAX(json_get_int64(msg, "duration_ms", 0), 0);
                res->cpu_ms = json_get_int64(msg, "cpu_ms", -1);
                res->memory_peak_bytes = json_get_int64(msg, "memory_peak_bytes", -1);
                if (!res->run_id)
                        res->run_id = strdup_or_null(json_get_string(msg, "run_id"));
                c->sock_io = sd_event_source_disable_unref(c->sock_io);
                /* The sandbox is gone; give buffered output a moment. */
                (void) sd_event_source_set_time_relative(c->timer, DRAIN_GRACE_USEC);
                maybe_finish(c);
        } else if (streq(event, "error")) {
                BrokerError e = broker_error_from_string(json_get_string(msg, "code"));
                const char *m = json_get_string(msg, "message");

                fail(c, e > BROKER_ERROR_NONE ? e : BROKER_ERROR_UNKNOWN, m ?: "the broker reported an error");
        }
        return 0;
}

/* The run request, with the sandbox's ends of the three pipes. */
static int send_run_request(int sock, const ExecRequest *req, int in_fd, int out_fd, int err_fd) {
        _cleanup_json_ json_object *msg = NULL;

        assert(req);

        msg = json_object_new_object();
        if (!msg)
                return -ENOMEM;
        json_object_object_add(msg, "op", json_object_new_string("run"));
        json_object_object_add(msg, "timeout_s", json_object_new_int64((int64_t) req->timeout_s));
        if (req->tag)
                json_object_object_add(msg, "tag", json_object_new_string(req->tag));
        return broker_send(sock, msg, (int[]) { in_fd, out_fd, err_fd }, 3);
}

int exec_client_start(sd_event *e, const char *socket_path, const ExecRequest *req, exec_done_t done,
                      void *userdata, ExecClient **ret) {
        _cleanup_close_pair_ int in[2] = { -EBADF, -EBADF }, out[2] = { -EBADF, -EBADF }, err[2] = { -EBADF, -EBADF };
        _cleanup_(exec_client_freep) ExecClient *c = NULL;
        int r;

        assert(e);
        assert(socket_path);
        assert(req);
        assert(done);
        assert(ret);

        if (!req->code || req->code_len == 0)
                return -EINVAL;

        c = new0(ExecClient, 1);
        if (!c)
                return -ENOMEM;
        c->event = sd_event_ref(e);
        c->sock = c->in_fd = c->out_fd = c->err_fd = -EBADF;
        c->done = done;
        c->userdata = userdata;
        c->code = req->code;
        c->code_len = req->code_len;
        c->stdin_data = req->stdin_data;
        c->stdin_len = req->stdin_data ? req->stdin_len : 0;
        c->start_usec = now_usec();
        c->result.exit_code = -1;
        c->result.cpu_ms = c->result.memory_peak_bytes = -1;
        launch_frame_header(req->code_len, c->header);
        output_capture_init(&c->out, req->max_output_bytes);
        c->max_output_bytes = req->max_output_bytes;

        c->sock = broker_connect(socket_path);
        if (c->sock < 0)
                return c->sock;

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                return negative_errno();
        /* Our ends are non-blocking; the sandbox's ends stay blocking. */
        if ((r = fd_nonblock(in[1], true)) < 0 || (r = fd_nonblock(out[0], true)) < 0 ||
            (r = fd_nonblock(err[0], true)) < 0)
                return r;

        r = send_run_request(c->sock, req, in[0], out[1], err[1]);
        if (r < 0)
                return r;
        /* Only the sandbox may hold the far ends, so EOF means it is gone. */
        in[0] = safe_close(in[0]);
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);

        c->in_fd = TAKE_FD(in[1]);
        c->out_fd = TAKE_FD(out[0]);
        c->err_fd = TAKE_FD(err[0]);

        if ((r = sd_event_add_io(e, &c->sock_io, c->sock, EPOLLIN, on_socket, c)) < 0 ||
            (r = sd_event_add_io(e, &c->out_io, c->out_fd, EPOLLIN, on_output, c)) < 0 ||
            (r = sd_event_add_io(e, &c->err_io, c->err_fd, EPOLLIN, on_output, c)) < 0)
                return r;
        r = sd_event_add_time_relative(e, &c->timer, CLOCK_MONOTONIC,
                                       (req->timeout_s > 0 ? req->timeout_s : 86400) * USEC_PER_SEC + BROKER_SLACK_USEC,
                                       0, on_timer, c);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(c);
        return 0;
}

void exec_client_cancel(ExecClient *c) {
        if (!c || c->finished)
                return;
        c->cancelled = true;
        c->result.cancelled = true;
        /* Closing the connection is the cancel: the broker stops the unit. */
        c->sock_io = sd_event_source_disable_unref(c->sock_io);
        c->sock = safe_close(c->sock);
        c->got_final = true;
        (void) sd_event_source_set_time_relative(c->timer, DRAIN_GRACE_USEC);
        maybe_finish(c);
}

ExecClient *exec_client_free(ExecClient *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->sock_io);
        sd_event_source_disable_unref(c->in_io);
        sd_event_source_disable_unref(c->out_io);
        sd_event_source_disable_unref(c->err_io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->sock);
        safe_close(c->in_fd);
        safe_close(c->out_fd);
        safe_close(c->err_fd);
        output_capture_done(&c->out);
        exec_result_done(&c->result);
        sd_event_unref(c->event);
        free(c);
        return NULL;
}

uint64_t exec_client_output_bytes(const ExecClient *c) {
        assert(c);

        return c->out.seen;
}

uint64_t exec_client_elapsed_usec(const ExecClient *c) {
        assert(c);

        return now_usec() - c->start_usec;
}

json_object *exec_result_to_json(const ExecResult *r) {
        json_object *j = json_object_new_object();

        assert(r);

        if (!j)
                return NULL;
        json_object_object_add(j, "stdout", json_object_new_string_len(r->stdout_text ?: "", (int) r->stdout_len));
        json_object_object_add(j, "stderr", json_object_new_string_len(r->stderr_text ?: "", (int) r->stderr_len));
        json_object_object_add(j, "exit_code", json_object_new_int(r->exit_code));
        json_object_object_add(j, "duration_ms", json_object_new_int64((int64_t) r->duration_ms));
        json_object_object_add(j, "truncated", json_object_new_boolean(r->truncated));
        json_object_object_add(j, "timed_out", json_object_new_boolean(r->timed_out));
        json_object_object_add(j, "oom_killed", json_object_new_boolean(r->oom_killed));
        json_object_object_add(j, "signal", r->signal ? json_object_new_string(r->signal) : NULL);
        json_object_object_add(j, "cpu_ms", r->cpu_ms >= 0 ? json_object_new_int64(r->cpu_ms) : NULL);
        json_object_object_add(j, "memory_peak_bytes",
                               r->memory_peak_bytes >= 0 ? json_object_new_int64(r->memory_peak_bytes) : NULL);
        return j;
}
