/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A reader of text/event-stream (the WHATWG "server-sent events" format), as
 * an MCP Streamable HTTP server answers a POST or a GET with it: lines ending
 * in LF, CRLF or CR (a CR at the end of one chunk and an LF at the start of
 * the next are one line end), "data:" lines joined with LF into an event, a
 * blank line dispatching it, ":" comments and the other fields ("event",
 * "id", "retry") taken or ignored. Only events with data are handed on. An
 * event (its data) or a line longer than max is an error: nothing an
 * upstream sends makes it hold more. */

#include <stdbool.h>
#include <stddef.h>

#include "buffer.h"

typedef struct SseParser {
        Buffer line;                    /* the line so far */
        Buffer data;                    /* the event's data so far */
        bool has_data;                  /* a data field was seen (an empty one too) */
        bool after_cr;                  /* the last byte was a CR: an LF next is part of that line end */
        bool started;                   /* past a leading byte order mark */
        unsigned bom;                   /* bytes of it seen */
} SseParser;

/* max: the longest line and the largest event's data. */
void sse_parser_init(SseParser *p, size_t max);
void sse_parser_done(SseParser *p);

/* Called with each event's data (NUL-terminated, the LFs between its data
 * lines included); a negative return stops sse_feed() with it. */
typedef int (*sse_event_t)(const char *data, size_t len, void *userdata);

/* Takes the next bytes of the stream. 0; -EMSGSIZE past max; -ENOMEM; or
 * what on_event returned. */
int sse_feed(SseParser *p, const char *buf, size_t n, sse_event_t on_event, void *userdata);
