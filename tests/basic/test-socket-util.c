/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/socket-util.[ch]: unix addresses and connects. */

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "socket-util.h"
#include "test-helpers.h"

TEST(test_set_path) {
        struct sockaddr_un un;
        char longest[sizeof un.sun_path], too_long[sizeof un.sun_path + 1];

        ASSERT_EQ_INT(sockaddr_un_set_path(&un, "/run/x.sock"), offsetof(struct sockaddr_un, sun_path) + 12);
        ASSERT_EQ_INT(un.sun_family, AF_UNIX);
        ASSERT_STREQ(un.sun_path, "/run/x.sock");

        /* The path and its NUL must fit. */
        memset(longest, 'a', sizeof longest - 1);
        longest[sizeof longest - 1] = 0;
        ASSERT_EQ_INT(sockaddr_un_set_path(&un, longest), sizeof un);
        memset(too_long, 'a', sizeof too_long - 1);
        too_long[sizeof too_long - 1] = 0;
        ASSERT_EQ_INT(sockaddr_un_set_path(&un, too_long), -ENAMETOOLONG);
        ASSERT_EQ_INT(sockaddr_un_set_path(&un, ""), -EINVAL);
}

TEST(test_connect) {
        char dir[] = "/tmp/test-socket-util-XXXXXX", path[64];
        union sockaddr_union sa;
        int listener, fd, salen;

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/s", dir);
        ASSERT_EQ_INT(socket_connect_unix(SOCK_STREAM, path), -ENOENT);

        salen = sockaddr_un_set_path(&sa.un, path);
        ASSERT_TRUE(salen > 0);
        listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(listener >= 0);
        ASSERT_TRUE(bind(listener, &sa.sa, (socklen_t) salen) == 0);
        ASSERT_TRUE(listen(listener, 4) == 0);

        fd = socket_connect_unix(SOCK_SEQPACKET | SOCK_NONBLOCK, path);
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        ASSERT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
        safe_close(fd);
        /* The wrong type is refused by the kernel, not hidden. */
        ASSERT_EQ_INT(socket_connect_unix(SOCK_STREAM, path), -EPROTOTYPE);

        safe_close(listener);
        ASSERT_TRUE(unlink(path) == 0);
        ASSERT_TRUE(rmdir(dir) == 0);
}

int main(void) {
        RUN(test_set_path);
        RUN(test_connect);
        return 0;
}
