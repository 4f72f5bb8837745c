/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "jsonrpc.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json-scan.h"
#include "json-util.h"
#include "macro.h"
#include "utf8.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

int jsonrpc_parse(const char *data, size_t len, json_object **ret, const char **ret_error) {
        json_object *j;
        size_t end;
        int r;

        *ret_error = NULL;
        if (len > INT32_MAX) {
                *ret_error = "message too large";
                return -EBADMSG;
        }
        /* json-c's own depth limit comes too late for the count: by then it
         * has allocated everything before. */
        switch (json_scan(data, len, JSONRPC_MAX_VALUES, JSONRPC_MAX_DEPTH, NULL)) {
        case -E2BIG:
                *ret_error = "more than " STRINGIFY(JSONRPC_MAX_VALUES) " JSON values in one message";
                return -E2BIG;
        case -ELOOP:
                *ret_error = "JSON nested too deeply (more than " STRINGIFY(JSONRPC_MAX_DEPTH) " levels)";
                return -EBADMSG;
        }
        /* Strict (json-util.h says why not json-c's strict mode); strings must
         * be valid UTF-8 so what we echo back is too. Trailing bytes are
         * checked below, where whitespace is allowed. */
        r = json_parse_strict(data, len, JSONRPC_MAX_DEPTH, JSON_TOKENER_VALIDATE_UTF8, &j, &end, ret_error);
        if (r < 0)
                return r;
        for (; end < len; end++)
                if (!strchr(" \t\r\n", data[end]) || data[end] == 0) {
                        json_object_put(j);
                        *ret_error = "trailing data after the JSON value";
                        return -EBADMSG;
                }
        *ret = j;
        return 0;
}

bool jsonrpc_id_is_valid(json_object *id) {
        return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

bool jsonrpc_id_equal(json_object *a, json_object *b) {
        if (!jsonrpc_id_is_valid(a) || !jsonrpc_id_is_valid(b) || json_object_get_type(a) != json_object_get_type(b))
                return false;
        if (json_object_is_type(a, json_type_string))
                return json_object_get_string_len(a) == json_object_get_string_len(b) &&
                       memcmp(json_object_get_string(a), json_object_get_string(b),
                              (size_t) json_object_get_string_len(a)) == 0;
        /* json-c keeps values above INT64_MAX as uint64; compare both ways. */
        return json_object_get_int64(a) == json_object_get_int64(b) &&
               json_object_get_uint64(a) == json_object_get_uint64(b);
}

void jsonrpc_id_format(json_object *id, char *buf, size_t size) {
        str_printable(jsonrpc_id_is_valid(id) ? json_object_get_string(id) : "", buf, size);
}

static json_object *envelope(json_object *id, bool with_id) {
        json_object *m = json_object_new_object();

        if (!m)
                return NULL;
        if (json_add_string(m, "jsonrpc", "2.0") < 0 ||
            (with_id && (id ? json_add(m, "id", json_object_get(id)) : json_add_null(m, "id")) < 0)) {
                json_object_put(m);
                return NULL;
        }
        return m;
}

json_object *jsonrpc_result_new(json_object *id, json_object *result) {
        json_object *m = envelope(id, true);

        if (!m || json_add(m, "result", TAKE_PTR(result)) < 0) {
                json_object_put(result);
                json_object_put(m);
                return NULL;
        }
        return m;
}

json_object *jsonrpc_error_new(json_object *id, int code, const char *message, json_object *data) {
        json_object *m = envelope(id, true), *e = json_object_new_object();
        /* json-c writes invalid UTF-8 through: a strict client would drop
         * the whole line. Client text echoed here is valid already; a
         * reason from elsewhere (polkit) may not be. */
        _cleanup_free_ char *text = utf8_sanitize(message, strlen(message), NULL);

        if (!m || !e || !text || json_add_int(e, "code", code) < 0 || json_add_string(e, "message", text) < 0 ||
            (data && json_add(e, "data", TAKE_PTR(data)) < 0) || json_add(m, "error", TAKE_PTR(e)) < 0) {
                json_object_put(data);
                json_object_put(e);
                json_object_put(m);
                return NULL;
        }
        return m;
}

json_object *jsonrpc_notification_new(const char *method, json_object *params) {
        json_object *m = envelope(NULL, false);

        if (!m || json_add_string(m, "method", method) < 0 || (params && json_add(m, "params", TAKE_PTR(params)) < 0)) {
                json_object_put(params);
                json_object_put(m);
                return NULL;
        }
        return m;
}

int jsonrpc_serialize(json_object *m, char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *msg = m;
        const char *text;
        size_t len;
        char *copy;

        assert(ret);

        if (!msg)
                return -ENOMEM;
        text = json_serialize(msg, &len);
        if (!text)
                return -ENOMEM;
        copy = strndup(text, len);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        if (ret_len)
                *ret_len = len;
        return 0;
}

int jsonrpc_error_serialize(json_object *id, int code, const char *message, char **ret, size_t *ret_len) {
        return jsonrpc_serialize(jsonrpc_error_new(id, code, message, NULL), ret, ret_len);
}

static void invalid(JsonRpcMessage *ret, json_object *id, const char *message) {
        *ret = (JsonRpcMessage) {
                .kind = JSONRPC_INVALID,
                .id = jsonrpc_id_is_valid(id) ? id : NULL,
                .error_code = JSONRPC_INVALID_REQUEST,
                .error_message = message,
        };
}

void jsonrpc_classify(json_object *m, JsonRpcMessage *ret) {
        json_object *id = NULL, *method = NULL, *params;
        bool has_id, valid_params;
        const char *v;

        if (!json_object_is_type(m, json_type_object))
                return invalid(ret, NULL, "Invalid Request: a message must be a JSON object");

        /* Replies to us are never answered, whatever their shape: we send
         * no requests, so there is nothing to match them to. */
        if (!json_object_object_get_ex(m, "method", &method) &&
            (json_object_object_get_ex(m, "result", NULL) || json_object_object_get_ex(m, "error", NULL))) {
                *ret = (JsonRpcMessage) { .kind = JSONRPC_IGNORED, .id = json_get(m, "id") };
                return;
        }

        has_id = json_object_object_get_ex(m, "id", &id);
        v = json_get_string(m, "jsonrpc");
        params = json_get(m, "params");
        valid_params = !json_object_object_get_ex(m, "params", NULL) || json_object_is_type(params, json_type_object) ||
                       json_object_is_type(params, json_type_array);

        /* Something that names a method without an id is meant as a
         * notification: never answered, and dropped if malformed. */
        if (!has_id && json_object_is_type(method, json_type_string)) {
                if (!v || !streq(v, "2.0") || !valid_params) {
                        *ret = (JsonRpcMessage) { .kind = JSONRPC_IGNORED };
                        return;
                }
                *ret = (JsonRpcMessage) {
                        .kind = JSONRPC_NOTIFICATION,
                        .method = json_object_get_string(method),
                        .params = params,
                };
                return;
        }

        if (has_id && !jsonrpc_id_is_valid(id))
                return invalid(ret, NULL, "Invalid Request: id must be a string or an integer");
        if (!v || !streq(v, "2.0"))
                return invalid(ret, id, "Invalid Request: jsonrpc must be \"2.0\"");
        if (!method)
                return invalid(ret, id, "Invalid Request: no method");
        if (!json_object_is_type(method, json_type_string))
                return invalid(ret, id, "Invalid Request: method must be a string");
        if (!valid_params)
                return invalid(ret, id, "Invalid Request: params must be an object");

        *ret = (JsonRpcMessage) {
                .kind = has_id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION,
                .method = json_object_get_string(method),
                .id = id,
                .params = params,
        };
}
