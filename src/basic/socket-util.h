/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* AF_UNIX addresses and connections: every program here talks over unix
 * sockets at a path. */

#include <sys/socket.h>
#include <sys/un.h>

union sockaddr_union {
        struct sockaddr sa;
        struct sockaddr_un un;
};

/* Fills ret with an AF_UNIX address for path. Returns the length to pass to
 * bind() or connect(); -ENAMETOOLONG if path does not fit, -EINVAL if empty. */
int sockaddr_un_set_path(struct sockaddr_un *ret, const char *path);

/* A socket of type (SOCK_STREAM, SOCK_SEQPACKET, optionally | SOCK_NONBLOCK;
 * always close-on-exec) connected to path. Returns the fd or -errno. */
int socket_connect_unix(int type, const char *path);
