/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small json-c helpers: builders that make out-of-memory visible (json-c
 * constructors return NULL, and json_object_object_add() would store that as
 * null), typed getters that take absent and mistyped members alike, and two
 * for echoing client strings safely. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Adds v under key and takes it; -ENOMEM (v released) if v is NULL or the
 * add fails. For a deliberate JSON null use json_add_null(). */
int json_add(json_object *o, const char *key, json_object *v);
int json_add_null(json_object *o, const char *key);
int json_add_string(json_object *o, const char *key, const char *s);
int json_add_int(json_object *o, const char *key, int64_t v);
int json_add_bool(json_object *o, const char *key, int b);
/* Appends v to an array and takes it; -ENOMEM as json_add(). */
int json_append(json_object *a, json_object *v);

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
