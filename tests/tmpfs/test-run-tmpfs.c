/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/tmpfs/run-tmpfs.[ch] in a scratch directory: the id
 * check and the unmount's error reporting. Mounting needs root and changes
 * the host; the integration tests cover it in the box. */

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

TEST(test_valid_id) {
        ASSERT_TRUE(run_tmpfs_valid_id(ID));
        ASSERT_FALSE(run_tmpfs_valid_id(""));
        ASSERT_FALSE(run_tmpfs_valid_id("0123456789ABCDEF0123456789abcdef"));
        ASSERT_FALSE(run_tmpfs_valid_id(ID "0"));
        ASSERT_FALSE(run_tmpfs_valid_id("../../../../../../../../etc/x"));
        ASSERT_FALSE(run_tmpfs_valid_id("0123456789abcdef0123456789abcde/"));
}

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

int main(void) {
        RUN(test_valid_id);
        RUN(test_umount_error_survives_the_message);
        return 0;
}
