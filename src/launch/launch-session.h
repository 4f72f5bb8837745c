/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The launcher's trusted parent in a session unit: one interpreter that keeps
 * its globals, imports and /tmp from call to call, one call at a time.
 *
 *   broker → us   {"op":"run","limits":{…},"timeout_ms":N} + [stdin, stdout, stderr, (result)]
 *   broker → us   {"op":"interrupt"}           the caller went away: stop the call
 *   broker → us   {"op":"egress"} + [feed]     --egress only, once, after our "ready": the
 *                                              session's feed to egressd (launch-egress.h)
 *   us → broker   {"event":"ready",…}           once, when the interpreter is up
 *   us → broker   {"event":"done","exit_code":N|"signal":S,"timed_out":B,"lost":B,"duration_us":N}
 *
 * A call's timeout interrupts the program (SIGINT: KeyboardInterrupt); if it
 * has not returned LAUNCH_SESSION_GRACE_USEC later, it is killed and the
 * state is lost: we report "lost" and exit, and so does the unit. So does a
 * program that dies (os._exit(), a crash, the OOM killer). EOF on the
 * control socket closes the session.
 *
 * A call's "packages" (launch-packages.h) are installed before its code is
 * read, within its timeout_ms (the installer is killed at the deadline:
 * "timed_out"); specs an earlier call installed are "already" there. Once
 * code ran, packages that would shadow a system distribution are refused
 * (it may have been imported). A refused install runs no code: the call is
 * "done" with exit code LAUNCH_EXIT_FAILED and the session goes on.
 *
 * Between calls the interpreter's stdin, stdout and stderr are /dev/null:
 * what a background thread prints then is dropped, never handed to the next
 * call's caller. */

#include "launch-common.h"

#define LAUNCH_SESSION_GRACE_USEC (2 * USEC_PER_SEC)

int launch_session(const LaunchArgs *args);
