/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-run.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "packet.h"
#include "egress-conn.h"
#include "egress-server.h"
#include "json-util.h"
#include "log.h"
#include "macro.h"

/* The broker sends the run packet right after it connects. */
#define RUN_PACKET_USEC (10 * USEC_PER_SEC)
/* Feed packets taken in one wakeup, so one run cannot hold the loop. */
#define FEED_PER_WAKEUP 16U
#define FEED_FDS_MAX 4

EgressRun *egress_run_free(EgressRun *r) {
        EgressServer *s;
        unsigned n_cut = 0;

        if (!r)
                return NULL;
        s = r->server;
        /* The run is over: cut its connections at once, each still logged. */
        while (r->conns) {
                egress_conn_end(r->conns);
                n_cut++;
        }
        if (r->started && r->upstream[0])
                log_info("Upstream %s, instance %s: ended, %u connections cut.", r->upstream, r->instance, n_cut);
        if (r->n_refused > 1 || r->n_bad_handovers > 0)
                log_struct(LOG_WARNING,
                           "MESSAGE=Run %.12s: %" PRIu64 " connections closed at once over its cap, %" PRIu64
                           " bad hand-overs on its feed", r->run_id, r->n_refused, r->n_bad_handovers,
                           "MCP_RUN=%.12s", r->run_id,
                           "EGRESS_REFUSED_AT_ONCE=%" PRIu64, r->n_refused,
                           "EGRESS_BAD_HANDOVERS=%" PRIu64, r->n_bad_handovers);
        sd_event_source_disable_unref(r->control_io);
        sd_event_source_disable_unref(r->feed_io);
        sd_event_source_disable_unref(r->timer);
        safe_close(r->control_fd);
        safe_close(r->feed_fd);
        LIST_REMOVE(runs, s->runs, r);
        s->n_runs--;
        if (r->started && r->upstream[0])
                s->n_upstreams--;
        else if (r->started)
                s->n_broker_runs--;
        free(r);
        egress_server_update_idle(s);
        return NULL;
}

const char *egress_run_admit(EgressRun *r) {
        assert(r);

        return r->bytes >= r->max_bytes ? "byte cap of this run reached" : NULL;
}

uint64_t egress_run_bytes_left(const EgressRun *r) {
        assert(r);

        return r->bytes >= r->max_bytes ? 0 : r->max_bytes - r->bytes;
}

void egress_run_add_bytes(EgressRun *r, uint64_t n) {
        assert(r);

        r->bytes += n;
}

/* Counts a connection that ended and tells the broker. At the run's end
 * (ending) the "ended" packet carries the counts instead. */
static void conn_report(EgressRun *r, EgressVerdict v, const char *host, uint16_t port, uint64_t bytes_up,
                        uint64_t bytes_down) {
        _cleanup_json_ json_object *j = NULL;

        assert(host);
        assert(r);
        assert(v >= 0 && v < _EGRESS_VERDICT_MAX);

        r->ended[v]++;
        r->bytes_up += bytes_up;
        r->bytes_down += bytes_down;
        if (r->control_fd < 0 || r->ending || r->upstream[0] ||
            json_build(&j,
                       JB_STR("event", "conn"),
                       JB_STR("verdict", egress_verdict_to_string(v)),
                       JB_STR("host", host),
                       JB_INT("port", port),
                       JB_INT("bytes_up", (int64_t) MIN(bytes_up, (uint64_t) INT64_MAX)),
                       JB_INT("bytes_down", (int64_t) MIN(bytes_down, (uint64_t) INT64_MAX)),
                       JB_END) < 0)
                return;
        /* Accounting: a broker that does not read loses reports, never
         * stalls us (the socket is non-blocking); "ended" sums them up. */
        (void) packet_send(r->control_fd, j, NULL, 0);
}

void egress_run_conn_ended(EgressRun *r, EgressVerdict v, const char *host, uint16_t port, uint64_t bytes_up,
                           uint64_t bytes_down, bool cut) {
        const char *verdict = egress_verdict_to_string(v);

        assert(host);
        assert(r);
        assert(verdict);

        /* Metadata only: never a byte of what went through. */
        log_struct(LOG_INFO,
                   "MESSAGE=egress %s:%u %s%s", host, (unsigned) port, verdict, cut ? " (cut by the byte cap)" : "",
                   "MCP_RUN=%.12s", r->run_id,
                   "EGRESS_POLICY=%s", r->policy ? r->policy->name : "-",
                   "EGRESS_HOST=%s", host,
                   "EGRESS_PORT=%u", (unsigned) port,
                   "EGRESS_VERDICT=%s", verdict,
                   "EGRESS_BYTES_UP=%" PRIu64, bytes_up,
                   "EGRESS_BYTES_DOWN=%" PRIu64, bytes_down,
                   "EGRESS_CUT=%s", cut ? "byte-cap" : "no",
                   /* An upstream instance's entries name it too; a run's end here. */
                   r->upstream[0] ? "MCP_UPSTREAM=%s" : NULL, r->upstream,
                   "MCP_UPSTREAM_INSTANCE=%s", r->instance);
        conn_report(r, v, host, port, bytes_up, bytes_down);
}

static void feed_end(EgressRun *r, const char *why) {
        assert(r);

        if (why)
                log_warning("Run %.12s: %s; its feed is closed.", r->run_id, why);
        r->feed_io = sd_event_source_disable_unref(r->feed_io);
        r->feed_fd = safe_close(r->feed_fd);
}

static bool fd_is_tcp_peer(int fd) {
        int type = 0, domain = 0;
        socklen_t len = sizeof type;
        struct sockaddr_storage sa;
        socklen_t salen = sizeof sa;

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
                return false;
        len = sizeof domain;
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || (domain != AF_INET && domain != AF_INET6))
                return false;
        return getpeername(fd, (struct sockaddr *) &sa, &salen) >= 0;
}

/* A connection over a cap: closed at once, before it holds anything but
 * this moment's descriptor. The 403 is a courtesy (a fresh socket's send
 * buffer is empty, so it fits); the verdict goes to the journal (the first
 * of the run; egress_run_free() sums up the rest) and to the broker. */
static void refuse_at_once(EgressRun *r, int fd, const char *why) {
        char answer[320];
        int n;

        assert(r);

        n = snprintf(answer, sizeof answer,
                     "HTTP/1.1 403 Forbidden (mcp-exec egress: %s)\r\nContent-Type: text/plain\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\nmcp-exec egress: %s\n",
                     why, strlen(why) + strlen("mcp-exec egress: \n"), why);
        if (n > 0 && (size_t) n < sizeof answer)
                (void) send(fd, answer, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        safe_close(fd);
        if (r->n_refused++ == 0)
                egress_run_conn_ended(r, EGRESS_VERDICT_CAP, "-", 0, 0, 0, false);
        else
                conn_report(r, EGRESS_VERDICT_CAP, "-", 0, 0, 0);
}

/* 1: one packet taken (a connection, or a bad hand-over dropped); 0: nothing
 * now; < 0: the feed is over (the launcher closed it, or the socket broke). */
static int feed_one(EgressRun *r) {
        char buf[sizeof EGRESS_FEED_MSG + 1], why[96];
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * FEED_FDS_MAX)];
        } control = {};
        struct iovec iov = { buf, sizeof buf };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof control,
        };
        int fds[FEED_FDS_MAX];
        size_t n_fds = 0;
        bool other = false;
        ssize_t n;

        n = recvmsg(r->feed_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < k; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                                if (n_fds < FEED_FDS_MAX)
                                        fds[n_fds++] = fd;
                                else
                                        safe_close(fd);
                        }
                } else
                        other = true;
        }
        if (n == 0 && n_fds == 0 && !(mh.msg_flags & MSG_CTRUNC))
                return -ECONNRESET;
        /* A bad or truncated hand-over (descriptors the kernel could not
         * give us arrive as MSG_CTRUNC) ends what it carried, never the
         * feed: the run's other connections come the same way. */
        if (other || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || n_fds != 1 || (size_t) n != strlen(EGRESS_FEED_MSG) ||
            memcmp(buf, EGRESS_FEED_MSG, strlen(EGRESS_FEED_MSG)) != 0 || !fd_is_tcp_peer(fds[0]) ||
            fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK) < 0) {
                for (size_t i = 0; i < n_fds; i++)
                        safe_close(fds[i]);
                if (r->n_bad_handovers++ == 0)
                        log_warning("Run %.12s: its launcher passed something else than one TCP connection; "
                                    "dropped, the feed goes on.", r->run_id);
                return 1;
        }
        if (r->n_conns >= r->max_connections) {
                (void) snprintf(why, sizeof why, "connection cap of this run reached (%" PRIu64 ")",
                                r->max_connections);
                refuse_at_once(r, fds[0], why);
                return 1;
        }
        /* As over the run's cap: the first journaled, the rest counted
         * (egress_run_free() says how many), so a flood is no log flood. */
        if (r->upstream[0] && r->server->n_upstream_conns >= EGRESS_UPSTREAM_CONNS_MAX) {
                refuse_at_once(r, fds[0], "too many connections of upstream servers' instances");
                return 1;
        }
        if (r->server->n_conns >= EGRESS_CONNS_MAX) {
                log_warning("Run %.12s: %u connections open in all runs; one more is closed at once.", r->run_id,
                            EGRESS_CONNS_MAX);
                refuse_at_once(r, fds[0], "too many connections in all runs");
                return 1;
        }
        if (egress_conn_new(r, fds[0]) < 0)
                log_oom();
        return 1;
}

static int on_feed(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        EgressRun *r = userdata;

        for (unsigned i = 0; i < FEED_PER_WAKEUP; i++) {
                int k = feed_one(r);
                if (k == 0)
                        return 0;
                if (k < 0) {
                        feed_end(r, k == -ECONNRESET ? NULL : "its feed broke");
                        return 0;
                }
        }
        return 0;
}

static int send_error(EgressRun *r, const char *message) {
        _cleanup_json_ json_object *j = NULL;

        assert(r);
        assert(message);

        log_warning("Refused a run: %s", message);
        if (json_build(&j, JB_STR("event", "error"), JB_STR("message", message), JB_END) >= 0)
                (void) packet_send(r->control_fd, j, NULL, 0);
        return -EINVAL;
}

static bool valid_run_id(const char *id) {
        if (!id || strlen(id) != 32)
                return false;
        for (const char *p = id; *p; p++)
                if (!strchr("0123456789abcdef", *p))
                        return false;
        return true;
}

static bool valid_word(const char *s, size_t max, const char *alphabet) {
        size_t n = s ? strlen(s) : 0;

        return n > 0 && n <= max && strspn(s, alphabet) == n;
}

/* "upstream" and "instance" of an upstream instance's run packet (both or
 * neither), and room for it among the runs of its kind. NULL, or why not. */
static const char *run_kind(EgressRun *r, json_object *msg) {
        const char *up = json_get_string(msg, "upstream"), *inst = json_get_string(msg, "instance");
        EgressServer *s = r->server;

        if (!up && !inst) {
                if (s->n_broker_runs >= s->runs_max)
                        return "too many runs at once";
                s->n_broker_runs++;
                return NULL;
        }
        if (!valid_word(up, EGRESS_UPSTREAM_NAME_MAX, "abcdefghijklmnopqrstuvwxyz0123456789_") ||
            !(up[0] >= 'a' && up[0] <= 'z') ||
            !valid_word(inst, EGRESS_UPSTREAM_INSTANCE_MAX,
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:_.\\-"))
                return "expected an upstream server's name and its unit's instance";
        if (s->n_upstreams >= EGRESS_UPSTREAMS_MAX)
                return "too many upstream server instances with egress at once";
        strcpy(r->upstream, up);
        strcpy(r->instance, inst);
        s->n_upstreams++;
        return NULL;
}

static int run_start(EgressRun *r, json_object *msg) {
        _cleanup_json_ json_object *reply = NULL;
        _cleanup_close_pair_ int pair[2] = { -EBADF, -EBADF };
        const EgressConfig *cfg = &r->server->config;
        const char *id = json_get_string(msg, "run_id"), *policy = json_get_string(msg, "policy");
        int64_t maxc = json_get_int64(msg, "max_connections", 0), maxb = json_get_int64(msg, "max_bytes", 0);
        const char *why;
        int k;

        assert(r);
        assert(msg);

        if (!streq_ptr(json_get_string(msg, "op"), "run") || !valid_run_id(id))
                return send_error(r, "expected {\"op\":\"run\"} with a run_id of 32 hex digits");
        memcpy(r->run_id, id, 33);
        r->policy = policy ? egress_config_find(cfg, policy) : NULL;
        if (!r->policy)
                return send_error(r, "no such egress policy in mcp-exec-egressd's configuration");
        why = run_kind(r, msg);
        if (why)
                return send_error(r, why);
        /* Counted from here: egress_run_free() gives the slot back. */
        r->started = true;
        /* The broker may only lower the configured caps; 0 or none: the configured. */
        r->max_connections = maxc > 0 ? MIN((uint64_t) maxc, cfg->max_connections) : cfg->max_connections;
        r->max_bytes = maxb > 0 ? MIN((uint64_t) maxb, cfg->max_bytes) : cfg->max_bytes;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0)
                return log_error_errno(errno, "Cannot make a run's feed: %m");
        k = sd_event_add_io(r->server->event, &r->feed_io, pair[0], EPOLLIN, on_feed, r);
        if (k < 0)
                return log_error_errno(k, "Cannot watch a run's feed: %m");
        r->feed_fd = TAKE_FD(pair[0]);
        if (json_build(&reply, JB_STR("event", "feed"), JB_END) < 0)
                return log_oom();
        k = packet_send(r->control_fd, reply, &pair[1], 1);
        if (k < 0)
                return log_warning_errno(k, "Cannot hand run %.12s its feed: %m", r->run_id);
        r->timer = sd_event_source_disable_unref(r->timer);
        if (r->upstream[0])
                log_info("Upstream %s, instance %s: policy %s, at most %" PRIu64 " connections and %" PRIu64
                         " bytes.", r->upstream, r->instance, r->policy->name, r->max_connections, r->max_bytes);
        else
                log_debug("Run %.12s: policy %s, at most %" PRIu64 " connections and %" PRIu64 " bytes.",
                          r->run_id, r->policy->name, r->max_connections, r->max_bytes);
        return 0;
}

/* {"event":"ended","connections":{verdict:n},"bytes_up":n,"bytes_down":n}:
 * every connection the run had, the ones just cut too. */
static int send_ended(EgressRun *r) {
        _cleanup_json_ json_object *j = NULL, *conns = json_object_new_object();

        assert(r);

        if (!conns)
                return -ENOMEM;
        for (EgressVerdict v = 0; v < _EGRESS_VERDICT_MAX; v++)
                if (r->ended[v] > 0 && json_add_int(conns, egress_verdict_to_string(v),
                                                    (int64_t) MIN(r->ended[v], (uint64_t) INT64_MAX)) < 0)
                        return -ENOMEM;
        if (json_build(&j,
                       JB_STR("event", "ended"),
                       JB_OBJ("connections", TAKE_PTR(conns)),
                       JB_INT("bytes_up", (int64_t) MIN(r->bytes_up, (uint64_t) INT64_MAX)),
                       JB_INT("bytes_down", (int64_t) MIN(r->bytes_down, (uint64_t) INT64_MAX)),
                       JB_END) < 0)
                return -ENOMEM;
        return packet_send(r->control_fd, j, NULL, 0);
}

/* {"op":"end"}: the run's unit is gone. Its connections are cut now, all
 * counted in one "ended" packet, then the run is forgotten: the broker
 * builds the result from it (issue 37: what was open at the end counts). */
static void run_end(EgressRun *r) {
        int k;

        assert(r);

        r->ending = true;
        feed_end(r, NULL);
        while (r->conns)
                egress_conn_end(r->conns);
        k = send_ended(r);
        if (k == -EAGAIN && sd_event_source_set_io_events(r->control_io, EPOLLOUT) >= 0)
                return;         /* reports the broker has not read yet: on_control() sends it on room */
        if (k < 0)
                log_warning_errno(k, "Run %.12s: cannot send its final counts: %m", r->run_id);
        egress_run_free(r);
}

static int on_control(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        EgressRun *r = userdata;

        if (r->ending) {
                /* Room for "ended", or the broker gave up waiting. */
                if ((revents & EPOLLOUT) && send_ended(r) == -EAGAIN && !(revents & (EPOLLHUP | EPOLLERR)))
                        return 0;
                egress_run_free(r);
                return 0;
        }
        for (unsigned i = 0; i < FEED_PER_WAKEUP; i++) {
                _cleanup_json_ json_object *msg = NULL;
                int k = packet_recv(fd, &msg, NULL, 0, NULL);

                if (k == -EAGAIN)
                        return 0;
                if (k > 0 && r->started && streq_ptr(json_get_string(msg, "op"), "end"))
                        return run_end(r), 0;
                if (k <= 0 || r->started) {
                        /* EOF: the run is over. After the run packet the
                         * broker sends only "end": anything else is a
                         * broken peer. */
                        egress_run_free(r);
                        return 0;
                }
                if (run_start(r, msg) < 0) {
                        egress_run_free(r);
                        return 0;
                }
        }
        return 0;
}

static int on_run_timeout(sd_event_source *es, uint64_t usec, void *userdata) {
        EgressRun *r = userdata;

        log_warning("A control connection sent no run packet in time; closed.");
        egress_run_free(r);
        return 0;
}

int egress_run_new(EgressServer *s, int control_fd) {
        _cleanup_close_ int fd = control_fd;
        EgressRun *r;
        int k;

        assert(s);

        r = new0(EgressRun, 1);
        if (!r)
                return -ENOMEM;
        r->server = s;
        r->control_fd = r->feed_fd = -EBADF;
        strcpy(r->run_id, "-");
        LIST_PREPEND(runs, s->runs, r);
        s->n_runs++;
        egress_server_update_idle(s);

        k = sd_event_add_io(s->event, &r->control_io, fd, EPOLLIN, on_control, r);
        if (k >= 0)
                k = sd_event_add_time_relative(s->event, &r->timer, CLOCK_MONOTONIC, RUN_PACKET_USEC, 0, on_run_timeout,
                                               r);
        if (k < 0) {
                egress_run_free(r);
                return k;
        }
        r->control_fd = TAKE_FD(fd);
        return 0;
}
