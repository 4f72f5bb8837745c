/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One MCP session of the core (mcp-session.c): who is on the other end,
 * and how what the core says reaches them. The floor below the calls, the
 * tasks and the dispatch of methods (mcp-server.h), all of which hand
 * their messages to a session; it calls none of them. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "mem-budget.h"

typedef struct McpServer McpServer;
typedef struct McpSession McpSession;

typedef enum McpMessageKind {
        MCP_MESSAGE_RESPONSE,           /* the reply (result or error) to a request, or a batch's replies */
        MCP_MESSAGE_NOTIFICATION,       /* progress of a call */
        /* No text: a request the client cancelled (not one in a batch)
         * ends without a reply. Sent when the cancel arrives, while the run
         * may still be stopping and count in mcp_session_in_flight(). */
        MCP_MESSAGE_UNANSWERED,
        /* A request of ours to the client (elicitation/create) during the
         * request of origin: the transport sends it where the client sees
         * it as that request's (over HTTP, its POST's event stream) and
         * returns -ENOTCONN if it cannot; the session goes on. */
        MCP_MESSAGE_REQUEST,
} McpMessageKind;

/* A large part of a message kept once and shared by every message that
 * carries it (a task's result, issue 37): the message is json's first at
 * bytes, then data, then the rest of json. A transport that keeps the
 * message takes a reference (ref(owner), unref(owner) when done) rather
 * than a copy of data. Only for transports that ask for it. */
typedef struct McpShared {
        const char *data;
        size_t len, at;
        void *owner;
        void (*ref)(void *owner);
        void (*unref)(void *owner);
} McpShared;

/* What a session hands its transport: the message and the facts needed to
 * route it, so that no transport reads JSON-RPC. */
typedef struct McpMessage {
        McpMessageKind kind;
        /* One complete JSON-RPC message or batch array, serialized, without
         * a trailing newline; NULL for MCP_MESSAGE_UNANSWERED. */
        const char *json;
        size_t len;
        /* The origin given to mcp_session_handle() with what this answers
         * or concerns (a progress notification: its call's request). 0 for
         * what concerns no request of the peer. */
        uint64_t origin;
        /* Borrowed. The id of the request answered (RESPONSE) or concerned
         * (NOTIFICATION, UNANSWERED); NULL for a batch's replies, and for an
         * error about a message whose id could not be read. */
        json_object *id;
        int error_code;                 /* a RESPONSE that is an error: its code (jsonrpc.h); else 0 */
        /* What the core charged, refusably, for the bytes of this message
         * (a call's reply: json and room for one copy of it), to the
         * session's caller; NULL for none. The transport may take it over
         * (mem_charge_move()) for the copy it keeps; the core gives back
         * what is left once send returns. What is sent without one the
         * transport charges refusably itself: a notification that does not
         * fit is skipped, a reply replaced by a short error. */
        MemCharge *charge;
        /* Set (only for a transport with shared_parts) when json leaves
         * out a shared part; borrowed. */
        const McpShared *shared;
} McpMessage;

/* The whole text of m, json and its shared part together (malloc'd, with
 * a NUL), for a transport that must copy it after all; NULL on out of
 * memory. */
char *mcp_message_flatten(const McpMessage *m, size_t *ret_len);

/* How a session hands messages back to its transport. */
typedef struct McpTransport {
        /* Returns < 0 if the peer is gone. */
        int (*send)(McpSession *s, const McpMessage *m, void *userdata);
        /* It takes McpMessage.shared: a large part shared, not copied. */
        bool shared_parts;
} McpTransport;

/* Who is on the other end: for the journal, and for whose sandbox sessions
 * (session_create) it may use. */
typedef struct McpPeer {
        const char *transport;          /* "stdio", "unix", "http", "sse" */
        uid_t uid;                      /* (uid_t) -1 when unknown */
        pid_t pid;                      /* 0 when unknown */
        /* Who the transport vouches for: "uid:1000" (polkit-checked), "http:token"
         * (it presented the token), "http:loopback" (no token configured). NULL:
         * "uid:N" from uid, else the transport's name. Sandbox sessions are the
         * caller's. */
        const char *caller;
        /* This MCP session is one the client keeps (a 2025 Mcp-Session-Id, an
         * SSE stream): sandbox sessions made in it are its alone, and close
         * when it ends. Not for stdio (the uid's) nor stateless requests. */
        bool scoped;
} McpPeer;

int mcp_session_new(McpServer *server, const McpTransport *transport, void *userdata, const McpPeer *peer,
                    McpSession **ret);

/* Frees the session. Calls still queued are dropped without starting; runs
 * in progress are cancelled (their units stopped): nobody can receive them.
 * May be called from inside transport->send (the session then goes quiet at
 * once and the rest happens from the event loop), and after
 * mcp_server_free(), which leaves sessions inert but allocated. */
McpSession *mcp_session_free(McpSession *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(McpSession *, mcp_session_free);

/* Who the session is for (McpPeer.caller, or what stands in for it): what
 * the transport charges the bytes it holds for the session to. */
const char *mcp_session_caller(const McpSession *s);
/* May the core ask the client questions during a request (code mode's
 * confirmations, elicitation/create): a revision with elicitation, a client
 * that declared it (form mode), not a task's own session. */
bool mcp_session_can_ask(const McpSession *s);

/* Calls queued or running for this session (transports use it for idle exit). */
unsigned mcp_session_in_flight(const McpSession *s);

/* Optional: called each time mcp_session_in_flight() drops to zero, also
 * when no message goes out (a cancelled call, whose unit stopped), so that a
 * transport waiting for idle need not poll. A call's final reply is sent
 * after it stopped counting, so send already sees zero there. Like send, the
 * callback may free the session. NULL unsets. */
typedef void (*mcp_session_idle_t)(McpSession *s, void *userdata);
void mcp_session_set_idle_callback(McpSession *s, mcp_session_idle_t callback);

/* Negotiated protocol revision ("2025-06-18", …), or NULL before initialize.
 * A session that never initialized but was served stateless requests says
 * "2026-07-28". */
const char *mcp_session_protocol_version(const McpSession *s);

