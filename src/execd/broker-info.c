/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "broker-info.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "broker-proto.h"
#include "util.h"

/* The broker answers once its self-check and module discovery are done. */
#define INFO_TIMEOUT_USEC (30 * USEC_PER_SEC)

struct BrokerInfo {
        char op[16];
        int fd;
        sd_event_source *io, *timer;
        bool reported;
        broker_info_done_t done;
        void *userdata;
};

static void report(BrokerInfo *b, json_object *info) {
        assert(b);

        if (b->reported)
                return;
        b->reported = true;
        b->io = sd_event_source_disable_unref(b->io);
        b->timer = sd_event_source_disable_unref(b->timer);
        b->done(info, b->userdata);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        BrokerInfo *b = userdata;
        _cleanup_json_ json_object *msg = NULL;
        const char *ev;
        int r;

        r = broker_recv(fd, &msg, NULL, 0, NULL);
        if (r == -EAGAIN)
                return 0;
        /* EOF, garbage or any other answer: no answer. */
        ev = json_get_string(msg, "event");
        report(b, ev && streq(ev, b->op) ? msg : NULL);
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        report(userdata, NULL);
        return 0;
}

int broker_query_start(sd_event *e, const char *socket_path, const char *op, uint64_t timeout_usec,
                       broker_info_done_t done, void *userdata, BrokerInfo **ret) {
        _cleanup_(broker_info_freep) BrokerInfo *b = NULL;
        _cleanup_json_ json_object *req = NULL;
        int r;

        assert(e);
        assert(socket_path);
        assert(op);
        assert(done);
        assert(ret);

        if (strlen(op) >= sizeof b->op)
                return -EINVAL;
        b = new0(BrokerInfo, 1);
        if (!b)
                return -ENOMEM;
        b->fd = -EBADF;
        strcpy(b->op, op);
        b->done = done;
        b->userdata = userdata;
        b->fd = broker_connect(socket_path);
        if (b->fd < 0)
                return b->fd;
        req = json_object_new_object();
        if (!req)
                return -ENOMEM;
        json_object_object_add(req, "op", json_object_new_string(op));
        r = broker_send(b->fd, req, NULL, 0);
        if (r < 0)
                return r;
        r = sd_event_add_io(e, &b->io, b->fd, EPOLLIN, on_io, b);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(e, &b->timer, CLOCK_MONOTONIC, timeout_usec, 0, on_timeout, b);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(b);
        return 0;
}

int broker_info_start(sd_event *e, const char *socket_path, broker_info_done_t done, void *userdata,
                      BrokerInfo **ret) {
        return broker_query_start(e, socket_path, "info", INFO_TIMEOUT_USEC, done, userdata, ret);
}

BrokerInfo *broker_info_free(BrokerInfo *b) {
        if (!b)
                return NULL;
        sd_event_source_disable_unref(b->io);
        sd_event_source_disable_unref(b->timer);
        safe_close(b->fd);
        free(b);
        return NULL;
}
