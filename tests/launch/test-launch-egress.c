/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/launch/launch-egress.[ch] (issue 22), in a network
 * namespace of the test's own (skipped where it cannot make one): the
 * interpreter's seccomp filter makes bind() and listen() fail with EPERM in
 * a forked child (io_uring_setup() too: a ring would do both) while the
 * parent's listener keeps working; the parent passes each accepted
 * connection over the feed; the self-check passes in a namespace with only
 * lo and fails with a second listener. */

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress-proto.h"
#include "launch-egress.h"
#include "macro.h"
#include "test-helpers.h"

/* A namespace of our own with lo up: 0, or -errno (then the test skips). */
static int own_netns(void) {
        struct ifreq ifr = { .ifr_name = "lo" };
        int fd, r = 0;

        if (unshare(CLONE_NEWNET) < 0)
                return -errno;
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                r = -errno;
        ifr.ifr_flags |= IFF_UP;
        if (r == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                r = -errno;
        close(fd);
        return r;
}

static struct sockaddr_in proxy_addr(uint16_t port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

        ASSERT_TRUE(inet_pton(AF_INET, EGRESS_LISTEN_ADDR, &sa.sin_addr) == 1);
        return sa;
}

/* In the filtered child: the answers it gets, as exit codes. */
static int filtered_child(void) {
        struct sockaddr_in any = { .sin_family = AF_INET }, proxy = proxy_addr(EGRESS_LISTEN_PORT);
        struct sockaddr_un un = { .sun_family = AF_UNIX, .sun_path = "\0launch-egress-test" };
        uint8_t ring_params[120] = {};  /* struct io_uring_params, zeroed */
        int tcp, tcp2, unix_fd, c;

        if (launch_egress_seccomp() < 0)
                return 10;
        tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        tcp2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        unix_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (tcp < 0 || tcp2 < 0 || unix_fd < 0)
                return 11;
        if (bind(tcp, (struct sockaddr *) &any, sizeof any) >= 0 || errno != EPERM)
                return 12;
        /* listen() on an unbound socket would autobind: refused too. */
        if (listen(tcp2, 1) >= 0 || errno != EPERM)
                return 13;
        if (bind(unix_fd, (struct sockaddr *) &un, sizeof un) >= 0 || errno != EPERM)
                return 14;
        /* Nor through io_uring (IORING_OP_BIND, _LISTEN: Linux 6.11): no ring. */
        if (syscall(SYS_io_uring_setup, 1, ring_params) >= 0 || errno != EPERM)
                return 17;
        /* What it may do: connect to the launcher's listener. */
        c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0 || connect(c, (struct sockaddr *) &proxy, sizeof proxy) < 0)
                return 15;
        if (write(c, "hello", 5) != 5)
                return 16;
        return 0;
}

/* One fd from the feed, with EGRESS_FEED_MSG. */
static int recv_conn(int feed) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        char msg[16] = {};
        struct iovec iov = { .iov_base = msg, .iov_len = sizeof msg - 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof control };
        struct cmsghdr *c;
        int fd;

        ASSERT_TRUE(recvmsg(feed, &mh, MSG_CMSG_CLOEXEC) > 0);
        ASSERT_STREQ(msg, EGRESS_FEED_MSG);
        c = CMSG_FIRSTHDR(&mh);
        ASSERT_TRUE(c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)));
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
        return fd;
}

/* A feed that is full for a while (egressd slow on a loaded machine) keeps
 * the network: the connection waits, then goes once the feed drains. */
static void full_feed(LaunchEgress *e, int peer) {
        enum { N = 40 };
        int conns[N], got = 0, one = 1;
        struct sockaddr_in sa = proxy_addr(EGRESS_LISTEN_PORT);
        struct pollfd p;

        /* The smallest send buffer: a few packets fill it. */
        ASSERT_EQ_INT(setsockopt(e->feed, SOL_SOCKET, SO_SNDBUF, &one, sizeof one), 0);
        for (int i = 0; i < N; i++) {
                conns[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                ASSERT_TRUE(conns[i] >= 0);
                ASSERT_EQ_INT(connect(conns[i], (struct sockaddr *) &sa, sizeof sa), 0);
        }
        /* Nobody reads the feed: the accepting stops with one connection
         * pending, and what is polled is the feed's room. */
        for (int i = 0; i < N && e->pending < 0; i++)
                launch_egress_dispatch(e);
        ASSERT_TRUE(e->listener >= 0 && e->feed >= 0 && e->pending >= 0);
        p = launch_egress_pollfd(e);
        ASSERT_EQ_INT(p.fd, e->feed);
        ASSERT_EQ_INT(p.events, POLLOUT);
        ASSERT_EQ_INT(poll(&p, 1, 0), 0);
        /* egressd reads again: every connection arrives. */
        while (got < N) {
                int conn = recv_conn(peer);

                ASSERT_TRUE(conn >= 0);
                close(conn);
                got++;
                p = launch_egress_pollfd(e);
                if (poll(&p, 1, 0) > 0)
                        launch_egress_dispatch(e);
                ASSERT_TRUE(e->listener >= 0 && e->feed >= 0);
        }
        ASSERT_TRUE(e->pending < 0);
        for (int i = 0; i < N; i++)
                close(conns[i]);
}

static void in_netns(void) {
        const char *reason = NULL;
        LaunchEgress e = LAUNCH_EGRESS_NULL;
        int feed[2], status, conn, second;
        char buf[8] = {};
        struct sockaddr_in sa = proxy_addr(8080);
        pid_t pid;

        e.listener = launch_egress_listen();
        ASSERT_TRUE(e.listener >= 0);
        /* The one listener: the self-check passes. */
        ASSERT_EQ_INT(launch_egress_check(e.listener, &reason), 0);
        /* No second listener on the port (no SO_REUSEPORT). */
        ASSERT_EQ_INT(launch_egress_listen(), -EADDRINUSE);

        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, feed), 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0)
                _exit(filtered_child());
        ASSERT_EQ_INT((int) waitpid(pid, &status, 0), (int) pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);

        /* The child connected and wrote before it exited: its connection
         * is in the backlog, and goes over the feed. */
        /* No feed yet (a session's comes after "ready"): nothing to poll. */
        ASSERT_EQ_INT(launch_egress_pollfd(&e).fd, -1);
        e.feed = feed[0];
        ASSERT_EQ_INT(launch_egress_pollfd(&e).fd, e.listener);
        launch_egress_dispatch(&e);
        ASSERT_TRUE(e.listener >= 0 && e.feed >= 0 && e.pending < 0);
        conn = recv_conn(feed[1]);
        ASSERT_TRUE(conn >= 0);
        ASSERT_EQ_INT((int) read(conn, buf, 5), 5);
        ASSERT_STREQ(buf, "hello");
        close(conn);

        /* A second listener (one the filter would have refused the code)
         * fails the self-check. */
        second = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(second >= 0);
        ASSERT_EQ_INT(bind(second, (struct sockaddr *) &sa, sizeof sa), 0);
        ASSERT_EQ_INT(listen(second, 1), 0);
        ASSERT_TRUE(launch_egress_check(e.listener, &reason) < 0);
        ASSERT_CONTAINS(reason, "exactly one TCP listener");
        close(second);
        ASSERT_EQ_INT(launch_egress_check(e.listener, &reason), 0);

        full_feed(&e, feed[1]);

        /* A broken feed stops the accepting: the listener goes. */
        close(feed[1]);
        conn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sa = proxy_addr(EGRESS_LISTEN_PORT);
        ASSERT_EQ_INT(connect(conn, (struct sockaddr *) &sa, sizeof sa), 0);
        launch_egress_dispatch(&e);
        ASSERT_TRUE(e.listener < 0 && e.feed < 0 && e.pending < 0);
        close(conn);
        launch_egress_done(&e);
}

TEST(test_egress_netns) {
        pid_t pid = fork();
        int status, r;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                r = own_netns();
                if (r < 0) {
                        fprintf(stderr, "no network namespace of our own (%s): skipped\n", strerror(-r));
                        _exit(EXIT_TEST_SKIP);
                }
                in_netns();
                _exit(0);
        }
        ASSERT_EQ_INT((int) waitpid(pid, &status, 0), (int) pid);
        ASSERT_TRUE(WIFEXITED(status));
        if (WEXITSTATUS(status) == EXIT_TEST_SKIP)
                exit(EXIT_TEST_SKIP);
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
}

TEST(test_env) {
        size_t n = 0;

        for (; launch_egress_env[n]; n++)
                ASSERT_CONTAINS(launch_egress_env[n], "=" EGRESS_PROXY_URL);
        ASSERT_EQ_INT((int) n, 6);
}

int main(void) {
        RUN(test_env);
        RUN(test_egress_netns);
        return 0;
}
