/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/node-id.[ch]: what a node id may be, the default
 * from the machine id, and the ids minted with it. */

#include <errno.h>
#include <string.h>
#include <systemd/sd-id128.h>

#include "macro.h"
#include "node-id.h"
#include "test-helpers.h"

TEST(test_valid) {
        ASSERT_TRUE(node_id_is_valid("exec1"));
        ASSERT_TRUE(node_id_is_valid("a"));
        ASSERT_TRUE(node_id_is_valid("rack-2-node-07"));
        ASSERT_TRUE(node_id_is_valid("0123456789abcdef0123456789abcdef"));      /* 32 */
        ASSERT_FALSE(node_id_is_valid("0123456789abcdef0123456789abcdef0"));    /* 33 */
        ASSERT_FALSE(node_id_is_valid(""));
        ASSERT_FALSE(node_id_is_valid(NULL));
        ASSERT_FALSE(node_id_is_valid("Exec1"));
        ASSERT_FALSE(node_id_is_valid("exec.1"));       /* the separator */
        ASSERT_FALSE(node_id_is_valid("exec_1"));
        ASSERT_FALSE(node_id_is_valid("exec 1"));
        ASSERT_FALSE(node_id_is_valid("exec1\n"));
        ASSERT_FALSE(node_id_is_valid("ex\xc3\xa9"));
}

TEST(test_default) {
        char a[NODE_ID_MAX + 1], b[NODE_ID_MAX + 1], m[SD_ID128_STRING_MAX];
        sd_id128_t machine;

        if (sd_id128_get_machine(&machine) < 0) {
                fprintf(stderr, "no machine id here, the default is not tested\n");
                return;
        }
        ASSERT_EQ_INT(node_id_from_machine(a), 0);
        ASSERT_EQ_INT(node_id_from_machine(b), 0);
        /* Stable, a valid id, and not the machine id given away. */
        ASSERT_STREQ(a, b);
        ASSERT_EQ_INT(strlen(a), 12);
        ASSERT_EQ_INT(strspn(a, "0123456789abcdef"), 12);
        ASSERT_TRUE(node_id_is_valid(a));
        (void) sd_id128_to_string(machine, m);
        ASSERT_TRUE(strstr(m, a) == NULL);

        ASSERT_EQ_INT(node_id_init(NULL), 0);
        ASSERT_STREQ(node_id(), a);
        ASSERT_EQ_INT(node_id_init(""), 0);
        ASSERT_STREQ(node_id(), a);
}

TEST(test_mint_owns) {
        char a[NODE_ID_HANDLE_MAX], b[NODE_ID_HANDLE_MAX], other[NODE_ID_HANDLE_MAX];

        ASSERT_EQ_INT(node_id_init("exec2"), 0);
        ASSERT_EQ_INT(node_id_mint(other), 0);
        ASSERT_EQ_INT(node_id_init("Exec1"), -EINVAL);
        ASSERT_STREQ(node_id(), "exec2");       /* a bad value changes nothing */
        ASSERT_EQ_INT(node_id_init("exec1"), 0);
        ASSERT_STREQ(node_id(), "exec1");

        ASSERT_EQ_INT(node_id_mint(a), 0);
        ASSERT_EQ_INT(node_id_mint(b), 0);
        ASSERT_EQ_INT(strlen(a), 5 + 1 + 32);
        ASSERT_TRUE(strneq(a, "exec1.", 6));
        ASSERT_EQ_INT(strspn(a + 6, "0123456789abcdef"), 32);
        ASSERT_TRUE(!streq(a, b));
        ASSERT_TRUE(node_id_owns(a));
        ASSERT_TRUE(node_id_owns(b));

        /* Another node's, a prefix that only starts like ours, no prefix, bad tails. */
        ASSERT_TRUE(strneq(other, "exec2.", 6));
        ASSERT_FALSE(node_id_owns(other));
        ASSERT_FALSE(node_id_owns("exec11.0123456789abcdef0123456789abcdef"));
        ASSERT_FALSE(node_id_owns("0123456789abcdef0123456789abcdef"));
        ASSERT_FALSE(node_id_owns(".0123456789abcdef0123456789abcdef"));
        ASSERT_FALSE(node_id_owns("exec1.0123456789abcdef0123456789abcde"));
        ASSERT_FALSE(node_id_owns("exec1.0123456789abcdef0123456789abcdef0"));
        ASSERT_FALSE(node_id_owns("exec1.0123456789ABCDEF0123456789abcdef"));
        ASSERT_FALSE(node_id_owns("exec1-0123456789abcdef0123456789abcdef"));
        ASSERT_FALSE(node_id_owns("exec1."));
        ASSERT_FALSE(node_id_owns(""));
        ASSERT_FALSE(node_id_owns(NULL));
        ASSERT_TRUE(node_id_owns("exec1.0123456789abcdef0123456789abcdef"));

        /* The longest node id still fits. */
        ASSERT_EQ_INT(node_id_init("0123456789abcdef0123456789abcdef"), 0);
        ASSERT_EQ_INT(node_id_mint(a), 0);
        ASSERT_EQ_INT(strlen(a), NODE_ID_HANDLE_MAX - 1);
        ASSERT_TRUE(node_id_owns(a));
}

int main(void) {
        RUN(test_valid);
        RUN(test_default);
        RUN(test_mint_owns);
        return 0;
}
