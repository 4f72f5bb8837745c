/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "build-config.h"
#include "daemon-util.h"
#include "log.h"
#include "macro.h"
#include "tools-internal.h"
#include "tools-policy.h"

static int on_accept(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        _cleanup_close_ int cfd = -EBADF;
        pid_t pid;
        uid_t uid;
        int r;

        assert(m);

        r = daemon_accept_root(fd, UID_INVALID, NULL, NULL, &cfd, &pid, &uid);
        if (r <= 0)
                return 0;
        if (m->n_controls >= TOOLS_CONTROLS_MAX) {
                log_warning("%u control connections at once already; one more is closed.", m->n_controls);
                return 0;
        }
        r = control_new(m, TAKE_FD(cfd));
        if (r < 0)
                log_error_errno(r, "Cannot take a control connection: %m");
        return 0;
}

static int on_idle(sd_event_source *es, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (m->n_controls > 0 || m->n_upstreams > 0)
                return 0;
        log_debug("Idle, exiting; socket activation starts us again.");
        return daemon_exit_idle(m->event);
}

void manager_update_idle(Manager *m) {
        assert(m);

        if (!m->socket_activated || m->idle_usec == 0 || !m->event ||
            sd_event_get_state(m->event) == SD_EVENT_FINISHED)
                return;
        /* An upstream connection is kept until its IDLE_S: the daemon
         * stays while one is open, so that a caller's state survives. */
        daemon_idle_update(m->event, &m->idle_timer, m->idle_usec, m->n_controls > 0 || m->n_upstreams > 0,
                           on_idle, m);
}

bool manager_serves(Manager *m, size_t server, const char *caller) {
        assert(m);

        /* An HTTP upstream (URL=) is reached through its bridge's socket as
         * a stdio one is; a build without the bridge has it off for everyone. */
        return server < m->n_servers && (HAVE_HTTP_UPSTREAM || !m->servers[server].http) &&
               tools_policy_allows_caller(&m->servers[server], caller);
}

int manager_get_upstream(Manager *m, size_t server, const char *caller, Upstream **ret) {
        const ToolsServerConfig *s;
        const char *key;
        int r;

        assert(m);
        assert(server < m->n_servers);
        assert(ret);

        s = &m->servers[server];
        key = s->shared ? NULL : caller;
        LIST_FOREACH(upstreams, u, m->upstreams)
                if (u->server == server && streq_ptr(u->caller, key)) {
                        *ret = u;
                        return 0;
                }
        if (m->n_upstreams >= TOOLS_UPSTREAMS_MAX)
                return -EMFILE;
        r = upstream_new(m, server, key, ret);
        if (r >= 0)
                manager_update_idle(m);
        return r;
}

int manager_new(sd_event *e, ToolsServerConfig **servers, size_t *n_servers, int listen_fd, bool socket_activated,
                uint64_t idle_usec, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        assert(e);
        assert(servers);
        assert(n_servers);
        assert(ret);

        m = new0(Manager, 1);
        if (!m) {
                if (!socket_activated)
                        safe_close(listen_fd);
                return -ENOMEM;
        }
        m->event = sd_event_ref(e);
        m->listen_fd = listen_fd;
        m->socket_activated = socket_activated;
        m->idle_usec = idle_usec;
        m->servers = TAKE_PTR(*servers);
        m->n_servers = *n_servers;
        *n_servers = 0;

        r = sd_event_add_io(e, &m->listen_io, listen_fd, EPOLLIN, on_accept, m);
        if (r < 0)
                return r;
        manager_update_idle(m);
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        while (m->controls)
                control_free(m->controls);
        while (m->upstreams)
                upstream_free(m->upstreams);
        sd_event_source_disable_unref(m->idle_timer);
        sd_event_source_disable_unref(m->listen_io);
        if (!m->socket_activated)
                safe_close(m->listen_fd);
        tools_config_free(m->servers, m->n_servers);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}
