/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The front end's table of the sandbox session handles (session_create) it
 * gave out, as far as it knows. The broker keeps its own registry of sandbox
 * sessions and is the authority on whether one still lives and whose it is,
 * and ends them all when this process exits. So this process must not exit
 * idle while one may live (sandbox_session_table_alive()), and when an MCP
 * session ends, the sandbox sessions made in it are closed
 * (sandbox_session_table_close_scope()). Bounded: at most
 * SANDBOX_SESSION_TABLE_MAX entries, each forgotten once it must have
 * expired. */

#include <stdint.h>
#include <systemd/sd-event.h>

#include "broker-proto.h"
#include "macro.h"

#define SANDBOX_SESSION_TABLE_MAX 4096U

typedef struct SandboxSessionTable SandboxSessionTable;

int sandbox_session_table_new(sd_event *e, const char *broker_socket, SandboxSessionTable **ret);
/* Outstanding close requests are dropped (the broker still closes on its own
 * when we exit). */
SandboxSessionTable *sandbox_session_table_free(SandboxSessionTable *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(SandboxSessionTable *, sandbox_session_table_free);

/* A session the broker made for us: id (its 32 hex digits), whose it is, and
 * when it ends at the latest if unused. */
int sandbox_session_table_add(SandboxSessionTable *t, const char *id, const SandboxOwner *owner, uint64_t idle_usec,
                              uint64_t max_usec);
/* A call of it by its owner just ended: its idle time counts from now. */
void sandbox_session_table_touch(SandboxSessionTable *t, const char *id, const SandboxOwner *owner);
/* Its owner learnt that it is closed or gone. The broker's "not found" to
 * anyone else says nothing about it: their id, caller and scope must all
 * match, or the entry stays. */
void sandbox_session_table_remove(SandboxSessionTable *t, const char *id, const SandboxOwner *owner);
/* How many may still live. */
unsigned sandbox_session_table_alive(SandboxSessionTable *t);
/* How many of the caller's (any scope) may still live. */
unsigned sandbox_session_table_alive_of(SandboxSessionTable *t, const char *caller);
/* How many of the MCP session scope (caller's) may still live; 0 for no scope. */
unsigned sandbox_session_table_alive_in_scope(SandboxSessionTable *t, const SandboxOwner *owner);
/* The MCP session scope (caller's) ended: asks the broker to close its
 * sandbox sessions, without waiting for the answer, and forgets them. */
void sandbox_session_table_close_scope(SandboxSessionTable *t, const SandboxOwner *owner);
/* The caller is no more (its token was revoked): asks the broker to close
 * each of its sandbox sessions, in any scope, as session_close does,
 * without waiting for the answers, and forgets them. How many. */
unsigned sandbox_session_table_close_caller(SandboxSessionTable *t, const char *caller);
