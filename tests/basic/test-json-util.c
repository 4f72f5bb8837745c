/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/basic/json-util.[ch]: json_build() and json_build_into(),
 * the one way wire messages are built: every member there or an error, a
 * NULL value never silently becoming a JSON null, taken objects released on
 * every path; json_check_strict() and json_parse_strict(), the strict
 * parse that works alike on json-c 0.16 and 0.18. */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
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

/* RFC 8259 values, UTF-8 text and integers past 64 bits among them (json-c
 * 0.18's strict mode refuses both): accepted, ret_end just past the value. */
TEST(test_check_strict_accepts) {
        static const struct {
                const char *text;
                size_t end;
        } cases[] = {
                { "{}", 2 },
                { " [1, -2.5e10, true, false, null, \"x\", {}, []] ", 45 },
                { "{\"a\":{\"b\":[{\"c\":\"\"}]}}", 22 },
                { "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", 16 },
                { "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00\"", 45 },
                { "[0, -0, 0.5, -1.25e+3, 1E-7, 18446744073709551616, -9223372036854775809]", 72 },
                { "42", 2 },
                { "null", 4 },
                { "true  ", 4 },
                { "{\"a\":1}x", 7 },         /* what follows is the caller's to judge */
                { "[1]\0", 3 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *why = NULL;
                size_t len = strlen(cases[i].text) + (i == ELEMENTSOF(cases) - 1), end = 0;

                ASSERT_EQ_INT(json_check_strict(cases[i].text, len, 8, &end, &why), 0);
                ASSERT_EQ_U64(end, cases[i].end);
        }
}

/* What json-c would tolerate outside its strict mode is refused; a value cut
 * short is incomplete; nesting past the limit is -ELOOP. */
TEST(test_check_strict_refuses) {
        static const struct {
                const char *text, *why;
        } cases[] = {
                { "", "incomplete" },
                { "  ", "incomplete" },
                { "{\"a\":", "incomplete" },
                { "[1,2", "incomplete" },
                { "\"abc", "incomplete" },
                { "\"a\\u12", "incomplete" },
                { "tr", "incomplete" },
                { "[1 2]", "separator" },
                { "{\"a\" 1}", "':'" },
                { "{a:1}", "property name" },
                { "{\"a\":1,}", "property name" },
                { "[1,]", NULL },
                { "[,1]", NULL },
                { "{'a':1}", NULL },
                { "['a']", NULL },
                { "[1] // c", NULL },            /* the value ends at ]: the comment is trailing */
                { "/* c */ 1", NULL },
                { "[01]", NULL },
                { "[+1]", NULL },
                { "[.5]", NULL },
                { "[1.]", NULL },
                { "[1e]", NULL },
                { "[0x10]", NULL },
                { "[NaN]", NULL },
                { "[Infinity]", NULL },
                { "[-]", NULL },
                { "[\"a\x01b\"]", NULL },          /* raw control characters */
                { "[\"a\tb\"]", NULL },
                { "[\"a\nb\"]", NULL },
                { "[\"\\x41\"]", NULL },           /* no such escape */
                { "[\"\\u12g4\"]", NULL },
                { "[nul]", NULL },
                { "[True]", NULL },
                { "]", NULL },
                { "}", NULL },
                { "[1}", NULL },
                { "{\"a\":1]", NULL },
                { "{\"a\":1:2}", NULL },
                { "[1:2]", NULL },
                { "{\"a\",\"b\"}", NULL },
        };
        size_t end = 7;
        const char *why;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                why = NULL;
                if (strstr(cases[i].text, "//") || strstr(cases[i].text, "/*") == cases[i].text) {
                        /* A comment after a value is trailing data (the callers refuse it); one before is invalid. */
                        int r = json_check_strict(cases[i].text, strlen(cases[i].text), 8, &end, &why);
                        ASSERT_TRUE(r == -EBADMSG || (r == 0 && end < strlen(cases[i].text)));
                        continue;
                }
                ASSERT_EQ_INT(json_check_strict(cases[i].text, strlen(cases[i].text), 8, &end, &why), -EBADMSG);
                ASSERT_TRUE(why);
                if (cases[i].why)
                        ASSERT_CONTAINS(why, cases[i].why);
        }
        ASSERT_EQ_U64(end, 3);  /* "[1] // c": untouched by the refusals */
        ASSERT_EQ_INT(json_check_strict("[[[]]]", 6, 3, &end, &why), 0);
        ASSERT_EQ_INT(json_check_strict("[[[[]]]]", 8, 3, &end, &why), -ELOOP);
        ASSERT_CONTAINS(why, "nested");
        ASSERT_EQ_INT(json_check_strict("{\"a\":{\"b\":{\"c\":{}}}}", 22, 3, &end, &why), -ELOOP);
}

/* json-c parses what the check let through, also UTF-8 text on json-c 0.18;
 * JSON_TOKENER_VALIDATE_UTF8 still refuses what is not UTF-8. */
TEST(test_parse_strict) {
        _cleanup_json_ json_object *a = NULL, *b = NULL, *n = (json_object *) 0x1;
        json_object *bad = NULL;
        const char *why = NULL;
        size_t end;

        ASSERT_EQ_INT(json_parse_strict("{\"s\":\"caf\xc3\xa9 \xe2\x82\xac\"} ", 18, 16, JSON_TOKENER_VALIDATE_UTF8,
                                        &a, &end, &why),
                      0);
        ASSERT_EQ_U64(end, 17);
        ASSERT_STREQ(json_get_string(a, "s"), "caf\xc3\xa9 \xe2\x82\xac");
        ASSERT_EQ_INT(json_parse_strict("[18446744073709551616, 7]", 25, 16, 0, &b, NULL, &why), 0);
        ASSERT_EQ_INT(json_object_array_length(b), 2);
        ASSERT_EQ_INT(json_object_get_int(json_object_array_get_idx(b, 1)), 7);
        ASSERT_EQ_INT(json_parse_strict("null", 4, 16, 0, &n, &end, &why), 0);
        ASSERT_TRUE(!n);
        ASSERT_EQ_U64(end, 4);
        ASSERT_EQ_INT(json_parse_strict("{\"s\":\"\xff\"}", 9, 16, JSON_TOKENER_VALIDATE_UTF8, &bad, &end, &why),
                      -EBADMSG);
        ASSERT_TRUE(!bad && why);
        ASSERT_EQ_INT(json_parse_strict("{\"s\":1,}", 8, 16, 0, &bad, &end, &why), -EBADMSG);
        ASSERT_TRUE(!bad);
}

int main(void) {
        RUN(test_build);
        RUN(test_build_empty);
        RUN(test_build_null_object_fails);
        RUN(test_build_into);
        RUN(test_check_strict_accepts);
        RUN(test_check_strict_refuses);
        RUN(test_parse_strict);
        return 0;
}
