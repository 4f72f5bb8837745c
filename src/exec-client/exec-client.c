/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "exec-client.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "json-util.h"
#include "server-config.h"
#include "egress-proto.h"
#include "launch-frame.h"
#include "log.h"
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

/* A piece of what goes into the sandbox's stdin. */
typedef struct Segment {
        const uint8_t *data;
        size_t size;
} Segment;

struct ExecClient {
        sd_event *event;
        int sock, in_fd, out_fd, err_fd, res_fd;
        sd_event_source *sock_io, *in_io, *out_io, *err_io, *res_io, *timer;

        /* What goes into the sandbox's stdin: the launch frame's header, the
         * code, the input files (headers, names, data), the program's stdin. */
        uint8_t *framing;               /* the headers the segments point into */
        Segment *segments;
        size_t n_segments, segment, written;

        OutputCapture out;
        uint64_t max_output_bytes;
        ResultReader results;
        MemCharge *charge;              /* ExecRequest.charge */
        uint64_t text_charged;          /* of it, for the result's stdout and stderr */
        bool result_channel, res_done;
        bool session;                   /* a session's call: the broker's exit event decides */
        bool network;                   /* a run with a network: so does it (its egress counts) */
        bool tools;                     /* a run with tools ("started" says): so does it (its tool_calls) */
        bool got_final, out_eof, err_eof, finished, cancelled;
        uint64_t start_usec;
        /* When each stage of a run ended (CLOCK_MONOTONIC), for the debug
         * level's breakdown (log_stages()); 0: not reached. */
        uint64_t started_usec, input_usec, report_usec, output_usec;
        ExecResult result;
        exec_done_t done;
        void *userdata;
        exec_confirm_t confirm;
        void *confirm_userdata;
};

static void exec_result_done(ExecResult *r) {
        assert(r);

        free(r->error_message);
        free(r->stdout_text);
        free(r->stderr_text);
        free(r->signal);
        free(r->run_id);
        for (size_t i = 0; i < r->n_outputs; i++)
                result_item_done(r->outputs + i);
        free(r->outputs);
        free(r->outputs_unlisted_reason);
        free(r->outputs_error);
        json_object_put(r->egress);
        json_object_put(r->tool_calls);
        json_object_put(r->packages);
        *r = (ExecResult) {};
}

static void close_input(ExecClient *c) {
        assert(c);

        c->in_io = sd_event_source_disable_unref(c->in_io);
        c->in_fd = safe_close(c->in_fd);
}

static void close_results(ExecClient *c) {
        assert(c);

        c->res_io = sd_event_source_disable_unref(c->res_io);
        c->res_fd = safe_close(c->res_fd);
        c->res_done = true;
}

/* What the result channel said goes into the result; the launcher's view of
 * how the program ended beats the broker's, which sees only the unit's main
 * process (the launcher itself). */
static int take_results(ExecClient *c) {
        ExecResult *r = &c->result;
        ResultReader *rr = &c->results;

        assert(c);

        r->result_channel = true;
        if (!rr->ended && !rr->error)
                result_reader_eof(rr);
        r->outputs_lost = rr->lost;
        r->outputs = result_reader_steal_items(rr, &r->n_outputs);
        r->outputs_unlisted = rr->unlisted;
        r->outputs_unlisted_more = rr->unlisted_more;
        r->outputs_unlisted_reason = TAKE_PTR(rr->unlisted_reason);
        r->outputs_error = TAKE_PTR(rr->error);
        r->packages = result_reader_take_packages(rr);
        if (rr->have_packages && !r->packages)
                return -ENOMEM;
        if (rr->have_status) {
                r->have_status = true;
                r->exit_code = rr->exit_code;
                free(r->signal);
                r->signal = NULL;
                if (rr->signal > 0) {
                        const char *name = signal_to_name(rr->signal);
                        char buf[16];

                        if (!name) {
                                (void) snprintf(buf, sizeof buf, "SIG%d", rr->signal);
                                name = buf;
                        }
                        r->signal = strdup(name);
                        if (!r->signal)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* A microsecond stage of the run, or "" when it was not reached. */
static const char *stage(char buf[static 24], uint64_t from, uint64_t to) {
        if (from == 0 || to < from)
                return "";
        (void) snprintf(buf, 24, "%" PRIu64, to - from);
        return buf;
}

/* Where a run's time went, as this end saw it, at the debug level only
 * (bench/bench.py breakdown reads it): the broker's hand-off (connect,
 * request, a unit taken or started, its fds to the launcher), the code
 * going in, the program until the launcher's report ended, until its
 * output ended, and until here. The run id and times, nothing else. */
static void log_stages(const ExecClient *c, uint64_t now) {
        char a[24], b[24], d[24], e[24], f[24];

        if (!log_level_enabled(LOG_DEBUG))
                return;
        log_struct(LOG_DEBUG, "MESSAGE=Run %s: stages", c->result.run_id ?: "-",
                   "MCP_RUN_ID=%s", c->result.run_id ?: "",
                   "MCP_STAGE_HANDOFF_US=%s", stage(a, c->start_usec, c->started_usec),
                   "MCP_STAGE_INPUT_US=%s", stage(b, c->started_usec, c->input_usec),
                   "MCP_STAGE_REPORT_US=%s", stage(d, c->input_usec, c->report_usec),
                   "MCP_STAGE_OUTPUT_END_US=%s", stage(e, c->input_usec, c->output_usec),
                   "MCP_STAGE_TOTAL_US=%s", stage(f, c->start_usec, now));
}

/* The texts are what is kept: the output's buffers went, and their charge
 * with them (held bytes). The texts are charged refusably: where invalid
 * UTF-8 made them longer than the output they came from (U+FFFD for a bad
 * byte) and the budget cannot give more, they are cut to what the output
 * held, stdout first, and the result says truncated. */
static void charge_texts(ExecClient *c, ExecResult *r, uint64_t held) {
        uint64_t want = (uint64_t) r->stdout_len + r->stderr_len;

        assert(c);
        assert(r->stdout_text && r->stderr_text);

        if (mem_charge_grow(c->charge, want) < 0) {
                r->stdout_len = utf8_whole_prefix(r->stdout_text, r->stdout_len,
                                                  (size_t) MIN(held, (uint64_t) SIZE_MAX));
                r->stderr_len = utf8_whole_prefix(r->stderr_text, r->stderr_len, (size_t) (held - r->stdout_len));
                r->stdout_text[r->stdout_len] = 0;
                r->stderr_text[r->stderr_len] = 0;
                r->truncated = true;
                want = (uint64_t) r->stdout_len + r->stderr_len;
                if (mem_charge_grow(c->charge, want) < 0) {
                        /* Even what was held is refused now (the caller's
                         * share shrank under it): nothing is kept. */
                        r->stdout_len = r->stderr_len = 0;
                        r->stdout_text[0] = r->stderr_text[0] = 0;
                        want = 0;
                }
        }
        c->text_charged = want;
}

static void finish(ExecClient *c) {
        ExecResult *r = &c->result;

        if (c->finished)
                return;
        c->finished = true;
        log_stages(c, now_usec());
        close_input(c);
        close_results(c);
        c->sock_io = sd_event_source_disable_unref(c->sock_io);
        c->out_io = sd_event_source_disable_unref(c->out_io);
        c->err_io = sd_event_source_disable_unref(c->err_io);
        c->timer = sd_event_source_disable_unref(c->timer);

        if (r->error == BROKER_ERROR_NONE) {
                r->stdout_text =
                        utf8_sanitize(c->out.data[OUTPUT_STDOUT] ?: "", c->out.size[OUTPUT_STDOUT], &r->stdout_len);
                r->stderr_text =
                        utf8_sanitize(c->out.data[OUTPUT_STDERR] ?: "", c->out.size[OUTPUT_STDERR], &r->stderr_len);
                uint64_t held = c->out.charged;

                r->truncated = c->out.truncated;
                output_capture_done(&c->out);
                if (r->stdout_text && r->stderr_text)
                        charge_texts(c, r, held);
                if (!r->stdout_text || !r->stderr_text || (c->result_channel && take_results(c) < 0)) {
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

/* The launcher said the program exited (not killed: only the broker knows
 * whether by the OOM killer or a timeout) and ended its report. */
static bool launcher_reported_exit(const ExecClient *c) {
        return c->result_channel && !c->session && !c->network && !c->tools && c->res_done && c->results.ended &&
               c->results.have_status && c->results.signal == 0;
}

static void maybe_finish(ExecClient *c) {
        _cleanup_json_ json_object *detach = NULL;

        assert(c);

        if (!c->out_eof || !c->err_eof)
                return;
        if (c->output_usec == 0)
                c->output_usec = now_usec();
        if (c->got_final && (!c->result_channel || c->res_done)) {
                finish(c);
                return;
        }
        if (c->got_final || !launcher_reported_exit(c))
                return;
        /* Done for our caller; the unit's teardown is the broker's. */
        detach = json_object_new_object();
        if (!detach || json_add_string(detach, "op", "detach") < 0 || packet_send(c->sock, detach, NULL, 0) < 0)
                return;         /* then the broker's exit event it is */
        if (c->results.duration_us != UINT64_MAX)
                c->result.duration_ms = c->results.duration_us / 1000;
        c->result.cpu_ms = c->result.memory_peak_bytes = -1;
        finish(c);
}

int exec_client_confirm_answer(ExecClient *c, const BrokerConfirmAnswer *a) {
        _cleanup_json_ json_object *j = NULL;
        int r;

        assert(c);
        assert(a);

        if (c->sock < 0 || c->finished)
                return 0;
        r = broker_confirm_answer_build("op", "confirm_answer", a, &j);
        if (r < 0)
                return r;
        return packet_send(c->sock, j, NULL, 0);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ExecClient *c = userdata;

        if (c->got_final)
                finish(c);      /* drain grace over: report what we have */
        else
                fail(c, BROKER_ERROR_LOST, "the broker did not report the end of the run in time");
        return 0;
}

/* One read of a non-blocking pipe: > 0 bytes, -EAGAIN for nothing yet, 0
 * for its end (EOF, or an error, which ends it as well). */
static ssize_t read_pipe(int fd, void *buf, size_t size) {
        for (;;) {
                ssize_t k = read(fd, buf, size);
                if (k >= 0)
                        return k;
                if (errno == EAGAIN)
                        return -EAGAIN;
                if (errno != EINTR)
                        return 0;
        }
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ExecClient *c = userdata;
        OutputStream which = fd == c->out_fd ? OUTPUT_STDOUT : OUTPUT_STDERR;
        uint8_t buf[64 * 1024];

        for (unsigned i = 0; i < 16; i++) {
                ssize_t k = read_pipe(fd, buf, sizeof buf);
                if (k == -EAGAIN)
                        return 0;
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

static int on_results(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ExecClient *c = userdata;
        uint8_t buf[64 * 1024];

        for (unsigned i = 0; i < 16; i++) {
                ssize_t k = read_pipe(fd, buf, sizeof buf);
                int r;

                if (k == -EAGAIN)
                        return 0;
                if (k == 0) {
                        result_reader_eof(&c->results);
                        r = 1;
                } else
                        r = result_reader_feed(&c->results, buf, (size_t) k);
                if (r == -ENOMEM) {
                        fail(c, BROKER_ERROR_INTERNAL, "out of memory");
                        return 0;
                }
                if (r != 0) {
                        /* END, EOF or a violation: nothing more is read. The
                         * launcher writing on gets EPIPE. */
                        c->report_usec = now_usec();
                        close_results(c);
                        maybe_finish(c);
                        return 0;
                }
        }
        return 0;
}

static int on_input(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ExecClient *c = userdata;

        for (;;) {
                const Segment *seg;
                ssize_t k;

                while (c->segment < c->n_segments && c->written == c->segments[c->segment].size) {
                        c->segment++;
                        c->written = 0;
                }
                if (c->segment == c->n_segments) {
                        c->input_usec = now_usec();
                        close_input(c);         /* EOF for the program */
                        return 0;
                }
                seg = c->segments + c->segment;

                k = write(fd, seg->data + c->written, seg->size - c->written);
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

        r = packet_recv(fd, &msg, NULL, 0, NULL);
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
                c->started_usec = now_usec();
                free(c->result.run_id);
                c->result.run_id = strdup_or_null(json_get_string(msg, "run_id"));
                c->tools = json_get_bool(msg, "tools");
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
                res->session_lost = json_get_bool(msg, "session_lost");
                json_object_put(res->egress);
                res->egress = exec_result_egress_from_json(json_get(msg, "egress"));
                json_object_put(res->tool_calls);
                res->tool_calls = exec_result_tool_calls_from_json(json_get(msg, "tool_calls"));
                if (!res->run_id)
                        res->run_id = strdup_or_null(json_get_string(msg, "run_id"));
                c->sock_io = sd_event_source_disable_unref(c->sock_io);
                /* The sandbox is gone; give buffered output a moment. */
                (void) sd_event_source_set_time_relative(c->timer, DRAIN_GRACE_USEC);
                maybe_finish(c);
        } else if (streq(event, "confirm")) {
                BrokerConfirmAsk ask;
                BrokerConfirmAnswer no = { .reason = "the front end cannot ask" };

                if (broker_confirm_ask_parse(msg, &ask) < 0)
                        return 0;
                if (c->confirm && !c->finished) {
                        c->confirm(c, &ask, c->confirm_userdata);
                        return 0;
                }
                no.id = ask.id;
                (void) exec_client_confirm_answer(c, &no);
        } else if (streq(event, "error")) {
                BrokerError e = broker_error_from_string(json_get_string(msg, "code"));
                const char *m = json_get_string(msg, "message");

                fail(c, e > BROKER_ERROR_NONE ? e : BROKER_ERROR_UNKNOWN, m ?: "the broker reported an error");
        }
        return 0;
}

/* The run request, with the sandbox's ends of the pipes: stdin, stdout,
 * stderr and, where the broker takes it, the result channel. */
static int send_run_request(int sock, const ExecRequest *req, const int *fds, size_t n_fds) {
        _cleanup_json_ json_object *msg = NULL;
        int r;

        assert(req);

        if (req->session)
                r = json_build(&msg,
                               JB_STR("op", "session_exec"),
                               JB_STR("session", req->session),
                               JB_STR("caller", req->owner.caller ?: ""),
                               JB_STR("scope", req->owner.scope ?: ""),
                               JB_INT("timeout_s", req->timeout_s),
                               JB_END);
        else
                r = json_build(&msg, JB_STR("op", "run"), JB_INT("timeout_s", req->timeout_s), JB_END);
        if (r < 0)
                return r;
        /* A run's caller is the broker's key for its fair shares of the slots. */
        if (!req->session && req->owner.caller && json_add_string(msg, "caller", req->owner.caller) < 0)
                return -ENOMEM;
        if (req->network && !req->session && json_add_string(msg, "network", req->network) < 0)
                return -ENOMEM;
        /* A session's call too: it installs more into the session. */
        if (req->packages && json_add(msg, "packages", json_object_get(req->packages)) < 0)
                return -ENOMEM;
        if (req->language && json_add_string(msg, "language", req->language) < 0)
                return -ENOMEM;
        if (req->tag && json_add_string(msg, "tag", req->tag) < 0)
                return -ENOMEM;
        if (req->confirm && json_add_bool(msg, "confirm", true) < 0)
                return -ENOMEM;
        return packet_send(sock, msg, fds, n_fds);
}

static void add_segment(ExecClient *c, const void *data, size_t size) {
        assert(c);

        c->segments[c->n_segments++] = (Segment) { .data = data, .size = size };
}

/* The launch frame as segments: version 1 without files, so that a broker
 * and launcher without them see exactly what they always did. */
static int build_input(ExecClient *c, const ExecRequest *req) {
        size_t n = 2 + (req->n_files > 0 ? 1 + 3 * req->n_files : 0) + 1;
        uint8_t *h;

        assert(c);
        assert(req);

        if (req->n_files > LAUNCH_FILES_MAX)
                return -E2BIG;
        c->framing = malloc(LAUNCH_FRAME_HEADER_SIZE + LAUNCH_FILES_HEADER_SIZE +
                            LAUNCH_FILE_ENTRY_HEADER_SIZE * req->n_files);
        c->segments = new0(Segment, n);
        if (!c->framing || !c->segments)
                return -ENOMEM;
        h = c->framing;

        launch_frame_header_version(req->n_files > 0 ? LAUNCH_FRAME_VERSION_FILES : LAUNCH_FRAME_VERSION, req->code_len,
                                    h);
        add_segment(c, h, LAUNCH_FRAME_HEADER_SIZE);
        h += LAUNCH_FRAME_HEADER_SIZE;
        add_segment(c, req->code, req->code_len);
        if (req->n_files > 0) {
                launch_files_header((uint32_t) req->n_files, h);
                add_segment(c, h, LAUNCH_FILES_HEADER_SIZE);
                h += LAUNCH_FILES_HEADER_SIZE;
                for (size_t i = 0; i < req->n_files; i++) {
                        const ExecInputFile *f = req->files + i;

                        if (!launch_file_name_valid(f->name, f->name_len) || (!f->data && f->size > 0))
                                return -EINVAL;
                        launch_file_entry_header((uint16_t) f->name_len, f->size, h);
                        add_segment(c, h, LAUNCH_FILE_ENTRY_HEADER_SIZE);
                        h += LAUNCH_FILE_ENTRY_HEADER_SIZE;
                        add_segment(c, f->name, f->name_len);
                        add_segment(c, f->data, f->size);
                }
        }
        add_segment(c, req->stdin_data, req->stdin_data ? req->stdin_len : 0);
        assert(c->n_segments == n);
        return 0;
}

int exec_client_start(sd_event *e, const char *socket_path, const ExecRequest *req, exec_done_t done,
                      void *userdata, ExecClient **ret) {
        _cleanup_close_pair_ int in[2] = { -EBADF, -EBADF }, out[2] = { -EBADF, -EBADF }, err[2] = { -EBADF, -EBADF },
                                 res[2] = { -EBADF, -EBADF };
        _cleanup_(exec_client_freep) ExecClient *c = NULL;
        int r;

        assert(e);
        assert(socket_path);
        assert(req);
        assert(done);
        assert(ret);

        if (!req->code || req->code_len == 0 || (req->n_files > 0 && (!req->files || !req->result_channel)))
                return -EINVAL;

        c = new0(ExecClient, 1);
        if (!c)
                return -ENOMEM;
        c->event = sd_event_ref(e);
        c->sock = c->in_fd = c->out_fd = c->err_fd = c->res_fd = -EBADF;
        c->done = done;
        c->userdata = userdata;
        c->confirm = req->confirm;
        c->confirm_userdata = req->confirm_userdata;
        c->start_usec = now_usec();
        c->result.exit_code = -1;
        c->result.cpu_ms = c->result.memory_peak_bytes = -1;
        output_capture_init(&c->out, req->max_output_bytes, req->charge);
        c->max_output_bytes = req->max_output_bytes;
        c->result_channel = req->result_channel;
        c->session = c->result.in_session = req->session != NULL;
        c->network = req->network != NULL;
        c->charge = req->charge;
        result_reader_init(&c->results, &req->result_limits);
        c->results.charge = req->charge;
        r = build_input(c, req);
        if (r < 0)
                return r;

        c->sock = packet_connect(socket_path);
        if (c->sock < 0)
                return c->sock;

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
            (c->result_channel && pipe2(res, O_CLOEXEC) < 0))
                return negative_errno();
        /* Our ends are non-blocking; the sandbox's ends stay blocking. */
        if ((r = fd_nonblock(in[1], true)) < 0 || (r = fd_nonblock(out[0], true)) < 0 ||
            (r = fd_nonblock(err[0], true)) < 0 || (c->result_channel && (r = fd_nonblock(res[0], true)) < 0))
                return r;

        r = send_run_request(c->sock, req, (int[]) { in[0], out[1], err[1], res[1] }, c->result_channel ? 4 : 3);
        if (r < 0)
                return r;
        /* Only the sandbox may hold the far ends, so EOF means it is gone. */
        in[0] = safe_close(in[0]);
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);
        res[1] = safe_close(res[1]);

        c->in_fd = TAKE_FD(in[1]);
        c->out_fd = TAKE_FD(out[0]);
        c->err_fd = TAKE_FD(err[0]);
        c->res_fd = TAKE_FD(res[0]);
        c->res_done = !c->result_channel;
        if (c->result_channel && (r = sd_event_add_io(e, &c->res_io, c->res_fd, EPOLLIN, on_results, c)) < 0)
                return r;

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
        sd_event_source_disable_unref(c->res_io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->sock);
        safe_close(c->in_fd);
        safe_close(c->out_fd);
        safe_close(c->err_fd);
        safe_close(c->res_fd);
        output_capture_done(&c->out);
        result_reader_done(&c->results);
        free(c->segments);
        free(c->framing);
        exec_result_done(&c->result);
        mem_charge_shrink(c->charge, c->text_charged);
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

/* v if known (>= 0), else null: -ENOMEM as json_add(). */
static int json_add_known_or_null(json_object *o, const char *key, int64_t v) {
        assert(o);
        assert(key);

        return v >= 0 ? json_add_int(o, key, v) : json_add_null(o, key);
}

json_object *exec_result_to_json(const ExecResult *r) {
        _cleanup_json_ json_object *j = NULL;

        assert(r);

        /* The output as it is, NUL bytes included. */
        if (json_build(&j,
                       JB_OBJ("stdout", json_object_new_string_len(r->stdout_text ?: "", (int) r->stdout_len)),
                       JB_OBJ("stderr", json_object_new_string_len(r->stderr_text ?: "", (int) r->stderr_len)),
                       JB_INT("exit_code", r->exit_code),
                       JB_INT("duration_ms", r->duration_ms),
                       JB_BOOL("truncated", r->truncated),
                       JB_BOOL("timed_out", r->timed_out),
                       JB_BOOL("oom_killed", r->oom_killed),
                       JB_STR_OR_NULL("signal", r->signal),
                       JB_END) < 0)
                return NULL;
        if (json_add_known_or_null(j, "cpu_ms", r->cpu_ms) < 0 ||
            json_add_known_or_null(j, "memory_peak_bytes", r->memory_peak_bytes) < 0 ||
            (r->in_session && json_add_bool(j, "session_lost", r->session_lost) < 0) ||
            (r->egress && json_add(j, "egress", json_object_get(r->egress)) < 0) ||
            (r->tool_calls && json_add(j, "tool_calls", json_object_get(r->tool_calls)) < 0) ||
            (r->packages && json_add(j, "packages", json_object_get(r->packages)) < 0))
                return NULL;
        return TAKE_PTR(j);
}

static int copy_count(json_object *from, const char *key, json_object *to, const char *as) {
        json_object *v = json_get(from, key);

        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
                return 0;
        return json_add_int(to, as, json_object_get_int64(v));
}

json_object *exec_result_egress_from_json(json_object *v) {
        _cleanup_json_ json_object *e = NULL, *conns = NULL;
        const char *policy = json_get_string(v, "policy");

        if (!json_object_is_type(v, json_type_object))
                return NULL;
        e = json_object_new_object();
        conns = json_object_new_object();
        if (!e || !conns || (policy && json_add_string(e, "policy", policy) < 0))
                return NULL;
        if (json_object_is_type(json_get(v, "connections"), json_type_object)) {
                json_object_object_foreach(json_get(v, "connections"), key, val) {
                        (void) val;
                        /* Only names we know: the broker's word, but a
                         * model reads it. */
                        if (egress_verdict_from_string(key) >= 0 &&
                            copy_count(json_get(v, "connections"), key, conns, key) < 0)
                                return NULL;
                }
        }
        if (json_add(e, "connections", TAKE_PTR(conns)) < 0 || copy_count(v, "bytes_up", e, "bytes_up") < 0 ||
            copy_count(v, "bytes_down", e, "bytes_down") < 0)
                return NULL;
        return TAKE_PTR(e);
}

json_object *exec_result_tool_calls_from_json(json_object *v) {
        static const char *const fields[] = { "calls", "errors", "refused", "ms" };
        _cleanup_json_ json_object *t = NULL;
        unsigned n = 0;

        if (!json_object_is_type(v, json_type_object))
                return NULL;
        t = json_object_new_object();
        if (!t)
                return NULL;
        json_object_object_foreach(v, name, counts) {
                _cleanup_json_ json_object *one = NULL;

                /* The broker checked them; a model reads them. */
                if (++n > 64)
                        break;
                if (!server_name_is_valid(name) || !json_object_is_type(counts, json_type_object))
                        continue;
                one = json_object_new_object();
                if (!one)
                        return NULL;
                for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                        if (copy_count(counts, fields[i], one, fields[i]) < 0)
                                return NULL;
                if (json_add(t, name, TAKE_PTR(one)) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}
