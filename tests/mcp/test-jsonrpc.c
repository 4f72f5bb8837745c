/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/jsonrpc.[ch]: parsing limits, message
 * classification, ids and reply construction. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "macro.h"
#include "broker-proto.h"
#include "test-helpers.h"

static json_object *parse_ok(const char *s) {
        json_object *j = NULL;
        const char *why = NULL;

        ASSERT_EQ_INT(jsonrpc_parse(s, strlen(s), &j, &why), 0);
        ASSERT_TRUE(j);
        return j;
}

static void parse_bad(const char *s, size_t len, const char *reason) {
        json_object *j = NULL;
        const char *why = NULL;

        ASSERT_EQ_INT(jsonrpc_parse(s, len, &j, &why), -EBADMSG);
        ASSERT_TRUE(!j);
        ASSERT_TRUE(why);
        if (reason)
                ASSERT_CONTAINS(why, reason);
}

TEST(test_parse) {
        _cleanup_json_ json_object *a = parse_ok("{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}");
        _cleanup_json_ json_object *b = parse_ok("  [1,2]\r\n\t "), *c = parse_ok("42"), *d = parse_ok("true");
        char deep[2 * (JSONRPC_MAX_DEPTH + 10) + 1], ok[2 * (JSONRPC_MAX_DEPTH - 1) + 1];

        ASSERT_TRUE(json_object_is_type(a, json_type_object));
        ASSERT_TRUE(json_object_is_type(b, json_type_array));
        ASSERT_EQ_INT(json_object_get_int(c), 42);   /* complete, though json-c would wait for more */
        ASSERT_TRUE(json_object_get_boolean(d));

        parse_bad("", 0, "incomplete");
        parse_bad("{\"a\":", 5, "incomplete");
        parse_bad("{} {}", 5, "trailing");
        parse_bad("{}x", 3, "trailing");
        {
                json_object *n = (json_object *) 1;
                const char *why;
                ASSERT_EQ_INT(jsonrpc_parse("null", 4, &n, &why), 0);
                ASSERT_TRUE(!n);        /* valid JSON, and classified as an invalid message */
        }
        parse_bad("{\"a\":1,}", 8, NULL);
        parse_bad("{\"a\":\"\xff\"}", 9, NULL);         /* not UTF-8 */
        parse_bad("{\"a\":1}\0{}", 10, "trailing");     /* an embedded NUL ends nothing */
        /* UTF-8 text and integers past 64 bits are JSON: json-c 0.18's strict
         * mode refused both (json-util.h). A raw control character in a string
         * is not, on every json-c. */
        {
                _cleanup_json_ json_object *u = parse_ok(
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                        "{\"code\":\"print('caf\xc3\xa9 \xe2\x82\xac')\",\"n\":18446744073709551616}}");
                ASSERT_STREQ(json_get_string(json_get(u, "params"), "code"), "print('caf\xc3\xa9 \xe2\x82\xac')");
        }
        parse_bad("{\"a\":\"x\ty\"}", 11, NULL);

        /* Nesting past the limit is refused, just below it is fine. */
        for (size_t i = 0; i < JSONRPC_MAX_DEPTH + 10; i++) {
                deep[i] = '[';
                deep[2 * (JSONRPC_MAX_DEPTH + 10) - 1 - i] = ']';
        }
        deep[sizeof deep - 1] = 0;
        parse_bad(deep, strlen(deep), "deep");
        for (size_t i = 0; i < JSONRPC_MAX_DEPTH - 1; i++) {
                ok[i] = '[';
                ok[2 * (JSONRPC_MAX_DEPTH - 1) - 1 - i] = ']';
        }
        ok[sizeof ok - 1] = 0;
        json_object_put(parse_ok(ok));
}

static JsonRpcMessage classify(const char *s, json_object **keep) {
        JsonRpcMessage m;

        *keep = parse_ok(s);
        jsonrpc_classify(*keep, &m);
        return m;
}

TEST(test_classify) {
        json_object *j;
        JsonRpcMessage m;

        m = classify("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{}}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_REQUEST);
        ASSERT_STREQ(m.method, "tools/list");
        ASSERT_EQ_INT(json_object_get_int(m.id), 7);
        ASSERT_TRUE(json_object_is_type(m.params, json_type_object));
        json_object_put(j);

        m = classify("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\"}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_REQUEST);
        ASSERT_STREQ(json_object_get_string(m.id), "abc");
        ASSERT_TRUE(!m.params);
        json_object_put(j);

        m = classify("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_NOTIFICATION);
        ASSERT_TRUE(!m.id);
        json_object_put(j);

        m = classify("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_IGNORED);
        json_object_put(j);
        m = classify("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"x\"}}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_IGNORED);       /* never answered, even with a null id */
        json_object_put(j);
        m = classify("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":null}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_IGNORED);
        json_object_put(j);

        /* Bad ids: reported with no id (null). */
        static const char *const bad_ids[] = {
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_ids); i++) {
                m = classify(bad_ids[i], &j);
                ASSERT_EQ_INT(m.kind, JSONRPC_INVALID);
                ASSERT_EQ_INT(m.error_code, JSONRPC_INVALID_REQUEST);
                ASSERT_TRUE(!m.id);
                ASSERT_CONTAINS(m.error_message, "id");
                json_object_put(j);
        }

        /* Other envelope errors keep a usable id. */
        static const char *const bad[] = {
                "{\"id\":5,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":5}",
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":\"x\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":5}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                m = classify(bad[i], &j);
                ASSERT_EQ_INT(m.kind, JSONRPC_INVALID);
                ASSERT_EQ_INT(m.error_code, JSONRPC_INVALID_REQUEST);
                ASSERT_EQ_INT(json_object_get_int(m.id), 5);
                json_object_put(j);
        }

        /* Without an id, a method means a notification: never answered. */
        m = classify("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":\"x\"}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_IGNORED);
        json_object_put(j);
        m = classify("{\"method\":\"notifications/x\"}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_IGNORED);
        json_object_put(j);
        m = classify("{\"jsonrpc\":\"2.0\",\"method\":7}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_INVALID);
        json_object_put(j);
        jsonrpc_classify(NULL, &m);
        ASSERT_EQ_INT(m.kind, JSONRPC_INVALID);

        m = classify("[1]", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_INVALID);
        json_object_put(j);
        m = classify("\"ping\"", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_INVALID);
        json_object_put(j);

        /* Array params pass the envelope; MCP refuses them later as -32602. */
        m = classify("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":[]}", &j);
        ASSERT_EQ_INT(m.kind, JSONRPC_REQUEST);
        json_object_put(j);
}

TEST(test_ids) {
        _cleanup_json_ json_object *a = json_object_new_int(1), *b = json_object_new_int(1),
                                   *c = json_object_new_string("1"), *d = json_object_new_string("1"),
                                   *e = json_object_new_string("2"), *big = NULL, *big2 = NULL, *dbl = NULL;
        char buf[8];

        ASSERT_TRUE(jsonrpc_id_equal(a, b));
        ASSERT_TRUE(jsonrpc_id_equal(c, d));
        ASSERT_FALSE(jsonrpc_id_equal(a, c));   /* 1 and "1" are different requests */
        ASSERT_FALSE(jsonrpc_id_equal(c, e));
        ASSERT_FALSE(jsonrpc_id_equal(a, NULL));

        big = parse_ok("18446744073709551615");
        big2 = parse_ok("9223372036854775807");
        ASSERT_TRUE(jsonrpc_id_is_valid(big));
        ASSERT_FALSE(jsonrpc_id_equal(big, big2));
        dbl = parse_ok("1.0");
        ASSERT_FALSE(jsonrpc_id_is_valid(dbl));

        jsonrpc_id_format(a, buf, sizeof buf);
        ASSERT_STREQ(buf, "1");
        {
                _cleanup_json_ json_object *s = json_object_new_string("ab\ncdefghijk");
                jsonrpc_id_format(s, buf, sizeof buf);
                ASSERT_STREQ(buf, "ab?cdef");
        }
}

TEST(test_replies) {
        _cleanup_json_ json_object *id = json_object_new_string("x"), *r = NULL, *e = NULL, *n = NULL, *en = NULL;
        const char *s;

        r = jsonrpc_result_new(id, json_object_new_object());
        ASSERT_STREQ(json_serialize(r, NULL), "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}");

        e = jsonrpc_error_new(NULL, JSONRPC_PARSE_ERROR, "Parse error: a/b", NULL);
        s = json_serialize(e, NULL);
        ASSERT_STREQ(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: a/b\"}}");

        en = jsonrpc_error_new(id, MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                               json_object_new_array());
        ASSERT_STREQ(json_serialize(en, NULL),
                     "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32022,\"message\":\"Unsupported "
                     "protocol version\",\"data\":[]}}");

        n = jsonrpc_notification_new("notifications/progress", NULL);
        ASSERT_STREQ(json_serialize(n, NULL), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}");

        /* No embedded newline ever reaches a line-based transport. */
        {
                _cleanup_json_ json_object *t = json_object_new_object();
                ASSERT_EQ_INT(json_add_string(t, "s", "a\nb"), 0);
                ASSERT_TRUE(!strchr(json_serialize(t, NULL), '\n'));
        }
        ASSERT_TRUE(!jsonrpc_result_new(id, NULL));
}

/* The error line of a refusal: whatever is in the message, the line is one
 * valid JSON-RPC error that reads back as that message. */
static void error_line_roundtrip(int code, const char *message, const char *expect_message) {
        _cleanup_free_ char *line = NULL;
        _cleanup_json_ json_object *m = NULL;
        JsonRpcMessage c;
        const char *why;
        size_t len;

        ASSERT_EQ_INT(jsonrpc_error_serialize(NULL, code, message, &line, &len), 0);
        ASSERT_EQ_U64(strlen(line), len);
        for (size_t i = 0; i < len; i++)        /* no raw control byte, no newline: one line */
                ASSERT_TRUE((unsigned char) line[i] >= 0x20);
        /* Strict parsing, UTF-8 validated, as a client does. */
        ASSERT_EQ_INT(jsonrpc_parse(line, len, &m, &why), 0);
        jsonrpc_classify(m, &c);
        ASSERT_EQ_INT(c.kind, JSONRPC_IGNORED);   /* a reply, as a client sees it */
        ASSERT_TRUE(json_object_is_type(json_get(m, "id"), json_type_null));
        ASSERT_EQ_INT(json_object_get_int(json_get(json_get(m, "error"), "code")), code);
        ASSERT_STREQ(json_get_string(json_get(m, "error"), "message"), expect_message);
}

TEST(test_error_serialize) {
        _cleanup_free_ char *line = NULL;
        _cleanup_json_ json_object *id = json_object_new_int(7);
        size_t len;

        ASSERT_EQ_INT(jsonrpc_error_serialize(NULL, JSONRPC_INVALID_REQUEST, "message too large", &line, &len), 0);
        ASSERT_STREQ(line,
                     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"message too large\"}}");
        line = mfree(line);
        ASSERT_EQ_INT(jsonrpc_error_serialize(id, MCP_ERROR_HEADER_MISMATCH, "x", &line, NULL), 0);
        ASSERT_STREQ(line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32020,\"message\":\"x\"}}");

        /* A polkit reason may hold anything. */
        error_line_roundtrip(MCP_ERROR_ACCESS_DENIED, "access denied: \"quoted\" \\ back\\slash",
                             "access denied: \"quoted\" \\ back\\slash");
        error_line_roundtrip(MCP_ERROR_ACCESS_DENIED, "line\nbreak\r\ttab\x01\x1f\x7f end",
                             "line\nbreak\r\ttab\x01\x1f\x7f end");
        error_line_roundtrip(JSONRPC_SERVER_ERROR, "</script> {\"}", "</script> {\"}");
        /* Not UTF-8: replaced, or a strict client would drop the line. */
        error_line_roundtrip(MCP_ERROR_ACCESS_DENIED, "bad \xff\xc3 byte", "bad \xef\xbf\xbd\xef\xbf\xbd byte");
        error_line_roundtrip(JSONRPC_INTERNAL_ERROR, "", "");

        /* The named codes are the numbers on the wire. */
        ASSERT_EQ_INT(JSONRPC_SERVER_ERROR, -32000);
        ASSERT_EQ_INT(MCP_ERROR_SESSION_NOT_FOUND, -32001);
        ASSERT_EQ_INT(MCP_ERROR_ACCESS_DENIED, -32001);
        ASSERT_EQ_INT(MCP_ERROR_HEADER_MISMATCH, -32020);
        ASSERT_EQ_INT(MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION, -32022);

        ASSERT_EQ_INT(jsonrpc_serialize(NULL, &line, NULL), -ENOMEM);
}

TEST(test_utf8_prefix) {
        ASSERT_EQ_INT(utf8_prefix_len("abc", 5), 3);
        ASSERT_EQ_INT(utf8_prefix_len("abcdef", 3), 3);
        /* "aé" is 61 c3 a9: cutting at 2 would split é. */
        ASSERT_EQ_INT(utf8_prefix_len("a\xc3\xa9z", 2), 1);
        ASSERT_EQ_INT(utf8_prefix_len("a\xc3\xa9z", 3), 3);
        /* A 4-byte sequence. */
        ASSERT_EQ_INT(utf8_prefix_len("\xf0\x9f\x98\x80x", 3), 0);
}

int main(void) {
        RUN(test_parse);
        RUN(test_classify);
        RUN(test_ids);
        RUN(test_replies);
        RUN(test_error_serialize);
        RUN(test_utf8_prefix);
        return 0;
}
