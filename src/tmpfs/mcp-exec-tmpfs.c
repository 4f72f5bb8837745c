/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-tmpfs - mounts and removes one run's private /tmp.
 *
 *   mcp-exec-tmpfs mount ID SIZE    tmpfs of SIZE bytes on /run/mcp-exec-tmp/ID
 *   mcp-exec-tmpfs umount ID        unmount it and remove the mount point
 *
 * Each run's unit calls it as ExecStartPre=+ and ExecStopPost=+ (outside the
 * sandbox, with full privileges). systemd 252 still runs such commands in a
 * mount namespace of their own when the unit has BindPaths=, so it first joins
 * PID 1's: there the tmpfs is seen by the run's namespace, set up afterwards,
 * which binds it on /tmp and /var/tmp. Why: DynamicUser= implies PrivateTmp=, and systemd 252 lets
 * PrivateTmp='s bind of a directory on the host's /tmp win over
 * TemporaryFileSystem=/tmp, so the run's /tmp would have no size cap and sit
 * on the host's /tmp (and /var/tmp on its disk). A bind mount wins over
 * PrivateTmp=. ID is the run's 128-bit hex id; nothing else is accepted, so
 * the path cannot be steered. /run/mcp-exec-tmp is 0700 root: a run cannot
 * reach another run's tmpfs through it.
 */
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"

#define TMP_ROOT "/run/mcp-exec-tmp"

static int join_host_mount_ns(void) {
        int fd, r = 0;

        fd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (setns(fd, CLONE_NEWNS) < 0)
                r = -errno;
        (void) close(fd);
        if (r == 0 && chdir("/") < 0)
                r = -errno;
        return r;
}

static bool valid_id(const char *id) {
        return strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}

static int ensure_root(void) {
        struct stat st;

        if (mkdir(TMP_ROOT, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (lstat(TMP_ROOT, &st) < 0)
                return -errno;
        /* Fail closed: anything but a root-only directory could expose one
         * run's /tmp to another. */
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0077) != 0)
                return -EPERM;
        return 0;
}

/* The directory holding this run's cgroup (mcp-exec.slice) in the cgroup
 * file system, found from our own cgroup: helpers run as control processes
 * in the run's cgroup. The named systemd hierarchy (legacy, hybrid) first,
 * then the unified one (hybrid, then pure v2). */
static int slice_dir(char **ret) {
        static const char *const roots[] = { "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
        _cleanup_free_ char *cg = NULL;
        char *slash;
        int r;

        r = sd_pid_get_cgroup(0, &cg);
        if (r < 0)
                return r;
        slash = strrchr(cg, '/');
        if (!slash || slash == cg)
                return -ENOENT;
        *slash = 0;
        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s%s", roots[i], cg) < 0)
                        return -ENOMEM;
                if (access(p, F_OK) >= 0) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }
        return -ENOENT;
}

static int do_umount(const char *id);

/* Removes the tmpfs of runs that are gone: on systemd 252 a daemon-reload
 * drops ExecStopPostEx= from a running transient unit (it cannot read the
 * key back from the unit file it wrote), so that run never unmounts its own.
 * A run is gone when its unit's cgroup is. Best effort; a live run is never
 * hurt even by a mistake here, as its /tmp is a bind mount of its own. */
static void sweep_stale(const char *own_id) {
        _cleanup_free_ char *slice = NULL;
        struct dirent *de;
        DIR *d;

        if (slice_dir(&slice) < 0)
                return;
        d = opendir(TMP_ROOT);
        if (!d)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *unit = NULL;

                if (!valid_id(de->d_name) || streq(de->d_name, own_id))
                        continue;
                if (asprintf(&unit, "%s/mcp-exec-run-%s.service", slice, de->d_name) < 0)
                        break;
                if (access(unit, F_OK) < 0 && errno == ENOENT)
                        (void) do_umount(de->d_name);
        }
        closedir(d);
}

static int do_mount(const char *id, uint64_t size) {
        char path[sizeof(TMP_ROOT "/") + 32], opts[128];
        int r;

        r = ensure_root();
        if (r < 0) {
                fprintf(stderr, "mcp-exec-tmpfs: %s is not a directory only root may enter: %s\n", TMP_ROOT,
                        strerror(-r));
                return r;
        }
        sweep_stale(id);
        (void) snprintf(path, sizeof path, TMP_ROOT "/%s", id);
        if (mkdir(path, 0700) < 0) {
                r = -errno;
                fprintf(stderr, "mcp-exec-tmpfs: mkdir %s: %s\n", path, strerror(errno));
                return r;
        }
        /* nr_inodes: empty files cost kernel memory too. */
        (void) snprintf(opts, sizeof opts, "mode=1777,size=%" PRIu64 ",nr_inodes=%" PRIu64, size,
                        MAX(size / 4096, UINT64_C(1024)));
        if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
                r = -errno;
                fprintf(stderr, "mcp-exec-tmpfs: mount tmpfs on %s: %s\n", path, strerror(errno));
                (void) rmdir(path);
                return r;
        }
        return 0;
}

static int do_umount(const char *id) {
        char path[sizeof(TMP_ROOT "/") + 32];

        (void) snprintf(path, sizeof path, TMP_ROOT "/%s", id);
        /* Detached: the run's processes are gone, but its namespace may
         * still be torn down; the memory goes with the last reference. */
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT) {
                fprintf(stderr, "mcp-exec-tmpfs: umount %s: %s\n", path, strerror(errno));
                return -errno;
        }
        if (rmdir(path) < 0 && errno != ENOENT) {
                fprintf(stderr, "mcp-exec-tmpfs: rmdir %s: %s\n", path, strerror(errno));
                return -errno;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        uint64_t size;
        int r;

        r = join_host_mount_ns();
        if (r < 0) {
                fprintf(stderr, "mcp-exec-tmpfs: cannot join PID 1's mount namespace: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }

        if (argc == 4 && streq(argv[1], "mount") && valid_id(argv[2]) && parse_uint(argv[3], &size) >= 0 && size > 0)
                return do_mount(argv[2], size) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (argc == 3 && streq(argv[1], "umount") && valid_id(argv[2]))
                return do_umount(argv[2]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        fprintf(stderr, "usage: mcp-exec-tmpfs mount RUN-ID SIZE | umount RUN-ID\n");
        return 2;
}
