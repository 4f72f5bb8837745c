/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "peer-auth.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

struct PeerAuth {
        sd_bus_slot *slot;
        int pidfd;              /* the peer process, alive while polkit decides */
        peer_auth_done_t done;
        void *userdata;
};

int peer_pidfd(int sock, pid_t pid, int *ret) {
        socklen_t len = sizeof(int);
        int fd = -EBADF;

        assert(ret);

        /* Linux 6.5+: the kernel's own handle on the process that
         * connect()ed, with no pid to recycle. */
        if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) < 0) {
                /* Gone already (ESRCH): never fall back to a pid that may
                 * name another process by now. */
                if (errno != ENOPROTOOPT && errno != EINVAL)
                        return negative_errno();
                /* Older kernels: the pid the kernel captured at connect(). A
                 * pid reused before this line is the one window left; the
                 * start time polkit compares narrows it further. */
                fd = pidfd_open(pid, 0);        /* O_CLOEXEC, as SO_PEERPIDFD's */
                if (fd < 0)
                        return negative_errno();
        }
        *ret = fd;
        return 0;
}

/* The process behind pidfd has not exited (nor been reaped): its pid still
 * names it. */
static bool pidfd_alive(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        return poll(&p, 1, 0) == 0;
}

int pid_start_time(pid_t pid, uint64_t *ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        char path[64], buf[1024], *p;
        size_t n;

        assert(ret);

        (void) snprintf(path, sizeof path, "/proc/%i/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        /* comm may contain spaces and parentheses: start after the last ')'. */
        p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        p++;
        /* p is at the space before field 3; field 22 is 19 spaces further. */
        for (unsigned i = 0; i < 19; i++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EIO;
        }
        p++;
        p[strcspn(p, " ")] = 0;
        return parse_uint(p, ret);
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        PeerAuth *a = userdata;
        int authorized = 0, challenge = 0, r;

        assert(m);
        assert(a);

        a->slot = sd_bus_slot_unref(a->slot);
        if (sd_bus_message_is_method_error(m, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(m);
                a->done(false, e->message ?: "polkit refused to answer", a->userdata);
                return 0;
        }
        r = sd_bus_message_enter_container(m, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(m, "bb", &authorized, &challenge);
        if (r < 0) {
                a->done(false, "unexpected reply from polkit", a->userdata);
                return 0;
        }
        /* polkit judged the process with that pid and start time; if ours
         * is gone, the verdict may be about whoever got its pid. */
        if (authorized && !pidfd_alive(a->pidfd)) {
                a->done(false, "the peer process exited while polkit decided", a->userdata);
                return 0;
        }
        a->done(authorized, authorized ? "authorized by polkit"
                            : challenge ? "polkit requires authentication (no agent can ask here)"
                                        : "not authorized by polkit",
                a->userdata);
        return 0;
}

int peer_auth_start(sd_bus *bus, int pidfd, pid_t pid, uid_t uid, peer_auth_done_t done, void *userdata,
                    PeerAuth **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_close_ int fd = pidfd;
        uint64_t start_time;
        PeerAuth *a;
        int r;

        assert(done);
        assert(bus);
        assert(pidfd >= 0);
        assert(ret);

        r = pid_start_time(pid, &start_time);
        if (r < 0)
                return r;
        /* Read while the pidfd says it is alive: the start time is the
         * peer's, not a successor's. (polkit 122 takes no pidfd itself.) */
        if (!pidfd_alive(fd))
                return -ESRCH;

        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r < 0)
                return r;
        /* uid must be 'i': as 'u' polkit silently ignores it and falls back
         * to a racy /proc lookup. */
        r = sd_bus_message_append(m, "(sa{sv})s", "unix-process", 3,
                                  "pid", "u", (uint32_t) pid,
                                  "start-time", "t", start_time,
                                  "uid", "i", (int32_t) uid,
                                  PEER_AUTH_ACTION);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a{ss}us", 0, (uint32_t) 0 /* no interaction */, "");
        if (r < 0)
                return r;

        a = calloc(1, sizeof *a);
        if (!a)
                return -ENOMEM;
        a->done = done;
        a->userdata = userdata;
        a->pidfd = TAKE_FD(fd);
        r = sd_bus_call_async(bus, &a->slot, m, on_reply, a, 10 * 1000 * 1000);
        if (r < 0) {
                peer_auth_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

PeerAuth *peer_auth_free(PeerAuth *a) {
        if (!a)
                return NULL;
        sd_bus_slot_unref(a->slot);
        safe_close(a->pidfd);
        free(a);
        return NULL;
}
