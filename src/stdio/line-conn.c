/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "line-conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buffer.h"
#include "mem-budget.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "util.h"

/* A peer is dropped, and its bytes freed, when more than this waits unread
 * behind the line it is reading (out_mark): a reply of any size (a result
 * may be several MiB) goes to a peer that keeps up, however slowly it reads
 * that one, but what queues behind is small unless the peer stalls:
 * progress notifications (under 1 KiB each: the token is bounded) of the
 * calls it has running, and replies to what it sent before we stopped
 * reading it (OUT_PAUSE_BYTES). A peer that reads at all takes 256 KiB in
 * milliseconds. Everything out holds is charged in the budget, refusably. */
#define OUT_BACKLOG_MAX (256U * 1024U)
/* Past this much unread output we stop reading the peer's requests until it
 * has read: a peer that does not read cannot make us hold more and more. */
#define OUT_PAUSE_BYTES (256U * 1024U)

struct LineConn {
        sd_event *event;
        McpServer *server;
        McpSession *session;
        McpPeer peer;
        int in_fd, out_fd;
        bool same_fd;
        sd_event_source *in_io, *out_io, *defer;

        Buffer in;              /* grows up to max_line, drawing on budget past the free part */
        MemBudget *budget;
        bool skipping;          /* discarding the rest of an over-long line */
        bool received;          /* a whole message came */
        bool read_eof, close_after_flush, closed;

        Buffer out;             /* no limit of its own: OUT_BACKLOG_MAX counts from out_mark */
        size_t out_off;
        /* The end of what the peer is reading: the first line queued after
         * it had read everything, and all that was queued when it got past
         * that. */
        size_t out_mark;
        MemCharge out_charge;   /* out, in budget, to the session's caller */
        bool in_paused;         /* reading stopped while out is full */
        /* What was read but not yet handled: the rest of a read once out
         * filled up behind one of its lines (at most one read; handled
         * before anything new is read), and the source that handles it. */
        Buffer rest;
        sd_event_source *rest_defer;

        line_conn_closed_t on_closed;
        void *userdata;
};

static bool conn_done(LineConn *c) {
        assert(c);

        if (c->out.size > c->out_off)
                return false;
        if (c->close_after_flush)
                return true;
        return c->read_eof && (!c->session || mcp_session_in_flight(c->session) == 0);
}

static int on_defer(sd_event_source *s, void *userdata) {
        LineConn *c = userdata;

        assert(c);

        if (c->closed || conn_done(c)) {
                c->closed = true;
                /* The owner frees us from here: nothing runs after this. */
                c->on_closed(c, c->userdata);
        }
        return 0;
}

/* Everything that ends a connection goes through the event loop, never from
 * inside a callback chain that still holds the connection. */
static void conn_schedule_check(LineConn *c) {
        assert(c);

        if (!c->defer) {
                if (sd_event_add_defer(c->event, &c->defer, on_defer, c) < 0)
                        return;
                (void) sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
        } else
                (void) sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
}

static void conn_close(LineConn *c) {
        assert(c);

        if (c->closed)
                return;
        c->closed = true;
        c->in_io = sd_event_source_disable_unref(c->in_io);
        c->rest_defer = sd_event_source_disable_unref(c->rest_defer);
        c->out_io = sd_event_source_disable_unref(c->out_io);
        conn_schedule_check(c);
}

static void conn_check_done(LineConn *c) {
        assert(c);

        if (!c->closed && conn_done(c))
                conn_schedule_check(c);
}

static void on_session_idle(McpSession *s, void *userdata) {
        conn_check_done(userdata);
}

static int flush_output(LineConn *c) {
        assert(c);

        while (c->out_off < c->out.size) {
                ssize_t k = write(c->out_fd, c->out.data + c->out_off, c->out.size - c->out_off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        return negative_errno();
                }
                c->out_off += (size_t) k;
        }
        /* Past what it was reading: what came since is now. */
        if (c->out_off >= c->out_mark)
                c->out_mark = c->out.size;
        if (c->out_off == c->out.size)
                c->out_off = c->out.size = c->out_mark = 0;
        return 0;
}

/* out counts in the memory budget while it lives, bytes in all, to the
 * session's caller. Refusable (-EBUSY, nothing changes): the peer decides
 * how large its replies and how many its notifications are. What the core
 * charged for the message already (a call's reply) is taken over first. */
static int out_hold(LineConn *c, uint64_t bytes, MemCharge *donor) {
        uint64_t before;
        int r;

        assert(c);

        if (!c->out_charge.budget) {
                if (!c->budget || !c->session || bytes == 0)
                        return 0;
                r = mem_charge_init(&c->out_charge, c->budget, mcp_session_caller(c->session));
                if (r < 0)
                        return r;
        }
        before = c->out_charge.bytes;
        if (donor && donor->budget)
                mem_charge_move(&c->out_charge, donor);
        r = mem_charge_set(&c->out_charge, bytes);
        if (r < 0)
                /* What the donor held goes back with it: it was to be freed. */
                (void) mem_charge_set(&c->out_charge, before);
        return r;
}

/* Past this the peer's requests wait until it has read. */
static bool out_full(const LineConn *c) {
        assert(c);

        return c->out.size - c->out_off > OUT_PAUSE_BYTES;
}

static int update_out_watch(LineConn *c) {
        bool want, pause;

        assert(c);

        want = c->out.size > c->out_off;
        pause = out_full(c);

        if (!want && c->out.allocated > MEM_BUDGET_FREE)
                /* A large reply went out: give its room back. */
                buffer_free(&c->out);
        (void) out_hold(c, c->out.allocated, NULL);     /* never more than before: cannot fail */
        /* What was read already goes first, then new input. */
        pause = pause || c->rest.size > 0;
        if (c->in_io && pause != c->in_paused &&
            sd_event_source_set_enabled(c->in_io, pause ? SD_EVENT_OFF : SD_EVENT_ON) >= 0)
                c->in_paused = pause;
        if (c->rest_defer)
                (void) sd_event_source_set_enabled(c->rest_defer, c->rest.size > 0 && !out_full(c) ? SD_EVENT_ONESHOT
                                                                                                 : SD_EVENT_OFF);
        if (c->out_io)
                return sd_event_source_set_enabled(c->out_io, want ? SD_EVENT_ON : SD_EVENT_OFF);
        return 0;
}

static int on_out(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        LineConn *c = userdata;

        assert(c);

        if (flush_output(c) < 0) {
                conn_close(c);  /* the peer is gone */
                return 0;
        }
        (void) update_out_watch(c);
        conn_check_done(c);
        return 0;
}

/* The peer does not read: the connection ends, and what it held goes now. */
static void out_drop(LineConn *c, size_t backlog) {
        assert(c);

        log_struct(LOG_WARNING,
                   "MESSAGE=Peer does not read its replies (%zu bytes waiting behind what it reads), dropping the "
                   "connection.", backlog,
                   "MCP_TRANSPORT=%s", c->peer.transport ?: "stdio",
                   "MCP_CALLER=%s", c->session ? mcp_session_caller(c->session) : "",
                   "MCP_STREAM_BACKLOG_BYTES=%zu", backlog);
        buffer_free(&c->out);
        c->out_off = c->out_mark = 0;
        (void) out_hold(c, 0, NULL);
        conn_close(c);
}

/* Room for n more bytes, exactly (no doubling: what is allocated is what
 * is charged), after moving what is unread to the front once the part
 * already written is as large. */
static size_t out_room_for(LineConn *c, size_t n) {
        assert(c);

        if (c->out_off > 0 && c->out_off >= c->out.size - c->out_off) {
                memmove(c->out.data, c->out.data + c->out_off, c->out.size - c->out_off);
                c->out.size -= c->out_off;
                c->out_mark -= MIN(c->out_mark, c->out_off);
                c->out_off = 0;
        }
        return MAX(c->out.allocated, c->out.size + n);
}

static int queue_line(LineConn *c, const char *json, size_t len, MemCharge *donor) {
        size_t backlog, want, limit;
        bool empty;
        int r;

        assert(c);
        assert(json);

        if (c->closed)
                return -EPIPE;
        backlog = c->out.size - MAX(c->out_off, c->out_mark);
        if (backlog > OUT_BACKLOG_MAX) {
                out_drop(c, backlog);
                return -ENOBUFS;
        }
        if (len >= SIZE_MAX / 2 - c->out.size)
                return -ENOBUFS;
        want = out_room_for(c, len + 1);
        /* Charged before it is taken. */
        r = out_hold(c, want, donor);
        if (r < 0)
                return r;
        /* Grows to exactly want: buffer_reserve() doubles up to the limit. */
        limit = c->out.limit;
        c->out.limit = want;
        r = buffer_reserve(&c->out, len + 1);
        c->out.limit = limit;
        if (r < 0) {
                (void) out_hold(c, c->out.allocated, NULL);
                return r;
        }
        empty = c->out_off == c->out.size;
        memcpy(c->out.data + c->out.size, json, len);
        c->out.data[c->out.size + len] = '\n';
        c->out.size += len + 1;
        /* The first line after the peer caught up is what it reads next. */
        if (empty)
                c->out_mark = c->out.size;

        if (flush_output(c) < 0) {
                conn_close(c);
                return -EPIPE;
        }
        (void) update_out_watch(c);
        return 0;
}

static int session_send(McpSession *s, const McpMessage *m, void *userdata) {
        _cleanup_free_ char *busy = NULL;
        LineConn *c = userdata;
        size_t len;
        int r = 0;

        assert(m);
        assert(c);

        /* A request that ends unanswered needs nothing on a line stream. */
        if (m->json)
                r = queue_line(c, m->json, m->len, m->charge);
        if (r < 0 && m->kind == MCP_MESSAGE_REQUEST) {
                /* A question to the client that does not fit: its asker
                 * hears so; the session goes on. */
                conn_check_done(c);
                return -ENOTCONN;
        }
        if (r == -EBUSY && m->kind == MCP_MESSAGE_NOTIFICATION) {
                /* Progress is a courtesy: skipped when it does not fit. */
                log_debug("A notification of %zu bytes does not fit in the memory budget, skipped.", m->len);
                r = 0;
        } else if (r == -EBUSY) {
                log_struct(LOG_WARNING,
                           "MESSAGE=A reply of %zu bytes does not fit in the memory budget; sending \"server busy\".",
                           m->len,
                           "MCP_TRANSPORT=%s", c->peer.transport ?: "stdio",
                           "MCP_CALLER=%s", mcp_session_caller(s));
                r = jsonrpc_error_serialize(m->id, JSONRPC_SERVER_ERROR,
                                            "Server busy: the reply does not fit in the server's memory budget now; "
                                            "retry later", &busy, &len);
                if (r >= 0)
                        r = queue_line(c, busy, len, NULL);
                if (r == -EBUSY || r == -ENOMEM)
                        /* Not even that: the peer would wait for ever. */
                        conn_close(c);
        }
        conn_check_done(c);
        return r;
}

static const McpTransport line_transport = { .send = session_send };

static void handle_line(LineConn *c, char *line, size_t len) {
        assert(c);
        assert(line);

        /* Tolerate CRLF and blank lines between messages. */
        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (len == 0 || !c->session)
                return;
        if (mcp_session_handle(c->session, line, len, 0) < 0)
                log_warning("Failed to handle a message, ignoring.");
}

static void too_long(LineConn *c) {
        _cleanup_free_ char *msg = NULL;
        size_t len;

        assert(c);

        if (jsonrpc_error_serialize(NULL, JSONRPC_INVALID_REQUEST, "message too large", &msg, &len) < 0) {
                (void) log_oom();
                return;
        }
        if (queue_line(c, msg, len, NULL) == -EBUSY)
                /* Not even this fits: the peer learns by the end of the stream. */
                conn_close(c);
}

static void over_budget(LineConn *c) {
        _cleanup_free_ char *msg = NULL;
        size_t len;

        assert(c);

        if (jsonrpc_error_serialize(NULL, JSONRPC_SERVER_ERROR,
                                    "Server busy: too much input in flight from all clients; retry later", &msg,
                                    &len) < 0) {
                (void) log_oom();
                return;
        }
        if (queue_line(c, msg, len, NULL) == -EBUSY)
                /* Not even this fits: the peer learns by the end of the stream. */
                conn_close(c);
}

/* Room for n more bytes of a line (plus its NUL), charged to the budget
 * before it is taken. */
static int in_reserve(LineConn *c, size_t n) {
        size_t have, a;
        int r;

        assert(c);

        have = c->in.allocated;
        if (c->in.size + n <= have)
                return 0;
        a = buffer_grow_size(&c->in, n);
        if (!mem_budget_grow_input(c->budget, have, a))
                return -ENOBUFS;
        r = buffer_reserve(&c->in, n);
        if (r < 0) {
                (void) mem_budget_grow_input(c->budget, a, have);
                return r;
        }
        return 0;
}

/* After a large line: back to the small buffer, the budget given back. */
static void in_shrink(LineConn *c) {
        size_t have;

        assert(c);

        have = c->in.allocated;
        if (have <= MEM_BUDGET_FREE)
                return;
        buffer_shrink(&c->in, MEM_BUDGET_FREE);
        (void) mem_budget_grow_input(c->budget, have, c->in.allocated);
}

/* Handles the lines in data; once out is full behind one, what follows is
 * kept in rest, for when the peer has read: replies to one read of small
 * requests could otherwise be many times OUT_BACKLOG_MAX. */
static void feed(LineConn *c, const char *data, size_t len) {
        assert(c);
        assert(data || len == 0);

        for (const char *p = data, *end = data + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = (size_t) ((nl ? nl : end) - p);

                if (c->skipping) {
                        if (nl)
                                c->skipping = false;
                } else if (c->in.size + n > c->in.limit) {
                        too_long(c);
                        c->in.size = 0;
                        c->skipping = !nl;
                        in_shrink(c);
                } else if (in_reserve(c, n) < 0) {
                        over_budget(c);
                        c->in.size = 0;
                        c->skipping = !nl;
                        in_shrink(c);
                } else {
                        memcpy(c->in.data + c->in.size, p, n);
                        c->in.size += n;
                        if (nl) {
                                c->in.data[c->in.size] = 0;
                                size_t l = c->in.size;
                                c->in.size = 0;
                                c->received = true;
                                handle_line(c, c->in.data, l);
                                if (c->closed)
                                        return;
                                in_shrink(c);
                                if (out_full(c) && p + n + 1 < end) {
                                        if (buffer_append(&c->rest, p + n + 1, (size_t) (end - p - n - 1)) < 0)
                                                conn_close(c);  /* out of memory: a request would be lost */
                                        (void) update_out_watch(c);
                                        return;
                                }
                        }
                }
                p += n + (nl ? 1 : 0);
        }
}

static int on_rest(sd_event_source *s, void *userdata) {
        LineConn *c = userdata;
        Buffer rest;

        assert(c);

        /* feed() may keep a new rest: it goes into c->rest again. */
        rest = c->rest;
        c->rest = BUFFER_INIT(c->rest.limit);
        feed(c, rest.data, rest.size);
        buffer_free(&rest);
        if (!c->closed)
                (void) update_out_watch(c);
        return 0;
}

static int on_in(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        LineConn *c = userdata;
        char buf[64 * 1024];
        ssize_t k;

        assert(c);

        k = read(fd, buf, sizeof buf);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                k = 0;
        }
        if (k == 0) {
                /* EOF. A peer that only shut down its writing side still gets
                 * the replies to what it sent; one that is gone entirely gets
                 * its runs stopped (mcp_session_free in the owner). */
                c->read_eof = true;
                c->in_io = sd_event_source_disable_unref(c->in_io);
                if ((revents & EPOLLHUP) && !c->same_fd)
                        ;       /* a pipe: HUP just means the writer closed */
                else if ((revents & EPOLLHUP) && c->same_fd) {
                        conn_close(c);
                        return 0;
                }
                conn_check_done(c);
                return 0;
        }

        feed(c, buf, (size_t) k);
        return 0;
}

static int on_in_file(sd_event_source *s, void *userdata) {
        LineConn *c = userdata;

        assert(c);

        return on_in(s, c->in_fd, 0, c);
}

int line_conn_new(sd_event *e, McpServer *server, int in_fd, int out_fd, const McpPeer *peer, size_t max_line,
                  line_conn_closed_t closed, void *userdata, LineConn **ret) {
        LineConn *c;

        assert(e);
        assert(server);
        assert(peer);
        assert(ret);

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->event = sd_event_ref(e);
        c->server = server;
        c->in_fd = in_fd;
        c->out_fd = out_fd;
        c->same_fd = in_fd == out_fd;
        if (c->same_fd) {
                /* epoll takes one registration per fd, and the input watch has
                 * it: the output watch gets its own fd for the same socket.
                 * (Without it, a reply larger than the socket buffer stalled
                 * until the peer sent something else.) */
                c->out_fd = fcntl(in_fd, F_DUPFD_CLOEXEC, 3);
                if (c->out_fd < 0) {
                        int r = negative_errno();
                        c->out_fd = in_fd;
                        line_conn_free(c);
                        return r;
                }
        }
        c->peer = *peer;
        c->on_closed = closed;
        c->userdata = userdata;
        c->in = BUFFER_INIT(max_line);
        c->out = BUFFER_INIT(SIZE_MAX);
        c->rest = BUFFER_INIT(64 * 1024);
        if (buffer_reserve(&c->in, MIN(max_line, MEM_BUDGET_FREE)) < 0) {
                line_conn_free(c);
                return -ENOMEM;
        }
        (void) fd_nonblock(in_fd, true);
        (void) fd_nonblock(c->out_fd, true);
        if (sd_event_add_defer(e, &c->rest_defer, on_rest, c) < 0 ||
            sd_event_source_set_enabled(c->rest_defer, SD_EVENT_OFF) < 0) {
                line_conn_free(c);
                return -ENOMEM;
        }
        if (sd_event_add_io(e, &c->out_io, c->out_fd, EPOLLOUT, on_out, c) < 0) {
                /* Regular files cannot be polled; they never block either. */
                c->out_io = NULL;
        } else
                (void) sd_event_source_set_enabled(c->out_io, SD_EVENT_OFF);
        *ret = c;
        return 0;
}

int line_conn_start(LineConn *c) {
        int r;

        assert(c);

        r = mcp_session_new(c->server, &line_transport, c, &c->peer, &c->session);
        if (r < 0)
                return r;
        /* A cancelled last call sends nothing: learn of idleness anyway. */
        mcp_session_set_idle_callback(c->session, on_session_idle);
        r = sd_event_add_io(c->event, &c->in_io, c->in_fd, EPOLLIN, on_in, c);
        if (r == -EPERM) {
                /* A regular file (mcp-execd --stdio < requests.jsonl) cannot
                 * be polled; it never blocks, so read it from a defer source. */
                r = sd_event_add_defer(c->event, &c->in_io, on_in_file, c);
                if (r >= 0)
                        r = sd_event_source_set_enabled(c->in_io, SD_EVENT_ON);
        }
        return r;
}

void line_conn_set_budget(LineConn *c, MemBudget *budget) {
        assert(c);
        /* Before any input: nothing taken from another budget yet. */
        assert(c->in.allocated <= MEM_BUDGET_FREE);
        c->budget = budget;
}

bool line_conn_has_received(const LineConn *c) {
        return c && c->received;
}

int line_conn_send_and_close(LineConn *c, const char *json) {
        int r;

        assert(c);
        assert(json);

        r = queue_line(c, json, strlen(json), NULL);
        c->close_after_flush = true;
        conn_check_done(c);
        return r;
}

LineConn *line_conn_free(LineConn *c) {
        if (!c)
                return NULL;
        /* The session first: it cancels runs and may still want to send. */
        c->closed = true;
        c->session = mcp_session_free(c->session);
        sd_event_source_disable_unref(c->in_io);
        sd_event_source_disable_unref(c->rest_defer);
        sd_event_source_disable_unref(c->out_io);
        sd_event_source_disable_unref(c->defer);
        if (c->in_fd != c->out_fd)
                safe_close(c->out_fd);
        safe_close(c->in_fd);
        mem_budget_release_input(c->budget, c->in.allocated);
        mem_charge_done(&c->out_charge);
        buffer_free(&c->in);
        buffer_free(&c->rest);
        buffer_free(&c->out);
        sd_event_unref(c->event);
        free(c);
        return NULL;
}
