/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "oom-watch.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "util.h"

#define V1_MEMORY "/sys/fs/cgroup/memory"

struct OomWatch {
        int efd;                /* signalled on each OOM, and once when the cgroup goes */
        int control_fd;         /* memory.oom_control */
        sd_event_source *io;
        uint64_t events;
        bool triggered;         /* an OOM kill for certain */
        bool ambiguous;         /* a signal came when the cgroup was already gone */
};

static void oom_watch_check(OomWatch *w);

static int on_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        oom_watch_check(userdata);
        return 0;
}

int oom_watch_start(sd_event *e, const char *control_group, OomWatch **ret) {
        return oom_watch_start_at(e, V1_MEMORY, control_group, ret);
}

int oom_watch_start_at(sd_event *e, const char *memory_root, const char *control_group, OomWatch **ret) {
        _cleanup_(oom_watch_freep) OomWatch *w = NULL;
        _cleanup_free_ char *dir = NULL, *p = NULL;
        _cleanup_close_ int ec = -EBADF;
        char line[64];
        int n, r;

        assert(e);
        assert(memory_root);
        assert(ret);

        if (asprintf(&p, "%s/cgroup.event_control", memory_root) < 0)
                return -ENOMEM;
        if (access(p, F_OK) < 0)
                return -EOPNOTSUPP;
        p = mfree(p);
        if (!control_group || control_group[0] != '/' || strstr(control_group, ".."))
                return -EINVAL;
        if (asprintf(&dir, "%s%s", memory_root, control_group) < 0)
                return -ENOMEM;

        w = new0(OomWatch, 1);
        if (!w)
                return -ENOMEM;
        w->efd = w->control_fd = -EBADF;

        if (asprintf(&p, "%s/memory.oom_control", dir) < 0)
                return -ENOMEM;
        w->control_fd = open(p, O_RDONLY | O_CLOEXEC);
        if (w->control_fd < 0)
                return -errno;
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0)
                return -errno;
        p = mfree(p);
        if (asprintf(&p, "%s/cgroup.event_control", dir) < 0)
                return -ENOMEM;
        ec = open(p, O_WRONLY | O_CLOEXEC);
        if (ec < 0)
                return -errno;
        n = snprintf(line, sizeof line, "%d %d", w->efd, w->control_fd);
        r = loop_write(ec, line, (size_t) n);
        if (r < 0)
                return r;
        /* Look at once when signalled: during an OOM kill the cgroup still
         * exists, by the time systemd reports the unit dead it may not.
         * sd-event returns its error; errno means nothing here. */
        r = sd_event_add_io(e, &w->io, w->efd, EPOLLIN, on_event, w);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(w);
        return 0;
}

static int read_oom_kill(int fd, uint64_t *ret) {
        char buf[256], *p;
        ssize_t k = pread(fd, buf, sizeof buf - 1, 0);

        assert(ret);

        if (k <= 0)
                return -ENODEV;         /* the cgroup is gone */
        buf[k] = 0;
        p = strstr(buf, "oom_kill ");
        if (!p)
                return -ENOENT;
        p[strcspn(p, "\n")] = 0;
        return parse_uint(p + 9, ret);
}

static void oom_watch_check(OomWatch *w) {
        uint64_t v, kills;
        int r;

        assert(w);

        if (read(w->efd, &v, sizeof v) != sizeof v)
                return;
        w->events += v;
        r = read_oom_kill(w->control_fd, &kills);
        log_debug("OOM watch: %" PRIu64 " events, oom_control %s, oom_kill %" PRIu64, w->events,
                  r >= 0 ? "readable" : "gone", r >= 0 ? kills : 0);
        if (r >= 0)
                w->triggered = true;    /* alive, so this was no removal */
        else if (w->events >= 2)
                w->triggered = true;    /* removal signals once; the rest were OOMs */
        else
                w->ambiguous = true;    /* an OOM or the removal: cannot tell */
}

int oom_watch_result(OomWatch *w) {
        if (!w)
                return -EOPNOTSUPP;
        oom_watch_check(w);
        return w->triggered ? 1 : w->ambiguous ? -EAGAIN : 0;
}

OomWatch *oom_watch_free(OomWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->io);
        safe_close(w->efd);
        safe_close(w->control_fd);
        free(w);
        return NULL;
}
