/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-launch: the first program inside every sandboxed run, and its main
 * process to the end (launch-run.h): it starts the interpreter before any
 * code is known, takes the run from the broker on its control socket (the
 * unit's stdin), hands the code to the interpreter and reports how it ended
 * and what it left on a channel the code never holds. Code never appears in
 * argv, the environment or a unit property.
 *
 * With --session it keeps one interpreter for many calls, one at a time
 * (launch-session.h). With --probe it instead reports what the sandbox looks like from inside, so
 * the broker can refuse to run code when a property is not enforced.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch-exitwatch.h"
#include "launch-lang.h"
#include "launch-probe.h"
#include "launch-run.h"
#include "launch-seccomp.h"
#include "launch-session.h"
#include "macro.h"
#include "package-spec.h"
#include "parse-util.h"

static int usage(void) {
        fprintf(stderr,
                "usage: mcp-exec-launch --python=PATH --bootstrap=PATH [--max-code-bytes=N] [--preload=MODULES]\n"
                "                       [--mpl-dir=DIR] [--mpl-cache=FILE]\n"
                "                       [--egress] [--wheelhouse=DIR]\n"
                "       mcp-exec-launch --session --python=PATH --bootstrap=PATH [...]\n"
                "       mcp-exec-launch [--session] --language=bash|javascript --interpreter=PATH --bootstrap=PATH\n"
                "                       [--max-code-bytes=N] [--egress]\n"
                "       mcp-exec-launch --probe [--wheelhouse=DIR]    (DIR: what the run must not read)\n"
                "       --jit: no W^X filter (an interpreter that JIT-compiles: Node)\n");
        return LAUNCH_EXIT_FAILED;
}

/* What is looked for before the options are parsed: a one-shot Python run
 * (neither --probe nor --session nor another --language=), and --jit. */
static void scan_argv(int argc, char *argv[], bool *ret_one_run, bool *ret_jit) {
        *ret_one_run = true;
        *ret_jit = false;
        for (int i = 1; i < argc; i++)
                if (streq(argv[i], "--probe") || streq(argv[i], "--session") ||
                    (strncmp(argv[i], "--language=", 11) == 0 && !streq(argv[i], "--language=python")))
                        *ret_one_run = false;
                else if (streq(argv[i], "--jit"))
                        *ret_jit = true;
}

/* The system call filters: what the unit's SystemCallFilter= did, without
 * PID 1 compiling it for every unit (syscall-filter.h), then W^X but for an
 * interpreter that JIT-compiles (--jit, the broker's for JavaScript alone).
 * The probe too: it proves what its unit's runs get. No filter, no run:
 * LAUNCH_EXIT_FAILED, or 0. */
static int load_filters(bool jit, int listener) {
        int r;

        r = launch_seccomp_load();
        if (r < 0) {
                /* Closed first: nobody would answer our own exit_group(). */
                (void) safe_close(listener);
                fprintf(stderr, "mcp-exec-launch: cannot load the system call filter, refusing to run: %s\n",
                        strerror(-r));
                return LAUNCH_EXIT_FAILED;
        }
        if (!jit) {
                r = launch_seccomp_load_wx();
                if (r < 0) {
                        (void) safe_close(listener);
                        fprintf(stderr, "mcp-exec-launch: cannot load the W^X filter, refusing to run: %s\n",
                                strerror(-r));
                        return LAUNCH_EXIT_FAILED;
                }
        }
        return 0;
}

/* What the options ask for, once they are parsed. */
static int launch_dispatch(const LaunchArgs *a, bool do_probe, bool do_session) {
        if (do_probe)
                /* The probe's --wheelhouse is the raw one, to prove denied (issue 41). */
                return launch_probe(a->wheelhouse);
        if (a->language != LANGUAGE_PYTHON) {
                if (!a->interpreter || a->interpreter[0] != '/' || !a->bootstrap || a->bootstrap[0] != '/' ||
                    a->wheelhouse || a->preload)
                        return usage();
                return do_session ? launch_lang_session(a) : launch_lang_run(a);
        }
        if (!a->python || a->python[0] != '/' || !a->bootstrap || a->bootstrap[0] != '/')
                return usage();
        return do_session ? launch_session(a) : launch_run(a);
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "python", required_argument, NULL, 'p' },
                { "bootstrap", required_argument, NULL, 'b' },
                { "max-code-bytes", required_argument, NULL, 'm' },
                { "preload", required_argument, NULL, 'l' },
                { "mpl-dir", required_argument, NULL, 'd' },
                { "mpl-cache", required_argument, NULL, 'c' },
                { "probe", no_argument, NULL, 'P' },
                { "session", no_argument, NULL, 'S' },
                { "egress", no_argument, NULL, 'E' },
                { "wheelhouse", required_argument, NULL, 'w' },
                { "jit", no_argument, NULL, 'J' }, /* looked for above */
                { "language", required_argument, NULL, 'L' },
                { "interpreter", required_argument, NULL, 'I' },
                {},
        };
        LaunchArgs a = { .max_code_bytes = 1 << 20 };
        bool do_probe = false, do_session = false, one_run, jit;
        int c, r, listener = -EBADF;

        /* First, before any child: PID 1 of its namespace (launch-common.h). */
        launch_reap_orphans();

        /* A one-shot run hears its interpreter's exit at its start
         * (launch-exitwatch.h). Its filter goes under the main one, which
         * has no seccomp(2). Without it a run takes waitpid()'s word, as a
         * session, the probe or another language always do. */
        scan_argv(argc, argv, &one_run, &jit);
        if (one_run)
                listener = exit_watch_install();

        /* Before an option is parsed (only --probe, --session, --language
         * and --jit were looked for, above). */
        r = load_filters(jit, listener);
        if (r != 0)
                return r;
        if (listener >= 0) {
                r = exit_watch_start(listener);
                if (r < 0) {
                        fprintf(stderr,
                                "mcp-exec-launch: cannot watch for the interpreter's exit, refusing to run: %s\n",
                                strerror(-r));
                        return LAUNCH_EXIT_FAILED;
                }
        }

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        a.python = optarg;
                        break;
                case 'b':
                        a.bootstrap = optarg;
                        break;
                case 'm':
                        if (parse_uint(optarg, &a.max_code_bytes) < 0 || a.max_code_bytes == 0)
                                return usage();
                        break;
                case 'l':
                        a.preload = optarg;
                        break;
                case 'd':
                        a.mpl_dir = optarg;
                        break;
                case 'c':
                        a.mpl_cache = optarg;
                        break;
                case 'P':
                        do_probe = true;
                        break;
                case 'S':
                        do_session = true;
                        break;
                case 'E':
                        a.egress = true;
                        break;
                case 'J':
                        break;
                case 'L':
                        if (language_from_string(optarg, &a.language) < 0)
                                return usage();
                        break;
                case 'I':
                        a.interpreter = optarg;
                        break;
                case 'w':
                        if (!wheelhouse_path_valid(optarg))
                                return usage();
                        a.wheelhouse = optarg;
                        break;
                default:
                        return usage();
                }

        return launch_dispatch(&a, do_probe, do_session);
}
