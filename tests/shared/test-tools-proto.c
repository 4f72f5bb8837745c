/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/tools-proto.[ch]: the run protocol's frames and
 * requests (code mode, issue 40). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "test-helpers.h"
#include "tools-proto.h"

/* A frame: the 4-byte big-endian length, then s. */
static size_t frame(char *buf, const char *s) {
        size_t n = strlen(s);

        buf[0] = (char) (n >> 24);
        buf[1] = (char) (n >> 16);
        buf[2] = (char) (n >> 8);
        buf[3] = (char) n;
        memcpy(buf + 4, s, n);
        return n + 4;
}

static int parse(const char *s, size_t max) {
        char buf[512];
        json_object *o = NULL;
        size_t used = 0, n = frame(buf, s);
        int r = tools_frame_parse(buf, n, max, &o, &used);

        if (r == 1)
                ASSERT_EQ_U64(used, n);
        json_object_put(o);
        return r;
}

TEST(test_frame_parse) {
        char buf[512];
        json_object *o = NULL;
        size_t used = 0, n;

        ASSERT_EQ_INT(parse("{\"id\":1}", 64), 1);
        ASSERT_EQ_INT(parse("{\"id\":1}  \n", 64), 1);
        ASSERT_EQ_INT(parse("{\"s\":\"\xc3\xa9\"}", 64), 1);
        /* Not one strict JSON object. */
        ASSERT_EQ_INT(parse("[1]", 64), -EBADMSG);
        ASSERT_EQ_INT(parse("1", 64), -EBADMSG);
        ASSERT_EQ_INT(parse("hello", 64), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"a\":1} {}", 64), -EBADMSG);
        ASSERT_EQ_INT(parse("{'a':1}", 64), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"a\":1,}", 64), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"s\":\"\xff\"}", 64), -EBADMSG);
        ASSERT_EQ_INT(parse("", 64), -EBADMSG);
        /* Over the limit: judged on the header alone. */
        ASSERT_EQ_INT(parse("{\"id\":1}", 7), -EMSGSIZE);
        ASSERT_EQ_INT(tools_frame_parse("\x7f\xff\xff\xff", 4, TOOLS_RUN_FRAME_MAX, &o, &used), -EMSGSIZE);
        /* Incomplete: a header, part of a body. */
        n = frame(buf, "{\"id\":1}");
        for (size_t k = 0; k < n; k++)
                ASSERT_EQ_INT(tools_frame_parse(buf, k, 64, &o, &used), 0);
        /* Two frames: the first only. */
        n += frame(buf + n, "{\"id\":2}");
        ASSERT_EQ_INT(tools_frame_parse(buf, n, 64, &o, &used), 1);
        ASSERT_EQ_U64(used, 12);
        ASSERT_EQ_INT(json_get_int64(o, "id", 0), 1);
        json_object_put(o);
        /* Too deep. */
        {
                char deep[300] = "";
                for (int i = 0; i < 100; i++)
                        strcat(deep, "[");
                ASSERT_EQ_INT(parse(deep, 512), -EBADMSG);
        }
}

TEST(test_frame_append) {
        _cleanup_buffer_ Buffer b = BUFFER_INIT(64);
        _cleanup_json_ json_object *o = NULL;
        json_object *back = NULL;
        size_t used;

        ASSERT_EQ_INT(json_build(&o, JB_INT("id", 7), JB_STR("op", "servers"), JB_END), 0);
        ASSERT_EQ_INT(tools_frame_append(&b, o, 10), -EMSGSIZE);
        ASSERT_EQ_U64(b.size, 0);
        ASSERT_EQ_INT(tools_frame_append(&b, o, 64), 0);
        ASSERT_EQ_INT(tools_frame_parse(b.data, b.size, 64, &back, &used), 1);
        ASSERT_EQ_U64(used, b.size);
        ASSERT_STREQ(json_get_string(back, "op"), "servers");
        json_object_put(back);
        /* Past the buffer's limit: nothing appended. */
        ASSERT_EQ_INT(tools_frame_append(&b, o, 64), 0);
        ASSERT_EQ_INT(tools_frame_append(&b, o, 64), -ENOBUFS);
        ASSERT_EQ_U64(b.size, 2 * used);
}

/* The last request parsed: q borrows its strings. */
static json_object *last;

static int request(const char *s, ToolsRequest *q, uint64_t *id, const char **why) {
        json_object *o = json_tokener_parse(s);

        ASSERT_TRUE(o);
        json_object_put(last);
        last = o;
        *id = 0;
        *why = NULL;
        return tools_request_parse(o, q, id, why);
}

TEST(test_request_parse) {
        ToolsRequest q;
        const char *why;
        uint64_t id;

        ASSERT_EQ_INT(request("{\"id\":1,\"op\":\"servers\"}", &q, &id, &why), 0);
        ASSERT_EQ_INT(q.op, TOOLS_OP_SERVERS);
        ASSERT_EQ_U64(q.id, 1);
        ASSERT_EQ_INT(request("{\"id\":9007199254740991,\"op\":\"cancel\",\"target\":3}", &q, &id, &why), 0);
        ASSERT_EQ_INT(q.op, TOOLS_OP_CANCEL);
        ASSERT_EQ_U64(q.target, 3);
        ASSERT_EQ_INT(request("{\"id\":2,\"op\":\"call\",\"server\":\"e\",\"tool\":\"get-sum\"}", &q, &id, &why), 0);
        ASSERT_TRUE(!q.arguments);
        ASSERT_STREQ(q.tool, "get-sum");

        /* No valid id: the connection is closed. */
        ASSERT_EQ_INT(request("{\"op\":\"servers\"}", &q, &id, &why), -EBADMSG);
        ASSERT_EQ_INT(request("{\"id\":0,\"op\":\"servers\"}", &q, &id, &why), -EBADMSG);
        ASSERT_EQ_INT(request("{\"id\":9007199254740992,\"op\":\"servers\"}", &q, &id, &why), -EBADMSG);
        ASSERT_EQ_INT(request("{\"id\":\"1\",\"op\":\"servers\"}", &q, &id, &why), -EBADMSG);
        ASSERT_EQ_INT(request("{\"id\":1.5,\"op\":\"servers\"}", &q, &id, &why), -EBADMSG);
        ASSERT_EQ_INT(request("{\"id\":-1,\"op\":\"servers\"}", &q, &id, &why), -EBADMSG);
        /* An id, otherwise bad: answered bad_request with that id. */
        ASSERT_EQ_INT(request("{\"id\":5,\"op\":\"nope\"}", &q, &id, &why), -EINVAL);
        ASSERT_EQ_U64(id, 5);
        ASSERT_CONTAINS(why, "op");
        ASSERT_EQ_INT(request("{\"id\":5,\"op\":\"call\",\"server\":\"e\"}", &q, &id, &why), -EINVAL);
        ASSERT_EQ_INT(request("{\"id\":5,\"op\":\"call\",\"server\":\"e\",\"tool\":\"a b\"}", &q, &id, &why),
                      -EINVAL);
        ASSERT_EQ_INT(request("{\"id\":5,\"op\":\"call\",\"server\":\"e\",\"tool\":\"t\",\"arguments\":[]}", &q,
                              &id, &why), -EINVAL);
        ASSERT_CONTAINS(why, "arguments");
        ASSERT_EQ_INT(request("{\"id\":5,\"op\":\"cancel\"}", &q, &id, &why), -EINVAL);
        ASSERT_EQ_INT(request("{\"id\":5,\"op\":\"cancel\",\"target\":0}", &q, &id, &why), -EINVAL);
}

TEST(test_names) {
        char long_name[TOOLS_NAME_MAX + 2];

        ASSERT_TRUE(tools_name_is_valid("get-sum"));
        ASSERT_TRUE(tools_name_is_valid("a.b_c/d"));
        ASSERT_FALSE(tools_name_is_valid(""));
        ASSERT_FALSE(tools_name_is_valid(NULL));
        ASSERT_FALSE(tools_name_is_valid("a b"));
        ASSERT_FALSE(tools_name_is_valid("a\nb"));
        ASSERT_FALSE(tools_name_is_valid("\xc3\xa9"));
        memset(long_name, 'a', sizeof long_name - 1);
        long_name[TOOLS_NAME_MAX] = 0;
        ASSERT_TRUE(tools_name_is_valid(long_name));
        long_name[TOOLS_NAME_MAX] = 'a';
        long_name[TOOLS_NAME_MAX + 1] = 0;
        ASSERT_FALSE(tools_name_is_valid(long_name));
}

TEST(test_errors) {
        _cleanup_json_ json_object *e = tools_error_new(42, TOOLS_ERROR_LIMIT, "cap");
        size_t n;

        ASSERT_TRUE(e);
        ASSERT_STREQ(json_serialize(e, &n), "{\"id\":42,\"error\":{\"kind\":\"limit\",\"message\":\"cap\"}}");
        for (ToolsErrorKind k = 0; k < _TOOLS_ERROR_MAX; k++)
                ASSERT_EQ_INT(tools_error_kind_from_string(tools_error_kind_to_string(k)), k);
        ASSERT_STREQ(tools_error_kind_to_string(TOOLS_ERROR_BAD_REQUEST), "bad_request");
        ASSERT_TRUE(!tools_error_kind_to_string(_TOOLS_ERROR_MAX));
        ASSERT_EQ_INT(tools_error_kind_from_string("Limit"), _TOOLS_ERROR_INVALID);
}

int main(void) {
        RUN(test_frame_parse);
        RUN(test_frame_append);
        RUN(test_request_parse);
        json_object_put(last);
        RUN(test_names);
        RUN(test_errors);
        return 0;
}
