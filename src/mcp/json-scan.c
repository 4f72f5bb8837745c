/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "json-scan.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Where a string that opened just before p ends: past its closing quote, or
 * at end if it never does. memchr() finds candidates fast; a quote after an
 * odd run of backslashes is escaped. Each backslash belongs to one run, and
 * each run is counted once, so this stays linear. */
static const char *skip_string(const char *p, const char *end) {
        const char *start = p;

        for (;;) {
                const char *q = memchr(p, '"', (size_t) (end - p)), *b;

                if (!q)
                        return end;
                for (b = q; b > start && b[-1] == '\\'; b--)
                        ;
                if ((q - b) % 2 == 0)
                        return q + 1;
                p = q + 1;
        }
}

static bool is_delimiter(char c) {
        return strchr(" \t\r\n{}[],:\"", c) && c != 0;
}

int json_scan(const char *data, size_t len, size_t max_values, unsigned max_depth, JsonScan *ret) {
        const char *p = data, *end = data + len;
        JsonScan s = {};
        unsigned open = 0;      /* containers around p */
        int r = 0;

        assert(data || len == 0);

        while (p < end) {
                char c = *p++;

                switch (c) {
                case ' ':
                case '\t':
                case '\r':
                case '\n':
                case ',':
                        continue;
                case ':':
                        s.keys++;
                        continue;
                case '}':
                case ']':
                        /* Unbalanced input is json-c's to refuse. */
                        if (open > 0)
                                open--;
                        continue;
                case '"':
                        p = skip_string(p, end);
                        break;
                case '{':
                case '[':
                        break;
                default:
                        /* A number or literal: one value, however long (json-c
                         * makes at most one object of such a run). */
                        while (p < end && !is_delimiter(*p))
                                p++;
                        break;
                }

                /* A value (or a key, at its value's level) starts here. */
                if (open + 1 > s.depth)
                        s.depth = open + 1;
                if (s.depth > max_depth) {
                        r = -ELOOP;
                        break;
                }
                if (++s.values > max_values) {
                        r = -E2BIG;
                        break;
                }
                if (c == '{' || c == '[')
                        open++;
        }
        if (ret)
                *ret = s;
        return r;
}
