/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-server.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "daemon-util.h"
#include "egress-run.h"
#include "log.h"
#include "macro.h"

static int on_accept(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        EgressServer *s = userdata;
        _cleanup_close_ int cfd = -EBADF;
        pid_t pid;
        uid_t uid;
        int r;

        assert(s);

        r = daemon_accept_root(fd, UID_INVALID, NULL, NULL, &cfd, &pid, &uid);
        if (r <= 0)
                return 0;
        /* Who it is (a run, an upstream instance) its first packet says:
         * each has its own cap there (egress-run.c). */
        if (s->n_runs >= s->runs_max + EGRESS_UPSTREAMS_MAX) {
                log_warning("%u control connections at once already; one more is closed.", s->n_runs);
                return 0;
        }
        r = egress_run_new(s, TAKE_FD(cfd));
        if (r < 0)
                log_error_errno(r, "Cannot take a run: %m");
        return 0;
}

static int on_idle(sd_event_source *es, uint64_t usec, void *userdata) {
        EgressServer *s = userdata;

        if (s->n_runs > 0)
                return 0;
        log_debug("Idle, exiting; socket activation starts us again.");
        return daemon_exit_idle(s->event);
}

void egress_server_update_idle(EgressServer *s) {
        assert(s);

        if (!s->socket_activated || s->idle_usec == 0 || !s->event ||
            sd_event_get_state(s->event) == SD_EVENT_FINISHED)
                return;
        daemon_idle_update(s->event, &s->idle_timer, s->idle_usec, s->n_runs > 0, on_idle, s);
}

uint64_t egress_fd_budget(uint64_t runs_max, uint64_t max_connections) {
        /* Both at most a few thousand (config.c, egress-policy.c): no overflow. */
        assert(runs_max <= UINT32_MAX && max_connections <= UINT32_MAX);
        return EGRESS_FDS_FIXED + runs_max * EGRESS_FDS_PER_RUN +
               EGRESS_FDS_PER_CONN * MIN(runs_max * max_connections, (uint64_t) EGRESS_CONNS_MAX);
}

int egress_server_new(sd_event *e, EgressConfig *config, int listen_fd, bool socket_activated, uint64_t idle_usec,
                      uint64_t runs_max, EgressServer **ret) {
        _cleanup_(egress_server_freep) EgressServer *s = NULL;
        int r;

        assert(e);
        assert(config);
        assert(ret);

        s = new0(EgressServer, 1);
        if (!s) {
                if (!socket_activated)
                        safe_close(listen_fd);
                return -ENOMEM;
        }
        s->event = sd_event_ref(e);
        s->listen_fd = listen_fd;
        s->socket_activated = socket_activated;
        s->idle_usec = idle_usec;
        s->runs_max = runs_max;
        s->config = *config;
        *config = (EgressConfig) {};

        r = egress_resolver_new(e, &s->resolver);
        if (r < 0)
                return r;
        r = sd_event_add_io(e, &s->listen_io, listen_fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return r;
        egress_server_update_idle(s);
        *ret = TAKE_PTR(s);
        return 0;
}

EgressServer *egress_server_free(EgressServer *s) {
        if (!s)
                return NULL;
        while (s->runs)
                egress_run_free(s->runs);
        sd_event_source_disable_unref(s->idle_timer);
        sd_event_source_disable_unref(s->listen_io);
        if (!s->socket_activated)
                safe_close(s->listen_fd);
        egress_resolver_free(s->resolver);
        egress_config_done(&s->config);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}
