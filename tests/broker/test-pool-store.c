/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/pool-store.c: of the fds systemd passes the
 * broker, the listening socket is told from what its last idle exit stored
 * by name alone; a stored name that is not a warm unit's is closed, two
 * listening sockets are refused; and without a pool nothing stored is used:
 * every unit socket is closed. Each language's units and state (issue 42)
 * are told by name too, each unit tied to its language: Python's names are
 * the first brokers' (their stores still restore), a name of no language we
 * know, or Python's under a language's form, is closed. (The units
 * themselves, with PID 1 and the state's key: tests/integration/sandbox/
 * test-pool.sh, "idle".) */

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
#define ID2 "fedcba9876543210fedcba9876543210"
#define ID3 "00112233445566778899aabbccddeeff"

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

/* 1 + how many were adopted, of every language. */
static void done_count(const unsigned *adopted, void *userdata) {
        *(int *) userdata = 1 + (int) (adopted[LANGUAGE_PYTHON] + adopted[LANGUAGE_BASH] + adopted[LANGUAGE_JAVASCRIPT]);
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
        ASSERT_EQ_INT((int) s.units[0].language, LANGUAGE_PYTHON);
        ASSERT_EQ_INT(s.state_fd[LANGUAGE_PYTHON], SD_LISTEN_FDS_START + 2);
        ASSERT_EQ_INT(s.state_fd[LANGUAGE_BASH], -EBADF);
        ASSERT_TRUE(pool_store_has_language(&s, LANGUAGE_PYTHON));
        ASSERT_FALSE(pool_store_has_language(&s, LANGUAGE_BASH));
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 3));        /* no warm unit's name: closed */
        ASSERT_FALSE(pool_store_empty(&s));

        ASSERT_TRUE(pool_store_has_unit("mcp-exec-run-" ID ".service", &s));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-run-" ID ".servic", &s));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-session-" ID ".service", &s));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-run-ffffffffffffffffffffffffffffffff.service", &s));

        /* No pool (no discovery yet, or MCP_EXEC_POOL_SIZE=0): nothing used, all closed. */
        pool_store_restore(&s, NULL, (char *[]) { "a key", "a key", "a key" }, 600ULL * 1000000, done_count, &done);
        ASSERT_EQ_INT(done, 1);
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 1));
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 2));
        ASSERT_FALSE(pool_store_has_unit("mcp-exec-run-" ID ".service", &s));
        pool_store_done(&s);
        ASSERT_TRUE(pool_store_empty(&s));
        close(listen_fd);
}

static void check_name(const char *name, int kind, Language language, const char *id) {
        Language l = _LANGUAGE_MAX;
        const char *i = "unset";

        ASSERT_EQ_INT(pool_store_parse_name(name, &l, &i), kind);
        if (kind <= 0)
                return;
        ASSERT_EQ_INT((int) l, (int) language);
        if (id)
                ASSERT_STREQ(i, id);
        else
                ASSERT_TRUE(i == NULL);
}

TEST(test_names) {
        char prefix[POOL_STORE_NAME_MAX], state[POOL_STORE_NAME_MAX], name[POOL_STORE_NAME_MAX + 40];

        /* Python's: the names the first brokers kept their units under. */
        ASSERT_EQ_INT(pool_store_names(LANGUAGE_PYTHON, prefix, state), 0);
        ASSERT_STREQ(prefix, "warm-");
        ASSERT_STREQ(state, "pool-state");
        ASSERT_EQ_INT(pool_store_names(LANGUAGE_BASH, prefix, state), 0);
        ASSERT_STREQ(prefix, "warm-bash-");
        ASSERT_STREQ(state, "warm-bash-state");
        ASSERT_EQ_INT(pool_store_names(_LANGUAGE_MAX, prefix, state), -EINVAL);
        /* Each language's names are read back as its own. */
        for (Language l = LANGUAGE_PYTHON; l < _LANGUAGE_MAX; l++) {
                ASSERT_EQ_INT(pool_store_names(l, prefix, state), 0);
                (void) snprintf(name, sizeof name, "%s%s", prefix, ID);
                check_name(name, POOL_STORE_NAME_UNIT, l, ID);
                check_name(state, POOL_STORE_NAME_STATE, l, NULL);
        }
        check_name("warm-" ID, POOL_STORE_NAME_UNIT, LANGUAGE_PYTHON, ID);
        check_name("warm-javascript-" ID2, POOL_STORE_NAME_UNIT, LANGUAGE_JAVASCRIPT, ID2);
        check_name("warm-javascript-state", POOL_STORE_NAME_STATE, LANGUAGE_JAVASCRIPT, NULL);
        /* Ours, but no unit of a language we know: closed, never a socket of ours. */
        check_name("warm-python-" ID, -EINVAL, 0, NULL);
        check_name("warm-python-state", -EINVAL, 0, NULL);
        check_name("warm-perl-" ID, -EINVAL, 0, NULL);
        check_name("warm-bashx-" ID, -EINVAL, 0, NULL);
        check_name("warm-bash" ID, -EINVAL, 0, NULL);
        check_name("warm-bash-", -EINVAL, 0, NULL);
        check_name("warm-bash-" ID "0", -EINVAL, 0, NULL);
        check_name("warm-bash-0123456789ABCDEF0123456789ABCDEF", -EINVAL, 0, NULL);
        check_name("warm-bash-state-" ID, -EINVAL, 0, NULL);
        check_name("warm-", -EINVAL, 0, NULL);
        /* Not ours: the listening socket's. */
        check_name("mcp-exec-broker.socket", 0, 0, NULL);
        check_name("pool-state-bash", 0, 0, NULL);
}

TEST(test_take_languages) {
        PoolStore s = POOL_STORE_INIT;
        int pfd[2], fds[8], listen_fd = -1, done = 0;

        ASSERT_EQ_INT(pipe2(pfd, O_CLOEXEC), 0);
        close(pfd[1]);
        fds[0] = seqpacket();
        fds[1] = seqpacket();
        fds[2] = pfd[0];
        fds[3] = seqpacket();
        fds[4] = seqpacket();
        fds[5] = seqpacket();
        fds[6] = seqpacket();
        fds[7] = seqpacket();
        pass_fds(fds, 8, "warm-bash-" ID ":mcp-exec-broker.socket:warm-bash-state:warm-javascript-" ID2
                 ":warm-python-" ID3 ":warm-javascript-" ID ":warm-perl-" ID3 ":warm-" ID3);

        ASSERT_EQ_INT(pool_store_take(&s, &listen_fd), 1);
        ASSERT_EQ_INT(listen_fd, SD_LISTEN_FDS_START + 1);
        ASSERT_EQ_INT((int) s.n_units, 3);
        ASSERT_STREQ(s.units[0].id, ID);
        ASSERT_EQ_INT((int) s.units[0].language, LANGUAGE_BASH);
        ASSERT_EQ_INT(s.units[0].fd, SD_LISTEN_FDS_START);
        ASSERT_STREQ(s.units[1].id, ID2);
        ASSERT_EQ_INT((int) s.units[1].language, LANGUAGE_JAVASCRIPT);
        ASSERT_STREQ(s.units[2].id, ID3);
        ASSERT_EQ_INT((int) s.units[2].language, LANGUAGE_PYTHON);
        ASSERT_EQ_INT(s.state_fd[LANGUAGE_BASH], SD_LISTEN_FDS_START + 2);
        ASSERT_EQ_INT(s.state_fd[LANGUAGE_PYTHON], -EBADF);
        ASSERT_EQ_INT(s.state_fd[LANGUAGE_JAVASCRIPT], -EBADF);
        /* Python's under a language's form, one id under two languages, no language: closed. */
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 4));
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 5));
        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + 6));
        ASSERT_TRUE(pool_store_has_language(&s, LANGUAGE_BASH));
        ASSERT_TRUE(pool_store_has_language(&s, LANGUAGE_JAVASCRIPT));
        ASSERT_TRUE(pool_store_has_unit("mcp-exec-run-" ID ".service", &s));
        ASSERT_TRUE(pool_store_has_unit("mcp-exec-run-" ID2 ".service", &s));

        /* No pool of any language (off, not installed): nothing used, all closed. */
        pool_store_restore(&s, (Pool *[]) { NULL, NULL, NULL }, (char *[]) { "k", "k", "k" }, 600ULL * 1000000,
                           done_count, &done);
        ASSERT_EQ_INT(done, 1);
        for (int i = 0; i < 8; i++)
                if (i != 1)
                        ASSERT_FALSE(fd_open(SD_LISTEN_FDS_START + i));
        ASSERT_FALSE(pool_store_has_language(&s, LANGUAGE_BASH));
        pool_store_done(&s);
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
        RUN(test_names);
        RUN(test_take_languages);
        RUN(test_two_sockets);
        RUN(test_none);
        return 0;
}
