/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/json-scan.[ch], the count before json-c, and for
 * the limits jsonrpc_parse() applies with it: exact at the boundary, and
 * never in the way of json-c's own verdict on input within them. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "json-scan.h"
#include "jsonrpc.h"
#include "macro.h"
#include "test-helpers.h"

/* What json-c built: every value (null too) and every key. */
static size_t tree_count(json_object *j) {
        size_t n = 1;

        if (json_object_is_type(j, json_type_array))
                for (size_t i = 0; i < json_object_array_length(j); i++)
                        n += tree_count(json_object_array_get_idx(j, i));
        else if (json_object_is_type(j, json_type_object)) {
                json_object_object_foreach(j, k, v) {
                        (void) k;
                        n += 1 + tree_count(v);
                }
        }
        return n;
}

/* "[u,u,...]" with n units, inside prefix and suffix. */
static char *repeat(const char *prefix, const char *unit, size_t n, const char *suffix) {
        size_t pl = strlen(prefix), ul = strlen(unit), sl = strlen(suffix);
        char *s = malloc(pl + n * (ul + 1) + sl + 1), *p = s;

        ASSERT_TRUE(s);
        p = mempcpy(p, prefix, pl);
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        *p++ = ',';
                p = mempcpy(p, unit, ul);
        }
        p = mempcpy(p, suffix, sl);
        *p = 0;
        return s;
}

static int scan(const char *s, JsonScan *ret) {
        return json_scan(s, strlen(s), JSONRPC_MAX_VALUES, JSONRPC_MAX_DEPTH, ret);
}

/* Valid JSON within the limits: the scan counts exactly what json-c builds. */
static void scan_exact(const char *s, size_t values, size_t keys, unsigned depth) {
        _cleanup_json_ json_object *j = NULL;
        const char *why;
        JsonScan c;

        ASSERT_EQ_INT(scan(s, &c), 0);
        ASSERT_EQ_INT(c.values, values);
        ASSERT_EQ_INT(c.keys, keys);
        ASSERT_EQ_INT(c.depth, depth);
        ASSERT_EQ_INT(jsonrpc_parse(s, strlen(s), &j, &why), 0);
        if (j)
                ASSERT_EQ_INT(tree_count(j), values);
}

TEST(test_counts) {
        JsonScan c;

        scan_exact("{}", 1, 0, 1);
        scan_exact("null", 1, 0, 1);
        scan_exact(" [1, -2.5e10, true, false, null, \"x\", {}, []] ", 9, 0, 2);
        scan_exact("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"_meta\":{\"progressToken\":7}}}", 13, 6,
                   4);
        ASSERT_EQ_INT(json_scan(NULL, 0, 1, 1, &c), 0);
        ASSERT_EQ_INT(c.values, 0);
        ASSERT_EQ_INT(json_scan("", 0, 0, 0, NULL), 0);
}

/* N values pass, N + 1 do not, whatever the values are: an array of units
 * (per_unit values each), padded with nulls to exactly the limit. */
static void boundary(const char *unit, unsigned per_unit) {
        size_t n = (JSONRPC_MAX_VALUES - 1) / per_unit, rest = JSONRPC_MAX_VALUES - 1 - n * per_unit;
        _cleanup_free_ char *inner = repeat("", unit, n, ""), *pad = repeat("", "null", rest, ""), *fits = NULL,
                            *over = NULL;
        _cleanup_json_ json_object *j = NULL;
        const char *why;
        JsonScan c;

        ASSERT_TRUE(asprintf(&fits, "[%s%s%s]", inner, rest > 0 ? "," : "", pad) >= 0);
        ASSERT_TRUE(asprintf(&over, "[%s%s%s,null]", inner, rest > 0 ? "," : "", pad) >= 0);

        ASSERT_EQ_INT(scan(fits, &c), 0);
        ASSERT_EQ_INT(c.values, JSONRPC_MAX_VALUES);
        ASSERT_EQ_INT(jsonrpc_parse(fits, strlen(fits), &j, &why), 0);
        ASSERT_EQ_INT(tree_count(j), JSONRPC_MAX_VALUES);

        ASSERT_EQ_INT(scan(over, &c), -E2BIG);
        ASSERT_EQ_INT(c.values, JSONRPC_MAX_VALUES + 1);
        json_object_put(TAKE_PTR(j));
        ASSERT_EQ_INT(jsonrpc_parse(over, strlen(over), &j, &why), -E2BIG);
        ASSERT_TRUE(!j);
        ASSERT_CONTAINS(why, "16384 JSON values");
}

TEST(test_value_limit) {
        boundary("{}", 1);
        boundary("[]", 1);
        boundary("0", 1);
        boundary("\"\"", 1);
        boundary("{\"k\":1}", 3);
        boundary("[[[1]]]", 4);
}

TEST(test_the_attack) {
        /* Item 1 of the issue: 4 MB of {} in params. Refused at the first
         * value past the limit, a few bytes in. */
        _cleanup_free_ char *m = repeat("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":[", "{}",
                                        4 * 1024 * 1024 / 3, "]}}");
        json_object *j = NULL;
        const char *why;
        JsonScan c;

        ASSERT_EQ_INT(scan(m, &c), -E2BIG);
        ASSERT_EQ_INT(c.values, JSONRPC_MAX_VALUES + 1);
        ASSERT_EQ_INT(jsonrpc_parse(m, strlen(m), &j, &why), -E2BIG);
        ASSERT_TRUE(!j);
}

TEST(test_many_keys) {
        /* {"0":0,"1":0,...}: a key and a value each. */
        size_t n = (JSONRPC_MAX_VALUES - 1) / 2;
        char *s = malloc(n * 16 + 16), *p = s;
        JsonScan c;

        ASSERT_TRUE(s);
        *p++ = '{';
        for (size_t i = 0; i < n; i++)
                p += sprintf(p, "%s\"%zu\":0", i > 0 ? "," : "", i);
        strcpy(p, "}");
        scan_exact(s, 1 + 2 * n, n, 2);
        /* One more key and its value pass the limit. */
        strcpy(p, ",\"x\":0}");
        ASSERT_EQ_INT(scan(s, &c), -E2BIG);
        ASSERT_EQ_INT(c.keys, n + 1);
        free(s);
}

TEST(test_depth) {
        char s[2 * (JSONRPC_MAX_DEPTH + 2) + 2];

        /* json-c's own meaning, checked against it: 64 nested arrays pass, a
         * value inside the 64th is a level too deep. */
        for (unsigned n = JSONRPC_MAX_DEPTH - 2; n <= JSONRPC_MAX_DEPTH + 2; n++)
                for (int scalar = 0; scalar <= 1; scalar++) {
                        unsigned level = n + (unsigned) scalar;
                        json_tokener *tok = json_tokener_new_ex(JSONRPC_MAX_DEPTH);
                        json_object *j;
                        JsonScan c;
                        size_t len;

                        memset(s, '[', n);
                        len = n;
                        if (scalar)
                                s[len++] = '1';
                        memset(s + len, ']', n);
                        len += n;
                        s[len] = 0;

                        ASSERT_TRUE(tok);
                        j = json_tokener_parse_ex(tok, s, (int) len);
                        ASSERT_EQ_INT(!!j, level <= JSONRPC_MAX_DEPTH);
                        json_object_put(j);
                        json_tokener_free(tok);

                        ASSERT_EQ_INT(scan(s, &c), level <= JSONRPC_MAX_DEPTH ? 0 : -ELOOP);
                        ASSERT_EQ_INT(c.depth, MIN(level, JSONRPC_MAX_DEPTH + 1));
                }

        /* A deep attack stops at the first level too many. */
        {
                _cleanup_free_ char *deep = malloc(4 << 20);
                _cleanup_json_ json_object *j = NULL;
                const char *why;
                JsonScan c;

                ASSERT_TRUE(deep);
                memset(deep, '[', 4 << 20);
                ASSERT_EQ_INT(json_scan(deep, 4 << 20, JSONRPC_MAX_VALUES, JSONRPC_MAX_DEPTH, &c), -ELOOP);
                ASSERT_EQ_INT(c.values, JSONRPC_MAX_DEPTH);
                ASSERT_EQ_INT(jsonrpc_parse(deep, 4 << 20, &j, &why), -EBADMSG);
                ASSERT_CONTAINS(why, "nested too deeply");
        }
        /* Closing what was never opened does not buy depth. */
        {
                JsonScan c;
                ASSERT_EQ_INT(scan("]]]]}}}}[[]]", &c), 0);
                ASSERT_EQ_INT(c.depth, 2);
        }
}

TEST(test_strings) {
        /* Brackets, colons, commas and escaped quotes inside strings are text. */
        scan_exact("[\"[{:,}]\", \"\\\"[[[\", \"\\\\\", \"a\\\\\\\"]\\\"b\", \"\\u005b\\u0022\"]", 6, 0, 2);
        scan_exact("{\"k\\\":\\\"\":\"v\"}", 3, 1, 2);

        /* A long one, of escapes and brackets: one value. */
        {
                size_t n = 1 << 20;
                char *s = malloc(n * 4 + 8), *p = s;

                ASSERT_TRUE(s);
                *p++ = '[';
                *p++ = '"';
                for (size_t i = 0; i < n; i++)
                        p = mempcpy(p, i % 2 ? "\\\"" : "[{", 2);
                p = mempcpy(p, "\\\\\"]", 4);
                *p = 0;
                scan_exact(s, 2, 0, 2);
                free(s);
        }
        /* Unterminated: the rest is the string, and json-c says so. */
        {
                JsonScan c;
                _cleanup_json_ json_object *j = NULL;
                const char *why;

                ASSERT_EQ_INT(scan("[\"{{{{[[[[\\\"", &c), 0);
                ASSERT_EQ_INT(c.values, 2);
                ASSERT_EQ_INT(jsonrpc_parse("[\"{{{{[[[[\\\"", 12, &j, &why), -EBADMSG);
                ASSERT_CONTAINS(why, "incomplete");
        }
}

TEST(test_numbers) {
        size_t n = 4 << 20;
        char *s = malloc(n + 3);
        JsonScan c;

        ASSERT_TRUE(s);
        s[0] = '[';
        memset(s + 1, '9', n);
        s[n + 1] = ']';
        s[n + 2] = 0;
        ASSERT_EQ_INT(scan(s, &c), 0);
        ASSERT_EQ_INT(c.values, 2);
        scan_exact("[-1e999999, 18446744073709551616, 0.0000000000000000000001]", 4, 0, 2);
        free(s);
}

/* Within the limits the scan stands aside: json-c's error is what the client
 * hears. */
TEST(test_invalid_reaches_json_c) {
        static const struct {
                const char *text, *why;
        } cases[] = {
                { "[1 2]", "separator" },
                { "{\"a\":}", NULL },
                { "{\"a\" 1}", NULL },
                { "]", NULL },
                { "[1,2", "incomplete" },
                { "tru", NULL },
                { "{\"a\":1}}", "trailing" },
                { "[nul]", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_object *j = NULL;
                const char *why = NULL;
                JsonScan c;

                ASSERT_EQ_INT(scan(cases[i].text, &c), 0);
                ASSERT_EQ_INT(jsonrpc_parse(cases[i].text, strlen(cases[i].text), &j, &why), -EBADMSG);
                ASSERT_TRUE(!j && why);
                if (cases[i].why)
                        ASSERT_CONTAINS(why, cases[i].why);
                ASSERT_FALSE(strstr(why, "JSON values") || strstr(why, "nested"));
        }
}

int main(void) {
        RUN(test_counts);
        RUN(test_value_limit);
        RUN(test_the_attack);
        RUN(test_many_keys);
        RUN(test_depth);
        RUN(test_strings);
        RUN(test_numbers);
        RUN(test_invalid_reaches_json_c);
        return 0;
}
