/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "http-request.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "http-internal.h"
#include "http-util.h"
#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "util.h"

/* One HTTP request from its headers to its end: the replies it gives
 * (whole, or an SSE stream), and its suspension while it waits for one.
 * What the request is for (the routes) is decided elsewhere. */

/* Bytes handed to MHD per read of an SSE stream. */
#define SSE_BLOCK_SIZE ((size_t) 64 * 1024)
/* A stream is dropped, and its bytes freed, when more than this waits
 * unread behind what its client is reading (HttpSse.mark): a reply of any
 * size (a result may be several MiB) goes into a stream that keeps up,
 * however slowly it reads that one, but what queues behind it is small
 * unless the client stalls: progress notifications (under 1 KiB each, the
 * token is bounded), task status, keep-alives. 256 KiB is minutes of them
 * for every call a session may have, and a client that reads at all takes
 * it in milliseconds. So a stream that stops reading holds at most what it
 * was reading, this, and one more message; all of it is charged in the
 * memory budget, refusably, besides. */
#define SSE_BACKLOG_MAX ((size_t) 256 * 1024)
/* A short error in place of a reply that the memory budget cannot hold;
 * this small and once per request, it is not charged (as MHD's own buffer
 * of each connection). */
#define BUSY_TEXT "Server busy: the reply does not fit in the server's memory budget now; retry later"

const char *http_request_header(HttpRequest *req, const char *name) {
        assert(req);
        assert(name);

        return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

void http_request_log_peer(HttpRequest *req, char *buf, size_t size) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = i ? i->client_addr : NULL;
        char a[INET6_ADDRSTRLEN] = "?";

        assert(req);
        assert(buf);

        if (sa && sa->sa_family == AF_INET)
                (void) inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, a, sizeof a);
        else if (sa && sa->sa_family == AF_INET6)
                (void) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, a, sizeof a);
        else if (sa && sa->sa_family == AF_UNIX)
                (void) snprintf(a, sizeof a, "local");
        (void) snprintf(buf, size, "%s", a);
}

static int on_hangup(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        HttpRequest *req = userdata;

        assert(s);
        assert(userdata);

        /* Suspended connections are not watched by MHD; without this a client
         * that gave up would be noticed only at our next write. */
        log_debug("HTTP client closed its connection while waiting (%s %s).", req->method, req->url);
        req->peer_gone = true;
        http_request_resume(req);
        return 0;
}

void http_request_suspend(HttpRequest *req) {
        HttpServer *h = req->server;
        const union MHD_ConnectionInfo *i;

        assert(req);

        if (req->suspended)
                return;
        MHD_suspend_connection(req->conn);
        req->suspended = true;
        LIST_PREPEND(susp, h->suspended, req);

        /* Only the peer's FIN: EPOLLIN would fire for a pipelined request.
         * A client that half-closes and still waits loses its reply; HTTP
         * clients do not do that. */
        i = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (i && sd_event_add_io(h->event, &req->hangup, i->connect_fd, EPOLLRDHUP, on_hangup, req) < 0)
                req->hangup = NULL;
}

void http_request_resume(HttpRequest *req) {
        HttpServer *h = req->server;

        assert(req);

        if (!req->suspended)
                return;
        req->hangup = sd_event_source_disable_unref(req->hangup);
        LIST_REMOVE(susp, h->suspended, req);
        req->suspended = false;
        MHD_resume_connection(req->conn);
        http_pump_run_soon(h);
}

mhd_result http_request_queue(HttpRequest *req, unsigned status, struct MHD_Response *resp) {
        mhd_result r;

        assert(req);

        if (!resp)
                return MHD_NO;
        if (req->origin &&
            (MHD_add_response_header(resp, "Access-Control-Allow-Origin", req->origin) == MHD_NO ||
             MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                     "Mcp-Session-Id, WWW-Authenticate") == MHD_NO ||
             MHD_add_response_header(resp, "Vary", "Origin") == MHD_NO)) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        r = MHD_queue_response(req->conn, status, resp);
        MHD_destroy_response(resp);
        if (r == MHD_YES)
                req->state = REQUEST_DONE;
        return r;
}

mhd_result http_request_json(HttpRequest *req, unsigned status, char *body, size_t size, const char *session_id) {
        struct MHD_Response *resp;

        assert(req);
        assert(body);

        resp = MHD_create_response_from_buffer(size, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        if (MHD_add_response_header(resp, "Content-Type", "application/json") == MHD_NO ||
            (session_id && MHD_add_response_header(resp, "Mcp-Session-Id", session_id) == MHD_NO)) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        return http_request_queue(req, status, resp);
}

mhd_result http_request_error(HttpRequest *req, unsigned status, int code, const char *message) {
        _cleanup_json_ json_object *e = jsonrpc_error_new(NULL, code, message, NULL);
        struct MHD_Response *resp;
        const char *text;
        size_t len;

        assert(req);
        assert(message);

        if (!e || !(text = json_serialize(e, &len)))
                return MHD_NO;
        resp = MHD_create_response_from_buffer(len, (void *) text, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        if (MHD_add_response_header(resp, "Content-Type", "application/json") == MHD_NO ||
            (status == MHD_HTTP_UNAUTHORIZED &&
             MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"mcp-exec\"") == MHD_NO) ||
            (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
             MHD_add_response_header(resp, "Allow",
                                     streq(req->url, "/mcp") ? "GET, POST, DELETE" :
                                     streq(req->url, "/sse") ? "GET" :
                                     streq(req->url, "/messages") ? "POST" : "GET, HEAD") == MHD_NO) ||
            (status == MHD_HTTP_SERVICE_UNAVAILABLE && MHD_add_response_header(resp, "Retry-After", "5") == MHD_NO)) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        return http_request_queue(req, status, resp);
}

mhd_result http_request_empty(HttpRequest *req, unsigned status) {
        assert(req);

        return http_request_queue(req, status, MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
}

/* What a request holds for its client (a reply, an SSE stream's buffer)
 * counts in the memory budget, charged to its MCP session's caller until it
 * is sent: bytes in all. Refusable (-EBUSY, nothing changes): a client
 * decides how large its replies and how many its notifications are. What
 * the core charged for the message already (a call's reply) is taken over
 * first, so that the room it made is the room used. */
static int request_hold(HttpRequest *req, uint64_t bytes, MemCharge *donor) {
        HttpServer *h = req->server;
        uint64_t before;
        int r;

        assert(req);

        if (!req->held.budget) {
                if (!h->config.budget || !req->route.session || !req->route.session->mcp || bytes == 0)
                        return 0;
                r = mem_charge_init(&req->held, h->config.budget, mcp_session_caller(req->route.session->mcp));
                if (r < 0)
                        return r;
        }
        before = req->held.bytes;
        if (donor && donor->budget)
                mem_charge_move(&req->held, donor);
        r = mem_charge_set(&req->held, bytes);
        if (r < 0)
                /* What the donor held goes back with it: it was to be freed. */
                (void) mem_charge_set(&req->held, before);
        return r;
}

static void shared_drop(McpShared *s) {
        if (s->owner)
                s->unref(s->owner);
        *s = (McpShared) {};
}

static int set_reply(HttpRequest *req, unsigned status, const char *type, char *body, size_t size,
                     const McpShared *shared, MemCharge *donor) {
        int r;

        assert(req);

        /* Only body's bytes are this reply's: a shared part is charged once,
         * where it is kept. */
        r = request_hold(req, body ? size : 0, donor);
        if (r < 0) {
                free(body);
                return r;
        }
        shared_drop(&req->reply.shared);
        free(req->reply.data);
        req->reply.data = body;
        req->reply.size = size;
        req->reply.status = status;
        req->reply.type = type;
        req->reply.ready = true;
        if (shared) {
                shared->ref(shared->owner);
                req->reply.shared = *shared;
        }
        http_request_resume(req);
        return 0;
}

int http_request_set_busy_reply(HttpRequest *req, json_object *id) {
        char *body;
        size_t len;
        int r;

        assert(req);

        r = jsonrpc_error_serialize(id, JSONRPC_SERVER_ERROR, BUSY_TEXT, &body, &len);
        if (r < 0)
                return r;
        (void) request_hold(req, 0, NULL);
        shared_drop(&req->reply.shared);
        free(req->reply.data);
        req->reply = (HttpReply) {
                .ready = true,
                .session_header = req->reply.session_header,
                .status = MHD_HTTP_OK,
                .type = "application/json",
                .data = body,
                .size = len,
        };
        http_request_resume(req);
        return 0;
}

int http_request_set_reply(HttpRequest *req, unsigned status, const char *type, char *body, size_t size,
                           MemCharge *donor) {
        return set_reply(req, status, type, body, size, NULL, donor);
}

int http_request_set_reply_shared(HttpRequest *req, unsigned status, const char *type, char *body, size_t size,
                                  const McpShared *shared, MemCharge *donor) {
        assert(body);
        assert(shared);
        assert(shared->at <= size);

        return set_reply(req, status, type, body, size, shared, donor);
}

/* A reply handed to MHD, with its charge: given back when MHD is done with
 * it (sent, or the connection gone or timed out). */
typedef struct HeldReply {
        char *data;
        MemCharge charge;
        McpShared shared;
} HeldReply;

static void held_reply_free(void *p) {
        HeldReply *r = p;

        assert(p);

        shared_drop(&r->shared);
        mem_charge_done(&r->charge);
        free(r->data);
        free(r);
}

mhd_result http_request_queue_reply(HttpRequest *req) {
        struct MHD_Response *resp;
        HeldReply *held;

        assert(req);
        assert(req->reply.ready);

        req->reply.ready = false;
        held = new0(HeldReply, 1);
        if (!held)
                return MHD_NO;
        if (req->reply.shared.data) {
                /* The part around the shared one, and that one from its
                 * one copy: nothing of it is copied for this reply. */
                const McpShared *sh = &req->reply.shared;
                const struct MHD_IoVec iov[3] = {
                        { req->reply.data, sh->at },
                        { sh->data, sh->len },
                        { req->reply.data + sh->at, req->reply.size - sh->at },
                };
                resp = MHD_create_response_from_iovec(iov, 3, held_reply_free, held);
        } else
                resp = MHD_create_response_from_buffer_with_free_callback_cls(req->reply.size, req->reply.data,
                                                                              held_reply_free, held);
        if (!resp) {
                free(held);
                return MHD_NO;
        }
        held->shared = req->reply.shared;
        req->reply.shared = (McpShared) {};
        held->data = TAKE_PTR(req->reply.data);
        mem_charge_move(&held->charge, &req->held);
        if (MHD_add_response_header(resp, "Content-Type", req->reply.type) == MHD_NO ||
            (req->status.wanted && MHD_add_response_header(resp, "Cache-Control", "no-store") == MHD_NO) ||
            (req->reply.session_header && req->route.session &&
             MHD_add_response_header(resp, "Mcp-Session-Id", req->route.session->id) == MHD_NO)) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        return http_request_queue(req, req->reply.status, resp);
}

/* SSE */

static void sse_wake(HttpRequest *req) {
        assert(req);

        /* Only a connection suspended in the reader waits for us. */
        if (req->state == REQUEST_DONE)
                http_request_resume(req);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
        HttpRequest *req = cls;
        size_t n;

        assert(cls);
        assert(buf);
        assert(req->sse.off <= req->sse.size);

        if (req->peer_gone)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        n = req->sse.size - req->sse.off;
        if (n > 0) {
                n = MIN(n, max);
                memcpy(buf, req->sse.buf + req->sse.off, n);
                req->sse.off += n;
                /* Past what it was reading: what came since is now. */
                if (req->sse.off >= req->sse.mark)
                        req->sse.mark = req->sse.size;
                if (req->sse.off == req->sse.size) {
                        req->sse.off = req->sse.size = req->sse.mark = 0;
                        /* A large reply went out: its room too. */
                        if (req->sse.alloc > SSE_BLOCK_SIZE) {
                                req->sse.buf = mfree(req->sse.buf);
                                req->sse.alloc = 0;
                                (void) request_hold(req, 0, NULL);
                        }
                }
                return (ssize_t) n;
        }
        if (req->sse.end)
                return MHD_CONTENT_READER_END_OF_STREAM;
        /* Returning 0 without suspending would have MHD call us in a loop. */
        http_request_suspend(req);
        return 0;
}

static int on_keepalive(sd_event_source *s, uint64_t usec, void *userdata) {
        HttpRequest *req = userdata;

        assert(s);
        assert(userdata);

        /* Keeps proxies and clients from timing out, and finds peers that are
         * gone (a suspended connection notices only when written to). */
        if (req->sse.size == req->sse.off &&
            buf_append(&req->sse.buf, &req->sse.size, &req->sse.alloc, ": keep-alive\n\n", 14) >= 0)
                sse_wake(req);
        (void) sd_event_source_set_time_relative(s, req->server->config.keepalive_usec);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

mhd_result http_request_start_sse(HttpRequest *req, const char *initial) {
        HttpServer *h = req->server;
        struct MHD_Response *resp;

        assert(req);
        assert(!req->sse.on);

        /* Something to send at once, so the client gets the headers now. */
        if (buf_append(&req->sse.buf, &req->sse.size, &req->sse.alloc, initial ?: ": stream\n\n",
                       strlen(initial ?: ": stream\n\n")) < 0)
                return MHD_NO;
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK_SIZE, sse_read, req, NULL);
        if (!resp)
                return MHD_NO;
        if (MHD_add_response_header(resp, "Content-Type", "text/event-stream") == MHD_NO ||
            MHD_add_response_header(resp, "Cache-Control", "no-cache, no-store") == MHD_NO ||
            MHD_add_response_header(resp, "X-Accel-Buffering", "no") == MHD_NO) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        if (h->config.keepalive_usec > 0 &&
            sd_event_add_time_relative(h->event, &req->sse.keepalive, CLOCK_MONOTONIC, h->config.keepalive_usec,
                                       USEC_PER_SEC, on_keepalive, req) < 0)
                log_debug("Cannot arm the SSE keep-alive timer; the stream goes on without.");
        req->sse.on = true;
        if (req->route.session)
                req->route.session->n_streams++;
        return http_request_queue(req, MHD_HTTP_OK, resp);
}

/* The client does not read: the stream ends, and what it held goes now. */
static void sse_drop(HttpRequest *req, size_t backlog) {
        assert(req);

        log_struct(LOG_WARNING,
                   "MESSAGE=HTTP client does not read its event stream (%zu bytes waiting behind what it reads), "
                   "dropping the stream.", backlog,
                   "MCP_TRANSPORT=http",
                   "MCP_CALLER=%s", req->route.session && req->route.session->mcp ?
                                    mcp_session_caller(req->route.session->mcp) : "",
                   "MCP_STREAM_BACKLOG_BYTES=%zu", backlog);
        req->peer_gone = true;
        req->sse.buf = mfree(req->sse.buf);
        req->sse.size = req->sse.off = req->sse.alloc = req->sse.mark = 0;
        (void) request_hold(req, 0, NULL);
        sse_wake(req);
}

/* Moves the unread part to the front once the read part is as large:
 * a stream that never quite catches up must not keep what it read. */
static void sse_compact(HttpSse *sse) {
        assert(sse);

        if (sse->off == 0 || sse->off < sse->size - sse->off)
                return;
        memmove(sse->buf, sse->buf + sse->off, sse->size - sse->off);
        sse->size -= sse->off;
        sse->mark -= MIN(sse->mark, sse->off);
        sse->off = 0;
}

int http_request_sse_event(HttpRequest *req, const char *event, const char *data, size_t len, MemCharge *donor) {
        HttpSse *sse = &req->sse;
        size_t backlog, n, want;
        bool empty;
        char *p;
        int r;

        assert(req);

        if (sse->end || req->peer_gone)
                return -EPIPE;
        backlog = sse->size - MAX(sse->off, sse->mark);
        if (backlog > SSE_BACKLOG_MAX) {
                sse_drop(req, backlog);
                return -ENOBUFS;
        }
        sse_compact(sse);
        empty = sse->off == sse->size;
        n = sse_event_size(event, data, len);
        if (n > SIZE_MAX / 2 - sse->size)
                return -ENOBUFS;
        want = MAX(sse->alloc, sse->size + n + 1);
        /* Charged before it is made, exactly: the room, not a doubling. */
        r = request_hold(req, want, donor);
        if (r < 0)
                return r;
        if (want > sse->alloc) {
                p = realloc(sse->buf, want);
                if (!p) {
                        (void) request_hold(req, sse->alloc, NULL);
                        return log_oom();
                }
                sse->buf = p;
                sse->alloc = want;
        }
        r = sse_append_event(&sse->buf, &sse->size, &sse->alloc, event, data, len);
        assert(r >= 0);         /* the room is there */
        /* The first message after the client caught up is what it reads next. */
        if (empty)
                sse->mark = sse->size;
        sse_wake(req);
        return 0;
}

void http_request_sse_finish(HttpRequest *req) {
        assert(req);

        req->sse.end = true;
        req->sse.keepalive = sd_event_source_disable_unref(req->sse.keepalive);
        sse_wake(req);
}

int http_request_new(HttpServer *h, struct MHD_Connection *conn, const char *url, const char *method,
                     HttpRequest **ret) {
        HttpRequest *req;

        assert(h);
        assert(conn);
        assert(url);
        assert(method);
        assert(ret);

        req = new0(HttpRequest, 1);
        if (!req)
                return -ENOMEM;
        *req = (HttpRequest) {
                .server = h,
                .conn = conn,
                .url = url,
                .method = method,
                .body = BUFFER_INIT(h->config.max_body),
        };
        *ret = req;
        return 0;
}

HttpRequest *http_request_free(HttpRequest *req) {
        HttpServer *h;

        if (!req)
                return NULL;
        /* Taken off its session and the status wait line by the caller:
         * nothing may point here once it is gone. */
        assert(!req->route.session);
        assert(!req->status.waiting);

        h = req->server;
        if (req->suspended) {
                /* MHD is closing it anyway; just forget it. */
                req->hangup = sd_event_source_disable_unref(req->hangup);
                LIST_REMOVE(susp, h->suspended, req);
        }
        sd_event_source_disable_unref(req->sse.keepalive);
        mem_budget_release_input(h->config.budget, req->budget_held);
        mem_charge_done(&req->held);
        buffer_free(&req->body);
        shared_drop(&req->reply.shared);
        free(req->reply.data);
        free(req->sse.buf);
        free(req);
        return NULL;
}

int http_request_parse(HttpRequest *req, McpInbound *ret) {
        int r = mcp_inbound_parse(req->body.data, req->body.size, ret);

        assert(req);
        assert(ret);

        /* The tree is all that is needed from here on: the text goes now
         * rather than after the core is done (http-server.c). */
        buffer_free(&req->body);
        return r;
}

mhd_result http_request_refuse_unparsed(HttpRequest *req, int r, const McpInbound *i) {
        char peer[64];

        assert(req);
        assert(i);

        if (r == -E2BIG) {
                http_request_log_peer(req, peer, sizeof peer);
                log_struct(LOG_NOTICE,
                           "MESSAGE=HTTP %s %s from %s refused (413): too many JSON values", req->method, req->url,
                           peer,
                           "MCP_TRANSPORT=http",
                           "MCP_HTTP_METHOD=%s", req->method,
                           "MCP_HTTP_PATH=%s", req->url,
                           "MCP_HTTP_STATUS=413",
                           "MCP_HTTP_PEER=%s", peer,
                           "MCP_DECISION=%s", "denied");
                return http_request_error(req, MHD_HTTP_CONTENT_TOO_LARGE, i->error_code, i->error);
        }
        if (r == -EBADMSG)
                return http_request_error(req, MHD_HTTP_BAD_REQUEST, i->error_code, i->error);
        return MHD_NO;
}
