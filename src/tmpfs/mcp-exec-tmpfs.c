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
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "macro.h"
#include "parse-util.h"
#include "run-tmpfs.h"

#define TMP_ROOT "/run/mcp-exec-tmp"

static int join_host_mount_ns(void) {
        _cleanup_close_ int fd = -EBADF;

        fd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNS) < 0 || chdir("/") < 0)
                return -errno;
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

        assert(ret);

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

static bool keep_own(const char *id, void *userdata) {
        return streq(id, userdata);
}

/* Before each mount: the tmpfs of runs that are gone goes first. */
static int do_mount(const char *id, uint64_t size) {
        _cleanup_free_ char *slice = NULL;
        int r;

        assert(id);

        r = run_tmpfs_prepare_root(TMP_ROOT);
        if (r < 0)
                return r;
        if (slice_dir(&slice) >= 0)
                (void) run_tmpfs_sweep(TMP_ROOT, slice, keep_own, (void *) id, NULL);
        return run_tmpfs_mount(TMP_ROOT, id, size);
}

int main(int argc, char *argv[]) {
        uint64_t size;
        int r;

        r = join_host_mount_ns();
        if (r < 0) {
                fprintf(stderr, "mcp-exec-tmpfs: cannot join PID 1's mount namespace: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }

        if (argc == 4 && streq(argv[1], "mount") && tmpfs_valid_id(argv[2]) && parse_uint(argv[3], &size) >= 0 &&
            size > 0)
                return do_mount(argv[2], size) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (argc == 3 && streq(argv[1], "umount") && tmpfs_valid_id(argv[2]))
                return run_tmpfs_umount(TMP_ROOT, argv[2]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        fprintf(stderr, "usage: mcp-exec-tmpfs mount RUN-ID SIZE | umount RUN-ID\n");
        return 2;
}
