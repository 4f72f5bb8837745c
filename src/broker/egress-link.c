/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-link.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "packet.h"
#include "json-util.h"
#include "log.h"
#include "util.h"

/* Reports read in one wakeup, so a chatty egressd cannot hold the loop. */
#define REPORTS_PER_WAKEUP 64U

struct EgressLink {
        sd_event *event;
        int fd;
        int feed;
        sd_event_source *io, *timer;
        char *policy;
        char run_id[33];
        bool ready, notified;
        /* egress_link_end(): waiting for "ended" (end_timer), then done. */
        sd_event_source *end_timer;
        bool ended;
        egress_link_ended_t on_ended;
        void *ended_userdata;
        EgressCounts counts, mark;
        EgressCounts *totals;
        egress_link_ready_t on_ready;
        void *userdata;
        char message[256];
};

static void link_notify(EgressLink *l, int error, const char *message) {
        assert(l);

        if (l->notified)
                return;
        l->notified = true;
        l->timer = sd_event_source_disable_unref(l->timer);
        if (l->on_ready)
                l->on_ready(l, error, message, l->userdata);
}

/* Stops reading: egressd went away or broke the protocol. The feed, if
 * handed over already, dies with egressd's end of it. */
static void link_close(EgressLink *l) {
        assert(l);

        l->io = sd_event_source_disable_unref(l->io);
        l->fd = safe_close(l->fd);
        /* Nothing more comes: egress_link_end()'s done is due, from its
         * timer at once (never from within egress_link_stats() and its
         * caller). */
        if (l->end_timer)
                (void) sd_event_source_set_time_relative(l->end_timer, 0);
}

static void add_counts(EgressLink *l, EgressVerdict v, uint64_t n, uint64_t up, uint64_t down) {
        l->counts.connections[v] += n;
        l->counts.bytes_up += up;
        l->counts.bytes_down += down;
        if (l->totals) {
                l->totals->connections[v] += n;
                l->totals->bytes_up += up;
                l->totals->bytes_down += down;
        }
}

/* egressd's counts of the whole run: what our reports lack (the connections
 * cut at the end, reports a full socket lost) is added. */
static void add_final(EgressLink *l, json_object *msg) {
        json_object *conns = NULL;
        int64_t up = json_get_int64(msg, "bytes_up", 0), down = json_get_int64(msg, "bytes_down", 0);

        if (json_object_object_get_ex(msg, "connections", &conns) && json_object_is_type(conns, json_type_object))
                for (EgressVerdict v = 0; v < _EGRESS_VERDICT_MAX; v++) {
                        int64_t n = json_get_int64(conns, egress_verdict_to_string(v), 0);
                        if (n > 0 && (uint64_t) n > l->counts.connections[v])
                                add_counts(l, v, (uint64_t) n - l->counts.connections[v], 0, 0);
                }
        if (up > 0 && (uint64_t) up > l->counts.bytes_up)
                add_counts(l, 0, 0, (uint64_t) up - l->counts.bytes_up, 0);
        if (down > 0 && (uint64_t) down > l->counts.bytes_down)
                add_counts(l, 0, 0, 0, (uint64_t) down - l->counts.bytes_down);
}

static void add_report(EgressLink *l, json_object *msg) {
        EgressVerdict v = egress_verdict_from_string(json_get_string(msg, "verdict"));
        int64_t up = json_get_int64(msg, "bytes_up", 0), down = json_get_int64(msg, "bytes_down", 0);

        if (v < 0) {
                log_warning("egressd reported a connection of run %s with an unknown verdict; counted as bad-request.",
                            l->run_id);
                v = EGRESS_VERDICT_BAD_REQUEST;
        }
        add_counts(l, v, 1, (uint64_t) MAX(up, 0), (uint64_t) MAX(down, 0));
}

static bool fd_is_seqpacket(int fd) {
        int type = 0;
        socklen_t len = sizeof type;

        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) >= 0 && type == SOCK_SEQPACKET;
}

/* 1: one packet handled; 0: nothing more now; < 0: the link is over. */
static int read_one(EgressLink *l) {
        _cleanup_json_ json_object *msg = NULL;
        int fds[1] = { -EBADF };
        size_t n_fds = 0;
        const char *event;
        int r;

        r = packet_recv(l->fd, &msg, fds, 1, &n_fds);
        if (r == -EAGAIN)
                return 0;
        if (r <= 0) {
                link_notify(l, r == 0 ? -ECONNRESET : r,
                            r == 0 ? "mcp-exec-egressd closed the connection without a feed"
                                   : "mcp-exec-egressd sent a malformed packet");
                return r == 0 ? -ECONNRESET : r;
        }
        event = json_get_string(msg, "event");
        if (!l->ready && streq_ptr(event, "feed") && n_fds == 1 && fd_is_seqpacket(fds[0])) {
                l->feed = TAKE_FD(fds[0]);
                l->ready = true;
                link_notify(l, 0, NULL);
                return 1;
        }
        for (size_t i = 0; i < n_fds; i++)
                safe_close(fds[i]);
        if (!l->ready && streq_ptr(event, "error")) {
                char echo[200];
                str_printable(json_get_string(msg, "message") ?: "no reason given", echo, sizeof echo);
                (void) snprintf(l->message, sizeof l->message, "mcp-exec-egressd refused the run: %s", echo);
                link_notify(l, -EPERM, l->message);
                return -EPERM;
        }
        if (l->ready && streq_ptr(event, "conn") && n_fds == 0) {
                add_report(l, msg);
                return 1;
        }
        if (l->ready && l->end_timer && streq_ptr(event, "ended") && n_fds == 0) {
                add_final(l, msg);
                l->ended = true;
                return -ECONNRESET;     /* link_close() calls done */
        }
        log_warning("egressd sent an unexpected packet for run %s; closing its control connection.", l->run_id);
        link_notify(l, -EBADMSG, "mcp-exec-egressd broke its protocol");
        return -EBADMSG;
}

static void read_queued(EgressLink *l) {
        assert(l);

        for (unsigned i = 0; l->fd >= 0 && i < REPORTS_PER_WAKEUP; i++) {
                int r = read_one(l);
                if (r < 0)
                        link_close(l);
                if (r <= 0)
                        return;
        }
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        read_queued(userdata);
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        EgressLink *l = userdata;

        link_close(l);
        link_notify(l, -ETIMEDOUT, "mcp-exec-egressd did not hand over the run's feed in time");
        return 0;
}

int egress_link_start(sd_event *e, const EgressLinkRequest *req, egress_link_ready_t ready, void *userdata,
                      EgressLink **ret) {
        _cleanup_(egress_link_freep) EgressLink *l = NULL;
        _cleanup_json_ json_object *msg = NULL;
        int r;

        assert(e);
        assert(req);
        assert(req->socket_path);
        assert(req->policy);
        assert(ret);

        if (!req->run_id || strlen(req->run_id) != 32)
                return -EINVAL;
        l = new0(EgressLink, 1);
        if (!l)
                return -ENOMEM;
        l->event = sd_event_ref(e);
        l->fd = l->feed = -EBADF;
        l->on_ready = ready;
        l->userdata = userdata;
        l->totals = req->totals;
        memcpy(l->run_id, req->run_id, 33);
        l->policy = strdup(req->policy);
        if (!l->policy)
                return -ENOMEM;

        /* Non-blocking: socket activation queues us while egressd starts;
         * a full backlog is an error, never a stall of the broker. */
        l->fd = packet_connect(req->socket_path);
        if (l->fd < 0)
                return l->fd;
        r = json_build(&msg,
                       JB_STR("op", "run"),
                       JB_STR("run_id", req->run_id),
                       JB_STR("policy", req->policy),
                       JB_INT("max_connections", (int64_t) MIN(req->max_connections, (uint64_t) INT64_MAX)),
                       JB_INT("max_bytes", (int64_t) MIN(req->max_bytes, (uint64_t) INT64_MAX)),
                       JB_END);
        if (r >= 0 && req->upstream && (json_add_string(msg, "upstream", req->upstream) < 0 ||
                                        json_add_string(msg, "instance", req->instance ?: "") < 0))
                r = -ENOMEM;
        if (r < 0)
                return r;
        r = packet_send(l->fd, msg, NULL, 0);
        if (r < 0)
                return r;
        r = sd_event_add_io(e, &l->io, l->fd, EPOLLIN, on_io, l);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &l->timer, CLOCK_MONOTONIC, req->timeout_usec, 0, on_timeout, l);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

bool egress_link_is_ready(const EgressLink *l) {
        return l && l->ready;
}

int egress_link_take_feed(EgressLink *l) {
        assert(l);

        return l->feed >= 0 ? TAKE_FD(l->feed) : -EBADF;
}

int egress_link_take_control(EgressLink *l) {
        assert(l);

        if (!l->ready || l->fd < 0)
                return -EBADF;
        l->io = sd_event_source_disable_unref(l->io);
        return TAKE_FD(l->fd);
}

int egress_counts_to_json(const EgressCounts *c, json_object **ret) {
        _cleanup_json_ json_object *j = NULL, *conns = json_object_new_object();

        assert(c);
        assert(ret);

        if (!conns)
                return -ENOMEM;
        for (EgressVerdict v = 0; v < _EGRESS_VERDICT_MAX; v++)
                if (c->connections[v] > 0 && json_add_int(conns, egress_verdict_to_string(v),
                                                          (int64_t) MIN(c->connections[v], (uint64_t) INT64_MAX)) < 0)
                        return -ENOMEM;
        if (json_build(&j,
                       JB_OBJ("connections", TAKE_PTR(conns)),
                       JB_INT("bytes_up", (int64_t) MIN(c->bytes_up, (uint64_t) INT64_MAX)),
                       JB_INT("bytes_down", (int64_t) MIN(c->bytes_down, (uint64_t) INT64_MAX)),
                       JB_END) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(j);
        return 0;
}

int egress_link_stats(EgressLink *l, bool since_mark, json_object **ret) {
        _cleanup_json_ json_object *j = NULL;
        EgressCounts c;
        int r;

        assert(l);
        assert(ret);

        if (l->ready)
                read_queued(l);
        c = l->counts;
        if (since_mark) {
                for (EgressVerdict v = 0; v < _EGRESS_VERDICT_MAX; v++)
                        c.connections[v] -= l->mark.connections[v];
                c.bytes_up -= l->mark.bytes_up;
                c.bytes_down -= l->mark.bytes_down;
        }
        r = egress_counts_to_json(&c, &j);
        if (r < 0)
                return r;
        if (json_add_string(j, "policy", l->policy) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(j);
        return 0;
}

void egress_link_mark(EgressLink *l) {
        assert(l);

        if (l->ready)
                read_queued(l);
        l->mark = l->counts;
}

static int on_end_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        EgressLink *l = userdata;

        if (!l->ended)
                log_warning("egressd sent no final counts for run %s (gone, or not in time); "
                            "its result counts what was reported.",
                            l->run_id);
        l->end_timer = sd_event_source_disable_unref(l->end_timer);
        link_close(l);
        /* Last: done may free l. */
        l->on_ended(l, l->ended_userdata);
        return 0;
}

int egress_link_end(EgressLink *l, uint64_t timeout_usec, egress_link_ended_t done, void *userdata) {
        _cleanup_json_ json_object *msg = NULL;
        int r;

        assert(l);
        assert(done);

        if (!l->ready || l->fd < 0 || l->end_timer)
                return 0;
        /* What is queued first: a full socket would refuse "end". */
        read_queued(l);
        if (l->fd < 0)
                return 0;
        r = json_build(&msg, JB_STR("op", "end"), JB_END);
        if (r >= 0)
                r = packet_send(l->fd, msg, NULL, 0);
        if (r >= 0)
                r = sd_event_add_time_relative(l->event, &l->end_timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                               on_end_timer, l);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask egressd for the final counts of run %s: %m", l->run_id);
                return 0;
        }
        l->on_ended = done;
        l->ended_userdata = userdata;
        return 1;
}

EgressLink *egress_link_free(EgressLink *l) {
        if (!l)
                return NULL;
        sd_event_source_disable_unref(l->io);
        sd_event_source_disable_unref(l->timer);
        sd_event_source_disable_unref(l->end_timer);
        safe_close(l->fd);
        safe_close(l->feed);
        free(l->policy);
        sd_event_unref(l->event);
        free(l);
        return NULL;
}
