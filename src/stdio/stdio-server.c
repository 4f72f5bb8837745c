/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "stdio-server.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>

#include "json-util.h"
#include "jsonrpc.h"
#include "line-conn.h"
#include "list.h"
#include "log.h"
#include "peer-auth.h"
#include "util.h"

/* After EMFILE and friends the listening socket stays readable: wait. */
#define ACCEPT_PAUSE_USEC (1 * USEC_PER_SEC)
/* Refusals are summarised in the journal, not logged one by one. */
#define REFUSAL_LOG_INTERVAL_USEC (10 * USEC_PER_SEC)

typedef struct Conn Conn;

struct Conn {
        StdioServer *server;
        LIST_FIELDS(Conn, conns);
        LineConn *line;
        PeerAuth *auth;
        sd_event_source *hello_timer;
        pid_t pid;
        uid_t uid;
};

struct StdioServer {
        sd_event *event;
        sd_bus *bus;                    /* system bus, for polkit */
        McpServer *mcp;
        StdioServerConfig config;
        int listen_fd;
        sd_event_source *listen_io, *resume_timer, *log_timer;
        Conn *conns;
        unsigned n_conns;
        /* Refused past max_connections, past max_per_uid, closed for silence; and how many of each were logged. */
        uint64_t n_full, n_uid, n_silent, n_full_logged, n_uid_logged, n_silent_logged;
        bool quiesced;
        stdio_server_activity_t on_activity;
        void *userdata;
};

static void activity(StdioServer *s) {
        assert(s);

        if (s->on_activity)
                s->on_activity(s, s->userdata);
}

static Conn *conn_free(Conn *c) {
        StdioServer *s;

        if (!c)
                return NULL;
        s = c->server;
        peer_auth_free(c->auth);
        line_conn_free(c->line);
        sd_event_source_disable_unref(c->hello_timer);
        LIST_REMOVE(conns, s->conns, c);
        assert(s->n_conns > 0);
        s->n_conns--;
        free(c);
        activity(s);
        return NULL;
}

int stdio_refusal_line(uid_t uid, const char *reason, char **ret) {
        _cleanup_json_ json_object *e = NULL;
        _cleanup_free_ char *m = NULL;
        const char *text;
        char *line;

        assert(reason);
        assert(ret);

        if (asprintf(&m, "access denied: uid %u is not authorized for %s (%s)", (unsigned) uid, PEER_AUTH_ACTION,
                     reason) < 0)
                return -ENOMEM;
        /* polkit's text goes through the JSON encoder: quotes and control
         * characters in it must not break the line. */
        e = jsonrpc_error_new(NULL, MCP_ERROR_ACCESS_DENIED, m, NULL);
        if (!e || !(text = json_serialize(e, NULL)) || !(line = strdup(text)))
                return -ENOMEM;
        *ret = line;
        return 0;
}

static void on_conn_closed(LineConn *l, void *userdata) {
        conn_free(userdata);
}

static void on_auth_done(bool allowed, const char *reason, void *userdata) {
        Conn *c = userdata;
        _cleanup_free_ char *line = NULL;

        assert(c);
        assert(reason);

        c->auth = peer_auth_free(c->auth);
        log_struct(allowed ? LOG_INFO : LOG_NOTICE,
                   "MESSAGE=Local MCP session for uid %u %s: %s",
                   (unsigned) c->uid, allowed ? "allowed" : "denied", reason,
                   "MCP_TRANSPORT=%s", "stdio-socket",
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_DECISION=%s", allowed ? "allowed" : "denied",
                   "MCP_POLKIT_ACTION=%s", PEER_AUTH_ACTION);
        if (allowed) {
                if (line_conn_start(c->line) < 0)
                        conn_free(c);
                return;
        }
        if (stdio_refusal_line(c->uid, reason, &line) < 0) {
                conn_free(c);
                return;
        }
        (void) line_conn_send_and_close(c->line, line);
}

/* The system bus, for polkit. When dbus restarted since we connected, that
 * connection is closed for good: a new one serves from then on. */
static int server_bus(StdioServer *s) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        int r;

        assert(s);

        if (s->bus && sd_bus_is_open(s->bus) > 0)
                return 0;
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(bus, s->event, 0);
        if (r < 0)
                return r;
        if (s->bus)
                log_notice("The system bus connection was lost; reconnected (for polkit).");
        sd_bus_close_unref(s->bus);
        s->bus = TAKE_PTR(bus);
        return 0;
}

static void log_refusals(StdioServer *s) {
        uint64_t full, uid, silent;

        assert(s);

        full = s->n_full - s->n_full_logged;
        uid = s->n_uid - s->n_uid_logged;
        silent = s->n_silent - s->n_silent_logged;

        if (full + uid + silent == 0)
                return;
        log_struct(LOG_NOTICE,
                   "MESSAGE=Refused %" PRIu64 " local connections: %" PRIu64 " past the limit of %u sessions, "
                   "%" PRIu64 " past %u sessions of one uid, %" PRIu64 " that sent nothing in time.",
                   full + uid + silent, full, s->config.max_connections, uid, s->config.max_per_uid, silent,
                   "MCP_TRANSPORT=%s", "stdio-socket",
                   "MCP_REFUSED=%" PRIu64, full + uid + silent,
                   "MCP_DECISION=%s", "denied");
        s->n_full_logged = s->n_full;
        s->n_uid_logged = s->n_uid;
        s->n_silent_logged = s->n_silent;
}

static int on_log_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        log_refusals(userdata);
        return 0;
}

static void note_refusal(StdioServer *s) {
        int enabled;

        assert(s);

        /* At most one summary per interval. */
        if (s->log_timer && sd_event_source_get_enabled(s->log_timer, &enabled) >= 0 && enabled == SD_EVENT_OFF) {
                (void) sd_event_source_set_time_relative(s->log_timer, REFUSAL_LOG_INTERVAL_USEC);
                (void) sd_event_source_set_enabled(s->log_timer, SD_EVENT_ONESHOT);
        }
}

static int on_hello_timeout(sd_event_source *source, uint64_t usec, void *userdata) {
        Conn *c = userdata;
        _cleanup_json_ json_object *e = NULL;
        const char *text;

        assert(c);

        c->hello_timer = sd_event_source_disable_unref(c->hello_timer);
        if (line_conn_has_received(c->line))
                return 0;
        log_debug("Local session of uid %u sent nothing in time, closing it.", (unsigned) c->uid);
        c->server->n_silent++;
        note_refusal(c->server);
        e = jsonrpc_error_new(NULL, JSONRPC_SERVER_ERROR, "no message in time: send initialize right after connecting",
                              NULL);
        if (!e || !(text = json_serialize(e, NULL)) || line_conn_send_and_close(c->line, text) < 0)
                conn_free(c);
        return 0;
}

/* One error line, then closed; what the peer sent is read first, so that it
 * gets the line rather than a reset. */
static void refuse(StdioServer *s, int fd, const char *message) {
        _cleanup_json_ json_object *e = jsonrpc_error_new(NULL, JSONRPC_SERVER_ERROR, message, NULL);
        const char *text;
        char buf[4096];
        size_t len;

        assert(s);
        assert(message);

        for (unsigned k = 0; k < 16 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; k++)
                ;
        if (e && (text = json_serialize(e, &len))) {
                (void) send(fd, text, len, MSG_DONTWAIT | MSG_NOSIGNAL);
                (void) send(fd, "\n", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        note_refusal(s);
}

static unsigned count_uid(StdioServer *s, uid_t uid) {
        unsigned n = 0;

        assert(s);

        LIST_FOREACH(conns, c, s->conns)
                n += c->uid == uid;
        return n;
}

static int on_resume(sd_event_source *source, uint64_t usec, void *userdata) {
        StdioServer *s = userdata;

        assert(s);

        if (!s->quiesced)
                (void) sd_event_source_set_enabled(s->listen_io, SD_EVENT_ON);
        return 0;
}

static int on_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        StdioServer *s = userdata;
        _cleanup_close_ int cfd = -EBADF, pidfd = -EBADF;
        McpPeer peer = { .transport = "stdio-socket" };
        char msg[160];
        Conn *c;
        int r;

        assert(s);

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                        log_warning_errno(errno, "Cannot accept local connections, pausing: %m");
                        (void) sd_event_source_set_enabled(s->listen_io, SD_EVENT_OFF);
                        (void) sd_event_source_set_time_relative(s->resume_timer, ACCEPT_PAUSE_USEC);
                        (void) sd_event_source_set_enabled(s->resume_timer, SD_EVENT_ONESHOT);
                }
                return 0;
        }
        r = getpeercred_fd(cfd, &peer.pid, &peer.uid, NULL);
        if (r < 0)
                return log_warning_errno(r, "Cannot read peer credentials, refusing: %m"), 0;
        /* At once: polkit's verdict must be about this process (peer-auth.h). */
        r = peer_pidfd(cfd, peer.pid, &pidfd);
        if (r < 0)
                log_debug_errno(r, "No pidfd for pid %i: %m", (int) peer.pid);

        if (s->n_conns >= s->config.max_connections) {
                (void) snprintf(msg, sizeof msg, "Server busy: too many local sessions (%u); retry later",
                                s->config.max_connections);
                s->n_full++;
                refuse(s, cfd, msg);
                return 0;
        }
        /* One user's connections must leave room for the others'. */
        if (peer.uid != 0 && count_uid(s, peer.uid) >= s->config.max_per_uid) {
                (void) snprintf(msg, sizeof msg,
                                "Server busy: uid %u has too many local sessions (%u); close some or retry later",
                                (unsigned) peer.uid, s->config.max_per_uid);
                s->n_uid++;
                refuse(s, cfd, msg);
                return 0;
        }

        c = calloc(1, sizeof *c);
        if (!c)
                return log_oom(), 0;
        *c = (Conn) { .server = s, .pid = peer.pid, .uid = peer.uid };
        LIST_PREPEND(conns, s->conns, c);
        s->n_conns++;
        activity(s);

        r = line_conn_new(s->event, s->mcp, cfd, cfd, &peer, s->config.max_line, on_conn_closed, c, &c->line);
        if (r < 0) {
                conn_free(c);
                return 0;
        }
        TAKE_FD(cfd);
        line_conn_set_budget(c->line, s->config.budget);

        if (s->config.hello_timeout_usec > 0 &&
            sd_event_add_time_relative(s->event, &c->hello_timer, CLOCK_MONOTONIC, s->config.hello_timeout_usec,
                                       USEC_PER_SEC, on_hello_timeout, c) < 0)
                log_warning("Cannot arm a local session's first-message timer, ignoring.");

        r = server_bus(s);
        if (r >= 0)
                r = pidfd >= 0 ? 0 : -ESRCH;
        if (r >= 0)
                r = peer_auth_start(s->bus, TAKE_FD(pidfd), peer.pid, peer.uid, on_auth_done, c, &c->auth);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask polkit about pid %i: %m", (int) peer.pid);
                on_auth_done(false, "polkit could not be asked", c);
        }
        return 0;
}

int stdio_server_new(sd_event *e, McpServer *mcp, int listen_fd, const StdioServerConfig *config,
                     stdio_server_activity_t on_activity, void *userdata, StdioServer **ret) {
        _cleanup_(stdio_server_freep) StdioServer *s = NULL;
        int r;

        assert(e);
        assert(mcp);
        assert(config);
        assert(ret);

        s = calloc(1, sizeof *s);
        if (!s) {
                safe_close(listen_fd);
                return -ENOMEM;
        }
        *s = (StdioServer) { .event = sd_event_ref(e), .mcp = mcp, .config = *config, .listen_fd = listen_fd,
                             .on_activity = on_activity, .userdata = userdata };
        (void) fd_nonblock(listen_fd, true);

        r = server_bus(s);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus (for polkit): %m");
        r = sd_event_add_io(e, &s->listen_io, listen_fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &s->resume_timer, CLOCK_MONOTONIC, ACCEPT_PAUSE_USEC, 0, on_resume, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(s->resume_timer, SD_EVENT_OFF);
        r = sd_event_add_time_relative(e, &s->log_timer, CLOCK_MONOTONIC, REFUSAL_LOG_INTERVAL_USEC, USEC_PER_SEC,
                                       on_log_timer, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(s->log_timer, SD_EVENT_OFF);

        *ret = TAKE_PTR(s);
        return 0;
}

StdioServer *stdio_server_free(StdioServer *s) {
        if (!s)
                return NULL;
        s->on_activity = NULL;
        while (s->conns)
                conn_free(s->conns);
        log_refusals(s);
        sd_event_source_disable_unref(s->listen_io);
        sd_event_source_disable_unref(s->resume_timer);
        sd_event_source_disable_unref(s->log_timer);
        safe_close(s->listen_fd);
        sd_bus_flush_close_unref(s->bus);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

void stdio_server_get_stats(const StdioServer *s, StdioServerStats *ret) {
        assert(ret);

        *ret = (StdioServerStats) {};
        if (s)
                *ret = (StdioServerStats) {
                        .connections = s->n_conns,
                        .refused_full = s->n_full,
                        .refused_uid = s->n_uid,
                        .closed_silent = s->n_silent,
                };
}

bool stdio_server_is_idle(const StdioServer *s) {
        return !s || s->n_conns == 0;
}

bool stdio_server_has_pending(const StdioServer *s) {
        struct pollfd p;

        if (!s || s->listen_fd < 0)
                return false;
        p = (struct pollfd) { .fd = s->listen_fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void stdio_server_quiesce(StdioServer *s) {
        if (!s)
                return;
        s->quiesced = true;
        s->listen_io = sd_event_source_disable_unref(s->listen_io);
        (void) sd_event_source_set_enabled(s->resume_timer, SD_EVENT_OFF);
}
