/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "buffer.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

size_t buffer_grow_size(const Buffer *b, size_t n) {
        size_t want;

        assert(b);

        want = MAX(b->size + n, b->allocated > SIZE_MAX / 2 ? SIZE_MAX : b->allocated * 2);
        return MAX(MIN(want, b->limit), b->allocated);
}

int buffer_reserve(Buffer *b, size_t n) {
        size_t a;
        char *p;

        assert(b);
        assert(b->size <= b->limit);

        if (n > b->limit - b->size)
                return -ENOBUFS;
        if (b->size + n <= b->allocated && b->data)
                return 0;
        a = buffer_grow_size(b, n);
        if (a == SIZE_MAX)
                return -ENOMEM;         /* no room for the spare byte */
        p = realloc(b->data, a + 1);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->allocated = a;
        return 0;
}

int buffer_append(Buffer *b, const void *p, size_t n) {
        int r;

        assert(b);
        assert(p || n == 0);

        r = buffer_reserve(b, n);
        if (r < 0)
                return r;
        if (n > 0)
                memcpy(b->data + b->size, p, n);
        b->size += n;
        return 0;
}

void buffer_shrink(Buffer *b, size_t allocated) {
        char *p;

        assert(b);

        allocated = MAX(allocated, b->size);
        if (!b->data || allocated >= b->allocated)
                return;
        p = realloc(b->data, allocated + 1);
        if (!p)
                return;
        b->data = p;
        b->allocated = allocated;
}

void buffer_free(Buffer *b) {
        if (!b)
                return;
        b->data = mfree(b->data);
        b->size = b->allocated = 0;
}
