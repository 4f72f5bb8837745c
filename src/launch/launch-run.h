/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The launcher's trusted parent: the unit's main process for the whole run.
 *
 *   1. forks the interpreter (mcp-exec-bootstrap.py) before any code is
 *      known, which imports the preload set and says it is ready;
 *   2. tells the broker on the control socket (the unit's stdin), and waits
 *      for the run: {"op":"run", limits} with the caller's stdin, stdout,
 *      stderr and, optionally, the result channel's write end;
 *   3. reads the code (into a sealed memfd) and the input files (into /tmp)
 *      from stdin, and hands stdin, stdout, stderr and the code to the
 *      interpreter, which runs it;
 *   4. when it is over, sends the figures and the files under /tmp/outputs
 *      on the result channel, then how the program ended, and exits as the
 *      program did (so the unit's own result says the same). How it ended
 *      is what our own waitpid() says once the interpreter is gone: its
 *      "done" only says that nothing more will come on its socket, since
 *      the program, in that process, could send it too. A program that
 *      never exits gets no STATUS: the unit's RuntimeMaxSec= ends it.
 *
 * With --egress (issue 22, launch-egress.h) the parent listens on
 * 127.0.0.1:3128 before step 1, checks the namespace before it says ready,
 * the run carries "egress": true and the run's feed to egressd as its last
 * fd, and while the program runs each connection it accepts goes over the
 * feed.
 *
 * With "packages" in the run (issue 23, launch-packages.h) the parent runs
 * the installer between steps 2 and 3 and sends RESULT_FRAME_PACKAGES. If
 * it failed, no code is read or run: STATUS {"exit_code": LAUNCH_EXIT_FAILED}
 * (125), END, and the launcher exits with 125. If the packages shadow a
 * system distribution and the interpreter has a preload, it is killed and
 * a fresh one without the preload started first ("fresh_interpreter").
 *
 * The parent makes itself non-dumpable: the program, same uid, can neither
 * read its memory nor open its fds through /proc, so the result channel stays
 * the parent's. User code is never the main process: it cannot speak for the
 * unit. */

#include "launch-common.h"

/* Returns the exit status for the launcher (or does not return: it dies of
 * the program's signal). */
int launch_run(const LaunchArgs *args);
