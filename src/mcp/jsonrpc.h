/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* JSON-RPC 2.0 as MCP uses it: parsing with a nesting limit, classifying a
 * message, ids (strings or integers, never null), and building replies. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Deeper input is a parse error: a tool call needs a handful of levels, and
 * json-c recurses when it frees. */
#define JSONRPC_MAX_DEPTH 64

/* More JSON values in one message (each object key counting as one too) are
 * refused before json-c reads it (json-scan.h). The largest real message is
 * a tools/call with 64 input files: about 500 values (each file an object
 * with three members is 7, the rest a few dozen); a batch of 32 of those
 * fits. At the limit json-c holds at most about 13 MB, when every value is
 * an empty object (792 bytes each, measured with json-c 0.16); strings,
 * numbers and keys cost 70 to 180 bytes. Past it, the same bytes could make
 * json-c allocate gigabytes: a 4 MB body of {} takes 1.1 GB. */
#define JSONRPC_MAX_VALUES 16384

/* Every error code we send. JSON-RPC 2.0's own first, then the range it
 * leaves to servers (-32000 to -32099) as MCP and its SDKs use it. */
enum {
        JSONRPC_PARSE_ERROR = -32700,
        JSONRPC_INVALID_REQUEST = -32600,
        JSONRPC_METHOD_NOT_FOUND = -32601,
        JSONRPC_INVALID_PARAMS = -32602,
        JSONRPC_INTERNAL_ERROR = -32603,
        /* A transport refuses before any request is read; over HTTP the
         * status says why (403, 406, 503, ...). */
        JSONRPC_SERVER_ERROR = -32000,
        /* The SDKs' servers answer an unknown session and a refused peer
         * with the same code; two names say which one is meant. */
        MCP_ERROR_SESSION_NOT_FOUND = -32001,
        MCP_ERROR_ACCESS_DENIED = -32001,       /* a wrong HTTP token, a uid polkit refused */
        /* 2026-07-28 */
        MCP_ERROR_HEADER_MISMATCH = -32020,     /* HTTP headers that do not match the body */
        MCP_ERROR_MISSING_REQUIRED_CLIENT_CAPABILITY = -32021,
        MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION = -32022,
};

typedef enum JsonRpcKind {
        JSONRPC_REQUEST,
        JSONRPC_NOTIFICATION,
        JSONRPC_IGNORED,        /* a reply to us (we send no requests) or a malformed notification */
        JSONRPC_INVALID,        /* to be answered with error_code/error_message */
} JsonRpcKind;

typedef struct JsonRpcMessage {
        JsonRpcKind kind;
        const char *method;     /* requests and notifications */
        json_object *id;        /* borrowed; NULL when absent or unusable (answer with null) */
        json_object *params;    /* borrowed; NULL when absent; else an object or an array */
        int error_code;         /* JSONRPC_INVALID */
        const char *error_message;
} JsonRpcMessage;

/* Parses one complete message; *ret is NULL for the JSON literal null (not a
 * valid message, but valid JSON). -EBADMSG (with *ret_error set to a short
 * reason) for anything that is not exactly one JSON value, trailing
 * whitespace aside, and for nesting past JSONRPC_MAX_DEPTH; -E2BIG (with
 * *ret_error) for more than JSONRPC_MAX_VALUES values, found before json-c
 * allocates any; -ENOMEM. */
int jsonrpc_parse(const char *data, size_t len, json_object **ret, const char **ret_error);

void jsonrpc_classify(json_object *m, JsonRpcMessage *ret);

bool jsonrpc_id_is_valid(json_object *id);
/* Same type and value: "1" and 1 are different requests. */
bool jsonrpc_id_equal(json_object *a, json_object *b);
/* The id for logs: printable ASCII, at most size-1 bytes (truncated). */
void jsonrpc_id_format(json_object *id, char *buf, size_t size);

/* Replies. id NULL is written as null. result and data are taken (also on
 * failure); NULL return means out of memory. jsonrpc_error_new() builds
 * every error we send; message may come from anywhere (it is made valid
 * UTF-8, and JSON escapes quotes and control characters). */
json_object *jsonrpc_result_new(json_object *id, json_object *result);
json_object *jsonrpc_error_new(json_object *id, int code, const char *message, json_object *data);
json_object *jsonrpc_notification_new(const char *method, json_object *params);

/* m in the wire form, one line without the newline, as a new NUL-terminated
 * string. Takes m (NULL: out of memory); -ENOMEM. ret_len may be NULL. */
int jsonrpc_serialize(json_object *m, char **ret, size_t *ret_len);

/* jsonrpc_error_new() serialized, for senders outside a session: a
 * transport's refusal, a peer turned away before it has one. id NULL is
 * null. ret_len may be NULL. */
int jsonrpc_error_serialize(json_object *id, int code, const char *message, char **ret, size_t *ret_len);
