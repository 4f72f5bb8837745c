/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/wheelhouse.[ch]: the front end's reading of the
 * wheelhouse manifest (SHA256SUMS), its projects and versions, refusals of
 * malformed and oversized manifests, and the bounded description. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "package-spec.h"
#include "test-helpers.h"
#include "wheelhouse.h"

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char dir[] = "/tmp/test-wheelhouse.XXXXXX";

static void write_manifest(const char *text, size_t len) {
        char path[256];
        FILE *f;

        (void) snprintf(path, sizeof path, "%s/%s", dir, WHEELHOUSE_MANIFEST);
        f = fopen(path, "we");
        ASSERT_TRUE(f);
        ASSERT_TRUE(fwrite(text, 1, len, f) == len);
        ASSERT_TRUE(fclose(f) == 0);
}

static int load_text(const char *text, Wheelhouse **ret) {
        write_manifest(text, strlen(text));
        return wheelhouse_load(dir, ret);
}

TEST(test_missing) {
        Wheelhouse *w = NULL;

        ASSERT_EQ_INT(wheelhouse_load(dir, &w), -ENOENT);
        ASSERT_TRUE(!w);
        ASSERT_EQ_INT(wheelhouse_load("/nonexistent-wheelhouse-dir", &w), -ENOENT);
}

TEST(test_good) {
        _cleanup_(wheelhouse_freep) Wheelhouse *w = NULL;
        const WheelhouseProject *p;
        _cleanup_free_ char *d = NULL;

        ASSERT_EQ_INT(load_text(HASH "  tiny_dep-1.10-py3-none-any.whl\n"
                                HASH "  Tiny_Dep-1.9-py3-none-any.whl\n"
                                HASH "  numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl\n"
                                HASH "  numpy-1.26.4-cp311-cp311-musllinux_1_1_x86_64.whl\n"
                                HASH "  zope.interface-6.0-1-cp311-cp311-linux_x86_64.whl\n"
                                HASH "  a-2.0-py3-none-any.whl",
                                &w),
                      0);
        ASSERT_EQ_U64(w->n_projects, 4);
        ASSERT_STREQ(w->projects[0].name, "a");               /* last in the file, first by name */
        ASSERT_STREQ(w->projects[1].name, "numpy");
        ASSERT_STREQ(w->projects[1].versions, "1.26.4");      /* two wheels, one version */
        ASSERT_STREQ(w->projects[2].name, "tiny-dep");
        ASSERT_STREQ(w->projects[2].versions, "1.9, 1.10");   /* natural order, one project */
        ASSERT_STREQ(w->projects[3].name, "zope-interface");
        p = wheelhouse_find(w, "tiny-dep");
        ASSERT_TRUE(p && streq(p->versions, "1.9, 1.10"));
        ASSERT_TRUE(!wheelhouse_find(w, "tiny_dep"));  /* callers normalize */
        ASSERT_TRUE(!wheelhouse_find(w, "polars"));
        ASSERT_TRUE(wheelhouse_find(w, "zope-interface"));
        ASSERT_TRUE(!wheelhouse_find(NULL, "numpy"));
        ASSERT_EQ_INT(wheelhouse_describe(w, 1024, &d), 0);
        ASSERT_STREQ(d, "a (2.0), numpy (1.26.4), tiny-dep (1.9, 1.10), zope-interface (6.0)");
}

TEST(test_empty) {
        _cleanup_(wheelhouse_freep) Wheelhouse *w = NULL;
        _cleanup_free_ char *d = NULL;

        ASSERT_EQ_INT(load_text("", &w), 0);
        ASSERT_EQ_U64(w->n_projects, 0);
        ASSERT_TRUE(!wheelhouse_find(w, "x"));
        ASSERT_EQ_INT(wheelhouse_describe(w, 100, &d), 0);
        ASSERT_STREQ(d, "");
}

TEST(test_malformed) {
        const char *bad[] = {
                HASH " one-1.0-py3-none-any.whl\n",                     /* one space */
                HASH "  one-1.0-py3-none-any.tar.gz\n",                 /* no wheel */
                HASH "  one-1.0.tar.gz.whl\n",                          /* too few fields */
                HASH "  one-1.0-1-2-py3-none-any.whl\n",                /* too many fields */
                HASH "  one-1.0-x-py3-none-any.whl\n",                  /* build tag not a number */
                HASH "  sub/one-1.0-py3-none-any.whl\n",                /* a path */
                HASH "  ../one-1.0-py3-none-any.whl\n",
                HASH "  -1.0-py3-none-any.whl\n",                       /* no name */
                HASH "  one--py3-none-any.whl\n",                       /* no version */
                HASH "  _one-1.0-py3-none-any.whl\n",
                HASH "  one-1.0-py3-none-any.whl\n\n",                  /* an empty line */
                HASH "  on e-1.0-py3-none-any.whl\n",
                "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef  one-1.0-py3-none-any.whl\n",
                "0123  one-1.0-py3-none-any.whl\n",
                HASH "0  one-1.0-py3-none-any.whl\n",
                "just text\n",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Wheelhouse *w = NULL;
                int r = load_text(bad[i], &w);
                if (r != -EBADMSG)
                        ASSERT_FAIL_("line %zu (%s): %d, want -EBADMSG", i, bad[i], r);
                ASSERT_TRUE(!w);
        }
}

TEST(test_limits) {
        Wheelhouse *w = NULL;
        size_t line = strlen(HASH "  p0000-1.0-py3-none-any.whl\n"), n;
        char *text;

        /* Over WHEELHOUSE_PROJECTS_MAX projects, each line well-formed. */
        n = WHEELHOUSE_PROJECTS_MAX + 1;
        text = malloc(n * line + 1);
        ASSERT_TRUE(text);
        for (size_t i = 0; i < n; i++)
                (void) sprintf(text + i * line, HASH "  p%04zu-1.0-py3-none-any.whl\n", i);
        ASSERT_EQ_INT(load_text(text, &w), -EFBIG);
        ASSERT_TRUE(!w);
        /* Exactly at it: fine. */
        text[(n - 1) * line] = 0;
        ASSERT_EQ_INT(load_text(text, &w), 0);
        ASSERT_EQ_U64(w->n_projects, WHEELHOUSE_PROJECTS_MAX);
        w = wheelhouse_free(w);
        free(text);

        /* Over WHEELHOUSE_MANIFEST_MAX bytes: refused before parsing. */
        n = WHEELHOUSE_MANIFEST_MAX / line + 1;
        text = malloc(n * line + 1);
        ASSERT_TRUE(text);
        for (size_t i = 0; i < n; i++)
                (void) sprintf(text + i * line, HASH "  p%04zu-1.0-py3-none-any.whl\n", i % 10000);
        ASSERT_TRUE(n * line > WHEELHOUSE_MANIFEST_MAX);
        ASSERT_EQ_INT(load_text(text, &w), -EFBIG);
        free(text);
}

TEST(test_describe_cut) {
        _cleanup_(wheelhouse_freep) Wheelhouse *w = NULL;
        const char *full = "aa (1.0), bb (2.0, 2.1), cc (3.0)";
        char *d = NULL;

        ASSERT_EQ_INT(load_text(HASH "  aa-1.0-py3-none-any.whl\n" HASH "  bb-2.0-py3-none-any.whl\n" HASH
                                     "  bb-2.1-py3-none-any.whl\n" HASH "  cc-3.0-py3-none-any.whl\n",
                                &w),
                      0);
        ASSERT_EQ_INT(wheelhouse_describe(w, strlen(full), &d), 0);
        ASSERT_STREQ(d, full);
        free(d);
        /* One byte less: cut after an entry, the ellipsis within max. */
        for (size_t max = strlen(full) - 1; max > 0; max--) {
                ASSERT_EQ_INT(wheelhouse_describe(w, max, &d), 0);
                if (strlen(d) > max)
                        ASSERT_FAIL_("max %zu: \"%s\" is longer", max, d);
                if (strlen(d) >= strlen("…") && !strstr(d, "…"))
                        ASSERT_FAIL_("max %zu: \"%s\" has no ellipsis", max, d);
                free(d);
        }
        ASSERT_EQ_INT(wheelhouse_describe(w, strlen("aa (1.0), bb (2.0, 2.1), …"), &d), 0);
        ASSERT_STREQ(d, "aa (1.0), bb (2.0, 2.1), …");
        free(d);
        ASSERT_EQ_INT(wheelhouse_describe(w, strlen("aa (1.0), bb (2.0, 2.1), …") - 1, &d), 0);
        ASSERT_STREQ(d, "aa (1.0), …");
        free(d);
        ASSERT_EQ_INT(wheelhouse_describe(w, 4, &d), 0);
        ASSERT_STREQ(d, "…");
        free(d);
}

int main(void) {
        char path[256];

        ASSERT_TRUE(mkdtemp(dir));
        RUN(test_missing);
        RUN(test_good);
        RUN(test_empty);
        RUN(test_malformed);
        RUN(test_limits);
        RUN(test_describe_cut);
        (void) snprintf(path, sizeof path, "%s/%s", dir, WHEELHOUSE_MANIFEST);
        (void) unlink(path);
        (void) rmdir(dir);
        return 0;
}
