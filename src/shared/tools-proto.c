/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tools-proto.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

static uint32_t read_be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

static void write_be32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) (v >> 24);
        p[1] = (uint8_t) (v >> 16);
        p[2] = (uint8_t) (v >> 8);
        p[3] = (uint8_t) v;
}

static const char *const kind_table[_TOOLS_ERROR_MAX] = {
        [TOOLS_ERROR_REFUSED] = "refused",
        [TOOLS_ERROR_LIMIT] = "limit",
        [TOOLS_ERROR_TIMEOUT] = "timeout",
        [TOOLS_ERROR_UPSTREAM] = "upstream",
        [TOOLS_ERROR_CANCELLED] = "cancelled",
        [TOOLS_ERROR_BAD_REQUEST] = "bad_request",
};

const char *tools_error_kind_to_string(ToolsErrorKind k) {
        return k >= 0 && k < _TOOLS_ERROR_MAX ? kind_table[k] : NULL;
}

ToolsErrorKind tools_error_kind_from_string(const char *s) {
        if (!s)
                return _TOOLS_ERROR_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(kind_table); i++)
                if (streq(kind_table[i], s))
                        return (ToolsErrorKind) i;
        return _TOOLS_ERROR_INVALID;
}

int tools_frame_parse(const void *data, size_t len, size_t max, json_object **ret, size_t *ret_consumed) {
        const char *p = data, *why = NULL;
        json_object *j = NULL;
        uint32_t n;
        size_t end;
        int r;

        assert(data || len == 0);
        assert(ret);
        assert(ret_consumed);

        if (len < TOOLS_FRAME_HEADER)
                return 0;
        n = read_be32((const uint8_t *) p);
        /* Judged on the header alone, before a byte of it is buffered. */
        if (n > max)
                return -EMSGSIZE;
        if (len - TOOLS_FRAME_HEADER < n)
                return 0;
        r = json_parse_strict(p + TOOLS_FRAME_HEADER, n, TOOLS_JSON_DEPTH, JSON_TOKENER_VALIDATE_UTF8, &j, &end, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return -EBADMSG;
        /* One object, with at most whitespace after it. */
        for (size_t i = end; i < n; i++)
                if (!strchr(" \t\r\n", p[TOOLS_FRAME_HEADER + i])) {
                        json_object_put(j);
                        return -EBADMSG;
                }
        if (!json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return -EBADMSG;
        }
        *ret = j;
        *ret_consumed = TOOLS_FRAME_HEADER + n;
        return 1;
}

int tools_frame_append(Buffer *out, json_object *o, size_t max) {
        const char *s;
        uint8_t header[TOOLS_FRAME_HEADER];
        size_t n;
        int r;

        assert(out);
        assert(o);

        s = json_serialize(o, &n);
        if (!s)
                return -ENOMEM;
        if (n > max || n > UINT32_MAX)
                return -EMSGSIZE;
        r = buffer_reserve(out, sizeof header + n);
        if (r < 0)
                return r;
        write_be32(header, (uint32_t) n);
        /* Reserved above: neither can fail. */
        (void) buffer_append(out, header, sizeof header);
        (void) buffer_append(out, s, n);
        return 0;
}

bool tools_name_is_valid(const char *s) {
        size_t n;

        if (!s)
                return false;
        n = strlen(s);
        if (n == 0 || n > TOOLS_NAME_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if (*p <= ' ' || *p >= 0x7f)
                        return false;
        return true;
}

static bool get_id(json_object *o, const char *key, uint64_t *ret) {
        json_object *v = json_get(o, key);
        int64_t i;

        if (!v || !json_object_is_type(v, json_type_int))
                return false;
        i = json_object_get_int64(v);
        if (i < 1 || (uint64_t) i > TOOLS_ID_MAX)
                return false;
        *ret = (uint64_t) i;
        return true;
}

static int parse_call(json_object *o, ToolsRequest *req, const char **ret_error) {
        json_object *args = json_get(o, "arguments");

        req->server = json_get_string(o, "server");
        req->tool = json_get_string(o, "tool");
        if (!tools_name_is_valid(req->server) || !tools_name_is_valid(req->tool)) {
                *ret_error = "\"server\" and \"tool\" must be names of 1 to 128 printable ASCII characters";
                return -EINVAL;
        }
        if (args && !json_object_is_type(args, json_type_object)) {
                *ret_error = "\"arguments\" must be an object";
                return -EINVAL;
        }
        req->arguments = args;
        return 0;
}

int tools_request_parse(json_object *o, ToolsRequest *ret, uint64_t *ret_id, const char **ret_error) {
        ToolsRequest req = {};
        const char *op;
        int r;

        assert(o);
        assert(ret);
        assert(ret_id);
        assert(ret_error);

        if (!get_id(o, "id", &req.id)) {
                *ret_error = "every request needs an \"id\": an integer from 1 to 2^53-1";
                return -EBADMSG;
        }
        *ret_id = req.id;
        op = json_get_string(o, "op");
        if (streq_ptr(op, "servers"))
                req.op = TOOLS_OP_SERVERS;
        else if (streq_ptr(op, "call")) {
                req.op = TOOLS_OP_CALL;
                r = parse_call(o, &req, ret_error);
                if (r < 0)
                        return r;
        } else if (streq_ptr(op, "cancel")) {
                req.op = TOOLS_OP_CANCEL;
                if (!get_id(o, "target", &req.target)) {
                        *ret_error = "\"cancel\" needs a \"target\": the id of a call";
                        return -EINVAL;
                }
        } else {
                *ret_error = "unknown \"op\": expected servers, call or cancel";
                return -EINVAL;
        }
        *ret = req;
        return 0;
}

json_object *tools_error_new(uint64_t id, ToolsErrorKind kind, const char *message) {
        _cleanup_json_ json_object *e = NULL;
        json_object *j = NULL;

        assert(message);
        assert(tools_error_kind_to_string(kind));

        if (json_build(&e, JB_STR("kind", tools_error_kind_to_string(kind)), JB_STR("message", message), JB_END) < 0)
                return NULL;
        if (json_build(&j, JB_INT("id", (int64_t) id), JB_OBJ("error", TAKE_PTR(e)), JB_END) < 0)
                return NULL;
        return j;
}
