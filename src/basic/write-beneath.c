/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "write-beneath.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "util.h"

static bool component_valid(const char *c, size_t n) {
        return n > 0 && n <= NAME_MAX && !(n == 1 && c[0] == '.') && !(n == 2 && c[0] == '.' && c[1] == '.');
}

static int write_file(int dir_fd, const char *name, const void *data, size_t n) {
        char tmp[64], id[SD_ID128_STRING_MAX];
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = random_hex128(id);
        if (r < 0)
                return r;
        (void) snprintf(tmp, sizeof tmp, ".mcp-exec-%.16s.tmp", id);
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return negative_errno();
        r = loop_write(fd, data, n);
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlinkat(dir_fd, tmp, 0);
        return r;
}

int write_beneath(int dir_fd, const char *path, const void *data, size_t n) {
        _cleanup_close_ int owned = -EBADF;
        int fd = dir_fd;
        const char *p = path;

        assert(dir_fd >= 0);
        assert(path);
        assert(data || n == 0);

        /* The whole path first: nothing is made for a path that is refused. */
        for (const char *c = path;;) {
                const char *slash = strchr(c, '/');
                if (!component_valid(c, slash ? (size_t) (slash - c) : strlen(c)))
                        return -EINVAL;
                if (!slash)
                        break;
                c = slash + 1;
        }

        for (;;) {
                const char *slash = strchr(p, '/');
                size_t len = slash ? (size_t) (slash - p) : strlen(p);
                char name[NAME_MAX + 1];
                int next;

                memcpy(name, p, len);
                name[len] = 0;
                if (!slash)
                        return write_file(fd, name, data, n);

                if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
                next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return negative_errno();
                safe_close(owned);
                fd = owned = next;
                p = slash + 1;
        }
}
