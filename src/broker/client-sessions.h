/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's sandbox sessions as its clients see them: who owns one
 * (caller and scope, checked on every use), the limits on how many, the
 * session ops and what a client hears when its session is ready, a call is
 * done, or the session is gone. */

#include <stddef.h>

#include <json-c/json.h>

#include "list.h"
#include "sandbox-session.h"

typedef struct Client Client;

/* The broker's sessions, live and starting ones. */
typedef struct SandboxSessions {
        LIST_HEAD(SandboxSession, list);
        unsigned n;
} SandboxSessions;

/* Frees every session: their units stop with them (run_free()), and no
 * callback fires. */
void sandbox_sessions_done(SandboxSessions *r);

/* The session ops of client.c's table (broker-proto.h has their messages). */
int client_op_session_create(Client *c, json_object *req, int fds[], size_t n_fds);
int client_op_session_exec(Client *c, json_object *req, int fds[], size_t n_fds);
int client_op_session_close(Client *c, json_object *req, int fds[], size_t n_fds);
int client_op_session_close_scope(Client *c, json_object *req, int fds[], size_t n_fds);

/* The creator learns its handle once the interpreter is up and the sandbox
 * self-check has passed. */
void client_answer_session(Client *c);
