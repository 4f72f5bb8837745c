/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/tmpfs-client.[ch] against a stand-in for
 * mcp-exec-tmpfsd in the same event loop, on a socket in a scratch
 * directory: answers in order, the daemon's refusals, connections it drops
 * (asked again once, on a new one), no daemon at all, cancelled calls, and
 * what the client still sends as it is freed. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "broker-proto.h"
#include "json-util.h"
#include "macro.h"
#include "socket-util.h"
#include "test-helpers.h"
#include "tmpfs-client.h"
#include "tmpfs-proto.h"

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* How the stand-in answers. */
typedef enum Mode {
        MODE_OK,
        MODE_REFUSE,            /* {"ok":false,"error":"no room"} */
        MODE_DROP_FIRST,        /* closes the first connection on its first request, unanswered */
        MODE_DROP_ALL,          /* closes every connection on its first request */
} Mode;

typedef struct Daemon {
        sd_event *event;
        int listen_fd, conn_fd;
        sd_event_source *listen_io, *conn_io;
        Mode mode;
        unsigned n_conns, n_dropped;
        char log[1024];         /* "op:id " of each request read, in order */
} Daemon;

static void daemon_drop(Daemon *d) {
        d->conn_io = sd_event_source_disable_unref(d->conn_io);
        d->conn_fd = safe_close(d->conn_fd);
}

static int on_conn(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Daemon *d = userdata;
        _cleanup_json_ json_object *req = NULL, *ans = NULL;
        TmpfsRequest r;
        const char *err;
        int k;

        k = packet_recv(fd, &req, NULL, 0, NULL);
        if (k == -EAGAIN)
                return 0;
        if (k <= 0) {
                daemon_drop(d);
                return 0;
        }
        ASSERT_EQ_INT(tmpfs_request_parse(req, &r, &err), 0);
        if (d->mode == MODE_DROP_ALL || (d->mode == MODE_DROP_FIRST && d->n_dropped == 0)) {
                d->n_dropped++;
                daemon_drop(d);
                return 0;
        }
        (void) snprintf(d->log + strlen(d->log), sizeof d->log - strlen(d->log), "%s:%.4s ",
                        tmpfs_op_to_string(r.op), r.id);
        ans = json_object_new_object();
        ASSERT_TRUE(ans && json_add_bool(ans, "ok", d->mode != MODE_REFUSE) >= 0);
        if (d->mode == MODE_REFUSE)
                ASSERT_TRUE(json_add_string(ans, "error", "no room") >= 0);
        /* A client on its way out takes no answer. */
        (void) packet_send(fd, ans, NULL, 0);
        return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Daemon *d = userdata;
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        ASSERT_TRUE(c >= 0);
        daemon_drop(d);         /* one at a time, as the broker holds one */
        d->conn_fd = c;
        d->n_conns++;
        ASSERT_EQ_INT(sd_event_add_io(d->event, &d->conn_io, c, EPOLLIN, on_conn, d), 0);
        return 0;
}

static void daemon_start(Daemon *d, sd_event *e, const char *path, Mode mode) {
        union sockaddr_union sa;
        int salen = sockaddr_un_set_path(&sa.un, path);

        *d = (Daemon) { .event = e, .conn_fd = -EBADF, .mode = mode };
        ASSERT_TRUE(salen > 0);
        d->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        ASSERT_TRUE(d->listen_fd >= 0);
        (void) unlink(path);
        ASSERT_TRUE(bind(d->listen_fd, &sa.sa, (socklen_t) salen) == 0);
        ASSERT_TRUE(listen(d->listen_fd, 8) == 0);
        ASSERT_EQ_INT(sd_event_add_io(e, &d->listen_io, d->listen_fd, EPOLLIN, on_accept, d), 0);
}

static void daemon_stop(Daemon *d, const char *path) {
        daemon_drop(d);
        d->listen_io = sd_event_source_disable_unref(d->listen_io);
        d->listen_fd = safe_close(d->listen_fd);
        (void) unlink(path);
}

typedef struct Answer {
        bool done;
        int error;
        char message[256];
} Answer;

static void on_done(int error, const char *message, void *userdata) {
        Answer *a = userdata;

        ASSERT_FALSE(a->done);  /* exactly once */
        a->done = true;
        a->error = error;
        (void) snprintf(a->message, sizeof a->message, "%s", message ?: "");
}

/* Runs the loop until *flag or a few seconds passed. */
static void run_until(sd_event *e, const bool *flag) {
        for (unsigned i = 0; i < 500 && !*flag; i++)
                ASSERT_TRUE(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

static void run_for(sd_event *e, unsigned ms) {
        for (unsigned i = 0; i < ms / 10; i++)
                ASSERT_TRUE(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

static char dir[] = "/tmp/test-tmpfs-client-XXXXXX";
static char path[64];

TEST(test_in_order) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        TmpfsClient *c = NULL;
        Answer a = {}, b = {};
        Daemon d;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        daemon_start(&d, e, path, MODE_OK);
        ASSERT_EQ_INT(tmpfs_client_new(e, path, &c), 0);
        ASSERT_EQ_INT(tmpfs_client_sweep(c), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_A, 64 << 20, on_done, &a, NULL), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_B, 64 << 20, on_done, &b, NULL), 0);
        ASSERT_EQ_INT(tmpfs_client_umount(c, ID_A), 0);
        /* Never at once: from the loop. */
        ASSERT_FALSE(a.done || b.done);
        run_until(e, &b.done);
        ASSERT_TRUE(a.done && a.error == 0 && b.done && b.error == 0);
        run_for(e, 100);
        ASSERT_STREQ(d.log, "sweep: mount:aaaa mount:bbbb umount:aaaa ");
        ASSERT_EQ_INT(d.n_conns, 1);
        /* What is not a run id or a size in bounds is not even sent. */
        ASSERT_EQ_INT(tmpfs_client_mount(c, "../etc", 64 << 20, on_done, &a, NULL), -EINVAL);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_A, 0, on_done, &a, NULL), -EINVAL);
        ASSERT_EQ_INT(tmpfs_client_umount(c, ID_A "0"), -EINVAL);
        tmpfs_client_free(c);
        daemon_stop(&d, path);
}

TEST(test_refused) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        TmpfsClient *c = NULL;
        Answer a = {};
        Daemon d;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        daemon_start(&d, e, path, MODE_REFUSE);
        ASSERT_EQ_INT(tmpfs_client_new(e, path, &c), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_A, 64 << 20, on_done, &a, NULL), 0);
        run_until(e, &a.done);
        ASSERT_TRUE(a.done && a.error < 0);
        ASSERT_STREQ(a.message, "no room");
        tmpfs_client_free(c);
        daemon_stop(&d, path);
}

/* Nothing listens: every call fails, saying so, and none hangs. */
TEST(test_unreachable) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        TmpfsClient *c = NULL;
        Answer a = {}, b = {};

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        ASSERT_EQ_INT(tmpfs_client_new(e, path, &c), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_A, 64 << 20, on_done, &a, NULL), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_B, 64 << 20, on_done, &b, NULL), 0);
        run_until(e, &b.done);
        ASSERT_TRUE(a.done && a.error == -ENOENT && b.done && b.error == -ENOENT);
        ASSERT_CONTAINS(a.message, "cannot reach mcp-exec-tmpfsd");
        ASSERT_CONTAINS(a.message, path);
        tmpfs_client_free(c);
}

/* The daemon closed the connection (idle, restarted) as the request came:
 * asked again on a new one, once; a second loss fails the call. */
TEST(test_dropped) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        TmpfsClient *c = NULL;
        Answer a = {}, b = {};
        Daemon d;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        daemon_start(&d, e, path, MODE_DROP_FIRST);
        ASSERT_EQ_INT(tmpfs_client_new(e, path, &c), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_A, 64 << 20, on_done, &a, NULL), 0);
        run_until(e, &a.done);
        ASSERT_TRUE(a.done && a.error == 0);
        ASSERT_EQ_INT(d.n_conns, 2);
        ASSERT_STREQ(d.log, "mount:aaaa ");
        tmpfs_client_free(c);
        daemon_stop(&d, path);

        daemon_start(&d, e, path, MODE_DROP_ALL);
        ASSERT_EQ_INT(tmpfs_client_new(e, path, &c), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_B, 64 << 20, on_done, &b, NULL), 0);
        run_until(e, &b.done);
        ASSERT_TRUE(b.done && b.error < 0);
        ASSERT_CONTAINS(b.message, "connection to mcp-exec-tmpfsd broke");
        ASSERT_EQ_INT(d.n_dropped, 2);
        tmpfs_client_free(c);
        daemon_stop(&d, path);
}

/* A cancelled call's request still goes out (its run asks for the removal
 * after it), but nobody is called back. */
TEST(test_cancel) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        TmpfsClient *c = NULL;
        TmpfsCall *call = NULL;
        Answer a = {}, b = {};
        Daemon d;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        daemon_start(&d, e, path, MODE_OK);
        ASSERT_EQ_INT(tmpfs_client_new(e, path, &c), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_A, 64 << 20, on_done, &a, &call), 0);
        call = tmpfs_call_cancel(call);
        ASSERT_TRUE(call == NULL);
        ASSERT_EQ_INT(tmpfs_client_umount(c, ID_A), 0);
        ASSERT_EQ_INT(tmpfs_client_mount(c, ID_B, 64 << 20, on_done, &b, NULL), 0);
        run_until(e, &b.done);
        ASSERT_FALSE(a.done);
        ASSERT_STREQ(d.log, "mount:aaaa umount:aaaa mount:bbbb ");
        tmpfs_client_free(c);
        daemon_stop(&d, path);
}

/* Freed with requests not yet sent (the broker exits right after its runs
 * asked for their removal): they go out all the same. */
TEST(test_free_flushes) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        TmpfsClient *c = NULL;
        Daemon d;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        daemon_start(&d, e, path, MODE_OK);
        ASSERT_EQ_INT(tmpfs_client_new(e, path, &c), 0);
        ASSERT_EQ_INT(tmpfs_client_umount(c, ID_A), 0);
        ASSERT_EQ_INT(tmpfs_client_umount(c, ID_B), 0);
        tmpfs_client_free(c);
        run_for(e, 200);
        ASSERT_STREQ(d.log, "umount:aaaa umount:bbbb ");
        daemon_stop(&d, path);
}

int main(void) {
        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/tmpfs.sock", dir);
        RUN(test_in_order);
        RUN(test_refused);
        RUN(test_unreachable);
        RUN(test_dropped);
        RUN(test_cancel);
        RUN(test_free_flushes);
        ASSERT_TRUE(rmdir(dir) == 0);
        return 0;
}
