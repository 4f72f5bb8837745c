/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "packages.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "package-spec.h"

/* The element's string, if it is one of the same bytes as JSON gave (no
 * NUL inside), else NULL. */
static const char *spec_string(json_object *v, size_t *ret_len) {
        if (!json_object_is_type(v, json_type_string))
                return NULL;
        *ret_len = (size_t) json_object_get_string_len(v);
        return json_object_get_string(v);
}

static bool packages_contain(json_object *a, size_t n, const char *s, size_t len, size_t *ret_index) {
        for (size_t i = 0; i < n; i++) {
                json_object *v = json_object_array_get_idx(a, i);

                if ((size_t) json_object_get_string_len(v) == len && memcmp(json_object_get_string(v), s, len) == 0) {
                        if (ret_index)
                                *ret_index = i;
                        return true;
                }
        }
        return false;
}

/* A bad entry, named: its index, and as much of it as is printable. */
static int bad_spec(char *error, size_t error_size, size_t i, const char *s, const char *why) {
        char shown[PACKAGE_SPEC_MAX + 1];

        str_printable(s, shown, sizeof shown);
        (void) snprintf(error, error_size, "packages[%zu] \"%s\" %s", i, shown, why);
        return -EINVAL;
}

int packages_parse(json_object *req, bool enabled, uint64_t max, json_object **ret, char *error, size_t error_size) {
        _cleanup_json_ json_object *out = NULL;
        json_object *a;
        size_t n;

        assert(req);
        assert(ret);
        assert(error && error_size > 0);

        if (!json_object_object_get_ex(req, "packages", &a) || json_object_is_type(a, json_type_null)) {
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(a, json_type_array)) {
                (void) snprintf(error, error_size, "packages must be an array of package specs");
                return -EINVAL;
        }
        n = json_object_array_length(a);
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        if (!enabled) {
                (void) snprintf(error, error_size, "packages are not enabled on this server");
                return -EINVAL;
        }
        if (n > max) {
                (void) snprintf(error, error_size, "packages: %zu specs, at most %" PRIu64 " (MCP_EXEC_MAX_PACKAGES)",
                                n, max);
                return -EINVAL;
        }
        out = json_object_new_array_ext((int) n);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t len = 0, first;
                const char *s = spec_string(json_object_array_get_idx(a, i), &len);

                if (!s) {
                        (void) snprintf(error, error_size, "packages[%zu] is not a string", i);
                        return -EINVAL;
                }
                if (!package_spec_valid(s, len))
                        return bad_spec(error, error_size, i, s,
                                        "is not a package spec: a name, optional [extras] and version clauses "
                                        "(\"polars\", \"numpy~=1.26\"); no URL, marker, space or leading \"-\"");
                if (packages_contain(out, i, s, len, &first)) {
                        char why[64];
                        (void) snprintf(why, sizeof why, "repeats packages[%zu]", first);
                        return bad_spec(error, error_size, i, s, why);
                }
                if (json_append(out, json_object_new_string_len(s, (int) len)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int packages_merge(json_object *first, json_object *second, json_object **ret) {
        _cleanup_json_ json_object *out = NULL;
        size_t n1 = packages_count(first), n2 = packages_count(second);

        assert(ret);

        if (n1 + n2 == 0) {
                *ret = NULL;
                return 0;
        }
        out = json_object_new_array_ext((int) (n1 + n2));
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n1 + n2; i++) {
                json_object *v = json_object_array_get_idx(i < n1 ? first : second, i < n1 ? i : i - n1);

                if (i >= n1 && packages_contain(first, n1, json_object_get_string(v),
                                                (size_t) json_object_get_string_len(v), NULL))
                        continue;
                if (json_append(out, json_object_get(v)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int packages_add_to_run(json_object *msg, json_object *packages, uint64_t max_bytes) {
        assert(msg);

        if (packages_count(packages) == 0)
                return 0;
        return json_build_into(msg, JB_OBJ("packages", json_object_get(packages)),
                               JB_INT("packages_max_bytes", max_bytes), JB_END);
}
