/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/tmpfs/run-tmpfs.[ch] in a scratch directory: the
 * unmount's error reporting and what a sweep removes. Mounting needs root and
 * changes the host: test-tmpfsd.py mounts in a namespace of its own, the
 * integration tests in the box. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "run-tmpfs.h"
#include "test-helpers.h"

#define ID "0123456789abcdef0123456789abcdef"

/* Calls run_tmpfs_umount() with stderr on /dev/full: telling the failure
 * then fails too (as with a closed journal stream), and must not change
 * which error is returned. */
static int umount_with_stderr_full(const char *root) {
        int saved = dup(STDERR_FILENO), full = open("/dev/full", O_WRONLY | O_CLOEXEC), r;

        ASSERT_TRUE(saved >= 0 && full >= 0);
        ASSERT_TRUE(dup2(full, STDERR_FILENO) == STDERR_FILENO);
        r = run_tmpfs_umount(root, ID);
        ASSERT_TRUE(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
        clearerr(stderr);
        safe_close(full);
        safe_close(saved);
        return r;
}

TEST(test_umount_error_survives_the_message) {
        char root[] = "/tmp/test-run-tmpfs-XXXXXX", path[64], file[80];
        int r;

        ASSERT_TRUE(mkdtemp(root));
        (void) snprintf(path, sizeof path, "%s/%s", root, ID);
        (void) snprintf(file, sizeof file, "%s/left", path);
        ASSERT_TRUE(mkdir(path, 0700) == 0);
        ASSERT_TRUE(close(open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == 0);

        /* As root the unmount of a plain directory is a no-op (EINVAL) and
         * rmdir fails (ENOTEMPTY); without privileges the unmount fails
         * (EPERM). Either way the cause, not the failed write's ENOSPC. */
        r = umount_with_stderr_full(root);
        ASSERT_EQ_INT(r, geteuid() == 0 ? -ENOTEMPTY : -EPERM);

        ASSERT_TRUE(unlink(file) == 0);
        if (geteuid() == 0) {
                /* An empty mount point goes; a missing one is no error. */
                ASSERT_EQ_INT(run_tmpfs_umount(root, ID), 0);
                ASSERT_TRUE(access(path, F_OK) < 0 && errno == ENOENT);
                ASSERT_EQ_INT(run_tmpfs_umount(root, ID), 0);
        } else
                ASSERT_TRUE(rmdir(path) == 0);
        ASSERT_TRUE(rmdir(root) == 0);
}

static void mkdirf(const char *dir, const char *name) {
        char p[512];

        (void) snprintf(p, sizeof p, "%s/%s", dir, name);
        ASSERT_TRUE(mkdir(p, 0700) == 0);
}

static bool exists(const char *dir, const char *name) {
        char p[512];

        (void) snprintf(p, sizeof p, "%s/%s", dir, name);
        return access(p, F_OK) == 0;
}

static bool keep_first(const char *id, void *userdata) {
        return streq(id, userdata);
}

#define ID_KEPT "11111111111111111111111111111111"
#define ID_RUN "22222222222222222222222222222222"
#define ID_SESSION "33333333333333333333333333333333"
#define ID_GONE "44444444444444444444444444444444"

/* A run's tmpfs stays while its unit (run or session) has a cgroup, or while
 * keep() claims it; the others go, and nothing but run ids is touched. As
 * root: the unmount of a plain directory is then a no-op (EINVAL). */
TEST(test_sweep) {
        char root[] = "/tmp/test-run-tmpfs-XXXXXX", slice[] = "/tmp/test-run-tmpfs-slice-XXXXXX", other[64];
        unsigned live = 0;

        if (geteuid() != 0) {
                printf("SKIP test_sweep: needs root\n");
                return;
        }
        ASSERT_TRUE(mkdtemp(root) && mkdtemp(slice));
        mkdirf(root, ID_KEPT);
        mkdirf(root, ID_RUN);
        mkdirf(root, ID_SESSION);
        mkdirf(root, ID_GONE);
        mkdirf(root, "not-a-run");
        mkdirf(slice, "mcp-exec-run-" ID_RUN ".service");
        mkdirf(slice, "mcp-exec-session-" ID_SESSION ".service");
        mkdirf(slice, "mcp-exec-run-" ID_KEPT "x.service");

        ASSERT_EQ_INT(run_tmpfs_sweep(root, slice, keep_first, (void *) ID_KEPT, &live), 1);
        ASSERT_EQ_INT(live, 2);
        ASSERT_TRUE(exists(root, ID_KEPT) && exists(root, ID_RUN) && exists(root, ID_SESSION));
        ASSERT_TRUE(!exists(root, ID_GONE) && exists(root, "not-a-run"));

        /* Without a slice no unit has a cgroup: all but the kept go. */
        ASSERT_EQ_INT(run_tmpfs_sweep(root, NULL, keep_first, (void *) ID_KEPT, &live), 2);
        ASSERT_EQ_INT(live, 0);
        ASSERT_TRUE(exists(root, ID_KEPT) && !exists(root, ID_RUN) && !exists(root, ID_SESSION));
        ASSERT_EQ_INT(run_tmpfs_sweep(root, NULL, NULL, NULL, NULL), 1);
        ASSERT_TRUE(!exists(root, ID_KEPT));

        ASSERT_TRUE(rmdir(root) < 0 && errno == ENOTEMPTY);
        (void) snprintf(other, sizeof other, "%s/not-a-run", root);
        ASSERT_TRUE(rmdir(other) == 0);
        ASSERT_TRUE(rmdir(root) == 0);
        /* A missing root is an empty one. */
        ASSERT_EQ_INT(run_tmpfs_sweep(root, NULL, NULL, NULL, &live), 0);
        for (const char *const *u = (const char *const[]) { "mcp-exec-run-" ID_RUN ".service",
                                                             "mcp-exec-session-" ID_SESSION ".service",
                                                             "mcp-exec-run-" ID_KEPT "x.service", NULL };
             *u; u++) {
                char p[512];

                (void) snprintf(p, sizeof p, "%s/%s", slice, *u);
                ASSERT_TRUE(rmdir(p) == 0);
        }
        ASSERT_TRUE(rmdir(slice) == 0);
}

/* Refuses a root others may enter, or anything but a directory. */
TEST(test_prepare_root) {
        char root[] = "/tmp/test-run-tmpfs-XXXXXX", sub[64];

        ASSERT_TRUE(mkdtemp(root));
        (void) snprintf(sub, sizeof sub, "%s/r", root);
        ASSERT_EQ_INT(run_tmpfs_prepare_root(sub), geteuid() == 0 ? 0 : -EPERM);
        if (geteuid() == 0) {
                ASSERT_TRUE(chmod(sub, 0755) == 0);
                ASSERT_EQ_INT(run_tmpfs_prepare_root(sub), -EPERM);
        }
        ASSERT_TRUE(rmdir(sub) == 0);
        ASSERT_TRUE(symlink("/tmp", sub) == 0);
        ASSERT_EQ_INT(run_tmpfs_prepare_root(sub), -EPERM);
        ASSERT_TRUE(unlink(sub) == 0);
        ASSERT_TRUE(rmdir(root) == 0);
}

/* A symlink by a run's id is not followed: neither the unmount nor the
 * removal reaches where it points, and no mount goes through it. */
TEST(test_symlink_not_followed) {
        char root[] = "/tmp/test-run-tmpfs-XXXXXX", target[] = "/tmp/test-run-tmpfs-target-XXXXXX", link[64];

        if (geteuid() != 0) {
                printf("SKIP test_symlink_not_followed: needs root\n");
                return;
        }
        ASSERT_TRUE(mkdtemp(root) && mkdtemp(target));
        ASSERT_TRUE(chmod(root, 0700) == 0);
        (void) snprintf(link, sizeof link, "%s/%s", root, ID);
        ASSERT_TRUE(symlink(target, link) == 0);

        ASSERT_EQ_INT(run_tmpfs_umount(root, ID), -ENOTDIR);
        ASSERT_EQ_INT(run_tmpfs_mount(root, ID, UINT64_C(1) << 20), -EEXIST);
        ASSERT_TRUE(access(target, F_OK) == 0);

        ASSERT_TRUE(unlink(link) == 0);
        ASSERT_TRUE(rmdir(target) == 0);
        ASSERT_TRUE(rmdir(root) == 0);
}

int main(void) {
        RUN(test_umount_error_survives_the_message);
        RUN(test_sweep);
        RUN(test_prepare_root);
        RUN(test_symlink_not_followed);
        return 0;
}
