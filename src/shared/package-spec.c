/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "package-spec.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static bool is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A PEP 508 name: letters and digits, with ".", "_", "-" only inside.
 * Returns the length of the name at s (0: none). */
static size_t name_span(const char *s, size_t len) {
        size_t n = 0;

        if (len == 0 || !is_alnum(s[0]))
                return 0;
        while (n < len && (is_alnum(s[n]) || s[n] == '.' || s[n] == '_' || s[n] == '-'))
                n++;
        while (n > 0 && !is_alnum(s[n - 1]))
                n--;
        return n;
}

/* "[a,b]": the extras. Returns the bytes taken, 0 if there are none, or
 * SIZE_MAX if they are malformed. */
static size_t extras_span(const char *s, size_t len) {
        size_t i = 1, k;

        if (len == 0 || s[0] != '[')
                return 0;
        for (;;) {
                k = name_span(s + i, len - i);
                if (k == 0)
                        return SIZE_MAX;
                i += k;
                if (i < len && s[i] == ',') {
                        i++;
                        continue;
                }
                return i < len && s[i] == ']' ? i + 1 : SIZE_MAX;
        }
}

/* One version clause: an operator, then a version (PEP 440 characters,
 * "*" for ==/!= prefixes). Returns the bytes taken or 0 if malformed. */
static size_t clause_span(const char *s, size_t len) {
        static const char *const ops[] = { "===", "==", "!=", "<=", ">=", "~=", "<", ">" };
        size_t i = 0, v;

        for (size_t k = 0; k < ELEMENTSOF(ops); k++) {
                size_t l = strlen(ops[k]);
                if (len >= l && memcmp(s, ops[k], l) == 0) {
                        i = l;
                        break;
                }
        }
        if (i == 0)
                return 0;
        for (v = i; v < len && (is_alnum(s[v]) || strchr(".*+!_-", s[v])); v++)
                ;
        if (v == i || !is_alnum(s[i]))
                return 0;
        return v;
}

bool package_spec_valid(const char *s, size_t len) {
        size_t i, k;

        if (!s || len == 0 || len > PACKAGE_SPEC_MAX || memchr(s, 0, len))
                return false;
        i = name_span(s, len);
        if (i == 0)
                return false;
        k = extras_span(s + i, len - i);
        if (k == SIZE_MAX)
                return false;
        i += k;
        while (i < len) {
                k = clause_span(s + i, len - i);
                if (k == 0)
                        return false;
                i += k;
                if (i < len) {
                        if (s[i] != ',' || i + 1 == len)
                                return false;
                        i++;
                }
        }
        return true;
}

int package_spec_name(const char *spec, char **ret_name) {
        size_t n, j = 0;
        char *name;

        assert(spec);
        assert(ret_name);

        if (!package_spec_valid(spec, strlen(spec)))
                return -EINVAL;
        n = name_span(spec, strlen(spec));
        name = malloc(n + 1);
        if (!name)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char c = spec[i];
                if (c == '.' || c == '_' || c == '-') {
                        if (j > 0 && name[j - 1] == '-')
                                continue;
                        c = '-';
                } else if (c >= 'A' && c <= 'Z')
                        c = (char) (c - 'A' + 'a');
                name[j++] = c;
        }
        name[j] = 0;
        *ret_name = name;
        return 0;
}

static bool path_under(const char *path, const char *tree) {
        size_t l = strlen(tree);
        return strncmp(path, tree, l) == 0 && (path[l] == 0 || path[l] == '/');
}

bool paths_overlap(const char *a, const char *b) {
        return a && b && (path_under(a, b) || path_under(b, a));
}

bool wheelhouse_path_valid(const char *path) {
        static const char *const hidden[] = { "/tmp", "/var/tmp", "/run", "/dev", "/proc", "/sys", "/home", "/root" };
        size_t len;

        if (!path || path[0] != '/')
                return false;
        len = strlen(path);
        if (len < 2 || len > 255 || path[len - 1] == '/' || strstr(path, "//") || strstr(path, "/./") ||
            strstr(path, "/../") || (len >= 2 && strcmp(path + len - 2, "/.") == 0) ||
            (len >= 3 && strcmp(path + len - 3, "/..") == 0))
                return false;
        for (const char *p = path; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return false;
        for (size_t i = 0; i < ELEMENTSOF(hidden); i++)
                if (path_under(path, hidden[i]))
                        return false;
        return true;
}
