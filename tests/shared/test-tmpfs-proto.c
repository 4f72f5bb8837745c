/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/tmpfs-proto.[ch]: what mcp-exec-tmpfsd accepts
 * as a request, and what the broker sends it. */

#include <errno.h>
#include <string.h>

#include "json-util.h"
#include "tmpfs-proto.h"
#include "test-helpers.h"

#define ID "0123456789abcdef0123456789abcdef"

TEST(test_valid_id) {
        ASSERT_TRUE(tmpfs_valid_id(ID));
        ASSERT_FALSE(tmpfs_valid_id(""));
        ASSERT_FALSE(tmpfs_valid_id("0123456789ABCDEF0123456789abcdef"));
        ASSERT_FALSE(tmpfs_valid_id(ID "0"));
        ASSERT_FALSE(tmpfs_valid_id("0123456789abcdef0123456789abcde"));
        ASSERT_FALSE(tmpfs_valid_id("../../../../../../../../etc/x"));
        ASSERT_FALSE(tmpfs_valid_id("0123456789abcdef0123456789abcde/"));
        ASSERT_FALSE(tmpfs_valid_id("0123456789abcdef0123456789abcde."));
}

TEST(test_op_table) {
        for (int op = 0; op < _TMPFS_OP_MAX; op++)
                ASSERT_EQ_INT(tmpfs_op_from_string(tmpfs_op_to_string(op)), op);
        ASSERT_TRUE(tmpfs_op_to_string(_TMPFS_OP_MAX) == NULL);
        ASSERT_TRUE(tmpfs_op_to_string(-1) == NULL);
        ASSERT_EQ_INT(tmpfs_op_from_string("MOUNT"), -EINVAL);
        ASSERT_EQ_INT(tmpfs_op_from_string(NULL), -EINVAL);
}

/* Parses text; returns the result, with the request or the error. */
static int parse(const char *text, TmpfsRequest *req, const char **error) {
        _cleanup_json_ json_object *j = json_tokener_parse(text);

        *error = NULL;
        return tmpfs_request_parse(j, req, error);
}

static void expect_bad(const char *text, const char *why) {
        TmpfsRequest req;
        const char *error;

        if (parse(text, &req, &error) != -EINVAL)
                ASSERT_FAIL_("accepted %s", text);
        ASSERT_CONTAINS(error, why);
}

TEST(test_parse_good) {
        TmpfsRequest req;
        const char *error;

        ASSERT_EQ_INT(parse("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":67108864}", &req, &error), 0);
        ASSERT_EQ_INT(req.op, TMPFS_OP_MOUNT);
        ASSERT_STREQ(req.id, ID);
        ASSERT_EQ_U64(req.size, 67108864);
        /* The bounds of MCP_EXEC_TMP_SIZE_MAX themselves. */
        ASSERT_EQ_INT(parse("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":1048576}", &req, &error), 0);
        ASSERT_EQ_INT(parse("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":1099511627776}", &req, &error), 0);
        ASSERT_EQ_U64(req.size, TMPFS_SIZE_MAX);

        ASSERT_EQ_INT(parse("{\"op\":\"umount\",\"id\":\"" ID "\"}", &req, &error), 0);
        ASSERT_EQ_INT(req.op, TMPFS_OP_UMOUNT);
        ASSERT_STREQ(req.id, ID);
        ASSERT_EQ_INT(parse("{\"op\":\"sweep\"}", &req, &error), 0);
        ASSERT_EQ_INT(req.op, TMPFS_OP_SWEEP);
        ASSERT_STREQ(req.id, "");
}

TEST(test_parse_bad) {
        TmpfsRequest req;
        const char *error;

        ASSERT_EQ_INT(tmpfs_request_parse(NULL, &req, &error), -EINVAL);
        expect_bad("[1]", "JSON object");
        expect_bad("\"mount\"", "JSON object");
        expect_bad("{}", "unknown op");
        expect_bad("{\"op\":1}", "unknown op");
        expect_bad("{\"op\":\"remount\",\"id\":\"" ID "\"}", "unknown op");
        /* Ids: nothing but the run's 128-bit hex names a path. */
        expect_bad("{\"op\":\"umount\"}", "id must be");
        expect_bad("{\"op\":\"umount\",\"id\":7}", "id must be");
        expect_bad("{\"op\":\"umount\",\"id\":\"../../etc\"}", "id must be");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "/..\",\"size\":1048576}", "id must be");
        expect_bad("{\"op\":\"mount\",\"id\":\"0123456789ABCDEF0123456789abcdef\",\"size\":1048576}", "id must be");
        /* Sizes: an integer within MCP_EXEC_TMP_SIZE_MAX's bounds. */
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\"}", "size must be");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":\"64M\"}", "size must be");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":1.5e9}", "size must be");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":0}", "out of range");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":-1}", "out of range");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":1048575}", "out of range");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":1099511627777}", "out of range");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":18446744073709551615}", "out of range");
        expect_bad("{\"op\":\"mount\",\"id\":\"" ID "\",\"size\":-9223372036854775808}", "out of range");
}

/* What the broker sends is what the daemon reads. */
TEST(test_build_round_trip) {
        static const TmpfsRequest reqs[] = {
                { .op = TMPFS_OP_MOUNT, .id = ID, .size = 67108864 },
                { .op = TMPFS_OP_UMOUNT, .id = ID },
                { .op = TMPFS_OP_SWEEP },
        };

        for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
                _cleanup_json_ json_object *j = NULL, *back = NULL;
                TmpfsRequest got;
                const char *error = NULL;

                ASSERT_EQ_INT(tmpfs_request_build(&reqs[i], &j), 0);
                /* Through text, as on the wire. */
                back = json_tokener_parse(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
                ASSERT_EQ_INT(tmpfs_request_parse(back, &got, &error), 0);
                ASSERT_EQ_INT(got.op, reqs[i].op);
                ASSERT_STREQ(got.id, reqs[i].id);
                ASSERT_EQ_U64(got.size, reqs[i].size);
        }
        {
                _cleanup_json_ json_object *j = NULL;
                ASSERT_EQ_INT(tmpfs_request_build(&(TmpfsRequest) { .op = TMPFS_OP_SWEEP }, &j), 0);
                ASSERT_STREQ(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN), "{\"op\":\"sweep\"}");
        }
}

int main(void) {
        RUN(test_valid_id);
        RUN(test_op_table);
        RUN(test_parse_good);
        RUN(test_parse_bad);
        RUN(test_build_round_trip);
        return 0;
}
