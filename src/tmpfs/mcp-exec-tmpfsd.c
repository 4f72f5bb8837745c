/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-tmpfsd: mounts and removes each run's private /tmp for the broker
 * (tmpfs-proto.h). Socket-activated on /run/mcp-exec/tmpfs.sock, it serves
 * root only, runs as root with nothing but CAP_SYS_ADMIN, in PID 1's mount
 * namespace (its unit has no option that would give it one of its own), and
 * exits when idle: the mounts stay in PID 1's namespace.
 *
 * Why a tmpfs of our own: DynamicUser= implies PrivateTmp=, and systemd 252
 * lets PrivateTmp='s bind of a directory on the host's /tmp win over
 * TemporaryFileSystem=/tmp, so the run's /tmp would have no size cap and sit
 * on the host's /tmp (and /var/tmp on its disk). A bind mount wins over
 * PrivateTmp=: each run's unit binds TMPFS_ROOT/ID on /tmp and /var/tmp, and
 * the broker asks for the mount before it starts the unit and for its removal
 * after the unit is gone. One process for all runs instead of two helpers
 * forked by systemd per run, each in a mount namespace of its own.
 *
 * TMPFS_ROOT is 0700 root: a run cannot reach another run's tmpfs through it;
 * ids are 128-bit hex, nothing else, so no path can be steered.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "daemon-util.h"
#include "json-util.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "main-func.h"
#include "packet.h"
#include "parse-util.h"
#include "run-tmpfs.h"
#include "tmpfs-proto.h"
#include "util.h"

/* Only the broker connects, once; a few more for a restart's overlap. */
#define CONN_MAX 8
/* A connection that asks nothing for this long and holds no mount is closed
 * (the broker connects again when it needs to). */
#define CONN_IDLE_USEC (60 * USEC_PER_SEC)
/* Mounts one connection may hold at once: far above what the broker's limits
 * allow (runs, warm units, sessions). */
#define CONN_OWNED_MAX 4096
/* After a connection closed with mounts it still held (the broker died or
 * stopped), their units are stopping: look for the gone ones this often, for
 * at most this many times. */
#define ORPHAN_CHECK_USEC (5 * USEC_PER_SEC)
#define ORPHAN_CHECKS_MAX 24

typedef struct Server Server;
typedef struct Conn Conn;

struct Conn {
        Server *server;
        LIST_FIELDS(Conn, conns);
        int fd;
        sd_event_source *io, *timer;
        pid_t pid;
        /* Mounted for this connection and not yet unmounted for it: no sweep
         * touches them while it is open. */
        char (*owned)[TMPFS_ID_LEN + 1];
        size_t n_owned;
        /* The peer closed its end: what it sent before is still done (a
         * broker on its way out asks for its runs' removals and goes). */
        bool deaf;
};

struct Server {
        sd_event *event;
        int listen_fd;
        bool socket_activated;
        sd_event_source *listen_io, *idle_timer, *orphan_timer;
        unsigned orphan_checks;
        LIST_HEAD(Conn, conns);
        unsigned n_conns;
};

static const char *arg_listen;
static uint64_t arg_idle_sec = 10;

static void server_update_idle(Server *s);
static void server_watch_orphans(Server *s);

static Conn *conn_free(Conn *c) {
        Server *s;

        if (!c)
                return NULL;
        s = c->server;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        LIST_REMOVE(conns, s->conns, c);
        s->n_conns--;
        if (c->n_owned > 0)
                server_watch_orphans(s);
        free(c->owned);
        free(c);
        server_update_idle(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Conn *, conn_free);

static ssize_t conn_find(const Conn *c, const char *id) {
        assert(c);
        assert(id);

        for (size_t i = 0; i < c->n_owned; i++)
                if (streq(c->owned[i], id))
                        return (ssize_t) i;
        return -1;
}

static int conn_own(Conn *c, const char *id) {
        assert(c);
        assert(tmpfs_valid_id(id));

        if (c->n_owned >= CONN_OWNED_MAX)
                return -ENOBUFS;
        if (c->n_owned % 64 == 0) {
                void *p = reallocarray(c->owned, c->n_owned + 64, sizeof *c->owned);
                if (!p)
                        return -ENOMEM;
                c->owned = p;
        }
        memcpy(c->owned[c->n_owned++], id, TMPFS_ID_LEN + 1);
        return 0;
}

static void conn_disown(Conn *c, const char *id) {
        ssize_t i = conn_find(c, id);

        if (i >= 0)
                memcpy(c->owned[i], c->owned[--c->n_owned], TMPFS_ID_LEN + 1);
}

/* keep() of run_tmpfs_sweep(): a mount an open connection still holds. */
static bool server_owns(const char *id, void *userdata) {
        Server *s = userdata;

        LIST_FOREACH(conns, c, s->conns)
                if (conn_find(c, id) >= 0)
                        return true;
        return false;
}

static int server_sweep(Server *s, unsigned *ret_live) {
        _cleanup_free_ char *slice = NULL;

        /* No slice yet: no run has a cgroup, so none is alive. */
        (void) run_tmpfs_slice_dir(&slice);
        return run_tmpfs_sweep(TMPFS_ROOT, slice, server_owns, s, ret_live);
}

static int on_orphan_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        Server *s = userdata;
        unsigned live = 0;
        int r;

        r = server_sweep(s, &live);
        if (r < 0 || live == 0 || ++s->orphan_checks >= ORPHAN_CHECKS_MAX) {
                if (live > 0)
                        log_info("%u run tmpfs left to the next sweep: their units are still there.", live);
                s->orphan_timer = sd_event_source_disable_unref(s->orphan_timer);
                server_update_idle(s);
                return 0;
        }
        (void) sd_event_source_set_time_relative(es, ORPHAN_CHECK_USEC);
        (void) sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
        return 0;
}

/* A connection closed with mounts it held: the broker died or stopped, and
 * their units stop with it (BindsTo=). Remove each once its unit is gone. */
static void server_watch_orphans(Server *s) {
        assert(s);

        s->orphan_checks = 0;
        if (s->orphan_timer) {
                (void) sd_event_source_set_time_relative(s->orphan_timer, ORPHAN_CHECK_USEC);
                (void) sd_event_source_set_enabled(s->orphan_timer, SD_EVENT_ONESHOT);
                return;
        }
        if (sd_event_add_time_relative(s->event, &s->orphan_timer, CLOCK_MONOTONIC, ORPHAN_CHECK_USEC, 0,
                                       on_orphan_timer, s) < 0)
                log_warning("Cannot watch the tmpfs of a closed connection; the next sweep removes them.");
}

static int reply(Conn *c, const char *error) {
        _cleanup_json_ json_object *j = NULL;
        int r;

        assert(c);

        if (c->deaf)
                return 0;
        j = json_object_new_object();
        if (!j || json_add_bool(j, "ok", !error) < 0 || (error && json_add_string(j, "error", error) < 0))
                return -ENOMEM;
        r = packet_send(c->fd, j, NULL, 0);
        if (r == -EPIPE || r == -ECONNRESET) {
                c->deaf = true;
                return 0;
        }
        return r;
}

static int conn_handle(Conn *c, const TmpfsRequest *req) {
        char msg[256];
        int r;

        assert(c);
        assert(req);

        switch (req->op) {
        case TMPFS_OP_MOUNT:
                if (conn_find(c, req->id) >= 0)
                        return reply(c, "already mounted");
                if (c->n_owned >= CONN_OWNED_MAX)
                        return reply(c, "too many mounts on one connection");
                if (run_tmpfs_prepare_root(TMPFS_ROOT) < 0)
                        return reply(c, TMPFS_ROOT " is not a directory only root may enter");
                r = run_tmpfs_mount(TMPFS_ROOT, req->id, req->size);
                if (r < 0) {
                        (void) snprintf(msg, sizeof msg, "cannot mount a tmpfs on " TMPFS_ROOT "/%s: %s", req->id,
                                        strerror(-r));
                        return reply(c, msg);
                }
                r = conn_own(c, req->id);
                if (r < 0) {
                        (void) run_tmpfs_umount(TMPFS_ROOT, req->id);
                        return reply(c, "out of memory");
                }
                log_debug("Mounted the /tmp of run %s (%" PRIu64 " bytes)", req->id, req->size);
                return reply(c, NULL);

        case TMPFS_OP_UMOUNT:
                conn_disown(c, req->id);
                r = run_tmpfs_umount(TMPFS_ROOT, req->id);
                if (r < 0) {
                        (void) snprintf(msg, sizeof msg, "cannot remove " TMPFS_ROOT "/%s: %s", req->id, strerror(-r));
                        return reply(c, msg);
                }
                log_debug("Removed the /tmp of run %s", req->id);
                return reply(c, NULL);

        case TMPFS_OP_SWEEP: {
                unsigned live = 0;

                r = server_sweep(c->server, &live);
                if (r < 0) {
                        (void) snprintf(msg, sizeof msg, "cannot read " TMPFS_ROOT ": %s", strerror(-r));
                        return reply(c, msg);
                }
                /* The broker sweeps as it starts: what no connection holds
                 * and still has a unit is a dead broker's, stopping now. */
                if (live > 0)
                        server_watch_orphans(c->server);
                return reply(c, NULL);
        }

        default:
                assert(false);
                return -EINVAL;
        }
}

static int on_conn_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        _cleanup_json_ json_object *j = NULL;
        TmpfsRequest req;
        const char *error;
        int r;

        r = packet_recv(fd, &j, NULL, 0, NULL);
        if (r == -EAGAIN)
                return 0;
        if (r == -EBADMSG) {
                /* Oversized, not JSON, or with fds: not our broker. */
                (void) reply(c, "malformed packet");
                conn_free(c);
                return 0;
        }
        if (r <= 0) {
                conn_free(c);
                return 0;
        }
        (void) sd_event_source_set_time_relative(c->timer, CONN_IDLE_USEC);

        if (tmpfs_request_parse(j, &req, &error) < 0)
                r = reply(c, error);
        else
                r = conn_handle(c, &req);
        if (r < 0) {
                /* It does not take its answers: it gets no more. */
                log_warning_errno(r, "Cannot answer pid %i, closing its connection: %m", (int) c->pid);
                conn_free(c);
        }
        return 0;
}

static int on_conn_idle(sd_event_source *es, uint64_t usec, void *userdata) {
        Conn *c = userdata;

        /* Its mounts are promised to it while it is open (tmpfs-proto.h):
         * closing it would leave one whose unit is not started yet to a
         * sweep. It stays while it holds any. */
        if (c->n_owned > 0) {
                (void) sd_event_source_set_time_relative(es, CONN_IDLE_USEC);
                (void) sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
                return 0;
        }
        conn_free(c);
        return 0;
}

/* Answers a connection we will not serve, having read what it sent (closing
 * with unread data would reset it, and hide the answer). */
static void refuse(int fd, const char *why) {
        _cleanup_json_ json_object *j = json_object_new_object();

        for (unsigned i = 0; i < 8; i++) {
                _cleanup_json_ json_object *m = NULL;
                int r = packet_recv(fd, &m, NULL, 0, NULL);
                if (r <= 0 && r != -EBADMSG)
                        break;
        }
        if (j && json_add_bool(j, "ok", false) >= 0 && json_add_string(j, "error", why) >= 0)
                (void) packet_send(fd, j, NULL, 0);
        (void) shutdown(fd, SHUT_WR);
}

static void refuse_not_root(int fd, void *userdata) {
        refuse(fd, "only root may use mcp-exec-tmpfsd");
}

static int on_accept(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        _cleanup_close_ int cfd = -EBADF;
        _cleanup_(conn_freep) Conn *c = NULL;
        pid_t pid;
        uid_t uid;
        int r;

        assert(s);

        r = daemon_accept_root(fd, UID_INVALID, refuse_not_root, NULL, &cfd, &pid, &uid);
        if (r <= 0)
                return 0;
        if (s->n_conns >= CONN_MAX) {
                refuse(cfd, "too many connections");
                return 0;
        }

        c = new0(Conn, 1);
        if (!c)
                return log_oom(), 0;
        c->server = s;
        c->fd = -EBADF;
        c->pid = pid;
        LIST_PREPEND(conns, s->conns, c);
        s->n_conns++;
        server_update_idle(s);
        r = sd_event_add_io(s->event, &c->io, cfd, EPOLLIN, on_conn_io, c);
        if (r >= 0)
                r = sd_event_add_time_relative(s->event, &c->timer, CLOCK_MONOTONIC, CONN_IDLE_USEC, 0,
                                               on_conn_idle, c);
        if (r < 0)
                return log_error_errno(r, "Failed to watch a connection: %m"), 0;
        c->fd = TAKE_FD(cfd);
        TAKE_PTR(c);
        return 0;
}

static int on_idle(sd_event_source *es, uint64_t usec, void *userdata) {
        Server *s = userdata;

        if (s->n_conns > 0 || s->orphan_timer)
                return 0;
        log_debug("Idle, exiting; socket activation starts us again.");
        return daemon_exit_idle(s->event);
}

static void server_update_idle(Server *s) {
        assert(s);

        /* Nor while the loop is over: server_free() closes the connections
         * after it, and no timer can be added then. */
        if (!s->socket_activated || arg_idle_sec == 0 || !s->event ||
            sd_event_get_state(s->event) == SD_EVENT_FINISHED)
                return;
        daemon_idle_update(s->event, &s->idle_timer, arg_idle_sec * USEC_PER_SEC, s->n_conns > 0 || s->orphan_timer,
                           on_idle, s);
}

static int server_listen(Server *s) {
        int r;

        assert(s);

        r = daemon_listen_unix(arg_listen ?: TMPFS_SOCKET_PATH, 16, &s->listen_fd);
        if (r < 0)
                return r;
        s->socket_activated = r > 0;
        return 0;
}

static Server *server_free(Server *s) {
        if (!s)
                return NULL;
        /* The mounts stay: the broker asks for their removal again, or sweeps. */
        s->orphan_timer = sd_event_source_disable_unref(s->orphan_timer);
        while (s->conns) {
                s->conns->n_owned = 0;
                conn_free(s->conns);
        }
        sd_event_source_disable_unref(s->idle_timer);
        sd_event_source_disable_unref(s->listen_io);
        if (!s->socket_activated)
                safe_close(s->listen_fd);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Server *, server_free);

static void help(void) {
        printf("mcp-exec-tmpfsd [OPTIONS]\n\n"
               "Mounts and removes the private /tmp of each mcp-exec run for the broker.\n"
               "Normally socket-activated by mcp-exec-tmpfs.socket.\n\n"
               "  -h --help               Show this help\n"
               "     --listen=PATH        Listen on PATH instead of a socket-activated fd\n"
               "     --idle-exit-sec=SEC  Exit after SEC idle seconds when socket-activated (0: never)\n");
}

static int parse_argv(int argc, char *argv[]) {
        return daemon_parse_argv(&(DaemonArgv) {
                .help = help, .listen = &arg_listen, .idle_exit_sec = &arg_idle_sec,
        }, argc, argv);
}

static int run(int argc, char *argv[]) {
        _cleanup_(server_freep) Server *s = NULL;
        int r;

        log_open("mcp-exec-tmpfsd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        s = new0(Server, 1);
        if (!s)
                return log_oom();
        s->listen_fd = -EBADF;
        r = server_listen(s);
        if (r < 0)
                return r;
        r = event_new_daemon(&s->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        r = sd_event_add_io(s->event, &s->listen_io, s->listen_fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the listening socket: %m");
        /* A restart forgot who held what, and what a closed connection left
         * to watch: treat every mount as a closed connection's. Not at once:
         * a broker still up may have a unit starting on one (no cgroup yet). */
        server_watch_orphans(s);
        server_update_idle(s);

        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        r = sd_event_loop(s->event);
        (void) sd_notify(false, "STOPPING=1");
        return r;
}

DEFINE_MAIN_FUNCTION(run);
