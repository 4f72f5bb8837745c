/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The launcher and an interpreter other than Python (issue 42): bash, node.
 * Python's bootstrap takes the program's stdin, stdout, stderr and code as
 * file descriptors over SCM_RIGHTS (launch-run.h); a shell or node cannot
 * receive fds. So every fd such an interpreter will ever use is placed at
 * its start, before any code is known, and the launcher fills them and
 * relays the output. The same unit, properties, self-check, limits, result
 * frames and /tmp as for Python; what differs is only this protocol.
 *
 * Start (launcher args --language=NAME --interpreter=PATH --bootstrap=PATH
 * [--session], from the broker; NAME "bash" or "javascript"; PATH absolute,
 * the operator's, never a caller's). The launcher forks and execs
 *
 *     PATH [per-language flags] BOOTSTRAP [--session]
 *
 * (bash: "bash --norc --noprofile BOOTSTRAP"; node: the flags language.c
 * lists for it). No code, no caller data in argv. The environment is built
 * from nothing as for Python (PATH=/usr/local/bin:/usr/bin:/bin, HOME=/tmp,
 * TMPDIR=/tmp, LANG=C.UTF-8, the thread caps, and with --egress the proxy
 * variables http_proxy/https_proxy/HTTP_PROXY/HTTPS_PROXY/no_proxy...), cwd
 * /tmp, oom_score_adj 1000, PR_SET_PDEATHSIG SIGKILL, SIGPIPE default, with
 * --egress the bind()/listen() filter. The interpreter is the leader of a
 * process group of its own (setpgid(0, 0)): a session's interrupt goes to
 * the group. Its fds, exactly these, nothing else open:
 *
 *     0  stdin: a memfd (O_RDWR, at offset 0). Empty until "go"; then it
 *        holds the caller's whole stdin (what followed the code and the
 *        input files on the run's stdin, read to EOF by the launcher). The
 *        launcher fills it with pwrite(), so the shared offset stays 0, and
 *        (one-shot) seals it. Programs and their children read a regular
 *        file: EOF is its end, for every reader.
 *     1  stdout: a pipe's write end; the launcher reads the other end.
 *     2  stderr: likewise.
 *     3  control: an AF_UNIX SOCK_STREAM socket, text lines ending in '\n'.
 *     4  code: a memfd (MFD_ALLOW_SEALING). Empty until "go"; then the
 *        program, UTF-8 or not, exactly the bytes the caller sent. Read it
 *        by path ("/proc/self/fd/4", which opens a new description at
 *        offset 0) or with positional reads; its size is fstat()'s.
 *
 * Control lines, interpreter -> launcher:
 *
 *     "ready\n"          once, when it is up and waiting (a warm unit: off
 *                        the caller's time). Anything else first, or EOF, and
 *                        the unit fails ("the interpreter did not start").
 *     "done N\n"         sessions only: the call is over, N its status, 0 to
 *                        255, or -S: as if killed by signal S. Everything the
 *                        call wrote to fd 1 and 2 must be written before it.
 *
 * launcher -> interpreter:
 *
 *     "go\n"             fd 0 and fd 4 are filled: run the program.
 *
 * One-shot run (no --session): after "go" the interpreter closes fd 3 (so
 * that no child of the program holds it) and runs the program as a script
 * of its language in the same process (bash: sourced in the bootstrap's
 * shell, so a warm unit's start is not paid again; node: as the main module
 * or its equivalent). The run ends when the interpreter process exits: its
 * wait status is the program's (exit code, or the signal). The launcher then
 * relays what is left in the stdout/stderr pipes (only what was written by
 * then: a background child's later output is not the run's), sends the
 * files under /tmp/outputs (PNG and SVG there are figures, for every
 * language: launch-collect.c) and the STATUS, and exits like the program.
 * Whatever the program left running dies with the unit. A timeout is the
 * unit's RuntimeMaxSec=, as for Python: the whole cgroup is killed, setsid,
 * nohup and disown included.
 *
 * Session (--session): the interpreter keeps its state (bash: the shell's
 * variables, functions, cwd; node: the global scope) and serves calls one at
 * a time. Per call the launcher empties and refills fd 0 (ftruncate, pwrite,
 * lseek 0: the offset is shared) and fd 4 (ftruncate, pwrite; not sealed,
 * as it is rewritten for the next call), then sends "go". The interpreter
 * runs the code in its kept state with fd 3 closed for the program's
 * children (bash: a redirection on the call's compound command, which bash
 * keeps close-on-exec), and writes "done N" when the call's code returned.
 * Its stdout/stderr pipes persist: during a call the launcher relays them to
 * the call's caller; between calls it reads and drops them (what a
 * background job prints then is nobody's). At a call's timeout, or when the
 * caller goes away, the launcher sends SIGINT to the interpreter's process
 * group: the interpreter should end the call ("done 130" or "done -2") and
 * keep its state; if no "done" comes LAUNCH_SESSION_GRACE_USEC later, the
 * group is killed and the session is lost, as for Python. EOF on fd 3 (the
 * launcher is gone, the session closed): the interpreter exits.
 *
 * Figures and files: there are no "fig" messages; a program (of any
 * language) writes files to /tmp/outputs, which the launcher returns after
 * the run or call, PNG and SVG files as images. A session's /tmp/outputs is
 * emptied by the launcher before each call.
 *
 * Refused for these languages (the front end says so): "packages" (a Python
 * wheelhouse) and code-mode tools (the mcp_servers module is Python's).
 * "network" works: the proxy variables are in the environment. */

#include "launch-common.h"

/* One-shot run and session of a non-Python interpreter (a->language). Both
 * return the launcher's exit status, or do not return (launch_exit_like()). */
int launch_lang_run(const LaunchArgs *a);
int launch_lang_session(const LaunchArgs *a);

/* The fds of the interpreter, at its exec. */
#define LAUNCH_LANG_STDIN_FD 0
#define LAUNCH_LANG_CONTROL_FD 3
#define LAUNCH_LANG_CODE_FD 4
