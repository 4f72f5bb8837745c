/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for log_struct_after() (src/basic/log.c): an entry waits for
 * the loop's idle moment, after the work of the same turn (a reply being
 * written), keeps its order, and is never lost: past the limit, at detach. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "test-helpers.h"

/* stderr into a pipe (no JOURNAL_STREAM: entries go to stderr), read back. */
static int saved_stderr = -1, pipe_read = -1;

static void capture_begin(void) {
        int p[2];

        ASSERT_TRUE(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        ASSERT_TRUE(saved_stderr >= 0);
        ASSERT_TRUE(dup2(p[1], STDERR_FILENO) == STDERR_FILENO);
        close(p[1]);
        pipe_read = p[0];
}

static char *capture_end(void) {
        static char buf[65536];
        ssize_t n;

        fflush(stderr);
        ASSERT_TRUE(dup2(saved_stderr, STDERR_FILENO) == STDERR_FILENO);
        close(saved_stderr);
        n = read(pipe_read, buf, sizeof buf - 1);
        close(pipe_read);
        buf[n > 0 ? n : 0] = 0;
        return buf;
}

/* What a reply's write stands for: a source of the normal priority. */
static int on_reply(sd_event_source *s, void *userdata) {
        fprintf(stderr, "the reply\n");
        return 0;
}

TEST(test_after_the_reply) {
        sd_event *e = NULL;
        sd_event_source *reply = NULL;
        const char *out, *a, *b, *c;

        ASSERT_TRUE(sd_event_new(&e) >= 0);
        ASSERT_TRUE(log_after_attach(e) >= 0);
        capture_begin();
        /* Logged before the reply is written, as mcp-call.c does. */
        log_struct_after(LOG_INFO, "MESSAGE=call %d done", 1, "MCP_RESULT=%s", "exit:0");
        log_struct_after(LOG_INFO, "MESSAGE=call %d done", 2, "MCP_RESULT=%s", "exit:1");
        ASSERT_TRUE(sd_event_add_defer(e, &reply, on_reply, NULL) >= 0);
        ASSERT_TRUE(sd_event_source_set_enabled(reply, SD_EVENT_ONESHOT) >= 0);
        for (int i = 0; i < 3; i++)
                ASSERT_TRUE(sd_event_run(e, 0) >= 0);
        out = capture_end();
        a = strstr(out, "the reply");
        b = strstr(out, "call 1 done");
        c = strstr(out, "call 2 done");
        ASSERT_TRUE(a && b && c);
        ASSERT_TRUE(a < b && b < c);
        ASSERT_CONTAINS(out, "MCP_RESULT=exit:1");
        log_after_detach();
        sd_event_source_unref(reply);
        sd_event_unref(e);
}

/* Past LOG_AFTER_MAX waiting, an entry is written at once, behind those
 * waiting: none lost, none out of order. */
TEST(test_limit) {
        sd_event *e = NULL;
        char want[32];
        const char *out, *prev = NULL;

        ASSERT_TRUE(sd_event_new(&e) >= 0);
        ASSERT_TRUE(log_after_attach(e) >= 0);
        capture_begin();
        for (int i = 0; i < 100; i++)
                log_struct_after(LOG_INFO, "MESSAGE=entry <%d>", i);
        out = capture_end();
        /* The loop never ran: what is out is the first overflow's flush. */
        ASSERT_CONTAINS(out, "entry <0>");
        capture_begin();
        log_after_detach();
        out = capture_end();
        ASSERT_CONTAINS(out, "entry <99>");
        sd_event_unref(e);

        /* All of them, in order, over both captures: run it again whole. */
        ASSERT_TRUE(sd_event_new(&e) >= 0);
        ASSERT_TRUE(log_after_attach(e) >= 0);
        capture_begin();
        for (int i = 0; i < 100; i++)
                log_struct_after(LOG_INFO, "MESSAGE=entry <%d>", i);
        log_after_detach();
        out = capture_end();
        for (int i = 0; i < 100; i++) {
                const char *p;
                snprintf(want, sizeof want, "entry <%d>", i);
                p = strstr(out, want);
                ASSERT_TRUE(p);
                ASSERT_TRUE(!prev || p > prev);
                prev = p;
        }
        sd_event_unref(e);
}

/* errno when it was logged, not when it is written, even though queueing
 * makes calls of its own. */
TEST(test_errno) {
        sd_event *e = NULL;
        const char *out;

        ASSERT_TRUE(sd_event_new(&e) >= 0);
        ASSERT_TRUE(log_after_attach(e) >= 0);
        capture_begin();
        errno = ENOENT;
        log_struct_after(LOG_INFO, "MESSAGE=cannot open: %m");
        errno = EPERM;
        log_after_detach();
        out = capture_end();
        ASSERT_CONTAINS(out, strerror(ENOENT));
        sd_event_unref(e);
}

/* Without a loop: at once. */
TEST(test_no_loop) {
        const char *out;

        capture_begin();
        log_struct_after(LOG_INFO, "MESSAGE=no loop here");
        out = capture_end();
        ASSERT_CONTAINS(out, "no loop here");
}

int main(void) {
        unsetenv("JOURNAL_STREAM");
        log_open("test-log");
        RUN(test_no_loop);
        RUN(test_after_the_reply);
        RUN(test_limit);
        RUN(test_errno);
        return 0;
}
