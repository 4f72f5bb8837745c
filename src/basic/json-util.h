/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small json-c helpers: _cleanup_json_, builders that make out-of-memory
 * visible (json-c constructors return NULL, and json_object_object_add()
 * would store that as null), typed getters that take absent and mistyped
 * members alike, and two for echoing client strings safely. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline void json_object_putp(json_object **j) {
        if (*j)
                (void) json_object_put(*j);
}
#define _cleanup_json_ __attribute__((cleanup(json_object_putp)))

/* Adds v under key and takes it; -ENOMEM (v released) if v is NULL or the
 * add fails. For a deliberate JSON null use json_add_null(). */
int json_add(json_object *o, const char *key, json_object *v);
int json_add_null(json_object *o, const char *key);
int json_add_string(json_object *o, const char *key, const char *s);
int json_add_int(json_object *o, const char *key, int64_t v);
int json_add_bool(json_object *o, const char *key, int b);
/* Appends v to an array and takes it; -ENOMEM as json_add(). */
int json_append(json_object *a, json_object *v);

/* Wire messages in one expression with one error, as systemd's json_build():
 *
 *     r = json_build(&m, JB_STR("event", "exit"), JB_INT("exit_code", n),
 *                    JB_STR_OR_NULL("error", e), JB_OBJ("limits", l), JB_END);
 *
 * Each JB_* is a tag, a key and a value (cast to the tag's type, so a
 * varargs mix-up cannot happen). JB_OBJ takes its object, also on failure;
 * a NULL object there is out of memory, never a JSON null (JB_NULL says
 * that). -ENOMEM with nothing built, or 0 with *ret set. json_build_into()
 * adds to an existing object, which on failure holds some of the members. */
typedef enum JsonBuildTag {
        JSON_BUILD_END,
        JSON_BUILD_STRING,              /* const char *, never NULL */
        JSON_BUILD_STRING_OR_NULL,      /* const char *, NULL gives null */
        JSON_BUILD_INT,                 /* int64_t */
        JSON_BUILD_BOOL,                /* bool, passed as int */
        JSON_BUILD_NULL,                /* no value */
        JSON_BUILD_OBJECT,              /* json_object *, taken */
} JsonBuildTag;
#define JB_END JSON_BUILD_END
#define JB_STR(k, v) JSON_BUILD_STRING, (const char *) (k), (const char *) (v)
#define JB_STR_OR_NULL(k, v) JSON_BUILD_STRING_OR_NULL, (const char *) (k), (const char *) (v)
#define JB_INT(k, v) JSON_BUILD_INT, (const char *) (k), (int64_t) (v)
#define JB_BOOL(k, v) JSON_BUILD_BOOL, (const char *) (k), (int) !!(v)
#define JB_NULL(k) JSON_BUILD_NULL, (const char *) (k)
#define JB_OBJ(k, v) JSON_BUILD_OBJECT, (const char *) (k), (json_object *) (v)
int json_build(json_object **ret, ...);
int json_build_into(json_object *o, ...);

/* Borrowed member of an object; NULL if o is no object or key is absent. */
json_object *json_get(json_object *o, const char *key);
/* The member if it is a string, else NULL. */
const char *json_get_string(json_object *o, const char *key);
/* The member if it is an integer, else def. */
int64_t json_get_int64(json_object *o, const char *key, int64_t def);
/* True if the member is the boolean true; false for anything else. */
bool json_get_bool(json_object *o, const char *key);

/* The compact wire form (no newlines, "/" unescaped); owned by o. */
const char *json_serialize(json_object *o, size_t *ret_len);

/* About the heap bytes json-c holds for o and all it contains (string bytes
 * plus what each value, member and element costs as json-c allocates it),
 * for charging it to a memory budget. 0 for NULL. */
uint64_t json_estimate_size(json_object *o);

/* Length of the longest prefix of s, at most max bytes, that does not end
 * inside a UTF-8 sequence: for echoing client strings in messages. */
int utf8_prefix_len(const char *s, size_t max);

/* Copies s into buf for logs: printable ASCII only (others become '?'),
 * truncated to size-1 bytes. */
void str_printable(const char *s, char *buf, size_t size);

/* Strict JSON without json-c's JSON_TOKENER_STRICT. json-c 0.18 (Debian 13)
 * refuses every string holding a byte above 0x7f in strict mode (a signed
 * char compared with 0x1f: json-c issue 875, fixed in 0.19), so UTF-8 text
 * cannot be parsed strictly there; 0.17 also began to refuse integers past
 * 64 bits in strict mode, which 0.16 clamps. So the grammar is ours, the same
 * on every json-c: json_check_strict() says whether data starts with one
 * RFC 8259 value (whitespace before it allowed): no comments, single quotes,
 * trailing commas, leading zeros, NaN or raw control characters in strings,
 * nothing json-c merely tolerates. 0 with the offset just past the value in
 * *ret_end; -EBADMSG with a reason ("incomplete JSON", "invalid JSON") in
 * *ret_error; -ELOOP past max_depth (<= JSON_CHECK_MAX_DEPTH) containers.
 * Bytes above 0x7f are left to JSON_TOKENER_VALIDATE_UTF8. */
#define JSON_CHECK_MAX_DEPTH 256U
int json_check_strict(const char *data, size_t len, unsigned max_depth, size_t *ret_end, const char **ret_error);

/* json_check_strict(), then json-c's parse of that value (a tokener of
 * max_depth, with tokener_flags, never JSON_TOKENER_STRICT): 0 with the value
 * in *ret (NULL for a JSON null) and its end in *ret_end (bytes after it are
 * the caller's to judge); -EBADMSG with a reason, -ENOMEM. */
int json_parse_strict(const char *data, size_t len, unsigned max_depth, int tokener_flags, json_object **ret,
                      size_t *ret_end, const char **ret_error);
