/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "json-util.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "macro.h"
#include "utf8.h"

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
        /* One byte past max, if there is one, tells whether max splits a character. */
        size_t n = utf8_whole_prefix(s, strnlen(s, max + 1), max);

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

static bool json_is_space(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool json_is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* The scanners below move *p past what they read: 0 if it is valid, -EAGAIN
 * if the input ends inside it, -EBADMSG if it is not valid. */

/* A string whose opening quote is just before *p. */
static int json_skip_string(const char **p, const char *end) {
        const char *q = *p;

        while (q < end) {
                unsigned char c = (unsigned char) *q++;

                if (c == '"') {
                        *p = q;
                        return 0;
                }
                if (c < 0x20)
                        return -EBADMSG;        /* raw control characters must be escaped */
                if (c != '\\')
                        continue;
                if (q >= end)
                        return -EAGAIN;
                c = (unsigned char) *q++;
                if (c != 'u') {
                        if (c == 0 || !strchr("\"\\/bfnrt", (char) c))
                                return -EBADMSG;
                        continue;
                }
                for (unsigned i = 0; i < 4; i++, q++) {
                        if (q >= end)
                                return -EAGAIN;
                        if (*q == 0 || !strchr("0123456789abcdefABCDEF", *q))
                                return -EBADMSG;
                }
        }
        return -EAGAIN;
}

/* One or more digits. */
static int json_skip_digits(const char **p, const char *end) {
        const char *q = *p;

        while (q < end && json_is_digit(*q))
                q++;
        if (q == *p)
                return q >= end ? -EAGAIN : -EBADMSG;
        *p = q;
        return 0;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_skip_number(const char **p, const char *end) {
        const char *q = *p;
        int r;

        if (*q == '-')
                q++;
        if (q < end && *q == '0')
                q++;
        else if ((r = json_skip_digits(&q, end)) < 0)
                return r;
        if (q < end && *q == '.') {
                q++;
                if ((r = json_skip_digits(&q, end)) < 0)
                        return r;
        }
        if (q < end && (*q == 'e' || *q == 'E')) {
                q++;
                if (q < end && (*q == '+' || *q == '-'))
                        q++;
                if ((r = json_skip_digits(&q, end)) < 0)
                        return r;
        }
        *p = q;
        return 0;
}

/* A string, number or literal at *p < end. */
static int json_skip_scalar(const char **p, const char *end) {
        static const char *const literals[] = { "true", "false", "null" };

        if (**p == '"') {
                (*p)++;
                return json_skip_string(p, end);
        }
        if (**p == '-' || json_is_digit(**p))
                return json_skip_number(p, end);
        for (size_t i = 0; i < ELEMENTSOF(literals); i++) {
                size_t n = strlen(literals[i]), have = (size_t) (end - *p);
                if (memcmp(*p, literals[i], MIN(n, have)) != 0)
                        continue;
                if (have < n)
                        return -EAGAIN;
                *p += n;
                return 0;
        }
        return -EBADMSG;
}

typedef enum JsonCheckState {
        JSON_CHECK_VALUE,               /* a value: at the top, after a colon, after a comma in an array */
        JSON_CHECK_VALUE_OR_CLOSE,      /* after [ */
        JSON_CHECK_KEY,                 /* after a comma in an object */
        JSON_CHECK_KEY_OR_CLOSE,        /* after { */
        JSON_CHECK_COLON,               /* after a key */
        JSON_CHECK_AFTER,               /* after a value */
} JsonCheckState;

/* One step of json_check_strict() at *p (no whitespace, before end); *why says what -EBADMSG found wrong. */
static int json_check_step(const char **p, const char *end, bool *in_object, unsigned *depth, unsigned max_depth,
                           JsonCheckState *state, const char **why) {
        char c = **p;

        switch (*state) {
        case JSON_CHECK_VALUE_OR_CLOSE:
        case JSON_CHECK_KEY_OR_CLOSE:
                if (c == (*state == JSON_CHECK_KEY_OR_CLOSE ? '}' : ']')) {
                        (*depth)--, (*p)++;
                        *state = JSON_CHECK_AFTER;
                        return 0;
                }
                *state = *state == JSON_CHECK_KEY_OR_CLOSE ? JSON_CHECK_KEY : JSON_CHECK_VALUE;
                return json_check_step(p, end, in_object, depth, max_depth, state, why);
        case JSON_CHECK_VALUE:
                if (c != '{' && c != '[') {
                        *state = JSON_CHECK_AFTER;
                        *why = "invalid JSON value";
                        return json_skip_scalar(p, end);
                }
                if (*depth >= max_depth)
                        return -ELOOP;
                in_object[(*depth)++] = c == '{';
                (*p)++;
                *state = c == '{' ? JSON_CHECK_KEY_OR_CLOSE : JSON_CHECK_VALUE_OR_CLOSE;
                return 0;
        case JSON_CHECK_KEY:
                *why = "quoted object property name expected";
                if (c != '"')
                        return -EBADMSG;
                (*p)++;
                *state = JSON_CHECK_COLON;
                return json_skip_string(p, end);
        case JSON_CHECK_COLON:
                *why = "object property name separator ':' expected";
                if (c != ':')
                        return -EBADMSG;
                (*p)++;
                *state = JSON_CHECK_VALUE;
                return 0;
        case JSON_CHECK_AFTER:
                assert(*depth > 0);
                (*p)++;
                if (c == ',')
                        *state = in_object[*depth - 1] ? JSON_CHECK_KEY : JSON_CHECK_VALUE;
                else if (c == (in_object[*depth - 1] ? '}' : ']'))
                        (*depth)--;
                else {
                        *why = in_object[*depth - 1] ? "object value separator ',' expected" :
                                                       "array value separator ',' expected";
                        return -EBADMSG;
                }
                return 0;
        }
        assert(!"unknown state");
        return -EBADMSG;
}

int json_check_strict(const char *data, size_t len, unsigned max_depth, size_t *ret_end, const char **ret_error) {
        const char *p = data, *end = data + len;
        bool in_object[JSON_CHECK_MAX_DEPTH];   /* the containers around p, innermost last */
        JsonCheckState state = JSON_CHECK_VALUE;
        const char *why = "invalid JSON";
        unsigned depth = 0;
        int r = 0;

        assert(data || len == 0);
        assert(max_depth <= JSON_CHECK_MAX_DEPTH);
        assert(ret_end);
        assert(ret_error);

        for (;;) {
                if (state == JSON_CHECK_AFTER && depth == 0) {
                        *ret_end = (size_t) (p - data);
                        return 0;
                }
                while (p < end && json_is_space(*p))
                        p++;
                if (p >= end) {
                        r = -EAGAIN;
                        break;
                }
                r = json_check_step(&p, end, in_object, &depth, max_depth, &state, &why);
                if (r < 0)
                        break;
        }
        *ret_error = r == -ELOOP ? "JSON nested too deeply" : r == -EAGAIN ? "incomplete JSON" : why;
        return r == -ELOOP ? -ELOOP : -EBADMSG;
}

int json_parse_strict(const char *data, size_t len, unsigned max_depth, int tokener_flags, json_object **ret,
                      size_t *ret_end, const char **ret_error) {
        json_tokener *tok;
        json_object *j;
        enum json_tokener_error e;
        size_t end;
        int r;

        assert(ret);
        assert(ret_error);
        assert(!(tokener_flags & JSON_TOKENER_STRICT));

        if (len > INT32_MAX) {
                *ret_error = "message too large";
                return -EBADMSG;
        }
        r = json_check_strict(data, len, max_depth, &end, ret_error);
        if (r < 0)
                return -EBADMSG;
        tok = json_tokener_new_ex((int) max_depth);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, tokener_flags);
        j = json_tokener_parse_ex(tok, data, (int) end);
        e = json_tokener_get_error(tok);
        if (!j && e == json_tokener_continue) {
                /* A bare number or literal at the very end waits for a
                 * delimiter that cannot come: the value is complete. */
                j = json_tokener_parse_ex(tok, " ", 1);
                e = json_tokener_get_error(tok);
        }
        json_tokener_free(tok);
        if (e != json_tokener_success) {
                json_object_put(j);
                *ret_error = e == json_tokener_error_depth ? "JSON nested too deeply" : json_tokener_error_desc(e);
                return -EBADMSG;
        }
        *ret = j;
        if (ret_end)
                *ret_end = end;
        return 0;
}
