/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: json_scan() (src/mcp/json-scan.h) against json-c itself.
 * Byte 0 sets the value limit (1 + 4 * byte), byte 1 the depth limit
 * (1 + byte % 72); the rest is the message. Checks:
 *   - the scan passes: whatever json-c builds of the message has at most as
 *     many values (keys counted) and levels as the scan counted, so it is
 *     within the limits;
 *   - valid JSON: json-c (with that depth) takes it exactly when the scan
 *     finds it no deeper than the limit;
 *   - a refusal stops at the first value past the limit, and the limits are
 *     exact: the counts the scan reports pass as limits, one less does not;
 *   - jsonrpc_parse() answers -E2BIG exactly when the scan with its limits
 *     refuses the count. */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json-scan.h"
#include "jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Tree {
        size_t values;
        unsigned depth;
} Tree;

static void walk(json_object *j, unsigned level, Tree *t) {
        t->values++;
        if (level > t->depth)
                t->depth = level;
        if (json_object_is_type(j, json_type_array))
                for (size_t i = 0; i < json_object_array_length(j); i++)
                        walk(json_object_array_get_idx(j, i), level + 1, t);
        else if (json_object_is_type(j, json_type_object)) {
                json_object_object_foreach(j, k, v) {
                        (void) k;
                        t->values++;
                        walk(v, level + 1, t);
                }
        }
}

/* As jsonrpc_parse() does, with another depth; *ret_whole: nothing but
 * whitespace after the value. */
static bool parse(const char *s, size_t len, unsigned max_depth, json_object **ret, enum json_tokener_error *ret_e,
                  bool *ret_whole) {
        size_t end;
        json_tokener *tok = json_tokener_new_ex((int) max_depth);
        json_object *j;

        if (!tok)
                abort();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS | JSON_TOKENER_VALIDATE_UTF8);
        j = json_tokener_parse_ex(tok, s, (int) len);
        *ret_e = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        if (!j && *ret_e == json_tokener_continue) {
                j = json_tokener_parse_ex(tok, " ", 1);
                *ret_e = json_tokener_get_error(tok);
                end = len;
        }
        json_tokener_free(tok);
        while (end < len && strchr(" \t\r\n", s[end]) && s[end])
                end++;
        *ret_whole = end >= len;
        *ret = j;
        return *ret_e == json_tokener_success;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t max_values;
        unsigned max_depth;
        const char *s;
        JsonScan c, c2;
        json_object *j;
        enum json_tokener_error e;
        bool whole;
        int r;

        if (size < 2 || size > 64 * 1024)
                return 0;
        max_values = 1 + 4 * (size_t) data[0];
        max_depth = 1 + data[1] % 72;
        s = (const char *) data + 2;
        size -= 2;

        r = json_scan(s, size, max_values, max_depth, &c);
        if (r != 0 && r != -E2BIG && r != -ELOOP)
                abort();
        if (r == -E2BIG && c.values != max_values + 1)
                abort();
        if (r == -ELOOP && c.depth != max_depth + 1)
                abort();
        if (r == 0 && (c.values > max_values || c.depth > max_depth))
                abort();

        if (r == 0) {
                /* Exact limits: what it counted passes, one less does not. */
                if (json_scan(s, size, c.values, c.depth, &c2) != 0 || c2.values != c.values || c2.keys != c.keys)
                        abort();
                if (c.values > 0 && json_scan(s, size, c.values - 1, c.depth, NULL) != -E2BIG)
                        abort();
                if (c.depth > 0 && json_scan(s, size, c.values, c.depth - 1, NULL) != -ELOOP)
                        abort();
        }

        /* json-c with the same depth limit. */
        if (parse(s, size, max_depth, &j, &e, &whole)) {
                Tree t = {};

                if (j)
                        walk(j, 1, &t);
                else
                        t = (Tree) { .values = 1, .depth = 1 };         /* null */
                json_object_put(j);
                /* If the scan passed, it counted at least what json-c built. */
                if (r == 0 && (t.values > c.values || t.depth > c.depth))
                        abort();
        } else
                json_object_put(j);

        /* Valid JSON (json-c takes all of it when depth does not matter): the
         * scan's depth is json-c's, to the level. Invalid input may differ:
         * json-c says "too deep" where a value would start, even before a
         * byte that cannot start one, and stops there. */
        if (!parse(s, size, (unsigned) size + 2, &j, &e, &whole) || !whole)
                json_object_put(j);
        else {
                Tree t = {};
                json_object *k;
                bool ok_c;

                if (j)
                        walk(j, 1, &t);
                else
                        t = (Tree) { .values = 1, .depth = 1 };
                json_object_put(j);
                if (json_scan(s, size, SIZE_MAX, UINT_MAX, &c2) != 0 || t.values > c2.values || t.depth > c2.depth)
                        abort();
                ok_c = parse(s, size, max_depth, &k, &e, &whole);
                json_object_put(k);
                if (ok_c != (c2.depth <= max_depth))
                        abort();
        }

        /* The parser of the daemon refuses the count exactly when the scan does. */
        {
                const char *why;
                int p = jsonrpc_parse(s, size, &j, &why);

                r = json_scan(s, size, JSONRPC_MAX_VALUES, JSONRPC_MAX_DEPTH, NULL);
                if ((p == -E2BIG) != (r == -E2BIG))
                        abort();
                if (p == 0)
                        json_object_put(j);
        }
        return 0;
}
