/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-egress.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "egress-proto.h"
#include "macro.h"
#include "util.h"

/* Connections passed in one wakeup: the rest wait in the backlog. */
#define ACCEPT_PER_WAKEUP 16U
#define LISTEN_BACKLOG 64

const char *const launch_egress_env[] = {
        "HTTP_PROXY=" EGRESS_PROXY_URL,
        "HTTPS_PROXY=" EGRESS_PROXY_URL,
        "ALL_PROXY=" EGRESS_PROXY_URL,
        "http_proxy=" EGRESS_PROXY_URL,
        "https_proxy=" EGRESS_PROXY_URL,
        "all_proxy=" EGRESS_PROXY_URL,
        NULL,
};

int launch_egress_listen(void) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_in sa = {
                .sin_family = AF_INET,
                .sin_port = htons(EGRESS_LISTEN_PORT),
        };

        if (inet_pton(AF_INET, EGRESS_LISTEN_ADDR, &sa.sin_addr) != 1)
                return -EINVAL;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
                return -errno;
        return TAKE_FD(fd);
}

#if defined(__x86_64__)
#  define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#  define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

int launch_egress_seccomp(void) {
#ifdef NATIVE_AUDIT_ARCH
        /* A flat filter, as bubblewrap's: anything but the native
         * architecture (and, on x86-64, the x32 numbers) gets EPERM for
         * every call, so no other numbering of bind() slips through;
         * systemd's SystemCallArchitectures=native refuses those anyway.
         * Both bind() and listen(): listen() on an unbound socket binds it
         * to an ephemeral port itself (autobind), so either alone would
         * leave a way to listen. And io_uring_setup(): a ring does both
         * without either call (IORING_OP_BIND, _LISTEN, Linux 6.11). A
         * run's launcher refuses io_uring anyway; an upstream server's
         * supervisor (mcp-exec-upstream-exec) has only this filter and
         * its unit's. */
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
                BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U /* __X32_SYSCALL_BIT */, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bind, 3, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_listen, 2, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(filter), .filter = filter };

        /* NoNewPrivileges= set it already; without it the kernel refuses
         * the filter to an unprivileged process. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        /* prctl(), not seccomp(2): the launcher's own filter
         * (syscall-filter.h, @system-service) has no seccomp(2), prctl() it has. */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                return -errno;
        return 0;
#else
        return -EOPNOTSUPP;
#endif
}

/* The namespace has lo and nothing else. From /proc/net/dev (this
 * namespace's), not if_nameindex(): that needs AF_NETLINK, which the unit
 * refuses. */
static int check_interfaces(void) {
        _cleanup_(fclosep) FILE *f = NULL;
        char line[512];
        unsigned n = 0;
        bool only_lo = true;

        f = fopen("/proc/net/dev", "re");
        if (!f)
                return -errno;
        /* Two header lines, then "  NAME: counters…" per interface. */
        for (unsigned lines = 0; lines < 4096 && fgets(line, sizeof line, f); lines++) {
                char name[IF_NAMESIZE + 1];

                if (lines < 2)
                        continue;
                if (sscanf(line, " %16[^:]:", name) != 1)
                        return -EBADMSG;
                n++;
                only_lo = only_lo && streq(name, "lo");
        }
        return only_lo && n == 1 ? 0 : -EADDRNOTAVAIL;
}

/* No route leaves: a connect() to a documentation address is unreachable at
 * once (not refused by a firewall later, nor pending). */
static int check_no_route(void) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(80) };

        if (inet_pton(AF_INET, "192.0.2.1", &sa.sin_addr) != 1)
                return -EINVAL;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) >= 0)
                return -EISCONN;
        return errno == ENETUNREACH ? 0 : -errno;
}

/* Listening sockets in a /proc/net/tcp-style file: how many, and whether
 * one is the socket of inode ino. */
static int count_listening(const char *path, ino_t ino, unsigned *n, bool *ours) {
        _cleanup_(fclosep) FILE *f = NULL;
        char line[512];

        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        /* The header, then "sl local rem st tx:rx tr:when retrnsmt uid timeout inode …". */
        if (!fgets(line, sizeof line, f))
                return 0;
        for (unsigned lines = 0; lines < 65536 && fgets(line, sizeof line, f); lines++) {
                unsigned st;
                unsigned long inode;

                if (sscanf(line, " %*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &inode) != 2)
                        return -EBADMSG;
                if (st != 0x0A)         /* TCP_LISTEN */
                        continue;
                (*n)++;
                *ours = *ours || (ino_t) inode == ino;
        }
        return 0;
}

int launch_egress_check(int listener, const char **ret_reason) {
        struct stat st;
        unsigned n = 0;
        bool ours = false;
        int r;

        assert(ret_reason);

        r = check_interfaces();
        if (r < 0) {
                *ret_reason = "egress self-check: the run's network namespace has more than lo";
                return r;
        }
        r = check_no_route();
        if (r < 0) {
                *ret_reason =
                        "egress self-check: a connect() to 192.0.2.1:80 did not fail with ENETUNREACH (a route out?)";
                return r;
        }
        if (fstat(listener, &st) < 0) {
                *ret_reason = "egress self-check: our listener is gone";
                return -errno;
        }
        r = count_listening("/proc/net/tcp", st.st_ino, &n, &ours);
        if (r >= 0)
                r = count_listening("/proc/net/tcp6", st.st_ino, &n, &ours);
        if (r < 0) {
                *ret_reason = "egress self-check: cannot read /proc/net/tcp";
                return r;
        }
        if (n != 1 || !ours) {
                *ret_reason = "egress self-check: the run's namespace does not have exactly one TCP listener, ours";
                return -EADDRINUSE;
        }
        return 0;
}

void launch_egress_done(LaunchEgress *e) {
        if (!e)
                return;
        e->pending = safe_close(e->pending);
        e->listener = safe_close(e->listener);
        e->feed = safe_close(e->feed);
}

struct pollfd launch_egress_pollfd(const LaunchEgress *e) {
        assert(e);

        if (e->feed < 0 || e->listener < 0)
                return (struct pollfd) { .fd = -1 };
        if (e->pending >= 0)
                return (struct pollfd) { .fd = e->feed, .events = POLLOUT };
        return (struct pollfd) { .fd = e->listener, .events = POLLIN };
}

/* 1 passed (our copy closed: egressd serves it alone), 0 the feed is full
 * (*conn kept), -errno the feed is broken. */
static int pass_on(int feed, int *conn) {
        int r = launch_send_fds(feed, EGRESS_FEED_MSG, conn, 1);

        if (r == -EAGAIN || r == -ENOBUFS)
                return 0;
        if (r < 0)
                return r;
        *conn = safe_close(*conn);
        return 1;
}

/* 0: done for now (the rest wait in the backlog, or for the feed to drain),
 * -errno: the feed or the listener is broken. */
static int dispatch(LaunchEgress *e) {
        int r;

        if (e->pending >= 0) {
                r = pass_on(e->feed, &e->pending);
                if (r <= 0)
                        return r;
        }
        for (unsigned i = 0; i < ACCEPT_PER_WAKEUP; i++) {
                _cleanup_close_ int conn = accept4(e->listener, NULL, NULL, SOCK_CLOEXEC);

                if (conn < 0)   /* EMFILE and worse: stop accepting */
                        return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED ? 0 : -errno;
                r = pass_on(e->feed, &conn);
                if (r < 0)
                        return r;
                if (r == 0) {
                        e->pending = TAKE_FD(conn);
                        return 0;
                }
        }
        return 0;
}

void launch_egress_dispatch(LaunchEgress *e) {
        assert(e);

        if (e->feed >= 0 && e->listener >= 0 && dispatch(e) < 0)
                launch_egress_done(e);
}
