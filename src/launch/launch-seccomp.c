/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-seccomp.h"

#include <errno.h>
#include <stdbool.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include "macro.h"
#include "syscall-filter.h"
#include "util.h"

int launch_seccomp_load(void) {
        struct sock_filter prog[SYSCALL_FILTER_MAX];
        struct sock_fprog fprog;
        int n;

        n = syscall_filter_build(prog, ELEMENTSOF(prog));
        if (n < 0)
                return n;
        fprog = (struct sock_fprog) { .len = (unsigned short) n, .filter = prog };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return negative_errno();
        /* prctl(), not seccomp(2): the filter it loads has no seccomp(2),
         * so the egress filter after it (launch-egress.c) comes this way too. */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
                return negative_errno();
        return 0;
}

static bool wx_loaded = false;

int launch_seccomp_load_wx(void) {
        struct sock_filter prog[SYSCALL_FILTER_MAX];
        struct sock_fprog fprog;
        int n;

        n = syscall_filter_build_wx(prog, ELEMENTSOF(prog));
        if (n < 0)
                return n;
        fprog = (struct sock_fprog) { .len = (unsigned short) n, .filter = prog };
        /* Under the main filter, which has no seccomp(2): prctl(). */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
                return negative_errno();
        wx_loaded = true;
        return 0;
}

bool launch_seccomp_wx_loaded(void) {
        return wx_loaded;
}
