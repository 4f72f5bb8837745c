/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A run's exit status at the moment the interpreter asks for its exit, not
 * when the kernel has freed its memory (with the data stack preloaded that
 * takes about 4 ms, all of it on the caller's time).
 *
 * The launcher puts a seccomp filter under itself and everything it starts
 * that turns exit_group(2) into a user notification (seccomp_unotify(2)),
 * then its main filter on top (launch-seccomp.h). A thread of the launcher
 * answers every notification at once with "continue"; when the caller was
 * the interpreter's main thread (its thread id is the watched pid), the
 * status it passed is the run's, and that call alone is held until
 * exit_watch_release(): the launcher reports first, while the process waits
 * in the call and takes no CPU, and only then does the kernel tear it down
 * (with the data stack that takes a core for about 2 ms, and the report
 * waited behind it on that core). It is the kernel's word, not the
 * program's: a program can say "done" on its control socket whenever it
 * likes, but it cannot make this process's exit_group() look like another
 * process's, nor change the status once the call was made: the first
 * call's is kept, and once answered the call continues, kills every thread
 * of the process and never returns. While it is held, other threads of the
 * program may still run, as a child it forked may: what they could still
 * add to the report, figures on the control socket (read a bounded number
 * of times after the exit) and files in /tmp/outputs, was always read as
 * untrusted, since such a child could send and write them too
 * (launch-collect.h).
 *
 * What it does not see takes the old way, waitpid(): an exit by a signal,
 * the last thread ending by exit(2), exit_group() from another thread (its
 * id is not the pid), or a filter of the program's own that fails the call
 * before ours is asked (a stricter action wins, seccomp(2)). */

#include <stdbool.h>
#include <sys/types.h>

/* Installs the notifying filter and returns its listener (>= 0), or
 * -errno. Before launch_seccomp_load(): its filter has no seccomp(2). Until
 * exit_watch_start() runs, the caller must not exit_group() itself without
 * closing the listener first (nobody would answer). */
int exit_watch_install(void);

/* Starts the answering thread on the listener (taken; closed on failure),
 * after the main filter, so that the thread lives under it too. 0, or
 * -errno: then exit_group() fails with ENOSYS for everything under us, and
 * a multi-threaded program could not end; the launcher refuses to run. */
int exit_watch_start(int listener);

/* Whose exit_group() to take as the run's status (0: nobody's). */
void exit_watch_set_pid(pid_t pid);

/* Readable (poll(2)) once the watched process called exit_group() and was
 * answered; -EBADF when no watch runs. */
int exit_watch_fd(void);

/* That status, as waitpid() would give it (W_EXITCODE), or -EAGAIN before. */
int exit_watch_status(void);

/* Lets the held exit_group() go on, and every later one at once. Before
 * waiting for the watched process in any way: it cannot end until then. */
void exit_watch_release(void);
