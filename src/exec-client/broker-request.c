/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "broker-request.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "json-util.h"
#include "util.h"

struct BrokerRequest {
        int fd;
        sd_event_source *io, *timer;
        bool reported;
        broker_request_done_t done;
        void *userdata;
};

static void report(BrokerRequest *b, json_object *reply, BrokerError error, const char *message) {
        assert(b);

        if (b->reported)
                return;
        b->reported = true;
        b->io = sd_event_source_disable_unref(b->io);
        b->timer = sd_event_source_disable_unref(b->timer);
        b->done(b, reply, error, message, b->userdata);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        BrokerRequest *b = userdata;
        _cleanup_json_ json_object *msg = NULL;
        const char *event;
        BrokerError e;
        int r;

        r = packet_recv(fd, &msg, NULL, 0, NULL);
        if (r == -EAGAIN || r == -EINTR)
                return 0;
        if (r <= 0) {
                report(b, NULL, BROKER_ERROR_UNAVAILABLE, "the broker closed the connection without an answer");
                return 0;
        }
        event = json_get_string(msg, "event");
        if (streq_ptr(event, "error")) {
                e = broker_error_from_string(json_get_string(msg, "code"));
                report(b, NULL, e > BROKER_ERROR_NONE ? e : BROKER_ERROR_UNKNOWN,
                       json_get_string(msg, "message") ?: "the broker reported an error");
                return 0;
        }
        if (!event) {
                report(b, NULL, BROKER_ERROR_UNKNOWN, "the broker answered something else");
                return 0;
        }
        report(b, msg, BROKER_ERROR_NONE, NULL);
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        report(userdata, NULL, BROKER_ERROR_LOST, "the broker did not answer in time");
        return 0;
}

int broker_request_start(sd_event *e, const char *socket_path, json_object *msg, uint64_t timeout_usec,
                         broker_request_done_t done, void *userdata, BrokerRequest **ret) {
        _cleanup_(broker_request_freep) BrokerRequest *b = NULL;
        int r;

        assert(e);
        assert(socket_path);
        assert(msg);
        assert(done);
        assert(ret);

        b = new0(BrokerRequest, 1);
        if (!b)
                return -ENOMEM;
        b->done = done;
        b->userdata = userdata;
        b->fd = packet_connect(socket_path);
        if (b->fd < 0)
                return b->fd;
        r = packet_send(b->fd, msg, NULL, 0);
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

BrokerRequest *broker_request_free(BrokerRequest *b) {
        if (!b)
                return NULL;
        sd_event_source_disable_unref(b->io);
        sd_event_source_disable_unref(b->timer);
        safe_close(b->fd);
        free(b);
        return NULL;
}
