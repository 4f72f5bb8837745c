/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-conn.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress-address.h"
#include "egress-request.h"
#include "egress-resolve.h"
#include "egress-run.h"
#include "egress-server.h"
#include "egress-tls.h"
#include "log.h"
#include "macro.h"

/* Client to upstream: the request head, then the ClientHello being read,
 * then relayed bytes. One buffer big enough for a whole TLS record. */
#define IN_MAX MAX((size_t) EGRESS_REQUEST_HEAD_MAX, (size_t) EGRESS_TLS_PEEK_MAX)
/* Upstream to client, and our own answers. */
#define OUT_MAX ((size_t) 16384)
/* The request head and the ClientHello. An idle connection holds one of its
 * run's max_connections from the moment it is taken, so this only bounds
 * how long a run can park its own slots: clients send the head right after
 * the connect, and 10 s leaves room for a sandbox starved of CPU (its
 * CPUQuota=) between the connect and the write. */
#define HEAD_USEC (10 * USEC_PER_SEC)
#define CONNECT_USEC (30 * USEC_PER_SEC)       /* lookup and connect */
#define IDLE_USEC (120 * USEC_PER_SEC)         /* relay without a byte */
#define DRAIN_USEC (2 * USEC_PER_SEC)
#define DRAIN_MAX ((size_t) 65536)
#define ADDRS_MAX 16

typedef enum ConnState {
        CONN_HEAD,
        CONN_RESOLVING,
        CONN_CONNECTING,
        CONN_SNI,
        CONN_RELAY,
        CONN_REFUSING,          /* writing our answer */
        CONN_DRAINING,          /* answer sent: reading what the client still sends, so no reset hides it */
} ConnState;

/* One direction of a relayed connection, client to upstream ("up") or
 * upstream to client ("down"), in the order it ends: its source sent EOF,
 * then everything read was sent on and the far side's write half is shut.
 * Absolute-form requests end with the response instead of half-closing. */
typedef enum ConnFlow {
        FLOW_OPEN,
        FLOW_ENDED,             /* EOF read; bytes may still wait to be sent on */
        FLOW_SHUT,              /* all sent on, and shutdown(SHUT_WR) done */
} ConnFlow;

typedef struct ConnAddr {
        struct sockaddr_storage sa;
        socklen_t len;
} ConnAddr;

struct EgressConn {
        EgressRun *run;
        LIST_FIELDS(EgressConn, conns);
        int cfd, ufd;
        sd_event_source *cio, *uio, *timer;
        ConnState state;
        ConnFlow up, down;              /* in CONN_RELAY */
        EgressVerdict verdict;
        bool cut;
        EgressRequest req;
        EgressLookup *lookup;
        ConnAddr addrs[ADDRS_MAX];
        size_t n_addrs, next_addr;
        int connect_error;

        uint8_t in[IN_MAX];
        size_t in_off, in_len;
        size_t head_sent;               /* absolute form: of req.upstream_head */
        uint64_t body_left;             /* absolute form: body bytes still to read */
        uint8_t out[OUT_MAX];
        size_t out_off, out_len;
        size_t out_ours;                /* leading bytes of out that are our own (not counted) */
        size_t drained;
        uint64_t bytes_up, bytes_down;
};

static void conn_free(EgressConn *c) {
        if (!c)
                return;
        egress_lookup_cancel(c->lookup);
        sd_event_source_disable_unref(c->cio);
        sd_event_source_disable_unref(c->uio);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->cfd);
        safe_close(c->ufd);
        assert(c->run->n_conns > 0);
        c->run->n_conns--;
        LIST_REMOVE(conns, c->run->conns, c);
        c->run->server->n_conns--;
        if (c->run->upstream[0])
                c->run->server->n_upstream_conns--;
        egress_request_done(&c->req);
        free(c);
}

void egress_conn_end(EgressConn *c) {
        assert(c);
        egress_run_conn_ended(c->run, c->verdict, c->req.host[0] ? c->req.host : "-", c->req.port, c->bytes_up,
                              c->bytes_down, c->cut);
        conn_free(c);
}

static void set_timer(EgressConn *c, uint64_t usec) {
        assert(c);

        (void) sd_event_source_set_time_relative(c->timer, usec);
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

static void set_io(sd_event_source *es, uint32_t events) {
        if (!es)
                return;
        if (events == 0) {
                (void) sd_event_source_set_enabled(es, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_io_events(es, events);
        (void) sd_event_source_set_enabled(es, SD_EVENT_ON);
}

static bool up_pending(const EgressConn *c) {
        assert(c);

        return (c->req.upstream_head && c->head_sent < c->req.upstream_head_len) || c->in_len > c->in_off;
}

static void conn_update(EgressConn *c) {
        uint32_t ce = 0, ue = 0;
        bool out_pending = c->out_len > c->out_off;

        assert(c);

        switch (c->state) {
        case CONN_HEAD:
                ce = EPOLLIN;
                break;
        case CONN_RESOLVING:
        case CONN_CONNECTING:
                ue = c->state == CONN_CONNECTING ? EPOLLOUT : 0;
                break;
        case CONN_SNI:
                ce = (c->in_len < IN_MAX ? EPOLLIN : 0) | (out_pending ? EPOLLOUT : 0);
                break;
        case CONN_RELAY:
                if (c->up == FLOW_OPEN && c->in_len < IN_MAX && (c->req.connect || c->body_left > 0))
                        ce |= EPOLLIN;
                if (out_pending)
                        ce |= EPOLLOUT;
                if (c->down == FLOW_OPEN && c->out_len < OUT_MAX)
                        ue |= EPOLLIN;
                if (up_pending(c))
                        ue |= EPOLLOUT;
                break;
        case CONN_REFUSING:
                ce = EPOLLOUT;
                break;
        case CONN_DRAINING:
                ce = EPOLLIN;
                break;
        }
        set_io(c->cio, ce);
        set_io(c->uio, ue);
}

/* Our answer, then close: every refusal says why in its body, so that the
 * code's error message tells the agent what happened. */
_printf_(4, 5) static void conn_refuse(EgressConn *c, EgressVerdict v, const char *status, const char *fmt, ...) {
        char body[512];
        va_list ap;
        int n;

        assert(c->out_len == 0);
        c->verdict = v;
        va_start(ap, fmt);
        (void) vsnprintf(body, sizeof body, fmt, ap);
        va_end(ap);
        /* The why in the reason phrase too: most clients show only the
         * status line of a refused CONNECT ("Tunnel connection failed: 403
         * …"), and pip only that of a refused index page. It is ours alone
         * (a host name passed the request parser: no CR, LF or controls). */
        n = snprintf((char *) c->out, OUT_MAX,
                     "HTTP/1.1 %s (mcp-exec egress: %s)\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\nmcp-exec egress: %s\n",
                     status, body, strlen(body) + strlen("mcp-exec egress: \n"), body);
        c->out_off = 0;
        c->out_len = n > 0 ? MIN((size_t) n, OUT_MAX - 1) : 0;
        c->out_ours = c->out_len;
        egress_lookup_cancel(c->lookup);
        c->lookup = NULL;
        c->uio = sd_event_source_disable_unref(c->uio);
        c->ufd = safe_close(c->ufd);
        c->state = CONN_REFUSING;
        set_timer(c, HEAD_USEC);
        conn_update(c);
}

static void connect_next(EgressConn *c);

static void on_resolved(int error, const struct addrinfo *ai, void *userdata) {
        EgressConn *c = userdata;
        char text[INET6_ADDRSTRLEN];

        c->lookup = NULL;
        if (error != 0) {
                conn_refuse(c, EGRESS_VERDICT_UPSTREAM, "502 Bad Gateway", "name lookup of %s failed (%s)", c->req.host,
                            gai_strerror(error));
                return;
        }
        /* Every address must be public, not just the one we would use: a
         * name that also points inside is refused as a whole. */
        for (; ai; ai = ai->ai_next) {
                if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
                        continue;
                if (!egress_address_is_public(ai->ai_addr, ai->ai_addrlen, &c->run->server->config)) {
                        const void *a =
                                ai->ai_family == AF_INET
                                        ? (const void *) &((const struct sockaddr_in *) ai->ai_addr)->sin_addr
                                        : (const void *) &((const struct sockaddr_in6 *) ai->ai_addr)->sin6_addr;
                        if (!inet_ntop(ai->ai_family, a, text, sizeof text))
                                strcpy(text, "?");
                        conn_refuse(c, EGRESS_VERDICT_NON_PUBLIC, "403 Forbidden",
                                    "%s resolves to %s, which is not a public address", c->req.host, text);
                        return;
                }
                if (c->n_addrs < ADDRS_MAX && ai->ai_addrlen <= sizeof c->addrs[0].sa) {
                        ConnAddr *a = &c->addrs[c->n_addrs++];
                        memcpy(&a->sa, ai->ai_addr, ai->ai_addrlen);
                        a->len = ai->ai_addrlen;
                        if (ai->ai_family == AF_INET)
                                ((struct sockaddr_in *) &a->sa)->sin_port = htons(c->req.port);
                        else
                                ((struct sockaddr_in6 *) &a->sa)->sin6_port = htons(c->req.port);
                }
        }
        if (c->n_addrs == 0) {
                conn_refuse(c, EGRESS_VERDICT_UPSTREAM, "502 Bad Gateway", "name lookup of %s failed (no address)",
                            c->req.host);
                return;
        }
        connect_next(c);
}

static int on_upstream(sd_event_source *es, int fd, uint32_t revents, void *userdata);
static bool sni_read(EgressConn *c);

static void connected(EgressConn *c) {
        static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

        assert(c);

        c->state = c->req.connect ? CONN_SNI : CONN_RELAY;
        c->verdict = EGRESS_VERDICT_ALLOWED;
        if (c->req.connect) {
                /* Every CONNECT, whatever its port, must open with a TLS
                 * ClientHello naming the CONNECT host: a tunnel of anything
                 * else to a policy's port 80 is not served either. */
                memcpy(c->out, established, strlen(established));
                c->out_off = 0;
                c->out_len = c->out_ours = strlen(established);
                set_timer(c, HEAD_USEC);
                /* A client that sent its hello right behind the head. */
                if (c->in_len > c->in_off && !sni_read(c))
                        return;
        } else {
                /* What follows the head is the body, up to Content-Length;
                 * anything after it is dropped: one request per connection. */
                c->in_len = c->in_off + (size_t) MIN((uint64_t) (c->in_len - c->in_off), c->req.body_len);
                c->body_left = c->req.body_len - (c->in_len - c->in_off);
                set_timer(c, IDLE_USEC);
        }
        conn_update(c);
}

static void connect_next(EgressConn *c) {
        int r;

        assert(c);

        c->uio = sd_event_source_disable_unref(c->uio);
        c->ufd = safe_close(c->ufd);
        while (c->next_addr < c->n_addrs) {
                /* Exactly an address checked above: never a second lookup. */
                const ConnAddr *a = &c->addrs[c->next_addr++];

                c->ufd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (c->ufd < 0) {
                        c->connect_error = errno;
                        continue;
                }
                r = connect(c->ufd, (const struct sockaddr *) &a->sa, a->len) < 0 ? errno : 0;
                if (r != 0 && r != EINPROGRESS) {
                        c->connect_error = r;
                        c->ufd = safe_close(c->ufd);
                        continue;
                }
                r = sd_event_add_io(c->run->server->event, &c->uio, c->ufd, EPOLLOUT, on_upstream, c);
                if (r < 0) {
                        c->connect_error = -r;
                        c->ufd = safe_close(c->ufd);
                        continue;
                }
                c->state = CONN_CONNECTING;
                conn_update(c);
                return;
        }
        conn_refuse(c, EGRESS_VERDICT_UPSTREAM, "502 Bad Gateway", "cannot connect to %s:%u (%s)", c->req.host,
                    (unsigned) c->req.port, strerror(c->connect_error ?: ECONNREFUSED));
}

/* The head is in: decide on the name and port, before any lookup. */
static void conn_decide(EgressConn *c) {
        EgressRun *run = c->run;
        const char *why;
        int r;

        assert(c);

        if (egress_host_is_ip_literal(c->req.host))
                return conn_refuse(c, EGRESS_VERDICT_IP_LITERAL, "403 Forbidden",
                                   "%s is an IP address; only host names of the policy are served", c->req.host);
        if (!egress_policy_allows(run->policy, c->req.host, c->req.port)) {
                log_debug("egress %s:%u not in policy %s; not resolved.", c->req.host, (unsigned) c->req.port,
                          run->policy->name);
                return conn_refuse(c, EGRESS_VERDICT_POLICY, "403 Forbidden",
                                   "blocked by policy \"%s\": %s:%u is not in it", run->policy->name, c->req.host,
                                   (unsigned) c->req.port);
        }
        /* The connection itself was counted when it was taken (feed_one()). */
        why = egress_run_admit(run);
        if (why)
                return conn_refuse(c, EGRESS_VERDICT_CAP, "403 Forbidden", "%s", why);

        r = egress_resolve(run->server->resolver, c->req.host, on_resolved, c, &c->lookup);
        if (r == -EBUSY)
                return conn_refuse(c, EGRESS_VERDICT_UPSTREAM, "503 Service Unavailable", "too many lookups");
        if (r < 0)
                return conn_refuse(c, EGRESS_VERDICT_UPSTREAM, "502 Bad Gateway", "name lookup of %s failed (%s)",
                                   c->req.host, strerror(-r));
        c->state = CONN_RESOLVING;
        set_timer(c, CONNECT_USEC);
        conn_update(c);
}

static void head_read(EgressConn *c) {
        const char *reason = NULL;
        int r;

        assert(c);

        r = egress_request_parse((const char *) c->in, c->in_len, &c->req, &reason);
        if (r == 0)
                return;
        if (r < 0) {
                memset(&c->req, 0, sizeof c->req);
                return conn_refuse(c, EGRESS_VERDICT_BAD_REQUEST, "400 Bad Request", "%s",
                                   reason ?: "malformed proxy request");
        }
        c->in_off = (size_t) r;
        conn_decide(c);
}

/* The ClientHello is (partly) in: its SNI must be the CONNECT host. We said
 * "200 Connection established" already, so no HTTP answer can follow: a
 * mismatch closes the connection, and the journal and the run's counts say
 * why. */
static bool sni_read(EgressConn *c) {
        char name[254];
        int r;

        assert(c);

        r = egress_tls_client_hello_sni(c->in + c->in_off, c->in_len - c->in_off, name);
        if (r == 0 && c->in_len < IN_MAX)
                return true;
        if (r <= 0 || strcasecmp(name, c->req.host) != 0) {
                log_debug("egress %s:%u: ClientHello without the CONNECT host as its SNI (%s).", c->req.host,
                          (unsigned) c->req.port, r > 0 ? "another name" : r == 0 ? "too long" : strerror(-r));
                c->verdict = EGRESS_VERDICT_SNI;
                return egress_conn_end(c), false;
        }
        c->state = CONN_RELAY;
        set_timer(c, IDLE_USEC);
        return true;
}

static void compact(uint8_t *buf, size_t *off, size_t *len) {
        assert(off);
        assert(len);

        if (*off == 0)
                return;
        memmove(buf, buf + *off, *len - *off);
        *len -= *off;
        *off = 0;
}

/* false: c is gone. */
static bool client_read(EgressConn *c) {
        size_t want;
        ssize_t n;

        assert(c);

        if (c->state == CONN_DRAINING) {
                uint8_t sink[4096];
                n = recv(c->cfd, sink, sizeof sink, 0);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return true;
                c->drained += n > 0 ? (size_t) n : 0;
                if (n <= 0 || c->drained >= DRAIN_MAX)
                        return egress_conn_end(c), false;
                return true;
        }
        if (c->state == CONN_HEAD)
                want = EGRESS_REQUEST_HEAD_MAX - c->in_len;
        else {
                compact(c->in, &c->in_off, &c->in_len);
                want = IN_MAX - c->in_len;
                if (c->state == CONN_RELAY && !c->req.connect)
                        want = (size_t) MIN((uint64_t) want, c->body_left);
        }
        if (want == 0)
                return true;
        n = recv(c->cfd, c->in + c->in_len, want, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return true;
        if (n < 0 || (n == 0 && c->state != CONN_RELAY)) {
                if (c->state == CONN_SNI)
                        c->verdict = EGRESS_VERDICT_SNI;
                return egress_conn_end(c), false;
        }
        if (n == 0) {
                /* Once: a hang-up after our shutdown reads 0 again. */
                if (c->up == FLOW_OPEN)
                        c->up = FLOW_ENDED;
                return true;
        }
        c->in_len += (size_t) n;
        if (c->state == CONN_HEAD)
                head_read(c);
        else if (c->state == CONN_SNI)
                return sni_read(c);
        else {
                if (!c->req.connect)
                        c->body_left -= (uint64_t) n;
                set_timer(c, IDLE_USEC);
        }
        return true;
}

/* Sends up to n bytes of buf on fd, counting at most counted of them against
 * the run's byte cap. Returns bytes sent, 0 for nothing now, -1 when the
 * connection must end (error, or the cap cut it). */
static ssize_t send_counted(EgressConn *c, int fd, const uint8_t *buf, size_t n, size_t ours, uint64_t *counter) {
        uint64_t left = egress_run_bytes_left(c->run);
        size_t limit = ours + (size_t) MIN((uint64_t) (n - ours), left);
        ssize_t k;

        assert(c);
        assert(counter);
        assert(ours <= n);
        if (n == 0)
                return 0;
        if (limit == 0) {
                /* The run's byte cap: this connection is cut; later ones get 403. */
                c->cut = true;
                return -1;
        }
        k = send(fd, buf, limit, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -1;
        if ((size_t) k > ours) {
                *counter += (uint64_t) k - ours;
                egress_run_add_bytes(c->run, (uint64_t) k - ours);
        }
        return k;
}

static bool client_write(EgressConn *c) {
        size_t ours = MIN(c->out_ours, c->out_len - c->out_off);
        ssize_t k;

        assert(c);

        k = send_counted(c, c->cfd, c->out + c->out_off, c->out_len - c->out_off, ours, &c->bytes_down);
        if (k < 0)
                return egress_conn_end(c), false;
        c->out_off += (size_t) k;
        c->out_ours -= MIN(c->out_ours, (size_t) k);
        if (c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        if (k > 0 && c->state == CONN_RELAY)
                set_timer(c, IDLE_USEC);
        if (c->state == CONN_REFUSING && c->out_len == 0) {
                (void) shutdown(c->cfd, SHUT_WR);
                c->state = CONN_DRAINING;
                set_timer(c, DRAIN_USEC);
        }
        return true;
}

static bool upstream_write(EgressConn *c) {
        ssize_t k;

        assert(c);

        if (c->req.upstream_head && c->head_sent < c->req.upstream_head_len) {
                k = send_counted(c, c->ufd, (const uint8_t *) c->req.upstream_head + c->head_sent,
                                 c->req.upstream_head_len - c->head_sent, 0, &c->bytes_up);
                if (k < 0)
                        return egress_conn_end(c), false;
                c->head_sent += (size_t) k;
        } else if (c->in_len > c->in_off) {
                k = send_counted(c, c->ufd, c->in + c->in_off, c->in_len - c->in_off, 0, &c->bytes_up);
                if (k < 0)
                        return egress_conn_end(c), false;
                c->in_off += (size_t) k;
                if (c->in_off == c->in_len)
                        c->in_off = c->in_len = 0;
        } else
                return true;
        if (k > 0)
                set_timer(c, IDLE_USEC);
        return true;
}

static bool upstream_read(EgressConn *c) {
        ssize_t n;

        assert(c);

        compact(c->out, &c->out_off, &c->out_len);
        if (c->out_len >= OUT_MAX)
                return true;
        n = recv(c->ufd, c->out + c->out_len, OUT_MAX - c->out_len, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return true;
        if (n < 0)
                return egress_conn_end(c), false;
        if (n == 0 && c->down == FLOW_OPEN)
                c->down = FLOW_ENDED;
        c->out_len += (size_t) n;
        set_timer(c, IDLE_USEC);
        return true;
}

/* Half-closes what is done; true when both directions are. */
static bool relay_done(EgressConn *c) {
        assert(c);

        if (c->state != CONN_RELAY)
                return false;
        if (c->down != FLOW_OPEN && c->out_len == 0) {
                /* Absolute form: the response is complete, one per connection. */
                if (!c->req.connect)
                        return true;
                if (c->down == FLOW_ENDED) {
                        (void) shutdown(c->cfd, SHUT_WR);
                        c->down = FLOW_SHUT;
                }
        }
        if (c->req.connect && c->up == FLOW_ENDED && !up_pending(c)) {
                (void) shutdown(c->ufd, SHUT_WR);
                c->up = FLOW_SHUT;
        }
        return c->up == FLOW_SHUT && c->down == FLOW_SHUT;
}

static int on_client(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        EgressConn *c = userdata;

        if ((revents & EPOLLOUT) && !client_write(c))
                return 0;
        if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !client_read(c))
                return 0;
        if (relay_done(c))
                return egress_conn_end(c), 0;
        conn_update(c);
        return 0;
}

static int on_upstream(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        EgressConn *c = userdata;

        if (c->state == CONN_CONNECTING) {
                int error = 0;
                socklen_t len = sizeof error;

                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0)
                        error = errno;
                if (error != 0) {
                        c->connect_error = error;
                        connect_next(c);
                } else
                        connected(c);
                return 0;
        }
        if ((revents & EPOLLOUT) && !upstream_write(c))
                return 0;
        if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !upstream_read(c))
                return 0;
        if (relay_done(c))
                return egress_conn_end(c), 0;
        conn_update(c);
        return 0;
}

static int on_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        EgressConn *c = userdata;

        switch (c->state) {
        case CONN_RESOLVING:
        case CONN_CONNECTING:
                conn_refuse(c, EGRESS_VERDICT_UPSTREAM, "502 Bad Gateway", "%s of %s timed out",
                            c->state == CONN_RESOLVING ? "name lookup" : "connection", c->req.host);
                return 0;
        case CONN_SNI:
                c->verdict = EGRESS_VERDICT_SNI;
                break;
        default:
                break;
        }
        egress_conn_end(c);
        return 0;
}

int egress_conn_new(EgressRun *run, int fd) {
        _cleanup_close_ int cfd = fd;
        EgressConn *c;
        int r;

        assert(run);
        assert(fd >= 0);

        c = new0(EgressConn, 1);
        if (!c)
                return -ENOMEM;
        c->run = run;
        c->cfd = c->ufd = -EBADF;
        c->verdict = EGRESS_VERDICT_BAD_REQUEST;
        LIST_PREPEND(conns, run->conns, c);
        run->n_conns++;
        run->server->n_conns++;
        if (run->upstream[0])
                run->server->n_upstream_conns++;

        r = sd_event_add_io(run->server->event, &c->cio, cfd, EPOLLIN, on_client, c);
        if (r >= 0)
                r = sd_event_add_time_relative(run->server->event, &c->timer, CLOCK_MONOTONIC, HEAD_USEC, 0, on_timer,
                                               c);
        if (r < 0) {
                conn_free(c);
                return r;
        }
        c->cfd = TAKE_FD(cfd);
        return 0;
}
