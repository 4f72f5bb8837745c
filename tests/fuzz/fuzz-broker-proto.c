/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the input is one SOCK_SEQPACKET packet from the broker
 * (or a client); packet_recv must not crash nor leak memory or fds. The
 * first byte picks how many fds travel alongside (0..5, where 5 is past
 * PACKET_MAX_FDS) and whether the receiver allows fewer than are sent. */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The lowest free descriptor number. Descriptors are allocated lowest
 * first, so an fd leaked by packet_recv takes this slot and moves it.
 * (Scanning the table with fcntl() is too slow to do on every input.) */
static int lowest_free_fd(void) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                abort();
        close(fd);
        return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int sv[2], fds[PACKET_MAX_FDS] = { -1, -1, -1, -1 }, n_send = 0, before;
        size_t max_fds = PACKET_MAX_FDS, n_fds = 0;
        json_object *msg = NULL;
        unsigned mode = 0;
        int r;

        if (size > PACKET_MAX_SIZE + 16)
                return 0;
        if (size > 0) {
                mode = data[0];
                data++;
                size--;
        }
        n_send = mode % (PACKET_MAX_FDS + 2);
        max_fds = (mode >> 3) % (PACKET_MAX_FDS + 1);

        before = lowest_free_fd();
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                abort();
        /* Room for a packet of any size we accept. */
        int sz = 256 * 1024;
        (void) setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);

        {
                int send_fds[8];
                union {
                        struct cmsghdr h;
                        uint8_t buf[CMSG_SPACE(sizeof(int) * 8)];
                } control = {};
                struct iovec iov = { .iov_base = (void *) data, .iov_len = size };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

                for (int i = 0; i < n_send; i++) {
                        send_fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                        if (send_fds[i] < 0)
                                abort();
                }
                if (n_send > 0) {
                        mh.msg_control = &control;
                        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_send);
                        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                        c->cmsg_level = SOL_SOCKET;
                        c->cmsg_type = SCM_RIGHTS;
                        c->cmsg_len = CMSG_LEN(sizeof(int) * n_send);
                        memcpy(CMSG_DATA(c), send_fds, sizeof(int) * n_send);
                }
                if (sendmsg(sv[0], &mh, MSG_NOSIGNAL) < 0) {
                        /* Too big for the socket: nothing to test. */
                        for (int i = 0; i < n_send; i++)
                                close(send_fds[i]);
                        close(sv[0]);
                        close(sv[1]);
                        return 0;
                }
                for (int i = 0; i < n_send; i++)
                        close(send_fds[i]);
        }

        r = packet_recv(sv[1], &msg, fds, max_fds, &n_fds);
        if (r == 1) {
                if (!msg || !json_object_is_type(msg, json_type_object))
                        abort();
                if (n_fds > max_fds || (int) n_fds != n_send)
                        abort();
                for (size_t i = 0; i < n_fds; i++) {
                        if (fcntl(fds[i], F_GETFD) != FD_CLOEXEC)
                                abort();
                        close(fds[i]);
                }
                /* The confirmation messages' readers take any packet. */
                BrokerConfirmAsk ask;
                BrokerConfirmAnswer answer;
                if (broker_confirm_ask_parse(msg, &ask) == 0 &&
                    (ask.id == 0 || strlen(ask.server) == 0 || strlen(ask.tool) == 0))
                        abort();
                if (broker_confirm_answer_parse(msg, &answer) == 0 && (answer.id == 0 ||
                    strlen(answer.reason) > BROKER_CONFIRM_REASON_MAX))
                        abort();
                json_object_put(msg);
        } else if (r == 0) {
                if (size != 0 || n_send != 0)
                        abort();
        } else if (r != -EBADMSG && r != -EAGAIN)
                abort();

        /* A second read finds nothing: one packet is one message. */
        if (packet_recv(sv[1], &msg, fds, max_fds, &n_fds) != -EAGAIN)
                abort();

        close(sv[0]);
        close(sv[1]);
        if (lowest_free_fd() != before)
                abort();                /* a received fd leaked */
        return 0;
}
