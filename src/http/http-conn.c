/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What one TCP connection may hold of the server, and how we notice when
 * libmicrohttpd stops being driven.
 *
 * - Deadlines: the request line and headers must arrive within
 *   header_timeout_s of the connection's start (or of the end of the previous
 *   response on a kept-alive connection), the body within
 *   connection_timeout_s of the headers. MHD's own timeout only measures
 *   silence, so a client that trickles a byte now and then would otherwise
 *   hold its slot for ever. A connection past its deadline is shut down
 *   (shutdown(2), not close: the fd stays MHD's), and MHD reaps it at once.
 *   A request waiting for its reply and an event stream have no deadline:
 *   hang-ups, keep-alives and MHD's idle timeout end those.
 * - Overflow: when MHD is at its connection limit it takes its listening
 *   socket out of its epoll set. Connections then waited in the backlog with
 *   nobody to answer them. We accept them ourselves, answer 503 and close, so
 *   a client learns at once that it should come back later.
 * - Liveness: the daemon asks http_server_is_stuck() before each watchdog ping.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http-internal.h"
#include "log.h"
#include "macro.h"
#include "util.h"

/* Refused connections are read from this long after our 503, so that the
 * client gets it rather than a reset (at most HTTP_LINGER_MAX of them). */
#define REJECT_LINGER_USEC (1 * USEC_PER_SEC)
/* Accepted per wakeup, so that a flood cannot starve the loop. */
#define OVERFLOW_BATCH 64U
/* After EMFILE and friends: the listening socket stays readable, so wait. */
#define OVERFLOW_PAUSE_USEC (1 * USEC_PER_SEC)
/* Summaries of refusals, instead of a journal line per connection. */
#define REFUSAL_LOG_INTERVAL_USEC (10 * USEC_PER_SEC)
/* Work waiting that long with nothing done about it means MHD is not driven. */
#define STUCK_USEC (15 * USEC_PER_SEC)

/* A canned reply, written before MHD ever sees the connection; -32000 is
 * JSONRPC_SERVER_ERROR, as every HTTP refusal. */
#define REFUSAL_BODY                                                                                           \
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"Service Unavailable: too " \
        "many connections; retry later\"}}"
#define REFUSAL                                                                         \
        "HTTP/1.1 503 Service Unavailable\r\n"                                          \
        "Content-Type: application/json\r\n"                                            \
        "Retry-After: 5\r\n"                                                            \
        "Connection: close\r\n"                                                         \
        "Content-Length: %zu\r\n"                                                       \
        "\r\n" REFUSAL_BODY

struct HttpConn {
        HttpServer *server;
        struct MHD_Connection *conn;
        LIST_FIELDS(HttpConn, conns);
        uint64_t deadline;              /* CLOCK_MONOTONIC µs; 0: none */
        uint64_t expired;               /* when we shut it down; 0: not yet */
};

static void tick_arm(HttpServer *h) {
        int enabled;

        assert(h);

        if (!h->conn_tick || sd_event_source_get_enabled(h->conn_tick, &enabled) < 0 || enabled != SD_EVENT_OFF)
                return;
        (void) sd_event_source_set_time_relative(h->conn_tick, USEC_PER_SEC);
        (void) sd_event_source_set_enabled(h->conn_tick, SD_EVENT_ONESHOT);
}

static int conn_fd(struct MHD_Connection *c) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

        assert(c);

        return i ? i->connect_fd : -EBADF;
}

static void set_deadline(HttpConn *hc, uint64_t timeout_s) {
        if (!hc)
                return;
        hc->deadline = timeout_s > 0 ? now_usec() + timeout_s * USEC_PER_SEC : 0;
        if (hc->deadline)
                tick_arm(hc->server);
}

static HttpConn *conn_of(struct MHD_Connection *c) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        assert(c);

        return i ? i->socket_context : NULL;
}

/* Overflow */

static void linger_close(HttpServer *h, size_t i) {
        assert(h);

        assert(i < h->n_lingering);
        safe_close(h->lingering[i].fd);
        h->lingering[i] = h->lingering[--h->n_lingering];
}

static void reject(HttpServer *h, int fd) {
        char buf[4096], resp[sizeof REFUSAL + 32];
        int n;

        assert(h);

        /* What the client sent so far: read, so that closing does not reset
         * the connection under our reply. */
        for (unsigned k = 0; k < 16 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; k++)
                ;
        n = snprintf(resp, sizeof resp, REFUSAL, strlen(REFUSAL_BODY));
        if (n > 0)
                (void) send(fd, resp, (size_t) n, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void) shutdown(fd, SHUT_WR);
        h->n_refused++;

        if (h->n_lingering == HTTP_LINGER_MAX)
                linger_close(h, 0);
        h->lingering[h->n_lingering++] = (HttpLinger) { .fd = fd, .until = now_usec() + REJECT_LINGER_USEC };
        tick_arm(h);
}

static int on_overflow(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        HttpServer *h = userdata;

        assert(s);
        assert(userdata);

        for (unsigned i = 0; i < OVERFLOW_BATCH; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                if (cfd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                                log_warning_errno(errno, "Cannot accept HTTP connections to refuse them, pausing: %m");
                                h->overflow_paused_until = now_usec() + OVERFLOW_PAUSE_USEC;
                                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                                tick_arm(h);
                        }
                        break;  /* EAGAIN, or a client that left (ECONNABORTED): next wakeup */
                }
                h->n_accepted++;
                reject(h, cfd);
        }
        return 0;
}

static void overflow_update(HttpServer *h) {
        bool want = !h->quiesced && !h->stopping && h->n_connections >= h->mhd_limit &&
                    h->overflow_paused_until <= now_usec();

        assert(h);

        if (h->overflow_io)
                (void) sd_event_source_set_enabled(h->overflow_io, want ? SD_EVENT_ON : SD_EVENT_OFF);
}

/* The tick: deadlines, lingering refusals, summaries */

static void log_summaries(HttpServer *h, uint64_t now) {
        assert(h);

        if (now - h->last_refusal_log < REFUSAL_LOG_INTERVAL_USEC)
                return;
        if (h->n_refused > h->n_refused_logged)
                log_struct(LOG_NOTICE,
                           "MESSAGE=Refused %" PRIu64 " HTTP connections (503): at the connection limit (%u).",
                           h->n_refused - h->n_refused_logged, h->config.max_connections,
                           "MCP_TRANSPORT=http",
                           "MCP_HTTP_STATUS=503",
                           "MCP_HTTP_REFUSED=%" PRIu64, h->n_refused - h->n_refused_logged,
                           "MCP_DECISION=%s", "denied");
        if (h->n_expired > h->n_expired_logged)
                log_struct(LOG_NOTICE,
                           "MESSAGE=Closed %" PRIu64 " HTTP connections that did not send their request in time "
                           "(headers within %u s, the body within %u s).",
                           h->n_expired - h->n_expired_logged, h->config.header_timeout_s,
                           h->config.connection_timeout_s,
                           "MCP_TRANSPORT=http",
                           "MCP_HTTP_EXPIRED=%" PRIu64, h->n_expired - h->n_expired_logged);
        h->n_refused_logged = h->n_refused;
        h->n_expired_logged = h->n_expired;
        h->last_refusal_log = now;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        HttpServer *h = userdata;
        uint64_t now = now_usec();
        bool again = false, expired = false;
        char buf[4096];

        assert(s);
        assert(userdata);

        LIST_FOREACH(conns, hc, h->conns) {
                if (hc->deadline == 0)
                        continue;
                if (hc->deadline > now) {
                        again = true;
                        continue;
                }
                /* MHD sees the end of the stream at once and closes; the fd
                 * stays its own until then. */
                hc->deadline = 0;
                hc->expired = now;
                expired = true;
                h->n_expired++;
                (void) shutdown(conn_fd(hc->conn), SHUT_RDWR);
        }
        if (expired)
                http_pump_run_soon(h);

        for (size_t i = 0; i < h->n_lingering;) {
                ssize_t k;

                while ((k = recv(h->lingering[i].fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
                        ;
                if (k == 0 || (k < 0 && errno != EAGAIN) || h->lingering[i].until <= now)
                        linger_close(h, i);
                else
                        i++;
        }
        again = again || h->n_lingering > 0;

        if (h->overflow_paused_until && h->overflow_paused_until <= now) {
                h->overflow_paused_until = 0;
                overflow_update(h);
        }
        again = again || h->overflow_paused_until;

        log_summaries(h, now);
        again = again || h->n_refused > h->n_refused_logged || h->n_expired > h->n_expired_logged;

        if (again) {
                (void) sd_event_source_set_time_relative(s, USEC_PER_SEC);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* What http-server.c tells us */

void http_conn_started(HttpServer *h, struct MHD_Connection *c, void **socket_context) {
        HttpConn *hc;

        assert(h);
        assert(c);
        assert(socket_context);

        h->n_connections++;
        h->n_accepted++;
        hc = calloc(1, sizeof *hc);
        if (hc) {
                *hc = (HttpConn) { .server = h, .conn = c };
                LIST_PREPEND(conns, h->conns, hc);
                set_deadline(hc, h->config.header_timeout_s);
        } else
                /* Untracked: MHD's idle timeout still ends it. */
                log_oom();
        *socket_context = hc;
        overflow_update(h);
}

void http_conn_closed(HttpServer *h, void **socket_context) {
        HttpConn *hc;

        assert(h);
        assert(socket_context);

        hc = *socket_context;
        *socket_context = NULL;
        if (hc) {
                LIST_REMOVE(conns, h->conns, hc);
                free(hc);
        }
        if (h->n_connections > 0)
                h->n_connections--;
        overflow_update(h);
        /* MHD takes its listening socket back into its epoll set only at the
         * start of its next run, and nothing else may come to wake it: run
         * it again now (see http_pump_run_soon()). */
        http_pump_run_soon(h);
}

void http_conn_request_begins(HttpRequest *req) {
        assert(req);
        set_deadline(conn_of(req->conn), req->server->config.connection_timeout_s);
}

void http_conn_request_received(HttpRequest *req) {
        HttpConn *hc;

        assert(req);
        hc = conn_of(req->conn);
        if (hc)
                hc->deadline = 0;
}

void http_conn_request_completed(HttpServer *h, struct MHD_Connection *c) {
        assert(h);
        /* Kept alive: the next request has the headers' deadline again. */
        if (c)
                set_deadline(conn_of(c), h->config.header_timeout_s);
}

int http_conns_init(HttpServer *h) {
        int r;

        assert(h);

        r = sd_event_add_time_relative(h->event, &h->conn_tick, CLOCK_MONOTONIC, USEC_PER_SEC, USEC_PER_SEC / 4,
                                       on_tick, h);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(h->conn_tick, SD_EVENT_OFF);
        r = sd_event_add_io(h->event, &h->overflow_io, h->listen_fd, EPOLLIN, on_overflow, h);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(h->overflow_io, SD_EVENT_OFF);
        h->last_refusal_log = now_usec();
        return 0;
}

void http_conns_done(HttpServer *h) {
        if (!h)
                return;
        while (h->n_lingering > 0)
                linger_close(h, h->n_lingering - 1);
        /* MHD_stop_daemon() reported every connection closed; these are
         * leftovers of a failed start only. */
        LIST_FOREACH_SAFE(conns, hc, n, h->conns) {
                LIST_REMOVE(conns, h->conns, hc);
                free(hc);
        }
        h->conn_tick = sd_event_source_disable_unref(h->conn_tick);
        h->overflow_io = sd_event_source_disable_unref(h->overflow_io);
}

/* Liveness */

bool http_server_has_pending(HttpServer *h) {
        struct pollfd p;

        if (!h || h->listen_fd < 0)
                return false;
        p = (struct pollfd) { .fd = h->listen_fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

bool http_liveness_check(HttpLiveness *l, bool pending, uint64_t n_accepted, uint64_t oldest_expired, uint64_t now,
                         const char **ret_reason) {
        assert(l);

        if (!pending || n_accepted != l->n_accepted) {
                /* Nothing waits, or something was taken since we looked. */
                l->pending_since = pending ? now : 0;
                l->n_accepted = n_accepted;
        } else if (l->pending_since == 0)
                l->pending_since = now;
        else if (now - l->pending_since >= STUCK_USEC) {
                if (ret_reason)
                        *ret_reason = "connections wait in the listen backlog and none was accepted";
                return true;
        }
        if (oldest_expired > 0 && now - oldest_expired >= STUCK_USEC) {
                if (ret_reason)
                        *ret_reason = "a connection past its deadline was not closed";
                return true;
        }
        return false;
}

bool http_server_is_stuck(HttpServer *h, const char **ret_reason) {
        uint64_t oldest = 0;

        assert(ret_reason);

        if (!h || h->quiesced || h->stopping)
                return false;
        LIST_FOREACH(conns, hc, h->conns)
                if (hc->expired > 0 && (oldest == 0 || hc->expired < oldest))
                        oldest = hc->expired;
        return http_liveness_check(&h->liveness, http_server_has_pending(h), h->n_accepted, oldest, now_usec(),
                                   ret_reason);
}
