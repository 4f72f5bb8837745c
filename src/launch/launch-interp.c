/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-interp.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "launch-egress.h"
#include "launch-packages.h"
#include "macro.h"
#include "package-spec.h"
#include "util.h"

#define MPL_CACHE_MAX ((off_t) 8 << 20)

/* The daemon's environment (the token included) never reaches the code. One
 * thread per numeric library, so that their pools do not trip TasksMax=;
 * matplotlib draws without a display and keeps its caches in the run's own
 * directory. An egress run's clients find the proxy by the usual variables. */
char **launch_child_env(const LaunchArgs *a) {
        static char mpl[4096 + 16], links[4096 + 32];
        static char *env[8 + 1 + 6 + 10 + 1];
        static char *const fixed[] = {
                (char *) "PATH=/usr/local/bin:/usr/bin:/bin",
                (char *) "HOME=/tmp",
                (char *) "TMPDIR=/tmp",
                (char *) "LANG=C.UTF-8",
                (char *) "MPLBACKEND=Agg",
                (char *) "OPENBLAS_NUM_THREADS=1",
                (char *) "OMP_NUM_THREADS=1",
                (char *) "MKL_NUM_THREADS=1",
                (char *) "NUMEXPR_NUM_THREADS=1",
        };
        size_t n = 0;

        assert(a);
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                env[n++] = fixed[i];
        if (a->mpl_dir) {
                (void) snprintf(mpl, sizeof mpl, "MPLCONFIGDIR=%s", a->mpl_dir);
                env[n++] = mpl;
        }
        for (size_t i = 0; a->egress && launch_egress_env[i]; i++)
                env[n++] = (char *) launch_egress_env[i];
        if (!a->wheelhouse) {
                assert(n < ELEMENTSOF(env));
                env[n] = NULL;
                return env;
        }
        /* The run's packages are its user site (launch-packages.h): every
         * interpreter the code starts sees them (the bootstrap puts their
         * scripts on PATH once its own sys.executable is known), and a pip
         * install in the code goes there too (a user install: PEP 668's
         * marker speaks of the system's site, not this one). pip takes the
         * store's checked copies of the wheels (or a plain wheelhouse); an
         * egress run's pip may also reach an index through the proxy. */
        env[n++] = (char *) "PYTHONUSERBASE=" SANDBOX_PACKAGES_PREFIX;
        (void) snprintf(links, sizeof links, "PIP_FIND_LINKS=%s%s", a->wheelhouse,
                        launch_packages_store(a) ? "/" LAUNCH_STORE_WHEELS : "");
        env[n++] = links;
        env[n++] = (char *) "PIP_USER=1";
        env[n++] = (char *) "PIP_BREAK_SYSTEM_PACKAGES=1";
        env[n++] = (char *) "PIP_ONLY_BINARY=:all:";
        env[n++] = (char *) "PIP_DISABLE_PIP_VERSION_CHECK=1";
        env[n++] = (char *) "PIP_NO_CACHE_DIR=1";
        if (!a->egress)
                env[n++] = (char *) "PIP_NO_INDEX=1";
        assert(n < ELEMENTSOF(env));
        env[n] = NULL;
        return env;
}

void launch_seed_mpl_cache(const LaunchArgs *a) {
        _cleanup_close_ int in = -EBADF, out = -EBADF, dir = -EBADF;
        const char *base;
        struct stat st;

        assert(a);
        if (!a->mpl_cache || !a->mpl_dir)
                return;
        base = strrchr(a->mpl_cache, '/');
        base = base ? base + 1 : a->mpl_cache;
        in = open(a->mpl_cache, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MPL_CACHE_MAX)
                return;
        dir = open(a->mpl_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return;
        out = openat(dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                return;
        for (off_t left = st.st_size; left > 0;) {
                ssize_t k = sendfile(out, in, NULL, (size_t) left);
                if (k <= 0) {
                        (void) unlinkat(dir, base, 0);
                        return;
                }
                left -= k;
        }
}

pid_t launch_spawn_interpreter(const LaunchArgs *a, int child_control, bool session) {
        char arg_preload[4096 + 16];
        char *argv[] = { (char *) "python3", (char *) "-I", (char *) "-B", (char *) "-u", (char *) a->bootstrap,
                         arg_preload, NULL, NULL, NULL };
        size_t k = 6;
        char **env;
        pid_t pid;

        assert(a);
        (void) snprintf(arg_preload, sizeof arg_preload, "--preload=%s", a->preload ?: "");
        if (a->wheelhouse)
                argv[k++] = (char *) "--packages=" SANDBOX_PACKAGES_PREFIX;
        if (session)
                argv[k++] = (char *) "--session";
        /* Built before the fork: the child may only make async-signal-safe calls. */
        env = launch_child_env(a);
        pid = launch_fork();
        if (pid < 0)
                return -errno;
        if (pid != 0)
                return pid;

        /* The child, until exec: only async-signal-safe calls. */
        {
                struct sigaction sa = { .sa_handler = SIG_DFL };
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

                /* Out of memory, the kernel takes the program, not the parent
                 * that reports it (raising one's own score needs no privilege). */
                if (oom >= 0)
                        (void) !write(oom, "1000", 4);
                /* The parent ignores SIGPIPE; a program gets the default, as in a shell. */
                (void) sigaction(SIGPIPE, &sa, NULL);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(child_control, LAUNCH_CHILD_CONTROL_FD) < 0)
                        _exit(LAUNCH_EXIT_FAILED);
                (void) close_range(LAUNCH_CHILD_CONTROL_FD + 1, ~0U, 0);
                /* Last, as it forbids bind() to us too: the listener is the
                 * parent's, the code gets none of its own. */
                if (a->egress && launch_egress_seccomp() < 0)
                        _exit(LAUNCH_EXIT_FAILED);
                execve(a->python, argv, env);
                _exit(LAUNCH_EXIT_FAILED);
        }
}

/* "a,b,c" (or "-" for none) as a JSON array of strings; consumes list. */
static json_object *names_to_array(char *list) {
        _cleanup_json_ json_object *a = NULL;

        assert(list);

        a = json_object_new_array();
        if (!a)
                return NULL;
        for (char *s = list, *save = NULL, *t; !streq(list, "-") && (t = strtok_r(s, ",", &save)); s = NULL)
                if (json_append(a, json_object_new_string(t)) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

json_object *launch_wait_ready(int control, char **ret_modules) {
        _cleanup_free_ char *buf = malloc(LAUNCH_READY_MAX + 1);
        json_object *j = NULL;
        char ok_s[4096], failed_s[4096];
        const char *mods;
        ssize_t k;
        int end = 0;

        if (!buf)
                return NULL;
        do
                k = recv(control, buf, LAUNCH_READY_MAX, MSG_TRUNC);
        while (k < 0 && errno == EINTR);
        if (k <= 0)
                return NULL;
        buf[MIN((size_t) k, LAUNCH_READY_MAX)] = 0;
        if (sscanf(buf, "ready %4095s %4095s%n", ok_s, failed_s, &end) != 2)
                return NULL;
        /* The modules the preload imported or looked for: the third word,
         * if it came whole ("*" or none: unknown, any may be stale). */
        mods = buf + end + strspn(buf + end, " ");
        if (ret_modules) {
                *ret_modules = NULL;
                if ((size_t) k <= LAUNCH_READY_MAX && *mods && !streq(mods, "*") &&
                    !(*ret_modules = strdup(mods)))
                        return NULL;
        }
        /* A NULL array is out of memory: JB_OBJ fails for it. */
        if (json_build(&j,
                       JB_STR("event", "ready"),
                       JB_OBJ("preloaded", names_to_array(ok_s)),
                       JB_OBJ("failed", names_to_array(failed_s)),
                       JB_END) < 0) {
                if (ret_modules)
                        *ret_modules = mfree(*ret_modules);
                return NULL;
        }
        return j;
}
