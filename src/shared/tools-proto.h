/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How runs reach other MCP servers' tools (code mode, issue 40), through
 * mcp-exec-toolsd. Three parties, two protocols:
 *
 * 1. Control: the broker (root) connects to TOOLS_SOCKET_PATH, a
 *    SOCK_SEQPACKET socket only root may open (toolsd checks SO_PEERCRED uid
 *    0 too). One control connection is at most one run. JSON packets as in
 *    packet.h:
 *
 *      broker → toolsd  {"op":"run","run":"<run id>","caller":"uid:1000"}
 *                       + 1 fd: toolsd's end of a SOCK_STREAM socketpair;
 *                       the run gets the other end (MCP_EXEC_TOOLS_FD)
 *      toolsd → broker  {"ok":true,"servers":["everything",…]}  (what this
 *                       caller may use) or {"ok":false,"error":"…"}
 *      broker → toolsd  {"op":"end"}: the run ended. toolsd cancels the
 *                       run's calls upstream, closes the run's fd, answers
 *                       {"op":"counts","servers":{"NAME":{"calls":N,
 *                       "errors":N,"refused":N,"ms":N}}} and closes.
 *      broker → toolsd  {"op":"counts","id":N}: the counts so far, the run
 *                       going on (a session's, at each of its calls' end);
 *                       toolsd answers {"op":"counts","id":N,"servers":{…}}
 *                       as for "end" (N echoed: the broker's question)
 *      broker → toolsd  {"op":"describe","caller":"uid:1000"}
 *      toolsd → broker  {"ok":true,"servers":[{"name":…,"description":…,
 *                       "tools":N or null (not listed yet)}]}
 *
 *    A control connection closed without "end" ends its run the same way,
 *    without the answer. Counts per server: calls = every call naming it;
 *    refused = answered refused or limit; errors = timeout, upstream,
 *    cancelled, and results with isError; ms = the time of all its calls.
 *
 * 2. Run: the socketpair. Frames both ways: a 4-byte big-endian length, then
 *    that many bytes of one UTF-8 JSON object. run → toolsd at most
 *    TOOLS_RUN_FRAME_MAX; toolsd → run at most the server's MAX_BYTES.
 *
 *      {"id":N,"op":"servers"} → {"id":N,"servers":[{"name":…,
 *            "description":…,"tools":[the allowed tools as listed]}]}
 *            (a server whose upstream failed: "tools":[], "error":"…")
 *      {"id":N,"op":"call","server":S,"tool":T,"arguments":{…}}
 *            → {"id":N,"result":{CallToolResult}}
 *            or {"id":N,"error":{"kind":K,"message":"…"}}
 *      {"id":N,"op":"cancel","target":M}: no answer of its own; call M
 *            answers kind "cancelled".
 *
 *    N: an integer 1..TOOLS_ID_MAX, unique among the run's requests in
 *    flight (a duplicate gets bad_request). A frame over the limit, bad JSON,
 *    not an object, or an object without a valid id: toolsd closes the run's
 *    connection (the run's code sees EOF). Answers come in any order. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buffer.h"

#define TOOLS_SOCKET_PATH "/run/mcp-exec/tools.sock"
#define TOOLS_UPSTREAM_DIR "/run/mcp-exec/upstream"
#define TOOLS_SERVERS_DIR "/etc/mcp-exec/servers.d"

/* A frame from the run, header excluded. */
#define TOOLS_RUN_FRAME_MAX (1024U * 1024U)
#define TOOLS_FRAME_HEADER 4U
/* JSON's safe integers: what a Python or JavaScript run can count to. */
#define TOOLS_ID_MAX ((UINT64_C(1) << 53) - 1)
/* Names a run may send (a tool's name; a server's is shorter). */
#define TOOLS_NAME_MAX 128U
/* The nesting a frame may have: arguments are a tool's, so allow some. */
#define TOOLS_JSON_DEPTH 64U

typedef enum ToolsErrorKind {
        TOOLS_ERROR_REFUSED,            /* policy, unknown server or tool, destructive without confirmation */
        TOOLS_ERROR_LIMIT,              /* a per-run cap */
        TOOLS_ERROR_TIMEOUT,
        TOOLS_ERROR_UPSTREAM,           /* crashed, hung up, garbage, a JSON-RPC error */
        TOOLS_ERROR_CANCELLED,
        TOOLS_ERROR_BAD_REQUEST,
        _TOOLS_ERROR_MAX,
        _TOOLS_ERROR_INVALID = -22,
} ToolsErrorKind;

const char *tools_error_kind_to_string(ToolsErrorKind k);
ToolsErrorKind tools_error_kind_from_string(const char *s);

/* Takes one frame off the front of data[0..len). 1: *ret is the object and
 * *ret_consumed the bytes it took; 0: incomplete, read more; -EMSGSIZE: its
 * length is over max; -EBADMSG: not one strict UTF-8 JSON object. */
int tools_frame_parse(const void *data, size_t len, size_t max, json_object **ret, size_t *ret_consumed);

/* Appends o as one frame to out. -EMSGSIZE if over max (nothing appended);
 * -ENOBUFS past out's limit; -ENOMEM. */
int tools_frame_append(Buffer *out, json_object *o, size_t max);

typedef enum ToolsOp {
        TOOLS_OP_SERVERS,
        TOOLS_OP_CALL,
        TOOLS_OP_CANCEL,
} ToolsOp;

/* One request of a run; the strings and arguments are borrowed from the
 * object parsed. */
typedef struct ToolsRequest {
        ToolsOp op;
        uint64_t id;
        const char *server, *tool;      /* call */
        json_object *arguments;         /* call: an object, or NULL when absent */
        uint64_t target;                /* cancel */
} ToolsRequest;

/* -EBADMSG with *ret_error set if o has no valid id (the connection is
 * closed); -EINVAL with *ret_id set and *ret_error when it has one but is
 * otherwise bad (answered bad_request); 0 with *ret filled. */
int tools_request_parse(json_object *o, ToolsRequest *ret, uint64_t *ret_id, const char **ret_error);

/* {"id":id,"error":{"kind":…,"message":…}}, or NULL on out of memory. */
json_object *tools_error_new(uint64_t id, ToolsErrorKind kind, const char *message);

/* A tool or server name a run may send: 1..TOOLS_NAME_MAX bytes of
 * printable ASCII without spaces. */
bool tools_name_is_valid(const char *s);
