/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/json-util.[ch]: json_build() and json_build_into(),
 * the one way wire messages are built: every member there or an error, a
 * NULL value never silently becoming a JSON null, taken objects released on
 * every path. */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "json-util.h"
#include "test-helpers.h"

static const char *wire(json_object *o) {
        return json_serialize(o, NULL);
}

TEST(test_build) {
        _cleanup_json_ json_object *o = NULL;
        json_object *inner = json_object_new_array();

        ASSERT_TRUE(inner);
        ASSERT_EQ_INT(json_build(&o, JB_STR("event", "exit"), JB_INT("exit_code", -3), JB_BOOL("timed_out", 2),
                                 JB_STR_OR_NULL("error", NULL), JB_STR_OR_NULL("unit", "u"), JB_NULL("signal"),
                                 JB_INT("big", INT64_MAX), JB_OBJ("outputs", inner), JB_END),
                      0);
        ASSERT_STREQ(wire(o), "{\"event\":\"exit\",\"exit_code\":-3,\"timed_out\":true,\"error\":null,\"unit\":\"u\","
                              "\"signal\":null,\"big\":9223372036854775807,\"outputs\":[]}");
}

TEST(test_build_empty) {
        _cleanup_json_ json_object *o = NULL;

        ASSERT_EQ_INT(json_build(&o, JB_END), 0);
        ASSERT_STREQ(wire(o), "{}");
}

/* A NULL object is an allocation that failed: an error, never a null
 * member; what else was handed over is released, and *ret untouched. */
TEST(test_build_null_object_fails) {
        json_object *o = (json_object *) 0x1, *later = json_object_new_object();

        ASSERT_TRUE(later);
        json_object_get(later);         /* ours, to see the builder let go of its own */
        ASSERT_EQ_INT(json_build(&o, JB_STR("a", "b"), JB_OBJ("lost", NULL), JB_OBJ("later", later), JB_END), -ENOMEM);
        ASSERT_TRUE(o == (json_object *) 0x1);
        ASSERT_EQ_INT(json_object_put(later), 1);       /* our reference was the last */
}

TEST(test_build_into) {
        _cleanup_json_ json_object *o = json_object_new_object();

        ASSERT_TRUE(o);
        ASSERT_EQ_INT(json_build_into(o, JB_INT("n", 1), JB_END), 0);
        ASSERT_EQ_INT(json_build_into(o, JB_STR("s", "x"), JB_BOOL("f", 0), JB_END), 0);
        ASSERT_STREQ(wire(o), "{\"n\":1,\"s\":\"x\",\"f\":false}");
        ASSERT_EQ_INT(json_build_into(o, JB_OBJ("bad", NULL), JB_INT("after", 2), JB_END), -ENOMEM);
        ASSERT_TRUE(json_get(o, "after") == NULL);
}

int main(void) {
        RUN(test_build);
        RUN(test_build_empty);
        RUN(test_build_null_object_fails);
        RUN(test_build_into);
        return 0;
}
