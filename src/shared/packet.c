/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "packet.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "json-util.h"
#include "macro.h"
#include "socket-util.h"
#include "util.h"

int packet_connect(const char *path) {
        return socket_connect_unix(SOCK_SEQPACKET | SOCK_NONBLOCK, path);
}

int packet_send(int fd, json_object *msg, const int *fds, size_t n_fds) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * PACKET_MAX_FDS)];
        } control = {};
        const char *s;
        size_t len;
        struct iovec iov;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        assert(fd >= 0);
        assert(msg);
        assert(fds || n_fds == 0);

        if (n_fds > PACKET_MAX_FDS)
                return -EINVAL;
        s = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        if (!s)
                return -ENOMEM;
        if (len > PACKET_MAX_SIZE)
                return -EMSGSIZE;
        iov = (struct iovec) { .iov_base = (void *) s, .iov_len = len };

        if (n_fds > 0) {
                struct cmsghdr *c;
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }

        for (;;) {
                ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL);
                if (k >= 0)
                        return 0;
                if (errno != EINTR)
                        return negative_errno();
        }
}

static void close_cmsg_fds(struct msghdr *mh) {
        assert(mh);

        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        int *p = (int *) CMSG_DATA(c);
                        for (size_t i = 0; i < n; i++)
                                safe_close(p[i]);
                }
}

int packet_recv(int fd, json_object **ret_msg, int *ret_fds, size_t max_fds, size_t *ret_n_fds) {
        assert(fd >= 0);
        assert(ret_msg);
        assert(ret_fds || max_fds == 0);

        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * PACKET_MAX_FDS)];
        } control = {};
        _cleanup_free_ char *buf = NULL;
        struct iovec iov;
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control,
        };
        json_object *j = NULL;
        const char *why;
        size_t n_fds = 0, end;
        ssize_t k;
        int r;

        buf = malloc(PACKET_MAX_SIZE + 1);
        if (!buf)
                return -ENOMEM;
        iov = (struct iovec) { .iov_base = buf, .iov_len = PACKET_MAX_SIZE + 1 };

        do
                k = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : negative_errno();

        if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t) k > PACKET_MAX_SIZE) {
                close_cmsg_fds(&mh);
                return -EBADMSG;
        }

        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
                        close_cmsg_fds(&mh);
                        return -EBADMSG;
                }
                size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                if (n_fds + n > max_fds) {
                        close_cmsg_fds(&mh);
                        for (size_t i = 0; i < n_fds; i++)
                                ret_fds[i] = safe_close(ret_fds[i]);
                        return -EBADMSG;
                }
                memcpy(ret_fds + n_fds, CMSG_DATA(c), n * sizeof(int));
                n_fds += n;
        }

        if (k == 0 && n_fds == 0) {
                *ret_msg = NULL;
                if (ret_n_fds)
                        *ret_n_fds = 0;
                return 0;
        }

        /* Strict, UTF-8 (json-util.h says why not json-c's strict mode). */
        r = json_parse_strict(buf, (size_t) k, 16, JSON_TOKENER_VALIDATE_UTF8, &j, &end, &why);
        if (r < 0 || end != (size_t) k || !json_object_is_type(j, json_type_object)) {
                json_object_put(r < 0 ? NULL : j);
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(ret_fds[i]);
                return r == -ENOMEM ? -ENOMEM : -EBADMSG;
        }

        *ret_msg = j;
        if (ret_n_fds)
                *ret_n_fds = n_fds;
        return 1;
}
