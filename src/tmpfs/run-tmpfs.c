/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "run-tmpfs.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

/* The runs' unit names, as src/broker/run.h makes them. */
static const char *const unit_prefixes[] = { "mcp-exec-run-", "mcp-exec-session-" };

/* mcp-exec.slice sits in mcp.slice (a dash in a slice's name nests it). */
#define SLICE_CGROUP "/mcp.slice/mcp-exec.slice"

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

int run_tmpfs_prepare_root(const char *root) {
        struct stat st;
        int r = 0;

        assert(root);

        if (mkdir(root, 0700) < 0 && errno != EEXIST)
                r = -errno;
        else if (lstat(root, &st) < 0)
                r = -errno;
        /* Fail closed: anything but a root-only directory could expose one
         * run's /tmp to another. */
        else if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0077) != 0)
                r = -EPERM;
        if (r < 0)
                return log_error_errno(r, "%s is not a directory only root may enter: %m", root);
        return 0;
}

int run_tmpfs_mount(const char *root, const char *id, uint64_t size) {
        _cleanup_free_ char *path = NULL;
        char opts[128];
        int r;

        assert(root);
        assert(tmpfs_valid_id(id));

        if (asprintf(&path, "%s/%s", root, id) < 0)
                return -ENOMEM;
        if (mkdir(path, 0700) < 0)
                return log_error_errno(errno, "Cannot create %s: %m", path);
        /* nr_inodes: empty files cost kernel memory too. */
        (void) snprintf(opts, sizeof opts, "mode=1777,size=%" PRIu64 ",nr_inodes=%" PRIu64, size,
                        MAX(size / 4096, UINT64_C(1024)));
        if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
                r = -errno;
                (void) rmdir(path);
                return log_error_errno(r, "Cannot mount a tmpfs on %s: %m", path);
        }
        return 0;
}

int run_tmpfs_umount(const char *root, const char *id) {
        _cleanup_free_ char *path = NULL;

        assert(root);
        assert(tmpfs_valid_id(id));

        if (asprintf(&path, "%s/%s", root, id) < 0)
                return -ENOMEM;
        /* Detached: the run's processes may be on their way out, its
         * namespace still there; the memory goes with the last reference.
         * The run's own /tmp is a bind mount in its namespace, which this
         * does not touch: even a live run is not hurt. (errno is taken
         * before the message: writing it may fail too.) */
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return log_error_errno(errno, "Cannot unmount %s: %m", path);
        if (rmdir(path) < 0 && errno != ENOENT)
                return log_error_errno(errno, "Cannot remove %s: %m", path);
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
        unsigned removed = 0, live = 0;
        struct dirent *de;

        assert(root);

        d = opendir(root);
        if (!d && errno != ENOENT)
                return log_error_errno(errno, "Cannot read %s: %m", root);
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
