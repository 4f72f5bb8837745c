/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "http-sse.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "macro.h"

void sse_parser_init(SseParser *p, size_t max) {
        assert(p);

        *p = (SseParser) {
                .line = BUFFER_INIT(max),
                .data = BUFFER_INIT(max),
        };
}

void sse_parser_done(SseParser *p) {
        if (!p)
                return;
        buffer_free(&p->line);
        buffer_free(&p->data);
}

/* The first CR or LF of buf[i..n), or n (buf is no C string). */
static size_t find_eol(const char *buf, size_t i, size_t n) {
        for (; i < n; i++)
                if (buf[i] == '\r' || buf[i] == '\n')
                        return i;
        return n;
}

static int dispatch(SseParser *p, sse_event_t on_event, void *userdata) {
        int r = 0;

        if (p->has_data) {
                p->data.data[p->data.size] = 0;         /* the spare byte */
                r = on_event(p->data.data, p->data.size, userdata);
        }
        p->data.size = 0;
        p->has_data = false;
        return r;
}

/* One complete line (without its end). */
static int take_line(SseParser *p, const char *l, size_t n, sse_event_t on_event, void *userdata) {
        const char *value;
        size_t name_len, value_len;
        int r;

        if (n == 0)
                return dispatch(p, on_event, userdata);
        if (l[0] == ':')
                return 0;               /* a comment (keep-alives) */
        name_len = strcspn(l, ":");
        if (name_len > n)
                name_len = n;
        value = l + name_len;
        value_len = n - name_len;
        if (value_len > 0) {            /* the colon, and one space after it */
                value++, value_len--;
                if (value_len > 0 && value[0] == ' ')
                        value++, value_len--;
        }
        if (name_len != 4 || !strneq(l, "data", 4))
                return 0;               /* event, id, retry and unknown fields: not needed */
        if (p->has_data) {
                r = buffer_append(&p->data, "\n", 1);
                if (r < 0)
                        return r == -ENOBUFS ? -EMSGSIZE : r;
        }
        p->has_data = true;
        if (value_len == 0) {
                /* Room for the NUL: the spare byte needs an allocation. */
                r = buffer_reserve(&p->data, 0);
                return r == -ENOBUFS ? -EMSGSIZE : r;
        }
        r = buffer_append(&p->data, value, value_len);
        return r == -ENOBUFS ? -EMSGSIZE : r;
}

int sse_feed(SseParser *p, const char *buf, size_t n, sse_event_t on_event, void *userdata) {
        size_t i = 0;
        int r;

        assert(p);
        assert(buf || n == 0);
        assert(on_event);

        /* A UTF-8 byte order mark may open the stream, in pieces too. */
        while (!p->started && i < n) {
                if ((unsigned char) buf[i] != (unsigned char) "\xef\xbb\xbf"[p->bom]) {
                        p->started = true;
                        break;
                }
                i++;
                p->started = ++p->bom == 3;
        }
        while (i < n) {
                size_t end;

                if (p->after_cr && buf[i] == '\n') {
                        p->after_cr = false;
                        i++;
                        continue;
                }
                p->after_cr = false;
                end = find_eol(buf, i, n);
                if (end - i > 0) {
                        r = buffer_append(&p->line, buf + i, end - i);
                        if (r < 0)
                                return r == -ENOBUFS ? -EMSGSIZE : r;
                }
                if (end == n)
                        break;          /* the line goes on in the next chunk */
                p->after_cr = buf[end] == '\r';
                r = buffer_reserve(&p->line, 0);
                if (r < 0)
                        return r == -ENOBUFS ? -EMSGSIZE : r;
                p->line.data[p->line.size] = 0;
                r = take_line(p, p->line.data, p->line.size, on_event, userdata);
                p->line.size = 0;
                if (r < 0)
                        return r;
                i = end + 1;
        }
        return 0;
}
