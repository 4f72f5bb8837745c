/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/strv.[ch]. */

#include "strv.h"
#include "test-helpers.h"

TEST(test_copy) {
        static const char *const l[] = { "a", "bb", "", NULL };
        _cleanup_strv_free_ char **c = NULL, **cut = NULL, **none = NULL;

        c = strv_copy(l);
        ASSERT_TRUE(c);
        ASSERT_EQ_INT(strv_length(c), 3);
        ASSERT_STREQ(c[1], "bb");
        ASSERT_TRUE(c[1] != l[1]);
        ASSERT_STREQ(c[2], "");
        ASSERT_TRUE(!c[3]);

        cut = strv_copy_n(l, 2);
        ASSERT_EQ_INT(strv_length(cut), 2);
        ASSERT_STREQ(cut[1], "bb");

        none = strv_copy_n(NULL, 5);
        ASSERT_TRUE(none && !none[0]);
        ASSERT_EQ_INT(strv_length(NULL), 0);
}

TEST(test_extend) {
        _cleanup_strv_free_ char **l = NULL;

        ASSERT_EQ_INT(strv_extend_n(&l, "one,two", 3), 0);
        ASSERT_EQ_INT(strv_extend_n(&l, "two", 3), 0);
        ASSERT_EQ_INT(strv_length(l), 2);
        ASSERT_STREQ(l[0], "one");
        ASSERT_STREQ(l[1], "two");
        ASSERT_TRUE(!l[2]);
        ASSERT_TRUE(strv_free(NULL) == NULL);
}

TEST(test_split_list) {
        _cleanup_strv_free_ char **l = NULL, **none = NULL, **blank = NULL;
        size_t n = 0;

        ASSERT_EQ_INT(strv_split_list(" a.example ,\tb:8080,,  ,c ", &l), 0);
        ASSERT_EQ_INT(strv_length(l), 3);
        ASSERT_STREQ(l[0], "a.example");
        ASSERT_STREQ(l[1], "b:8080");
        ASSERT_STREQ(l[2], "c");
        STRV_FOREACH(s, l)
                n++;
        ASSERT_EQ_INT(n, 3);

        ASSERT_EQ_INT(strv_split_list(NULL, &none), 0);
        ASSERT_TRUE(!none);
        ASSERT_EQ_INT(strv_split_list(" , ", &blank), 0);
        ASSERT_TRUE(!blank);
        STRV_FOREACH(s, blank)
                n++;
        ASSERT_EQ_INT(n, 3);
}

int main(void) {
        RUN(test_copy);
        RUN(test_extend);
        RUN(test_split_list);
        return 0;
}
