/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/pool-store.c: of the fds systemd passes the
 * broker, the listening socket is told from what its last idle exit stored
 * by name alone; a stored name that is not a warm unit's is closed, two
 * listening sockets are refused; and without a pool nothing stored is used:
 * every unit socket is closed. (The units themselves, with PID 1 and the
 * state's key: tests/integration/sandbox/test-pool.sh, "idle".) */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "pool-store.h"
#include "test-helpers.h"

#define ID "0123456789abcdef0123456789abcdef"

static bool fd_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0;
}

/* fds 3.. as systemd passes them, named. */
static void pass_fds(const int *fds, size_t n, const char *names) {
        char buf[32];

        int high[8];

        ASSERT_TRUE(n <= 8);
        /* Out of the way first: a new fd may be one of 3.. itself. */
        for (size_t i = 0; i < n; i++) {
                high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 100);
                ASSERT_TRUE(high[i] >= 100);
                close(fds[i]);
        }
        for (size_t i = 0; i < n; i++) {
                ASSERT_TRUE(dup2(high[i], SD_LISTEN_FDS_START + (int) i) >= 0);
                close(high[i]);
        }
        (void) snprintf(buf, sizeof buf, "%d", (int) getpid());
        ASSERT_EQ_INT(setenv("LISTEN_PID", buf, 1), 0);
        (void) snprintf(buf, sizeof buf, "%zu", n);
        ASSERT_EQ_INT(setenv("LISTEN_FDS", buf, 1), 0);
        ASSERT_EQ_INT(setenv("LISTEN_FDNAMES", names, 1), 0);
}

static int seqpacket(void) {
        int sp[2];

        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
        close(sp[1]);
        return sp[0];
}

static void done_count(unsigned adopted, void *userdata) {
        *(int *) userdata = (int) adopted + 1;
}

TEST(test_take) {
        PoolStore s = POOL_STORE_INIT;
        int pfd[2], fds[4], listen_fd = -1, done = 0;

        ASSERT_EQ_INT(pipe2(pfd, O_CLOEXEC), 0);
        ASSERT_TRUE(write(pfd[1], "{}", 2) == 2);
        close(pfd[1]);
        fds[0] = seqpacket();
        fds[1] = seqpacket();
        fds[2] = pfd[0];
        fds[3] = seqpacket();
        pass_fds(fds, 4, "mcp-exec-broker.socket:warm-" ID ":pool-state:warm-notanid");

        ASSERT_EQ_INT(pool_store_take(&s, &listen_fd), 1);
        ASSERT_EQ_INT(listen_fd, SD_LISTEN_FDS_START);
        ASSERT_TRUE(getenv("LISTEN_FDS") == NULL);
        ASSERT_EQ_INT((int) s.n_units, 1);
        ASSERT_STREQ(s.units[0].id, ID);
        ASSERT_EQ_INT(s.units[0].fd, SD_LISTEN_FDS_START + 1);
        ASSERT_EQ_INT(s.state_fd, SD_LISTEN_FDS_START + 2);
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 3));        /* no warm unit's name: closed */
        ASSERT_FALSE(pool_store_empty(&s));

        ASSERT_TRUE(pool_store_has_unit("mcp-exec-run-" ID ".service", &s));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-run-" ID ".servic", &s));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-session-" ID ".service", &s));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-run-ffffffffffffffffffffffffffffffff.service", &s));

        /* No pool (no discovery yet, or MCP_EXEC_POOL_SIZE=0): nothing used, all closed. */
        pool_store_restore(&s, NULL, "a key", 600ULL * 1000000, done_count, &done);
        ASSERT_EQ_INT(done, 1);
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 1));
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 2));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-run-" ID ".service", &s));
        pool_store_done(&s);
        ASSERT_TRUE(pool_store_empty(&s));
        close(listen_fd);
}

TEST(test_two_sockets) {
        PoolStore s = POOL_STORE_INIT;
        int fds[3], listen_fd = -1;

        fds[0] = seqpacket();
        fds[1] = seqpacket();
        fds[2] = seqpacket();
        pass_fds(fds, 3, "a.socket:warm-" ID ":b.socket");
        ASSERT_EQ_INT(pool_store_take(&s, &listen_fd), -EINVAL);
        ASSERT_EQ_INT(listen_fd, -1);
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START));
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 2));
        pool_store_done(&s);
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 1));
}

TEST(test_none) {
        PoolStore s = POOL_STORE_INIT;
        int listen_fd = -1;

        ASSERT_EQ_INT(unsetenv("LISTEN_FDS"), 0);
        ASSERT_EQ_INT(pool_store_take(&s, &listen_fd), 0);
        ASSERT_TRUE(pool_store_empty(&s));
        pool_store_done(&s);
}

int main(void) {
        /* Nobody to tell: FDSTOREREMOVE=1 goes nowhere. */
        (void) unsetenv("NOTIFY_SOCKET");
        RUN(test_take);
        RUN(test_two_sockets);
        RUN(test_none);
        return 0;
}
