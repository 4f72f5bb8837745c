/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tmpfs-client.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "packet.h"
#include "json-util.h"
#include "list.h"
#include "log.h"
#include "tmpfs-proto.h"

/* The daemon answers at once; one that stays silent this long is stuck
 * (its watchdog restarts it): the waiting runs fail rather than hang. */
#define REPLY_TIMEOUT_USEC (30 * USEC_PER_SEC)
/* Far above what the broker's limits allow to be in flight. */
#define QUEUE_MAX 16384
/* A request the daemon closed the connection on is sent once more, on a new
 * one: it closes idle connections, and reads nothing it does not answer. */
#define ATTEMPTS_MAX 2

struct TmpfsCall {
        TmpfsClient *client;
        LIST_FIELDS(TmpfsCall, queue);
        TmpfsRequest req;
        json_object *packet;
        bool sent;
        unsigned attempts;
        tmpfs_call_done_t done;
        void *userdata;
};

struct TmpfsClient {
        sd_event *event;
        char *path;
        int fd;
        sd_event_source *io, *kick, *timer;
        /* In order of asking; those sent come first. */
        LIST_HEAD(TmpfsCall, queue);
        TmpfsCall *tail;
        size_t n_queue;
};

static TmpfsCall *call_free(TmpfsCall *call) {
        if (!call)
                return NULL;
        json_object_put(call->packet);
        free(call);
        return NULL;
}

static void client_unlink(TmpfsClient *c, TmpfsCall *call) {
        assert(c);
        assert(call);

        if (c->tail == call)
                c->tail = call->queue_prev;
        LIST_REMOVE(queue, c->queue, call);
        c->n_queue--;
}

/* Tells the caller, or the journal if nobody waits for the answer, and frees
 * the call (already out of the queue). */
static void call_finish(TmpfsCall *call, int error, const char *message) {
        assert(call);

        if (call->done)
                call->done(error, message, call->userdata);
        else if (error < 0 && call->req.op == TMPFS_OP_UMOUNT)
                log_struct(LOG_WARNING, "MESSAGE=Cannot remove the /tmp of run %s: %s", call->req.id, message,
                           "MCP_RUN_ID=%s", call->req.id);
        else if (error < 0 && call->req.op == TMPFS_OP_SWEEP)
                log_warning("Cannot sweep the /tmp of finished runs: %s", message);
        call_free(call);
}

static void call_complete(TmpfsCall *call, int error, const char *message) {
        client_unlink(call->client, call);
        call_finish(call, error, message);
}

static void client_disconnect(TmpfsClient *c) {
        assert(c);

        c->io = sd_event_source_disable_unref(c->io);
        c->fd = safe_close(c->fd);
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
}

static void client_kick(TmpfsClient *c) {
        assert(c);

        if (c->queue)
                (void) sd_event_source_set_enabled(c->kick, SD_EVENT_ONESHOT);
}

/* Every queued call fails with error: there is no daemon to ask. */
static void client_fail_all(TmpfsClient *c, int error, const char *message) {
        TmpfsCall *first = c->queue;

        assert(c);

        client_disconnect(c);
        /* Callbacks may ask again (a failed run's removal): into a new queue. */
        c->queue = c->tail = NULL;
        c->n_queue = 0;
        while (first) {
                TmpfsCall *call = first;

                first = call->queue_next;
                call->queue_next = call->queue_prev = NULL;
                call_finish(call, error, message);
        }
}

/* The connection is gone: what was sent goes again on a new one, once. */
static void client_lost(TmpfsClient *c, int error) {
        char msg[256];

        assert(c);

        client_disconnect(c);
        (void) snprintf(msg, sizeof msg, "the connection to mcp-exec-tmpfsd broke: %s", strerror(-error));
        LIST_FOREACH_SAFE(queue, call, n, c->queue) {
                if (!call->sent)
                        continue;
                call->sent = false;
                if (call->attempts >= ATTEMPTS_MAX)
                        call_complete(call, error, msg);
        }
        client_kick(c);
}

static void client_update_timer(TmpfsClient *c) {
        assert(c);

        if (!c->queue || !c->queue->sent) {
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time_relative(c->timer, REPLY_TIMEOUT_USEC);
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

static void client_send(TmpfsClient *c) {
        bool blocked = false, any = false;
        int enabled, r;

        assert(c);
        assert(c->fd >= 0);

        LIST_FOREACH(queue, call, c->queue) {
                if (call->sent)
                        continue;
                r = packet_send(c->fd, call->packet, NULL, 0);
                if (r == -EAGAIN) {
                        blocked = true;
                        break;
                }
                if (r < 0) {
                        client_lost(c, r);
                        return;
                }
                call->sent = true;
                call->attempts++;
                any = true;
        }
        (void) sd_event_source_set_io_events(c->io, EPOLLIN | (blocked ? EPOLLOUT : 0));
        if (any && sd_event_source_get_enabled(c->timer, &enabled) >= 0 && enabled == SD_EVENT_OFF)
                client_update_timer(c);
}

static void client_receive(TmpfsClient *c) {
        assert(c);

        while (c->fd >= 0) {
                _cleanup_json_ json_object *j = NULL;
                TmpfsCall *call = c->queue;
                int r;

                r = packet_recv(c->fd, &j, NULL, 0, NULL);
                if (r == -EAGAIN)
                        break;
                if (r <= 0 || !call || !call->sent) {
                        /* Gone, or answering what nobody asked. */
                        client_lost(c, r == 0 ? -ECONNRESET : r < 0 ? r : -EPROTO);
                        return;
                }
                if (json_get_bool(j, "ok"))
                        call_complete(call, 0, NULL);
                else
                        call_complete(call, -EIO, json_get_string(j, "error") ?: "refused, without a reason");
        }
        client_update_timer(c);
}

static int on_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        TmpfsClient *c = userdata;

        if (revents & EPOLLOUT)
                client_send(c);
        if (c->fd >= 0 && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                client_receive(c);
        return 0;
}

static int on_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        TmpfsClient *c = userdata;

        log_error("mcp-exec-tmpfsd did not answer for %u s, giving up on what it was asked.",
                  (unsigned) (REPLY_TIMEOUT_USEC / USEC_PER_SEC));
        LIST_FOREACH(queue, call, c->queue)
                if (call->sent)
                        call->attempts = ATTEMPTS_MAX;
        client_lost(c, -ETIMEDOUT);
        return 0;
}

static int on_kick(sd_event_source *es, void *userdata) {
        TmpfsClient *c = userdata;
        int fd, r;

        if (!c->queue)
                return 0;
        if (c->fd < 0) {
                fd = packet_connect(c->path);
                if (fd >= 0) {
                        r = sd_event_add_io(c->event, &c->io, fd, EPOLLIN, on_io, c);
                        if (r < 0)
                                safe_close(fd);
                        else
                                c->fd = fd;
                } else
                        r = fd;
                if (r < 0) {
                        char msg[256];

                        (void) snprintf(msg, sizeof msg, "cannot reach mcp-exec-tmpfsd at %s: %s", c->path,
                                        strerror(-r));
                        log_error("%s", msg);
                        client_fail_all(c, r, msg);
                        return 0;
                }
        }
        client_send(c);
        return 0;
}

int tmpfs_client_new(sd_event *e, const char *path, TmpfsClient **ret) {
        _cleanup_(tmpfs_client_freep) TmpfsClient *c = NULL;
        int r;

        assert(e);
        assert(path);
        assert(ret);

        c = new0(TmpfsClient, 1);
        if (!c)
                return -ENOMEM;
        c->fd = -EBADF;
        c->event = sd_event_ref(e);
        c->path = strdup(path);
        if (!c->path)
                return -ENOMEM;
        r = sd_event_add_defer(e, &c->kick, on_kick, c);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->kick, SD_EVENT_OFF);
        if (r >= 0)
                r = sd_event_add_time_relative(e, &c->timer, CLOCK_MONOTONIC, REPLY_TIMEOUT_USEC, 0, on_timer, c);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

TmpfsClient *tmpfs_client_free(TmpfsClient *c) {
        if (!c)
                return NULL;
        /* Best effort, without waiting: what is not sent now is left to the
         * daemon's watch of closed connections and the next start's sweep. */
        if (c->queue && c->fd < 0)
                c->fd = packet_connect(c->path);
        LIST_FOREACH(queue, call, c->queue)
                if (c->fd >= 0 && !call->sent && packet_send(c->fd, call->packet, NULL, 0) < 0)
                        break;
        while (c->queue) {
                TmpfsCall *call = c->queue;

                client_unlink(c, call);
                call_free(call);
        }
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->kick);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        sd_event_unref(c->event);
        free(c->path);
        free(c);
        return NULL;
}

static int client_ask(TmpfsClient *c, const TmpfsRequest *req, tmpfs_call_done_t done, void *userdata,
                      TmpfsCall **ret_call) {
        _cleanup_json_ json_object *packet = NULL;
        TmpfsCall *call;
        int r;

        assert(c);
        assert(req);

        if (c->n_queue >= QUEUE_MAX)
                return -ENOBUFS;
        r = tmpfs_request_build(req, &packet);
        if (r < 0)
                return r;
        call = new0(TmpfsCall, 1);
        if (!call)
                return -ENOMEM;
        *call = (TmpfsCall) {
                .client = c,
                .req = *req,
                .packet = TAKE_PTR(packet),
                .done = done,
                .userdata = userdata,
                .queue_prev = c->tail,
        };
        if (c->tail)
                c->tail->queue_next = call;
        else
                c->queue = call;
        c->tail = call;
        c->n_queue++;
        client_kick(c);
        if (ret_call)
                *ret_call = call;
        return 0;
}

int tmpfs_client_mount(TmpfsClient *c, const char *id, uint64_t size, tmpfs_call_done_t done, void *userdata,
                       TmpfsCall **ret_call) {
        TmpfsRequest req = { .op = TMPFS_OP_MOUNT, .size = size };

        assert(id);
        assert(done);

        if (!tmpfs_valid_id(id) || size < TMPFS_SIZE_MIN || size > TMPFS_SIZE_MAX)
                return -EINVAL;
        memcpy(req.id, id, sizeof req.id);
        return client_ask(c, &req, done, userdata, ret_call);
}

int tmpfs_client_umount(TmpfsClient *c, const char *id) {
        TmpfsRequest req = { .op = TMPFS_OP_UMOUNT };

        assert(id);

        if (!tmpfs_valid_id(id))
                return -EINVAL;
        memcpy(req.id, id, sizeof req.id);
        return client_ask(c, &req, NULL, NULL, NULL);
}

int tmpfs_client_sweep(TmpfsClient *c) {
        return client_ask(c, &(TmpfsRequest) { .op = TMPFS_OP_SWEEP }, NULL, NULL, NULL);
}

TmpfsCall *tmpfs_call_cancel(TmpfsCall *call) {
        if (call) {
                call->done = NULL;
                call->userdata = NULL;
        }
        return NULL;
}
