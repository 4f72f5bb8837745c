/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A growable byte buffer with a limit: what a connection's line, a request
 * body or a reply waiting to be written grows in. It doubles as it grows (so
 * appending n bytes costs O(n) overall), never holds more than limit bytes,
 * and always keeps one spare byte after the data, so that text can be
 * NUL-terminated in place. */

#include <stddef.h>
#include <stdint.h>

typedef struct Buffer {
        char *data;             /* NULL until the first byte */
        size_t size;            /* bytes in use */
        size_t allocated;       /* room for data, not counting the spare byte */
        size_t limit;           /* size never passes this */
} Buffer;

#define BUFFER_INIT(l) ((Buffer) { .limit = (l) })

/* What the allocation grows to for n more bytes: twice what it is, at least
 * size + n, at most limit. For a caller that charges memory before it takes
 * it. Only meaningful when size + n <= limit. */
size_t buffer_grow_size(const Buffer *b, size_t n);

/* Room for n more bytes (and the spare one). Grows to exactly
 * buffer_grow_size(b, n). -ENOBUFS past the limit, -ENOMEM; the buffer is
 * unchanged on failure. */
int buffer_reserve(Buffer *b, size_t n);

/* Appends p[0..n): -ENOBUFS past the limit (nothing appended), -ENOMEM. */
int buffer_append(Buffer *b, const void *p, size_t n);

/* Gives back the allocation past allocated bytes (never below size); keeps it
 * if realloc fails. */
void buffer_shrink(Buffer *b, size_t allocated);

/* Frees the data; the limit stays, so the buffer can be used again. */
void buffer_free(Buffer *b);
static inline void buffer_freep(Buffer *b) {
        buffer_free(b);
}
#define _cleanup_buffer_ __attribute__((cleanup(buffer_freep)))
