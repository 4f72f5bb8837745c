/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "json-util.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "macro.h"

int json_add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_add_null(json_object *o, const char *key) {
        return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
}

int json_add_string(json_object *o, const char *key, const char *s) {
        return json_add(o, key, json_object_new_string(s));
}

int json_add_int(json_object *o, const char *key, int64_t v) {
        return json_add(o, key, json_object_new_int64(v));
}

int json_add_bool(json_object *o, const char *key, int b) {
        return json_add(o, key, json_object_new_boolean(b));
}

int json_append(json_object *a, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* Adds every member of ap to o, starting with the error r (o NULL: r < 0).
 * Once one fails, the rest are only released (JB_OBJ values are taken
 * whatever happens). */
static int build_va(json_object *o, int r, va_list ap) {
        assert(o || r < 0);

        for (;;) {
                int tag = va_arg(ap, int);      /* an enum passes as int */
                json_object *v = NULL;
                const char *key, *s;

                if (tag == JSON_BUILD_END)
                        return r;
                key = va_arg(ap, const char *);
                assert(key);
                switch (tag) {
                case JSON_BUILD_STRING:
                        s = va_arg(ap, const char *);
                        assert(s);
                        if (r >= 0)
                                r = json_add_string(o, key, s);
                        break;
                case JSON_BUILD_STRING_OR_NULL:
                        s = va_arg(ap, const char *);
                        if (r >= 0)
                                r = s ? json_add_string(o, key, s) : json_add_null(o, key);
                        break;
                case JSON_BUILD_INT: {
                        int64_t i = va_arg(ap, int64_t);
                        if (r >= 0)
                                r = json_add_int(o, key, i);
                        break;
                }
                case JSON_BUILD_BOOL: {
                        int b = va_arg(ap, int);
                        if (r >= 0)
                                r = json_add_bool(o, key, b);
                        break;
                }
                case JSON_BUILD_NULL:
                        if (r >= 0)
                                r = json_add_null(o, key);
                        break;
                case JSON_BUILD_OBJECT:
                        v = va_arg(ap, json_object *);
                        if (r >= 0)
                                r = json_add(o, key, v);
                        else
                                json_object_put(v);
                        break;
                default:
                        assert(!"unknown json_build tag");
                        return -EINVAL;
                }
        }
}

int json_build_into(json_object *o, ...) {
        va_list ap;
        int r;

        assert(o);

        va_start(ap, o);
        r = build_va(o, 0, ap);
        va_end(ap);
        return r;
}

int json_build(json_object **ret, ...) {
        json_object *o = json_object_new_object();
        va_list ap;
        int r;

        assert(ret);

        va_start(ap, ret);
        r = build_va(o, o ? 0 : -ENOMEM, ap);
        va_end(ap);
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}

json_object *json_get(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

const char *json_get_string(json_object *o, const char *key) {
        json_object *v = json_get(o, key);

        return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int64_t json_get_int64(json_object *o, const char *key, int64_t def) {
        json_object *v = json_get(o, key);

        return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : def;
}

bool json_get_bool(json_object *o, const char *key) {
        json_object *v = json_get(o, key);

        return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

const char *json_serialize(json_object *o, size_t *ret_len) {
        return json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                 ret_len);
}

/* What json-c 0.16 allocates, rounded up, malloc's own overhead included: a
 * struct json_object per value; for an object, a hash table of 16 entries to
 * start with and a copy of each key; for an array, 32 slots to start with. */
#define JSON_VALUE_BYTES 64U
#define JSON_OBJECT_BYTES 768U
#define JSON_MEMBER_BYTES 48U
#define JSON_ARRAY_BYTES 320U
#define JSON_ELEMENT_BYTES 8U

uint64_t json_estimate_size(json_object *o) {
        uint64_t n = JSON_VALUE_BYTES;
        size_t l;

        /* Recursion is bounded: json-c parses at most 32 levels deep, and
         * what we build is shallower. */
        switch (json_object_get_type(o)) {
        case json_type_null:
                return o ? n : 0;
        case json_type_string:
                return n + (uint64_t) json_object_get_string_len(o) + 1;
        case json_type_object:
                n += JSON_OBJECT_BYTES;
                json_object_object_foreach(o, key, val)
                        n += JSON_MEMBER_BYTES + strlen(key) + json_estimate_size(val);
                return n;
        case json_type_array:
                l = json_object_array_length(o);
                n += JSON_ARRAY_BYTES + (uint64_t) l * JSON_ELEMENT_BYTES;
                for (size_t i = 0; i < l; i++)
                        n += json_estimate_size(json_object_array_get_idx(o, i));
                return n;
        default:
                return n;
        }
}

int utf8_prefix_len(const char *s, size_t max) {
        size_t n = strnlen(s, max + 1);

        if (n > max) {
                n = max;
                /* Back off continuation bytes, then the lead byte they belong to. */
                while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
                        n--;
        }
        return (int) MIN(n, (size_t) INT32_MAX);
}

void str_printable(const char *s, char *buf, size_t size) {
        size_t n = 0;

        if (size == 0)
                return;
        for (; s && *s && n + 1 < size; s++)
                buf[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
        buf[n] = 0;
}
