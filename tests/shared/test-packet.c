/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/packet.[ch]: JSON packets with file descriptors
 * over a SOCK_SEQPACKET socketpair. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "packet.h"
#include "test-helpers.h"

static unsigned count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        unsigned n = 0;

        ASSERT_TRUE(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        ASSERT_TRUE(closedir(d) == 0);
        return n;
}

static void make_pair(int sv[2]) {
        ASSERT_TRUE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
}

static void close_pair(int sv[2]) {
        ASSERT_TRUE(close(sv[0]) == 0);
        ASSERT_TRUE(close(sv[1]) == 0);
}

static bool fd_is_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0;
}

/* Sends raw bytes with n_fds copies of fd, bypassing packet_send()'s checks. */
static void send_raw(int sock, const void *data, size_t len, int fd, size_t n_fds) {
        int fds[16];
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof fds)];
        } control;
        struct iovec iov = { .iov_base = (void *) data, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        ASSERT_TRUE(n_fds <= 16);
        memset(&control, 0, sizeof control);
        if (n_fds > 0) {
                struct cmsghdr *c;
                for (size_t i = 0; i < n_fds; i++)
                        fds[i] = fd;
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        ASSERT_EQ_INT(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t) len);
}

static void expect_badmsg_no_leak(const void *data, size_t len, size_t n_fds, size_t max_fds) {
        int sv[2], pipefd[2], fds[PACKET_MAX_FDS + 8];
        json_object *msg = (json_object *) 0x1;
        size_t n = 12345;
        unsigned before;

        make_pair(sv);
        ASSERT_TRUE(pipe2(pipefd, O_CLOEXEC) == 0);
        send_raw(sv[0], data, len, pipefd[1], n_fds);
        /* Our copy of the write end closed: only received copies remain. */
        ASSERT_TRUE(close(pipefd[1]) == 0);

        before = count_fds();
        for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
                fds[i] = -1;
        ASSERT_EQ_INT(packet_recv(sv[1], &msg, fds, max_fds, &n), -EBADMSG);
        ASSERT_EQ_INT(count_fds(), before);
        /* No copy of the write end is left anywhere: the pipe reads EOF. */
        {
                char c;
                ASSERT_EQ_INT(read(pipefd[0], &c, 1), 0);
        }
        ASSERT_TRUE(close(pipefd[0]) == 0);

        /* The bad packet is consumed; the socket is still usable. */
        ASSERT_EQ_INT(packet_recv(sv[1], &msg, fds, max_fds, &n), -EAGAIN);
        close_pair(sv);
}

TEST(test_round_trip_with_fds) {
        int sv[2], p[3][2], got[PACKET_MAX_FDS] = { [0 ... PACKET_MAX_FDS - 1] = -1 };
        json_object *msg = json_object_new_object(), *in = NULL, *v;
        size_t n_got = 0;
        unsigned before;
        char buf[16];

        make_pair(sv);
        for (size_t i = 0; i < 3; i++)
                ASSERT_TRUE(pipe2(p[i], O_CLOEXEC) == 0);

        json_object_object_add(msg, "op", json_object_new_string("run"));
        json_object_object_add(msg, "timeout_s", json_object_new_int(5));
        json_object_object_add(msg, "tag", json_object_new_string("t/\xC3\xA9\"\\"));

        /* stdin: the read end of pipe 0; stdout, stderr: write ends of 1, 2. */
        int send_fds[3] = { p[0][0], p[1][1], p[2][1] };
        ASSERT_EQ_INT(packet_send(sv[0], msg, send_fds, 3), 0);
        json_object_put(msg);

        before = count_fds();
        ASSERT_EQ_INT(packet_recv(sv[1], &in, got, PACKET_MAX_FDS, &n_got), 1);
        ASSERT_EQ_INT(count_fds(), before + 3);
        ASSERT_EQ_INT(n_got, 3);
        ASSERT_TRUE(json_object_is_type(in, json_type_object));
        ASSERT_TRUE(json_object_object_get_ex(in, "op", &v));
        ASSERT_STREQ(json_object_get_string(v), "run");
        ASSERT_TRUE(json_object_object_get_ex(in, "timeout_s", &v));
        ASSERT_EQ_INT(json_object_get_int(v), 5);
        ASSERT_TRUE(json_object_object_get_ex(in, "tag", &v));
        ASSERT_STREQ(json_object_get_string(v), "t/\xC3\xA9\"\\");
        ASSERT_EQ_INT(json_object_object_length(in), 3);
        json_object_put(in);

        for (size_t i = 0; i < 3; i++) {
                struct stat a, b;
                ASSERT_TRUE(got[i] >= 0);
                ASSERT_TRUE(got[i] != send_fds[i]);
                /* O_CLOEXEC */
                ASSERT_TRUE(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
                /* The same open file, in order. */
                ASSERT_TRUE(fstat(got[i], &a) == 0 && fstat(send_fds[i], &b) == 0);
                ASSERT_TRUE(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
        }
        /* Usable: write into the received stdin pipe's peer and read it back
         * through the received read end; write through the received write
         * ends and read at our ends. */
        ASSERT_EQ_INT(write(p[0][1], "in", 2), 2);
        ASSERT_EQ_INT(read(got[0], buf, sizeof buf), 2);
        ASSERT_MEMEQ(buf, "in", 2);
        ASSERT_EQ_INT(write(got[1], "out", 3), 3);
        ASSERT_EQ_INT(read(p[1][0], buf, sizeof buf), 3);
        ASSERT_MEMEQ(buf, "out", 3);
        ASSERT_EQ_INT(write(got[2], "err", 3), 3);
        ASSERT_EQ_INT(read(p[2][0], buf, sizeof buf), 3);
        ASSERT_MEMEQ(buf, "err", 3);

        for (size_t i = 0; i < 3; i++) {
                ASSERT_TRUE(close(got[i]) == 0);
                ASSERT_TRUE(close(p[i][0]) == 0);
                ASSERT_TRUE(close(p[i][1]) == 0);
        }
        close_pair(sv);
}

TEST(test_round_trip_without_fds) {
        int sv[2], got[PACKET_MAX_FDS] = { [0 ... PACKET_MAX_FDS - 1] = -1 };
        json_object *msg = json_object_new_object(), *in = NULL, *v;
        size_t n_got = 99;

        make_pair(sv);
        json_object_object_add(msg, "op", json_object_new_string("info"));
        ASSERT_EQ_INT(packet_send(sv[0], msg, NULL, 0), 0);
        /* Two packets stay two packets. */
        ASSERT_EQ_INT(packet_send(sv[0], msg, NULL, 0), 0);
        json_object_put(msg);

        for (int k = 0; k < 2; k++) {
                ASSERT_EQ_INT(packet_recv(sv[1], &in, got, PACKET_MAX_FDS, &n_got), 1);
                ASSERT_EQ_INT(n_got, 0);
                ASSERT_TRUE(json_object_object_get_ex(in, "op", &v));
                ASSERT_STREQ(json_object_get_string(v), "info");
                json_object_put(in);
                in = NULL;
        }
        ASSERT_EQ_INT(packet_recv(sv[1], &in, got, PACKET_MAX_FDS, &n_got), -EAGAIN);
        /* Receiving without fds wanted works when none come. */
        {
                json_object *m2 = json_object_new_object();
                ASSERT_EQ_INT(packet_send(sv[0], m2, NULL, 0), 0);
                json_object_put(m2);
                ASSERT_EQ_INT(packet_recv(sv[1], &in, NULL, 0, NULL), 1);
                ASSERT_EQ_INT(json_object_object_length(in), 0);
                json_object_put(in);
        }
        close_pair(sv);
}

TEST(test_eagain) {
        int sv[2], got[PACKET_MAX_FDS];
        json_object *in = NULL;
        size_t n = 0;

        make_pair(sv);
        /* The socket is blocking: packet_recv() must not wait anyway. */
        ASSERT_EQ_INT(packet_recv(sv[1], &in, got, PACKET_MAX_FDS, &n), -EAGAIN);
        ASSERT_EQ_INT(packet_recv(sv[0], &in, got, PACKET_MAX_FDS, &n), -EAGAIN);
        ASSERT_TRUE(in == NULL);
        close_pair(sv);
}

TEST(test_eof) {
        int sv[2], got[PACKET_MAX_FDS];
        json_object *in = (json_object *) 0x1;
        size_t n = 99;

        make_pair(sv);
        ASSERT_TRUE(close(sv[0]) == 0);
        ASSERT_EQ_INT(packet_recv(sv[1], &in, got, PACKET_MAX_FDS, &n), 0);
        ASSERT_TRUE(in == NULL);
        ASSERT_EQ_INT(n, 0);
        /* EOF stays EOF. */
        ASSERT_EQ_INT(packet_recv(sv[1], &in, got, PACKET_MAX_FDS, &n), 0);
        ASSERT_TRUE(close(sv[1]) == 0);

        /* A shutdown for writing is EOF too. */
        make_pair(sv);
        ASSERT_TRUE(shutdown(sv[0], SHUT_WR) == 0);
        in = (json_object *) 0x1;
        ASSERT_EQ_INT(packet_recv(sv[1], &in, got, PACKET_MAX_FDS, &n), 0);
        ASSERT_TRUE(in == NULL);
        close_pair(sv);
}

TEST(test_send_to_closed_peer) {
        int sv[2];
        json_object *msg = json_object_new_object();

        /* -EPIPE, and no SIGPIPE (which would kill this test: see main()).
         * Linux raises none for SOCK_SEQPACKET anyway; packet_send() also
         * passes MSG_NOSIGNAL. */
        make_pair(sv);
        ASSERT_TRUE(close(sv[1]) == 0);
        ASSERT_EQ_INT(packet_send(sv[0], msg, NULL, 0), -EPIPE);
        ASSERT_TRUE(close(sv[0]) == 0);
        json_object_put(msg);
}

TEST(test_send_limits) {
        int sv[2], fds[PACKET_MAX_FDS + 1] = { 0, 0, 0, 0, 0 };
        json_object *msg = json_object_new_object(), *in = NULL;
        char *big;
        size_t n = 0;

        make_pair(sv);
        /* More fds than the protocol allows: refused, nothing sent. */
        ASSERT_EQ_INT(packet_send(sv[0], msg, fds, PACKET_MAX_FDS + 1), -EINVAL);
        ASSERT_EQ_INT(packet_recv(sv[1], &in, NULL, 0, &n), -EAGAIN);

        /* A message whose JSON is exactly the maximum goes; one byte more does not. */
        big = malloc(PACKET_MAX_SIZE + 1);
        ASSERT_TRUE(big);
        memset(big, 'x', PACKET_MAX_SIZE);
        big[PACKET_MAX_SIZE - strlen("{\"k\":\"\"}")] = 0;
        json_object_object_add(msg, "k", json_object_new_string(big));
        ASSERT_EQ_INT(strlen(json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN)), PACKET_MAX_SIZE);
        ASSERT_EQ_INT(packet_send(sv[0], msg, NULL, 0), 0);
        ASSERT_EQ_INT(packet_recv(sv[1], &in, NULL, 0, &n), 1);
        {
                json_object *v;
                ASSERT_TRUE(json_object_object_get_ex(in, "k", &v));
                ASSERT_EQ_INT(json_object_get_string_len(v), PACKET_MAX_SIZE - strlen("{\"k\":\"\"}"));
        }
        json_object_put(in);
        in = NULL;

        big[PACKET_MAX_SIZE - strlen("{\"k\":\"\"}")] = 'x';
        big[PACKET_MAX_SIZE - strlen("{\"k\":\"\"}") + 1] = 0;
        json_object_object_add(msg, "k", json_object_new_string(big));
        ASSERT_EQ_INT(packet_send(sv[0], msg, NULL, 0), -EMSGSIZE);
        ASSERT_EQ_INT(packet_recv(sv[1], &in, NULL, 0, &n), -EAGAIN);

        free(big);
        json_object_put(msg);
        close_pair(sv);
}

TEST(test_not_an_object) {
        static const char *const bad[] = {
                "[1,2]", "42", "\"string\"", "null", "true", "[]", "[{}]", "1.5",
                /* not JSON at all, or incomplete */
                "{", "}", "{\"a\":}", "{\"a\" 1}", "hello", "\xff\xfe",
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                fprintf(stderr, "   packet: %s\n", bad[i]);
                expect_badmsg_no_leak(bad[i], strlen(bad[i]), 0, PACKET_MAX_FDS);
                /* With fds attached, they are closed. */
                expect_badmsg_no_leak(bad[i], strlen(bad[i]), 2, PACKET_MAX_FDS);
        }
}

TEST(test_trailing_garbage) {
        static const char *const bad[] = {
                "{}x", "{} {}", "{}{}", "{\"a\":1}]", "{\"a\":1}}", "{}null", "{}\"x\"",
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                fprintf(stderr, "   packet: %s\n", bad[i]);
                expect_badmsg_no_leak(bad[i], strlen(bad[i]), 0, PACKET_MAX_FDS);
                expect_badmsg_no_leak(bad[i], strlen(bad[i]), 3, PACKET_MAX_FDS);
        }
        /* An embedded NUL ends neither the packet nor the check. */
        expect_badmsg_no_leak("{}\0", 3, 1, PACKET_MAX_FDS);
        expect_badmsg_no_leak("{\"a\":1}\0{}", 10, 0, PACKET_MAX_FDS);
}

TEST(test_too_many_fds) {
        static const char ok[] = "{\"op\":\"run\"}";

        /* More than the caller takes. */
        expect_badmsg_no_leak(ok, strlen(ok), 3, 2);
        expect_badmsg_no_leak(ok, strlen(ok), 1, 0);
        expect_badmsg_no_leak(ok, strlen(ok), 3, 0);
        /* More than the protocol allows: still fits the control buffer, or
         * truncates it (MSG_CTRUNC); either way nothing may stay open. */
        expect_badmsg_no_leak(ok, strlen(ok), PACKET_MAX_FDS + 1, PACKET_MAX_FDS);
        expect_badmsg_no_leak(ok, strlen(ok), PACKET_MAX_FDS + 2, PACKET_MAX_FDS);
        expect_badmsg_no_leak(ok, strlen(ok), 16, PACKET_MAX_FDS);

        /* Exactly max_fds is fine. */
        {
                int sv[2], pipefd[2], got[2] = { -1, -1 };
                json_object *in = NULL;
                size_t n = 0;
                unsigned before;

                make_pair(sv);
                ASSERT_TRUE(pipe2(pipefd, O_CLOEXEC) == 0);
                send_raw(sv[0], ok, strlen(ok), pipefd[1], 2);
                before = count_fds();
                ASSERT_EQ_INT(packet_recv(sv[1], &in, got, 2, &n), 1);
                ASSERT_EQ_INT(n, 2);
                ASSERT_EQ_INT(count_fds(), before + 2);
                ASSERT_TRUE(fd_is_open(got[0]) && fd_is_open(got[1]));
                ASSERT_TRUE(close(got[0]) == 0 && close(got[1]) == 0);
                ASSERT_TRUE(close(pipefd[0]) == 0 && close(pipefd[1]) == 0);
                json_object_put(in);
                close_pair(sv);
        }
}

TEST(test_oversized_packet) {
        size_t sizes[] = { PACKET_MAX_SIZE + 1, PACKET_MAX_SIZE + 2, 2 * PACKET_MAX_SIZE };

        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                /* A valid JSON object, just too long. */
                char *p = malloc(sizes[i]);
                ASSERT_TRUE(p);
                memset(p, ' ', sizes[i]);
                memcpy(p, "{\"k\":\"", 6);
                memset(p + 6, 'x', sizes[i] - 8);
                memcpy(p + sizes[i] - 2, "\"}", 2);
                expect_badmsg_no_leak(p, sizes[i], 0, PACKET_MAX_FDS);
                expect_badmsg_no_leak(p, sizes[i], 3, PACKET_MAX_FDS);
                free(p);
        }
}

TEST(test_empty_packet_with_fds) {
        /* No bytes but fds: not EOF, and the fds are not kept. */
        expect_badmsg_no_leak("", 0, 2, PACKET_MAX_FDS);
}

int main(void) {
        /* A stray SIGPIPE must fail the test loudly rather than pass. */
        signal(SIGPIPE, SIG_DFL);

        RUN(test_round_trip_with_fds);
        RUN(test_round_trip_without_fds);
        RUN(test_eagain);
        RUN(test_eof);
        RUN(test_send_to_closed_peer);
        RUN(test_send_limits);
        RUN(test_not_an_object);
        RUN(test_trailing_garbage);
        RUN(test_too_many_fds);
        RUN(test_oversized_packet);
        RUN(test_empty_packet_with_fds);
        return 0;
}
