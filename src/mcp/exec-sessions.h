/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The sandbox sessions (session_create) this front end handed out, as far as
 * it knows: the broker is the authority on whether one still lives and whose
 * it is, and ends them all when this process exits. So this process must not
 * exit idle while one may live (exec_sessions_alive()), and when an MCP
 * session ends, the sandbox sessions made in it are closed
 * (exec_sessions_close_scope()). Bounded: at most EXEC_SESSIONS_MAX entries,
 * each forgotten once it must have expired. */

#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"

#define EXEC_SESSIONS_MAX 4096U

typedef struct ExecSessions ExecSessions;

int exec_sessions_new(sd_event *e, const char *broker_socket, ExecSessions **ret);
/* Outstanding close requests are dropped (the broker still closes on its own
 * when we exit). */
ExecSessions *exec_sessions_free(ExecSessions *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExecSessions *, exec_sessions_free);

/* A session the broker made for us: id (its 32 hex digits), whose it is (the
 * caller and the MCP session it belongs to, "" for none), and when it ends at
 * the latest if unused. */
int exec_sessions_add(ExecSessions *t, const char *id, const char *caller, const char *scope, uint64_t idle_usec,
                      uint64_t max_usec);
/* A call of it by its owner just ended: its idle time counts from now. */
void exec_sessions_touch(ExecSessions *t, const char *id, const char *caller, const char *scope);
/* Its owner learnt that it is closed or gone. The broker's "not found" to
 * anyone else says nothing about it: their id, caller and scope must all
 * match, or the entry stays. */
void exec_sessions_remove(ExecSessions *t, const char *id, const char *caller, const char *scope);
/* How many may still live. */
unsigned exec_sessions_alive(ExecSessions *t);
/* How many of the caller's (any scope) may still live. */
unsigned exec_sessions_alive_of(ExecSessions *t, const char *caller);
/* How many of the MCP session scope (caller's) may still live; 0 for no scope. */
unsigned exec_sessions_alive_in_scope(ExecSessions *t, const char *caller, const char *scope);
/* The MCP session scope (caller's) ended: asks the broker to close its
 * sandbox sessions, without waiting for the answer, and forgets them. */
void exec_sessions_close_scope(ExecSessions *t, const char *caller, const char *scope);
