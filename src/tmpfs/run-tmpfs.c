/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "run-tmpfs.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "dirent-util.h"
#include "macro.h"
#include "unit-names.h"

static const char *const unit_prefixes[] = { UNIT_PREFIX_RUN, UNIT_PREFIX_SESSION };

/* mcp-exec.slice sits in mcp.slice (a dash in a slice's name nests it). */
#define SLICE_CGROUP "/mcp.slice/mcp-exec.slice"

/* ROOT itself, not what a symlink put in its place would lead to; with
 * root_only, refused unless only root may enter it. Everything under ROOT is
 * then reached from this fd: nothing is resolved by path twice. */
static int open_root(const char *root, bool root_only) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        assert(root);

        fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                /* A symlink (ELOOP) or anything but a directory: not ours. */
                return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* Fail closed: anything but a root-only directory could expose one
         * run's /tmp to another. */
        if (root_only && (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0077) != 0))
                return -EPERM;
        return TAKE_FD(fd);
}

int run_tmpfs_prepare_root(const char *root) {
        _cleanup_close_ int fd = -EBADF;

        assert(root);

        if (mkdir(root, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "%s is not a directory only root may enter: %m", root);
        fd = open_root(root, true);
        if (fd < 0)
                return log_error_errno(fd, "%s is not a directory only root may enter: %m", root);
        return 0;
}

int run_tmpfs_mount(const char *root, const char *id, uint64_t size) {
        _cleanup_close_ int rfd = -EBADF, dfd = -EBADF;
        char opts[128], target[64];
        int r;

        assert(root);
        assert(tmpfs_valid_id(id));

        rfd = open_root(root, true);
        if (rfd < 0)
                return log_error_errno(rfd, "%s is not a directory only root may enter: %m", root);
        if (mkdirat(rfd, id, 0700) < 0)
                return log_error_errno(errno, "Cannot create %s/%s: %m", root, id);
        /* The directory just made, through an fd: the mount lands on it and
         * nowhere else. */
        dfd = openat(rfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) {
                r = -errno;
                (void) unlinkat(rfd, id, AT_REMOVEDIR);
                return log_error_errno(r, "Cannot open %s/%s: %m", root, id);
        }
        (void) snprintf(target, sizeof target, "/proc/self/fd/%d", dfd);
        /* nr_inodes: empty files cost kernel memory too. */
        (void) snprintf(opts, sizeof opts, "mode=1777,size=%" PRIu64 ",nr_inodes=%" PRIu64, size,
                        MAX(size / 4096, UINT64_C(1024)));
        if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
                r = -errno;
                dfd = safe_close(dfd);
                (void) unlinkat(rfd, id, AT_REMOVEDIR);
                return log_error_errno(r, "Cannot mount a tmpfs on %s/%s: %m", root, id);
        }
        return 0;
}

int run_tmpfs_umount(const char *root, const char *id) {
        _cleanup_close_ int rfd = -EBADF;
        char path[64];

        assert(root);
        assert(tmpfs_valid_id(id));

        /* No ownership check to take things away: a root others may enter
         * gets no new mounts, but loses its old ones. */
        rfd = open_root(root, false);
        if (rfd == -ENOENT)
                return 0;
        if (rfd < 0)
                return log_error_errno(rfd, "Cannot open %s: %m", root);
        (void) snprintf(path, sizeof path, "/proc/self/fd/%d/%s", rfd, id);
        /* Detached: the run's processes may be on their way out, its
         * namespace still there; the memory goes with the last reference.
         * The run's own /tmp is a bind mount in its namespace, which this
         * does not touch: even a live run is not hurt. UMOUNT_NOFOLLOW: ID
         * itself, never where a symlink by that name points. (errno is
         * taken before the message: writing it may fail too.) */
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return log_error_errno(errno, "Cannot unmount %s/%s: %m", root, id);
        if (unlinkat(rfd, id, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return log_error_errno(errno, "Cannot remove %s/%s: %m", root, id);
        return 0;
}

int run_tmpfs_slice_dir(char **ret) {
        /* The named systemd hierarchy (legacy, hybrid) first, then the
         * unified one (hybrid, then pure v2). */
        static const char *const roots[] = { "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };

        assert(ret);

        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s" SLICE_CGROUP, roots[i]) < 0)
                        return -ENOMEM;
                if (access(p, F_OK) >= 0) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }
        return -ENOENT;
}

/* Whether the unit of run id still has a cgroup: while it has, one of its
 * processes may still be setting up or using its namespace. */
static bool unit_alive(const char *slice, const char *id) {
        for (size_t i = 0; i < ELEMENTSOF(unit_prefixes); i++) {
                char p[4096];

                (void) snprintf(p, sizeof p, "%s/%s%s.service", slice, unit_prefixes[i], id);
                if (access(p, F_OK) >= 0 || errno != ENOENT)
                        return true;
        }
        return false;
}

int run_tmpfs_sweep(const char *root, const char *slice, bool (*keep)(const char *id, void *userdata),
                    void *userdata, unsigned *ret_live) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_close_ int fd = -EBADF;
        unsigned removed = 0, live = 0;
        struct dirent *de;

        assert(root);

        fd = open_root(root, false);
        if (fd < 0 && fd != -ENOENT)
                return log_error_errno(fd, "Cannot read %s: %m", root);
        if (fd >= 0) {
                d = fdopendir(fd);
                if (!d)
                        return log_error_errno(errno, "Cannot read %s: %m", root);
                TAKE_FD(fd);
        }
        while (d && (de = readdir(d))) {
                if (!tmpfs_valid_id(de->d_name) || (keep && keep(de->d_name, userdata)))
                        continue;
                if (slice && unit_alive(slice, de->d_name)) {
                        live++;
                        continue;
                }
                if (run_tmpfs_umount(root, de->d_name) >= 0) {
                        log_struct(LOG_NOTICE, "MESSAGE=Removed the /tmp of finished run %s", de->d_name,
                                   "MCP_RUN_ID=%s", de->d_name);
                        removed++;
                }
        }
        if (ret_live)
                *ret_live = live;
        return (int) MIN(removed, (unsigned) INT32_MAX);
}
