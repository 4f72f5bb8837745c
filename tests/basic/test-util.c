/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/util.[ch]. */

#include <signal.h>
#include <string.h>

#include "macro.h"
#include "test-helpers.h"
#include "util.h"

TEST(test_random_hex128) {
        char a[SD_ID128_STRING_MAX], b[SD_ID128_STRING_MAX];

        ASSERT_EQ_INT(random_hex128(a), 0);
        ASSERT_EQ_INT(random_hex128(b), 0);
        /* Unit names and /run/mcp-exec-tmp/ID take exactly this form. */
        ASSERT_EQ_INT(strlen(a), 32);
        ASSERT_EQ_INT(strspn(a, "0123456789abcdef"), 32);
        ASSERT_TRUE(!streq(a, b));
}

TEST(test_signal_to_name) {
        ASSERT_STREQ(signal_to_name(SIGKILL), "SIGKILL");
        ASSERT_STREQ(signal_to_name(SIGXCPU), "SIGXCPU");
        ASSERT_TRUE(!signal_to_name(0));
        ASSERT_TRUE(!signal_to_name(-9));
        ASSERT_TRUE(!signal_to_name(NSIG));
}

int main(void) {
        RUN(test_random_hex128);
        RUN(test_signal_to_name);
        return 0;
}
