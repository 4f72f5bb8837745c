/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the launcher's run and session modes share: diagnostics, handing fds
 * to the interpreter, and ending as the program did. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "language.h"
#include "macro.h"

#define LAUNCH_EXIT_FAILED 125

typedef struct LaunchArgs {
        const char *python;             /* absolute */
        const char *bootstrap;          /* mcp-exec-bootstrap.py (or .sh, .js), absolute */
        /* --language= (issue 42): not Python, the interpreter (absolute)
         * speaks launch-lang.h's protocol. */
        Language language;
        const char *interpreter;
        const char *preload;            /* comma-separated module names, or NULL */
        const char *mpl_cache;          /* a prebuilt matplotlib font cache to copy, or NULL */
        const char *mpl_dir;            /* the run's own writable MPLCONFIGDIR, or NULL */
        uint64_t max_code_bytes;
        /* --egress (issue 22): the run may reach egressd's proxy through our
         * listener (launch-egress.h); the interpreter gets the proxy
         * variables and may not bind() nor listen(). */
        bool egress;
        /* --wheelhouse (issue 23, launch-packages.h): a run may ask for
         * packages from it; NULL: it may not. */
        const char *wheelhouse;
} LaunchArgs;

/* Where diagnostics go: the unit's stderr (the journal) while no code is
 * known, the caller's stderr during a run, nowhere (-EBADF) in between. */
void launch_set_err_fd(int fd);

/* "mcp-exec-launch: MSG[: strerror]" on the diagnostics fd; returns
 * LAUNCH_EXIT_FAILED. */
int launch_fail(const char *msg, int error);

/* One packet with msg and up to 4 fds. */
/* The most: a run's stdin, stdout, stderr, code and its tools connection. */
#define LAUNCH_SEND_FDS_MAX 5
int launch_send_fds(int sock, const char *msg, const int *fds, size_t n);

/* PID 1 of the run's own PID namespace (PrivatePIDs=, systemd >= 257),
 * the launcher inherits every orphan there, and a zombie nobody reaps still
 * counts against TasksMax=. launch_reap_orphans() reaps those as they exit
 * (a SIGCHLD handler, only when we are PID 1: elsewhere systemd does);
 * launch_fork() is fork() for the launcher's own children, whose status
 * their waitpid() wants: the handler leaves them alone. */
void launch_reap_orphans(void);
pid_t launch_fork(void);
/* One of those no longer waited for (killed, and of no interest): the
 * handler reaps it as an orphan. */
void launch_disown_child(pid_t pid);

/* Exits with the program's exit code, or dies of its signal. */
_noreturn_ void launch_exit_like(int status);
