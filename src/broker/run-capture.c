/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "run-capture.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <sys/socket.h>

#include "packet.h"
#include "json-util.h"
#include "macro.h"
#include "util.h"

struct RunCapture {
        sd_event_source *io;
        Run *run;
        int fd;
        int control;                    /* ours of the launcher's control socket, kept for its "ready" */
        char *buf;
        size_t size, max;
        bool eof, reported;
        RunResult result;
        bool run_done;
        char *run_error;
        run_capture_done_t done;
        void *userdata;
};

static void maybe_report(RunCapture *c) {
        if (c->reported || !c->eof || !c->run_done)
                return;
        c->reported = true;
        c->buf[c->size] = 0;
        c->result.error = c->run_error;
        c->done(c->buf, &c->result, c->userdata);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        RunCapture *c = userdata;
        char tmp[4096];
        ssize_t k;

        k = read(fd, tmp, sizeof tmp);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                k = 0;
        }
        if (k == 0) {
                c->eof = true;
                c->io = sd_event_source_disable_unref(c->io);
                c->fd = safe_close(c->fd);
                maybe_report(c);
                return 0;
        }
        /* Keep the first max bytes, drain the rest. */
        size_t keep = MIN((size_t) k, c->max - c->size);
        memcpy(c->buf + c->size, tmp, keep);
        c->size += keep;
        return 0;
}

static void on_run_done(Run *run, const RunResult *res, void *userdata) {
        RunCapture *c = userdata;

        c->run_done = true;
        c->result = *res;
        c->result.unit_result = NULL;   /* owned by the run */
        if (res->error)
                c->run_error = strdup(res->error);
        maybe_report(c);
}

int run_capture_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, const void *stdin_data, size_t stdin_len,
                      size_t max_output, run_capture_done_t done, void *userdata, RunCapture **ret) {
        _cleanup_close_pair_ int in[2] = { -EBADF, -EBADF }, out[2] = { -EBADF, -EBADF };
        _cleanup_(run_capture_freep) RunCapture *c = NULL;
        _cleanup_close_ int err = -EBADF;
        int r;

        assert(e);
        assert(bus);
        assert(spec);
        assert(stdin_data || stdin_len == 0);
        assert(done);
        assert(ret);

        /* The input is written at once, so it must fit in the pipe. */
        if (stdin_len > 60 * 1024)
                return -E2BIG;

        c = new0(RunCapture, 1);
        if (!c)
                return -ENOMEM;
        c->fd = c->control = -EBADF;
        c->max = max_output;
        c->done = done;
        c->userdata = userdata;
        c->buf = malloc(max_output + 1);
        if (!c->buf)
                return -ENOMEM;

        err = open("/dev/null", O_WRONLY | O_CLOEXEC);
        /* Only our end of the output is non-blocking: the sandbox's blocks. */
        if (err < 0 || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || fd_nonblock(out[0], true) < 0)
                return negative_errno();
        if (stdin_len > 0) {
                r = loop_write(in[1], stdin_data, stdin_len);
                if (r < 0)
                        return r;
        }
        in[1] = safe_close(in[1]);

        if (spec->probe) {
                /* The probe writes its report to its stdout; it takes no run. */
                r = run_start(bus, spec, out[1], NULL, on_run_done, c, &c->run);
                if (r < 0)
                        return r;
                run_skip_main_pid_check(c->run);
        } else {
                _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
                _cleanup_json_ json_object *msg = NULL;

                r = json_build(&msg, JB_STR("op", "run"), JB_END);
                if (r < 0)
                        return r;
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                        return negative_errno();
                r = run_start(bus, spec, sp[1], NULL, on_run_done, c, &c->run);
                if (r < 0)
                        return r;
                run_skip_main_pid_check(c->run);
                /* Our own code, no caller waiting on it: the run can wait in
                 * the socket until the launcher is up. */
                r = packet_send(sp[0], msg, (int[]) { in[0], out[1], err }, 3);
                if (r < 0)
                        return r;
                c->control = TAKE_FD(sp[0]);
        }
        out[1] = safe_close(out[1]);

        c->fd = TAKE_FD(out[0]);
        r = sd_event_add_io(e, &c->io, c->fd, EPOLLIN, on_output, c);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(c);
        return 0;
}

RunCapture *run_capture_free(RunCapture *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->io);
        safe_close(c->fd);
        run_free(c->run);
        safe_close(c->control);
        free(c->run_error);
        free(c->buf);
        free(c);
        return NULL;
}
