/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "socket-util.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"

int sockaddr_un_set_path(struct sockaddr_un *ret, const char *path) {
        size_t l;

        assert(ret);
        assert(path);

        l = strlen(path);
        if (l == 0)
                return -EINVAL;
        if (l >= sizeof ret->sun_path)
                return -ENAMETOOLONG;
        *ret = (struct sockaddr_un) { .sun_family = AF_UNIX };
        memcpy(ret->sun_path, path, l + 1);
        return (int) (offsetof(struct sockaddr_un, sun_path) + l + 1);
}

int socket_connect_unix(int type, const char *path) {
        union sockaddr_union sa;
        _cleanup_close_ int fd = -EBADF;
        int salen;

        salen = sockaddr_un_set_path(&sa.un, path);
        if (salen < 0)
                return salen;
        fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        /* A unix connect completes at once or fails; non-blocking, a full
         * backlog is an error (EAGAIN) rather than a wait. */
        if (connect(fd, &sa.sa, (socklen_t) salen) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}
