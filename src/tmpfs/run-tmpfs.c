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

#include "macro.h"

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

bool run_tmpfs_valid_id(const char *id) {
        assert(id);

        return strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
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
                fprintf(stderr, "mcp-exec-tmpfs: %s is not a directory only root may enter: %s\n", root,
                        strerror(-r));
        return r;
}

int run_tmpfs_mount(const char *root, const char *id, uint64_t size) {
        _cleanup_free_ char *path = NULL;
        char opts[128];
        int r;

        assert(root);
        assert(run_tmpfs_valid_id(id));

        if (asprintf(&path, "%s/%s", root, id) < 0)
                return -ENOMEM;
        if (mkdir(path, 0700) < 0) {
                r = -errno;
                fprintf(stderr, "mcp-exec-tmpfs: mkdir %s: %s\n", path, strerror(-r));
                return r;
        }
        /* nr_inodes: empty files cost kernel memory too. */
        (void) snprintf(opts, sizeof opts, "mode=1777,size=%" PRIu64 ",nr_inodes=%" PRIu64, size,
                        MAX(size / 4096, UINT64_C(1024)));
        if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
                r = -errno;
                fprintf(stderr, "mcp-exec-tmpfs: mount tmpfs on %s: %s\n", path, strerror(-r));
                (void) rmdir(path);
                return r;
        }
        return 0;
}

int run_tmpfs_umount(const char *root, const char *id) {
        _cleanup_free_ char *path = NULL;
        int r;

        assert(root);
        assert(run_tmpfs_valid_id(id));

        if (asprintf(&path, "%s/%s", root, id) < 0)
                return -ENOMEM;
        /* Detached: the run's processes are gone, but its namespace may
         * still be torn down; the memory goes with the last reference. */
        /* errno is taken before the message: writing it may fail too. */
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT) {
                r = -errno;
                fprintf(stderr, "mcp-exec-tmpfs: umount %s: %s\n", path, strerror(-r));
                return r;
        }
        if (rmdir(path) < 0 && errno != ENOENT) {
                r = -errno;
                fprintf(stderr, "mcp-exec-tmpfs: rmdir %s: %s\n", path, strerror(-r));
                return r;
        }
        return 0;
}

/* On systemd 252 a daemon-reload drops ExecStopPostEx= from a running
 * transient unit (it cannot read the key back from the unit file it wrote),
 * so that run never unmounts its own. A run is gone when its unit's cgroup
 * is. A live run is never hurt even by a mistake here, as its /tmp is a bind
 * mount of its own. */
void run_tmpfs_sweep(const char *root, const char *slice, const char *own_id) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        assert(root);
        assert(slice);
        assert(own_id);

        d = opendir(root);
        if (!d)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *unit = NULL;

                if (!run_tmpfs_valid_id(de->d_name) || streq(de->d_name, own_id))
                        continue;
                if (asprintf(&unit, "%s/mcp-exec-run-%s.service", slice, de->d_name) < 0)
                        return;
                if (access(unit, F_OK) < 0 && errno == ENOENT)
                        (void) run_tmpfs_umount(root, de->d_name);
        }
}
