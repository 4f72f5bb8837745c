/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Code mode's confirmation of a destructive upstream tool (issue 40), the
 * front end's part: the broker passes on the gateway's question
 * (broker-proto.h), and the session's client is asked with
 * elicitation/create in form mode, on the stream of the tools/call that
 * runs the code, or, for a task's call (2025-11-25), on the client's
 * tasks/result while the task says input_required. Only the client's
 * answer to that request, by an id of ours, on the session it was asked
 * on, answers the question; decline, cancel, an error, no answer in time,
 * a client or revision without elicitation: no, with the reason. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "exec-client.h"

typedef struct McpSession McpSession;

/* Elicitations open in one session at once; more are answered no. */
#define MCP_CONFIRM_PENDING_MAX 8U
/* How long the user has to answer, at most (less if the run ends sooner). */
#define MCP_CONFIRM_TIMEOUT_USEC (60 * USEC_PER_SEC)

/* Why s cannot ask its client to confirm (static text), or NULL if it can:
 * a session of a revision with elicitation (2025-06-18 on, not the
 * stateless one), whose client declared it in form mode, on a transport
 * or a task's own session. */
const char *mcp_confirm_unavailable(const McpSession *s);

/* Asks the client of s about ask, for the call with request id call_id
 * (which came with origin) that runs e, whose run has timeout_s (0: the
 * broker's default); the answer goes to exec_client_confirm_answer(e, …),
 * now (no) or later: within MCP_CONFIRM_TIMEOUT_USEC or the run's time
 * left, whichever is less. */
void mcp_confirm_ask(McpSession *s, uint64_t origin, json_object *call_id, ExecClient *e,
                     const BrokerConfirmAsk *ask, uint64_t timeout_s);

/* A message of the client that is a response (no method): 1 if it
 * answered an open elicitation of s's, else 0 (ignored). */
int mcp_confirm_response(McpSession *s, json_object *msg);

/* The same, for an answer that came on session from to a question of
 * owner's (a task's own session: its questions go on its client's
 * tasks/result): only a question that was asked on from matches. */
int mcp_confirm_response_from(McpSession *owner, McpSession *from, json_object *msg);

/* A task's questions: those of owner not asked yet (again: all that are
 * open, as for a new tasks/result, whose client may have lost the stream
 * of the last) go on to's request id (tasks/result), which came with
 * origin; the answer counts then only there. How many went. */
int mcp_confirm_send_open(McpSession *owner, McpSession *to, uint64_t origin, json_object *id, bool again);
/* Session gone is going: owner's questions asked on it are open again, to
 * go on the next tasks/result. */
void mcp_confirm_unroute(McpSession *owner, McpSession *gone);

/* The 2026-07-28 tasks extension: owner's open questions as a task's
 * inputRequests ({our id: {method, params}}; NULL on out of memory), and
 * the client's answer to one of them from tasks/update's inputResponses:
 * 1 if key named an open question, else 0. */
json_object *mcp_confirm_input_requests(const McpSession *owner);
int mcp_confirm_input_response(McpSession *owner, const char *key, json_object *result);

/* e goes: its open questions are forgotten (nothing is answered: the run
 * ends with it). */
void mcp_confirm_forget(McpSession *s, ExecClient *e);
/* The same, then e freed: NULL, for c->exec = mcp_confirm_exec_free(…). */
ExecClient *mcp_confirm_exec_free(McpSession *s, ExecClient *e);
/* The session goes: every open question is forgotten. */
void mcp_confirm_drop_all(McpSession *s);

/* The client's declared capabilities at initialize: does it take form mode
 * elicitation? {} (the 2025-06-18 form) or one with "form". */
bool mcp_confirm_capability_form(json_object *capabilities);
