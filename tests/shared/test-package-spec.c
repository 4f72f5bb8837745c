/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/package-spec.[ch]: which "packages" specs pass
 * (every one ends up as a line of a pip requirements file in the sandbox),
 * their normalized names, and where a wheelhouse may be. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "package-spec.h"
#include "test-helpers.h"

static bool valid(const char *s) {
        return package_spec_valid(s, strlen(s));
}

TEST(test_valid) {
        const char *good[] = {
                "polars", "scikit-learn==1.5.*", "requests[socks]>=2.31,<3", "numpy~=1.26", "a", "A1",
                "zope.interface", "ruamel.yaml.clib", "x===1.0", "pkg!=2.0", "pkg<=1", "pkg>0", "pkg[a,b-c]",
                "torch==2.1.0+cpu", "pkg==1!2.0", "pkg==1.0.post1", "pkg>=1.0a1",
        };
        const char *bad[] = {
                "", "-r", "--index-url=http://evil", "-e.", " polars", "polars ", "polars\n--index-url x",
                "pkg @ https://x/y.whl", "pkg@https://x", "pkg;python_version<'3'", "pkg;", "pkg==", "pkg=1",
                "pkg==1,", "pkg,", "pkg[", "pkg[]", "pkg[a", "pkg[a,]", "pkg]", "_pkg", "pkg_", "pkg.",
                ".pkg", "pkg==.1", "pkg>=1 ,<2", "pkg\t", "pkg==1\\", "p/k", "../p", "pkg==$HOME", "pkg\"",
                "pk\xc3\xa9", "pkg==1;rm", "pkg~1", "pkg==1 #x",
        };
        char big[PACKAGE_SPEC_MAX + 2];

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!valid(good[i]))
                        ASSERT_FAIL_("refused a good spec: %s", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (valid(bad[i]))
                        ASSERT_FAIL_("accepted a bad spec: %s", bad[i]);

        memset(big, 'a', sizeof big);
        ASSERT_TRUE(package_spec_valid(big, PACKAGE_SPEC_MAX));
        ASSERT_FALSE(package_spec_valid(big, PACKAGE_SPEC_MAX + 1));
        ASSERT_FALSE(package_spec_valid("pk\0g", 4));
        ASSERT_FALSE(package_spec_valid(NULL, 0));
}

static void check_name(const char *spec, const char *want) {
        _cleanup_free_ char *name = NULL;

        ASSERT_EQ_INT(package_spec_name(spec, &name), 0);
        ASSERT_STREQ(name, want);
}

TEST(test_name) {
        char *name = NULL;

        check_name("polars", "polars");
        check_name("Scikit_Learn==1.5", "scikit-learn");
        check_name("zope.interface>=5", "zope-interface");
        check_name("A__b.-C[x]", "a-b-c");
        ASSERT_EQ_INT(package_spec_name("-r", &name), -EINVAL);
        ASSERT_TRUE(name == NULL);
}

TEST(test_wheelhouse_path) {
        ASSERT_TRUE(wheelhouse_path_valid("/var/lib/mcp-exec/wheels"));
        ASSERT_TRUE(wheelhouse_path_valid("/srv/wheels"));
        ASSERT_TRUE(wheelhouse_path_valid("/opt/w"));
        ASSERT_TRUE(wheelhouse_path_valid("/tmpfoo"));
        ASSERT_FALSE(wheelhouse_path_valid("var/lib/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/"));
        ASSERT_FALSE(wheelhouse_path_valid("/srv/wheels/"));
        ASSERT_FALSE(wheelhouse_path_valid("/srv//wheels"));
        ASSERT_FALSE(wheelhouse_path_valid("/srv/./wheels"));
        ASSERT_FALSE(wheelhouse_path_valid("/srv/../tmp/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/srv/.."));
        ASSERT_FALSE(wheelhouse_path_valid("/tmp"));
        ASSERT_FALSE(wheelhouse_path_valid("/tmp/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/var/tmp/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/run/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/dev/shm/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/home/u/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/root/w"));
        ASSERT_FALSE(wheelhouse_path_valid("/proc/self"));
        ASSERT_FALSE(wheelhouse_path_valid("/srv/w\n"));
        ASSERT_FALSE(wheelhouse_path_valid(NULL));
}

int main(void) {
        RUN(test_valid);
        RUN(test_name);
        RUN(test_wheelhouse_path);
        return 0;
}
