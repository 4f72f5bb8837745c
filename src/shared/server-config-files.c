/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* servers.d's files (server-config.h): reading one NAME.conf safely, every
 * one of a directory in name order. The parsing is server-config.c's. */
#include "server-config.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server-config-internal.h"
#include "strv.h"
#include "util.h"

/* Names of servers.d looked at, of which the first SERVERS_MAX are read. */
#define SERVERS_LISTED_MAX (16 * SERVERS_MAX)

/* ---- files ---- */

static int read_file_at(int dir_fd, const char *file, char **ret, size_t *ret_len, const char **ret_why) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t n = 0;

        fd = openat(dir_fd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0) {
                *ret_why = errno == ELOOP ? "is a symbolic link" : "cannot be read";
                return -errno;
        }
        if (!S_ISREG(st.st_mode)) {
                *ret_why = "is no regular file";
                return -EINVAL;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                *ret_why = "group or others may write it (chmod 0644, owned by root)";
                return -EPERM;
        }
        text = malloc(SERVER_FILE_MAX + 1);
        if (!text)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, text + n, SERVER_FILE_MAX + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        *ret_why = "cannot be read";
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > SERVER_FILE_MAX) {
                        *ret_why = "is larger than 64 KiB";
                        return -EFBIG;
                }
        }
        *ret = TAKE_PTR(text);
        *ret_len = n;
        return 0;
}

static int load_at(int dir_fd, const char *dir, const char *name, ServerConfig **ret, char **ret_error) {
        _cleanup_free_ char *file = NULL, *path = NULL, *text = NULL;
        const char *reason = NULL;
        size_t len = 0;
        int r;

        if (asprintf(&file, "%s.conf", name) < 0 || asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        if (!server_name_is_valid(name))
                return server_config_fail_at(ret_error, path, 0,
                               "'%s' is not a server name (1 to %d of a-z, 0-9 and _, starting with a letter); "
                               "not read",
                               name, SERVER_NAME_MAX);
        r = read_file_at(dir_fd, file, &text, &len, &reason);
        if (r == -ENOMEM)
                return r;
        if (r == -EINVAL || r == -EPERM || r == -EFBIG)
                return server_config_fail_at(ret_error, path, 0, "%s; not read", reason) == -ENOMEM ? -ENOMEM : r;
        if (r < 0)
                return server_config_fail_at(ret_error, path, 0, "%s: %s", reason, strerror(-r)) == -ENOMEM ?
                       -ENOMEM : r;
        return server_config_parse(name, path, text, len, ret, ret_error);
}

int server_config_load(const char *dir, const char *name, ServerConfig **ret, char **ret_error) {
        _cleanup_close_ int dir_fd = -EBADF;

        assert(dir);
        assert(name);
        assert(ret);

        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) {
                int e = errno;
                return server_config_fail_at(ret_error, dir, 0, "cannot be opened: %s", strerror(e)) == -ENOMEM ?
                       -ENOMEM : -e;
        }
        return load_at(dir_fd, dir, name, ret, ret_error);
}

static int compare_strings(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names (less ".conf") of dir's *.conf entries, sorted. */
static int list_names(DIR *d, char ***ret) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        size_t n = 0;
        struct dirent *de;
        int r;

        if (!l)
                return -ENOMEM;
        while ((errno = 0, de = readdir(d))) {
                size_t k = strlen(de->d_name);

                if (de->d_name[0] == '.' || k <= 5 || !streq(de->d_name + k - 5, ".conf"))
                        continue;
                /* Bounded: a directory of a million files costs little
                 * memory; past SERVERS_MAX in name order all are refused. */
                if (n >= SERVERS_LISTED_MAX)
                        break;
                r = strv_extend_n(&l, de->d_name, k - 5);
                if (r < 0)
                        return r;
                n++;
        }
        if (errno != 0)
                return -errno;
        qsort(l, n, sizeof(char *), compare_strings);
        *ret = TAKE_PTR(l);
        return 0;
}

int server_configs_load(const char *dir, ServerConfigs *ret) {
        _cleanup_(server_configs_done) ServerConfigs s = {};
        _cleanup_strv_free_ char **names = NULL;
        DIR *d;
        int r;

        assert(dir);
        assert(ret);

        d = opendir(dir);
        if (!d && errno == ENOENT) {
                *ret = (ServerConfigs) {};
                return 0;
        }
        if (!d)
                return -errno;
        r = list_names(d, &names);
        if (r >= 0 && !(s.servers = new0(ServerConfig *, SERVERS_MAX)))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && names[i]; i++) {
                _cleanup_free_ char *error = NULL;
                ServerConfig *c = NULL;

                if (i >= SERVERS_MAX) {
                        r = server_config_fail_at(&error, dir, 0,
                                                  "more than %d servers: %s.conf and those after it are not read",
                                                  SERVERS_MAX, names[i]);
                        r = r == -ENOMEM ? r : strv_extend_n(&s.errors, error, strlen(error));
                        break;
                }
                r = load_at(dirfd(d), dir, names[i], &c, &error);
                if (r >= 0)
                        s.servers[s.n_servers++] = c;
                else if (r != -ENOMEM && error)
                        r = strv_extend_n(&s.errors, error, strlen(error));
        }
        closedir(d);
        if (r < 0)
                return r;
        *ret = s;
        s = (ServerConfigs) {};
        return 0;
}

void server_configs_done(ServerConfigs *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_servers; i++)
                server_config_free(s->servers[i]);
        free(s->servers);
        strv_free(s->errors);
        *s = (ServerConfigs) {};
}

const ServerConfig *server_configs_find(const ServerConfigs *s, const char *name) {
        assert(s);

        for (size_t i = 0; name && i < s->n_servers; i++)
                if (streq(s->servers[i]->name, name))
                        return s->servers[i];
        return NULL;
}
