/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "run.h"

#define PROBE_REPORT_MAX 4096

struct Probe {
        sd_event_source *io;
        Run *run;
        int fd;
        char buf[PROBE_REPORT_MAX + 1];
        size_t size;
        bool eof, run_done, reported;
        char *run_error;
        int exit_code;
        SandboxSpec spec;
        probe_done_t done;
        void *userdata;
};

static const char *report_get(const char *report, const char *key, char *buf, size_t size) {
        size_t l = strlen(key);

        for (const char *p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strneq(p, key, l) && p[l] == '=') {
                        size_t n = strcspn(p + l + 1, "\n");
                        if (n >= size)
                                n = size - 1;
                        memcpy(buf, p + l + 1, n);
                        buf[n] = 0;
                        return buf;
                }
        return NULL;
}

static int failed(char **ret_failure, const char *fmt, ...) _printf_(2, 3);
static int failed(char **ret_failure, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_failure, fmt, ap) < 0)
                *ret_failure = NULL;
        va_end(ap);
        return -EPERM;
}

static bool limit_ok(const char *v, uint64_t want) {
        uint64_t x;
        /* "max" (v2) or a huge number (v1) means no limit at all. */
        return v && parse_uint(v, &x) >= 0 && x > 0 && x <= want;
}

int probe_evaluate(const char *report, const SandboxSpec *spec, char **ret_failure) {
        char v[256];
        const char *s;

        s = report_get(report, "uid", v, sizeof v);
        if (!s || streq(s, "0"))
                return failed(ret_failure, "non-root uid (DynamicUser): the probe ran as uid %s", s ?: "unknown");
        s = report_get(report, "euid", v, sizeof v);
        if (!s || streq(s, "0"))
                return failed(ret_failure, "non-root uid (DynamicUser): the probe ran with euid %s", s ?: "unknown");
        s = report_get(report, "netdevs", v, sizeof v);
        if (!s || !streq(s, "lo"))
                return failed(ret_failure, "network isolation (PrivateNetwork): interfaces visible: %s", s ?: "unknown");
        s = report_get(report, "af_inet", v, sizeof v);
        if (!s || !streq(s, "blocked"))
                return failed(ret_failure, "address families (RestrictAddressFamilies): AF_INET sockets can be created");
        s = report_get(report, "usr_readonly", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "read-only /usr (ProtectSystem=strict): /usr is writable");
        s = report_get(report, "etc_readonly", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "read-only /etc (ProtectSystem=strict): /etc is writable");
        s = report_get(report, "home_hidden", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "hidden /home and /root (ProtectHome): they are readable");
        s = report_get(report, "memory_max", v, sizeof v);
        if (!limit_ok(s, spec->memory_max))
                return failed(ret_failure, "memory limit (MemoryMax=%" PRIu64 "): the cgroup reports %s", spec->memory_max,
                              s ?: "nothing");
        s = report_get(report, "tasks_max", v, sizeof v);
        if (!limit_ok(s, spec->tasks_max))
                return failed(ret_failure, "task limit (TasksMax=%" PRIu64 "): the cgroup reports %s", spec->tasks_max,
                              s ?: "nothing");
        s = report_get(report, "no_new_privs", v, sizeof v);
        if (!s || !streq(s, "1"))
                return failed(ret_failure, "NoNewPrivileges: not set");
        s = report_get(report, "seccomp", v, sizeof v);
        if (!s || !streq(s, "2"))
                return failed(ret_failure, "system call filter (SystemCallFilter): seccomp mode %s", s ?: "unknown");
        s = report_get(report, "cap_bounding", v, sizeof v);
        if (!s || strspn(s, "0") != strlen(s))
                return failed(ret_failure, "empty CapabilityBoundingSet: bounding set is %s", s ?: "unknown");
        return 0;
}

static void probe_maybe_report(Probe *p) {
        _cleanup_free_ char *failure = NULL;

        if (p->reported || !p->eof || !p->run_done)
                return;
        p->reported = true;

        if (p->run_error)
                (void) asprintf(&failure, "sandbox setup: %s", p->run_error);
        else if (p->exit_code != 0)
                (void) asprintf(&failure, "sandbox setup: the probe exited with status %d", p->exit_code);
        else {
                p->buf[p->size] = 0;
                (void) probe_evaluate(p->buf, &p->spec, &failure);
        }
        p->done(failure, p->userdata);
}

static int on_probe_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Probe *p = userdata;
        char tmp[1024];
        ssize_t k;

        k = read(fd, tmp, sizeof tmp);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                k = 0;
        }
        if (k == 0) {
                p->eof = true;
                p->io = sd_event_source_disable_unref(p->io);
                p->fd = safe_close(p->fd);
                probe_maybe_report(p);
                return 0;
        }
        /* Keep the first PROBE_REPORT_MAX bytes, drain the rest. */
        size_t keep = MIN((size_t) k, PROBE_REPORT_MAX - p->size);
        memcpy(p->buf + p->size, tmp, keep);
        p->size += keep;
        return 0;
}

static void on_probe_run_done(Run *run, const RunResult *res, void *userdata) {
        Probe *p = userdata;

        p->run_done = true;
        if (res->error)
                p->run_error = strdup(res->error);
        else if (res->signal != 0)
                p->exit_code = 128 + res->signal;
        else
                p->exit_code = res->exit_code;
        probe_maybe_report(p);
}

int probe_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, probe_done_t done, void *userdata, Probe **ret) {
        _cleanup_close_pair_ int out[2] = { -EBADF, -EBADF };
        _cleanup_close_ int in = -EBADF, err = -EBADF;
        Probe *p;
        int r;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->fd = -EBADF;
        p->spec = *spec;
        p->spec.probe = true;
        p->done = done;
        p->userdata = userdata;

        in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        err = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (in < 0 || err < 0 || pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0) {
                r = negative_errno();
                goto fail;
        }

        r = run_start(bus, &p->spec, in, out[1], err, NULL, on_probe_run_done, p, &p->run);
        if (r < 0)
                goto fail;
        out[1] = safe_close(out[1]);

        p->fd = TAKE_FD(out[0]);
        r = sd_event_add_io(e, &p->io, p->fd, EPOLLIN, on_probe_output, p);
        if (r < 0)
                goto fail;

        *ret = p;
        return 0;
fail:
        probe_free(p);
        return r;
}

Probe *probe_free(Probe *p) {
        if (!p)
                return NULL;
        sd_event_source_disable_unref(p->io);
        safe_close(p->fd);
        run_free(p->run);
        free(p->run_error);
        free(p);
        return NULL;
}
