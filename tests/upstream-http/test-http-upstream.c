/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/upstream-http's parts without network: the
 * text/event-stream reader (line ends, fields, events split anywhere, caps),
 * Content-Type, response header lines, session ids, credentials as header
 * values, messages as one line. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http-sse.h"
#include "http-util.h"
#include "macro.h"
#include "test-helpers.h"

typedef struct Events {
        char text[4096];                /* the events' data, each followed by '|' */
        unsigned n;
        int fail_at;                    /* > 0: the callback fails on this event */
} Events;

static int on_event(const char *data, size_t len, void *userdata) {
        Events *e = userdata;
        size_t used = strlen(e->text);

        ASSERT_EQ_INT(data[len], 0);            /* NUL-terminated */
        e->n++;
        if (e->fail_at > 0 && (int) e->n == e->fail_at)
                return -EPIPE;
        ASSERT_TRUE(used + len + 2 < sizeof e->text);
        memcpy(e->text + used, data, len);
        e->text[used + len] = '|';
        e->text[used + len + 1] = 0;
        return 0;
}

/* The stream fed whole, then in pieces of every size from 1: the same events. */
static void expect_events(const char *stream, const char *want) {
        size_t n = strlen(stream);

        for (size_t piece = 0; piece <= n; piece++) {
                Events e = {};
                SseParser p;

                sse_parser_init(&p, 1024);
                if (piece == 0)
                        ASSERT_EQ_INT(sse_feed(&p, stream, n, on_event, &e), 0);
                else
                        for (size_t off = 0; off < n; off += piece)
                                ASSERT_EQ_INT(sse_feed(&p, stream + off, MIN(piece, n - off), on_event, &e), 0);
                if (strcmp(e.text, want) != 0)
                        ASSERT_FAIL_("pieces of %zu: '%s' != '%s'", piece, e.text, want);
                sse_parser_done(&p);
        }
}

static void test_sse(void) {
        expect_events("data: one\n\n", "one|");
        expect_events("data: one\r\n\r\ndata: two\r\r", "one|two|");
        /* A CR ending one chunk and an LF starting the next: one line end
         * (else the empty line would dispatch "a" alone). */
        expect_events("data: a\r\ndata: b\r\n\r\n", "a\nb|");
        expect_events("data:no-space\n\ndata:  two spaces\n\n", "no-space| two spaces|");
        expect_events(": comment\n\nevent: message\nid: 7\nretry: 10\ndata: x\n\n", "x|");
        expect_events("data\n\ndata:\n\n", "||");
        expect_events("event: only\n\n\n\n", "");
        expect_events("data: {\"a\":\ndata: 1}\n\n", "{\"a\":\n1}|");
        expect_events("\xef\xbb\xbf" "data: bom\n\n", "bom|");
        expect_events("dat: x\ndata : y\nDATA: z\n\n", "");
        /* An unfinished event at the end of the stream is not dispatched. */
        expect_events("data: done\n\ndata: half", "done|");
}

static void test_sse_limits(void) {
        SseParser p;
        Events e = {};
        char big[100];

        /* A line longer than max. */
        memset(big, 'x', sizeof big);
        sse_parser_init(&p, 64);
        ASSERT_EQ_INT(sse_feed(&p, "data: ", 6, on_event, &e), 0);
        ASSERT_EQ_INT(sse_feed(&p, big, sizeof big, on_event, &e), -EMSGSIZE);
        sse_parser_done(&p);

        /* An event longer than max in lines that each fit. */
        sse_parser_init(&p, 64);
        for (int i = 0; i < 5; i++)     /* 5 x 10 bytes and 4 line feeds between */
                ASSERT_EQ_INT(sse_feed(&p, "data: 0123456789\n", 17, on_event, &e), 0);
        ASSERT_EQ_INT(sse_feed(&p, "data: 0123456789\n", 17, on_event, &e), -EMSGSIZE);
        ASSERT_EQ_INT(e.n, 0);
        sse_parser_done(&p);

        /* Exactly max is fine. */
        sse_parser_init(&p, 16);
        ASSERT_EQ_INT(sse_feed(&p, "data:0123456789a\n\n", 18, on_event, &e), 0);
        ASSERT_STREQ(e.text, "0123456789a|");
        sse_parser_done(&p);

        /* The callback's error stops the feed. */
        e = (Events) { .fail_at = 2 };
        sse_parser_init(&p, 64);
        ASSERT_EQ_INT(sse_feed(&p, "data: a\n\ndata: b\n\ndata: c\n\n", 27, on_event, &e), -EPIPE);
        ASSERT_EQ_INT(e.n, 2);
        sse_parser_done(&p);

        /* A NUL inside a line is text, not its end. */
        e = (Events) {};
        sse_parser_init(&p, 64);
        ASSERT_EQ_INT(sse_feed(&p, "data: a\0b\n\n", 11, on_event, &e), 0);
        ASSERT_EQ_INT(e.n, 1);
        sse_parser_done(&p);
}

static void test_body_kind(void) {
        ASSERT_EQ_INT(http_body_kind("application/json"), HTTP_BODY_JSON);
        ASSERT_EQ_INT(http_body_kind("Application/JSON; charset=utf-8"), HTTP_BODY_JSON);
        ASSERT_EQ_INT(http_body_kind(" text/event-stream"), HTTP_BODY_SSE);
        ASSERT_EQ_INT(http_body_kind("text/event-stream;charset=utf-8"), HTTP_BODY_SSE);
        ASSERT_EQ_INT(http_body_kind("application/jsonx"), HTTP_BODY_OTHER);
        ASSERT_EQ_INT(http_body_kind("text/html"), HTTP_BODY_OTHER);
        ASSERT_EQ_INT(http_body_kind(""), HTTP_BODY_OTHER);
        ASSERT_EQ_INT(http_body_kind(NULL), HTTP_BODY_OTHER);
}

static void test_headers(void) {
        const char *v;
        size_t n;
        char long_id[HTTP_SESSION_ID_MAX + 2];

        ASSERT_EQ_INT(http_header_match("Mcp-Session-Id: abc-1\r\n", 23, "Mcp-Session-Id", &v, &n), 1);
        ASSERT_EQ_U64(n, 5);
        ASSERT_TRUE(strneq(v, "abc-1", 5));
        ASSERT_EQ_INT(http_header_match("mcp-session-id:\t x \r\n", 21, "Mcp-Session-Id", &v, &n), 1);
        ASSERT_EQ_U64(n, 1);
        ASSERT_EQ_INT(http_header_match("mcp-session-id:\r\n", 17, "Mcp-Session-Id", &v, &n), 1);
        ASSERT_EQ_U64(n, 0);
        ASSERT_EQ_INT(http_header_match("Mcp-Session-Idx: a\r\n", 20, "Mcp-Session-Id", &v, &n), 0);
        ASSERT_EQ_INT(http_header_match("Mcp-Session: a\r\n", 16, "Mcp-Session-Id", &v, &n), 0);
        ASSERT_EQ_INT(http_header_match("HTTP/1.1 200 OK\r\n", 17, "Mcp-Session-Id", &v, &n), 0);

        ASSERT_TRUE(http_session_id_is_valid("1868a90c-0d6f-4d57-b9ae-5b7e3c1b7bd8", 36));
        ASSERT_TRUE(http_session_id_is_valid("!~", 2));
        ASSERT_FALSE(http_session_id_is_valid("", 0));
        ASSERT_FALSE(http_session_id_is_valid("a b", 3));
        ASSERT_FALSE(http_session_id_is_valid("a\r\nX-Evil: 1", 12));
        ASSERT_FALSE(http_session_id_is_valid("\xc3\xa9", 2));
        memset(long_id, 'a', sizeof long_id);
        ASSERT_TRUE(http_session_id_is_valid(long_id, HTTP_SESSION_ID_MAX));
        ASSERT_FALSE(http_session_id_is_valid(long_id, HTTP_SESSION_ID_MAX + 1));
}

static void expect_credential(const char *data, size_t n, const char *want) {
        char *v = NULL;

        if (!want) {
                ASSERT_EQ_INT(http_credential_value(data, n, &v), -EINVAL);
                ASSERT_TRUE(!v);
                return;
        }
        ASSERT_EQ_INT(http_credential_value(data, n, &v), 0);
        ASSERT_STREQ(v, want);
        free(v);
}

static void test_credentials(void) {
        char *big = malloc(HTTP_CREDENTIAL_VALUE_MAX + 2);

        expect_credential("Bearer abc\n", 11, "Bearer abc");
        expect_credential("Bearer abc\r\n", 12, "Bearer abc");
        expect_credential("abc", 3, "abc");
        /* A line break inside would be a header of the file's choosing. */
        expect_credential("abc\r\nX-Evil: 1\n", 15, NULL);
        expect_credential("abc\nX-Evil: 1", 13, NULL);
        expect_credential("abc\n\n", 5, NULL);
        expect_credential("a\0b", 3, NULL);
        expect_credential("a\tb", 3, NULL);
        expect_credential("\xc3\xa9", 2, NULL);
        expect_credential("", 0, NULL);
        expect_credential("\n", 1, NULL);
        expect_credential(" abc", 4, NULL);
        expect_credential("abc \n", 5, NULL);
        ASSERT_TRUE(big);
        memset(big, 'k', HTTP_CREDENTIAL_VALUE_MAX + 1);
        big[HTTP_CREDENTIAL_VALUE_MAX] = '\n';
        {
                char *v = NULL;
                ASSERT_EQ_INT(http_credential_value(big, HTTP_CREDENTIAL_VALUE_MAX + 1, &v), 0);
                ASSERT_EQ_U64(strlen(v), HTTP_CREDENTIAL_VALUE_MAX);
                free(v);
        }
        big[HTTP_CREDENTIAL_VALUE_MAX] = 'k';
        expect_credential(big, HTTP_CREDENTIAL_VALUE_MAX + 1, NULL);
        free(big);
}

static void test_one_line(void) {
        char s[] = "{\r\n  \"a\": 1,\n  \"b\": \"x\\ny\"\r}";

        http_message_one_line(s, strlen(s));
        ASSERT_STREQ(s, "{    \"a\": 1,   \"b\": \"x\\ny\" }");
        http_message_one_line(NULL, 0);
}

int main(void) {
        test_sse();
        test_sse_limits();
        test_body_kind();
        test_headers();
        test_credentials();
        test_one_line();
        return 0;
}
