/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/write-beneath.[ch]: names from an untrusted
 * server never lead a write outside the directory, through a symlink or a
 * hard link, or over a directory. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "test-helpers.h"
#include "write-beneath.h"

static char root[64];

static void put(const char *path, const char *content) {
        char p[256];
        FILE *f;

        (void) snprintf(p, sizeof p, "%s/%s", root, path);
        f = fopen(p, "we");
        ASSERT_TRUE(f);
        fputs(content, f);
        ASSERT_EQ_INT(fclose(f), 0);
}

static void has(const char *path, const char *content) {
        char p[256], buf[256] = "";
        FILE *f;
        size_t n;

        (void) snprintf(p, sizeof p, "%s/%s", root, path);
        f = fopen(p, "re");
        if (!f)
                ASSERT_FAIL_("%s: %m", p);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
        ASSERT_STREQ(buf, content);
}

static unsigned count_entries(const char *dir) {
        char p[256];
        unsigned n = 0;
        DIR *d;

        (void) snprintf(p, sizeof p, "%s/%s", root, dir);
        d = opendir(p);
        ASSERT_TRUE(d);
        for (struct dirent *e; (e = readdir(d));)
                n += !streq(e->d_name, ".") && !streq(e->d_name, "..");
        closedir(d);
        return n;
}

TEST(test_write_beneath) {
        _cleanup_close_ int out = -EBADF;
        char p[256], q[256];

        (void) snprintf(root, sizeof root, "/tmp/test-write-beneath.XXXXXX");
        ASSERT_TRUE(mkdtemp(root));
        (void) snprintf(p, sizeof p, "%s/out", root);
        ASSERT_EQ_INT(mkdir(p, 0755), 0);
        (void) snprintf(p, sizeof p, "%s/outside", root);
        ASSERT_EQ_INT(mkdir(p, 0755), 0);
        put("outside/secret", "keep");
        (void) snprintf(p, sizeof p, "%s/out", root);
        out = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(out >= 0);

        ASSERT_EQ_INT(write_beneath(out, "a.txt", "A", 1), 0);
        has("out/a.txt", "A");
        ASSERT_EQ_INT(write_beneath(out, "sub/dir/b.csv", "1,2", 3), 0);
        has("out/sub/dir/b.csv", "1,2");
        ASSERT_EQ_INT(write_beneath(out, "sub/c", "", 0), 0);
        has("out/sub/c", "");
        /* Again: replaced. */
        ASSERT_EQ_INT(write_beneath(out, "a.txt", "B", 1), 0);
        has("out/a.txt", "B");
        /* Odd bytes are a name like any other. */
        ASSERT_EQ_INT(write_beneath(out, "n\nl\x1b[1m\xff", "x", 1), 0);
        has("out/n\nl\x1b[1m\xff", "x");

        static const char *const bad[] = {
                "", "/etc/passwd", "../outside/secret", "a/../../outside/secret", "..", ".", "a//b", "a/./b", "a/",
                "sub/..", "x/../y",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_EQ_INT(write_beneath(out, bad[i], "evil", 4), -EINVAL);
        {
                char longname[300];
                memset(longname, 'l', 256);
                longname[256] = 0;
                ASSERT_EQ_INT(write_beneath(out, longname, "x", 1), -EINVAL);
        }

        /* A symlink to a directory outside is not followed. */
        (void) snprintf(p, sizeof p, "%s/outside", root);
        (void) snprintf(q, sizeof q, "%s/out/link", root);
        ASSERT_EQ_INT(symlink(p, q), 0);
        ASSERT_TRUE(write_beneath(out, "link/secret", "evil", 4) < 0);
        has("outside/secret", "keep");
        /* A symlink to a file outside is replaced, not written through. */
        (void) snprintf(p, sizeof p, "%s/outside/secret", root);
        (void) snprintf(q, sizeof q, "%s/out/flink", root);
        ASSERT_EQ_INT(symlink(p, q), 0);
        ASSERT_EQ_INT(write_beneath(out, "flink", "new", 3), 0);
        has("out/flink", "new");
        has("outside/secret", "keep");
        /* So is a hard link. */
        (void) snprintf(q, sizeof q, "%s/out/hlink", root);
        ASSERT_EQ_INT(link(p, q), 0);
        ASSERT_EQ_INT(write_beneath(out, "hlink", "new", 3), 0);
        has("outside/secret", "keep");
        /* A directory is not replaced, and no temporary file is left. */
        ASSERT_EQ_INT(write_beneath(out, "sub", "x", 1), -EISDIR);
        has("out/sub/c", "");
        ASSERT_EQ_INT(count_entries("out"), 6);  /* a.txt sub n... link flink hlink */
        ASSERT_EQ_INT(count_entries("outside"), 1);

        (void) snprintf(p, sizeof p, "rm -rf '%s'", root);
        ASSERT_EQ_INT(system(p), 0);
}

int main(void) {
        RUN(test_write_beneath);
        return 0;
}
