/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "packet.h"
#include "tools-internal.h"
#include "tools-policy.h"
#include "util.h"

Control *control_free(Control *c) {
        Manager *m;

        if (!c)
                return NULL;
        m = c->manager;
        run_free(c->run);
        sd_event_source_disable_unref(c->io);
        safe_close(c->fd);
        LIST_REMOVE(controls, m->controls, c);
        m->n_controls--;
        free(c);
        manager_update_idle(m);
        return NULL;
}

static int reply_error(Control *c, const char *message) {
        _cleanup_json_ json_object *j = NULL;

        log_warning("Refused a control request: %s", message);
        if (json_build(&j, JB_BOOL("ok", false), JB_STR("error", message), JB_END) >= 0)
                (void) packet_send(c->fd, j, NULL, 0);
        return -EINVAL;
}

/* The broker's strings: ours to log and compare, so plain and short. */
static bool valid_token(const char *s, size_t max) {
        if (!s || !s[0] || strlen(s) > max)
                return false;
        for (const char *p = s; *p; p++)
                if (*p <= ' ' || *p >= 0x7f)
                        return false;
        return true;
}

static bool fd_is_stream_pair(int fd) {
        int type = 0, domain = 0;
        socklen_t len = sizeof type;

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
                return false;
        len = sizeof domain;
        return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) >= 0 && domain == AF_UNIX;
}

static json_object *allowed_names(Manager *m, const char *caller) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < m->n_servers; i++)
                if (manager_serves(m, i, caller) &&
                    json_append(a, json_object_new_string(m->servers[i].name)) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

static int control_run(Control *c, json_object *msg, int fd) {
        _cleanup_close_ int run_fd = fd;
        _cleanup_json_ json_object *reply = NULL;
        const char *id = json_get_string(msg, "run"), *caller = json_get_string(msg, "caller");
        int r;

        if (c->run)
                return reply_error(c, "this control connection has a run already");
        if (!valid_token(id, TOOLS_RUN_ID_MAX) || !valid_token(caller, TOOLS_CALLER_MAX))
                return reply_error(c, "expected {\"op\":\"run\",\"run\":ID,\"caller\":CALLER} (printable, short)");
        if (run_fd < 0 || !fd_is_stream_pair(run_fd) || fd_nonblock(run_fd, true) < 0)
                return reply_error(c, "\"run\" needs one fd: a connected AF_UNIX SOCK_STREAM socket");
        r = run_new(c, id, caller, TAKE_FD(run_fd), &c->run);
        if (r < 0)
                return reply_error(c, "cannot take the run (out of resources)");
        if (json_build(&reply, JB_BOOL("ok", true), JB_OBJ("servers", allowed_names(c->manager, caller)), JB_END) < 0)
                return log_oom();
        r = packet_send(c->fd, reply, NULL, 0);
        if (r < 0)
                return log_warning_errno(r, "Cannot answer the run packet: %m");
        log_debug("Run %s of %s: taken.", c->run->id, c->run->caller);
        return 0;
}

/* The allowed servers with what is known of their tools: the count of the
 * caller's last list (or the shared one), null before any. */
static int control_describe(Control *c, json_object *msg) {
        _cleanup_json_ json_object *reply = NULL, *a = json_object_new_array();
        const char *caller = json_get_string(msg, "caller");
        Manager *m = c->manager;

        if (!valid_token(caller, TOOLS_CALLER_MAX))
                return reply_error(c, "expected {\"op\":\"describe\",\"caller\":CALLER}");
        if (!a)
                return log_oom();
        for (size_t i = 0; i < m->n_servers; i++) {
                const ToolsServerConfig *s = &m->servers[i];
                json_object *o = NULL;
                int64_t n = -1;

                if (!manager_serves(m, i, caller))
                        continue;
                LIST_FOREACH(upstreams, u, m->upstreams)
                        if (u->server == i && (s->shared || streq_ptr(u->caller, caller)))
                                n = upstream_count_tools(u);
                if (json_build(&o, JB_STR("name", s->name), JB_STR("description", s->description), JB_END) < 0 ||
                    (n >= 0 ? json_add_int(o, "tools", n) : json_add_null(o, "tools")) < 0 || json_append(a, o) < 0)
                        return log_oom();
        }
        if (json_build(&reply, JB_BOOL("ok", true), JB_OBJ("servers", TAKE_PTR(a)), JB_END) < 0)
                return log_oom();
        return packet_send(c->fd, reply, NULL, 0);
}

static void control_end(Control *c) {
        _cleanup_json_ json_object *j = NULL;

        if (!c->run) {
                (void) reply_error(c, "\"end\" without a run");
                control_free(c);
                return;
        }
        /* Cancel first, so that the counts include what "end" cut. */
        run_stop(c->run, "the run ended");
        j = run_counts_json(c->run);
        if (j && json_add_string(j, "op", "counts") >= 0)
                (void) packet_send(c->fd, j, NULL, 0);
        control_free(c);
}

/* The counts so far, the run going on: a session's broker asks at each of
 * its calls' end. The id (the broker's) comes back, so that a late answer is
 * never taken for a later question's. */
static int control_counts(Control *c, json_object *msg) {
        _cleanup_json_ json_object *j = NULL;
        json_object *id = json_get(msg, "id");

        if (!c->run)
                return reply_error(c, "\"counts\" without a run");
        if (!json_object_is_type(id, json_type_int) || json_object_get_int64(id) < 0)
                return reply_error(c, "expected {\"op\":\"counts\",\"id\":N} (N >= 0)");
        j = run_counts_json(c->run);
        if (!j || json_add_string(j, "op", "counts") < 0 || json_add_int(j, "id", json_object_get_int64(id)) < 0)
                return log_oom();
        return packet_send(c->fd, j, NULL, 0);
}

static int on_control(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Control *c = userdata;

        for (unsigned i = 0; i < TOOLS_PER_WAKEUP; i++) {
                _cleanup_json_ json_object *msg = NULL;
                int fds[1] = { -EBADF };
                size_t n_fds = 0;
                const char *op;
                int k;

                k = packet_recv(fd, &msg, fds, ELEMENTSOF(fds), &n_fds);
                if (k == -EAGAIN)
                        return 0;
                if (k <= 0) {
                        /* EOF or a broken peer: its run is over. */
                        control_free(c);
                        return 0;
                }
                op = json_get_string(msg, "op");
                if (streq_ptr(op, "run"))
                        k = control_run(c, msg, n_fds == 1 ? fds[0] : -EBADF);
                else {
                        for (size_t j = 0; j < n_fds; j++)
                                safe_close(fds[j]);
                        if (streq_ptr(op, "end"))
                                return control_end(c), 0;
                        if (streq_ptr(op, "describe"))
                                k = control_describe(c, msg);
                        else if (streq_ptr(op, "counts"))
                                k = control_counts(c, msg);
                        else if (streq_ptr(op, "confirmed") && c->run)
                                run_confirmed(c->run, msg), k = 0;
                        else
                                k = reply_error(c, "unknown op: expected run, end, counts, confirmed or describe");
                }
                if (k < 0 && !c->run) {
                        control_free(c);
                        return 0;
                }
        }
        return 0;
}

int control_new(Manager *m, int fd) {
        _cleanup_close_ int cfd = fd;
        Control *c;
        int r;

        assert(m);

        c = new0(Control, 1);
        if (!c)
                return -ENOMEM;
        c->manager = m;
        c->fd = -EBADF;
        LIST_PREPEND(controls, m->controls, c);
        m->n_controls++;
        manager_update_idle(m);
        r = sd_event_add_io(m->event, &c->io, cfd, EPOLLIN, on_control, c);
        if (r < 0) {
                control_free(c);
                return r;
        }
        c->fd = TAKE_FD(cfd);
        return 0;
}
