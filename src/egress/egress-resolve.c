/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-resolve.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

struct EgressLookup {
        char *host;
        int error;                      /* written by the thread before it posts */
        struct addrinfo *ai;
        /* Only the loop thread reads or writes these: the thread touches
         * host, error and ai, then posts the pointer and forgets it. */
        bool cancelled;
        egress_lookup_done_t done;
        void *userdata;
        int post_fd;
};

struct EgressResolver {
        sd_event_source *io;
        int pipe[2];
        unsigned n_running;
};

static void lookup_free(EgressLookup *l) {
        if (!l)
                return;
        if (l->ai)
                freeaddrinfo(l->ai);
        free(l->host);
        free(l);
}

static void *lookup_thread(void *p) {
        EgressLookup *l = p;
        struct addrinfo hints = {
                .ai_family = AF_UNSPEC,
                .ai_socktype = SOCK_STREAM,
        };
        ssize_t n;

        l->error = getaddrinfo(l->host, NULL, &hints, &l->ai);
        if (l->error != 0)
                l->ai = NULL;
        /* A pointer is far below PIPE_BUF: the write is atomic. The write end
         * stays open for as long as the process lives (see below). */
        do
                n = write(l->post_fd, &l, sizeof l);
        while (n < 0 && errno == EINTR);
        return NULL;
}

static int on_posted(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        EgressResolver *r = userdata;

        for (unsigned i = 0; i < EGRESS_LOOKUPS_MAX; i++) {
                EgressLookup *l;
                ssize_t n = read(fd, &l, sizeof l);

                if (n != (ssize_t) sizeof l)
                        break;
                assert(r->n_running > 0);
                r->n_running--;
                if (!l->cancelled && l->done)
                        l->done(l->error, l->ai, l->userdata);
                lookup_free(l);
        }
        return 0;
}

int egress_resolver_new(sd_event *e, EgressResolver **ret) {
        EgressResolver *r;
        int k = 0;

        assert(e);
        assert(ret);

        r = new0(EgressResolver, 1);
        if (!r)
                return -ENOMEM;
        r->pipe[0] = r->pipe[1] = -EBADF;
        if (pipe2(r->pipe, O_CLOEXEC) < 0) {
                k = -errno;
                free(r);
                return k;
        }
        /* Only the loop's end is non-blocking; a thread's write may wait. */
        if (fcntl(r->pipe[0], F_SETFL, O_NONBLOCK) < 0 ||
            (k = sd_event_add_io(e, &r->io, r->pipe[0], EPOLLIN, on_posted, r)) < 0) {
                k = k < 0 ? k : -errno;
                safe_close(r->pipe[0]);
                safe_close(r->pipe[1]);
                free(r);
                return k;
        }
        *ret = r;
        return 0;
}

EgressResolver *egress_resolver_free(EgressResolver *r) {
        if (!r)
                return NULL;
        sd_event_source_disable_unref(r->io);
        /* Threads still running write their answer to the pipe: closing it
         * would have them write to a closed fd, or to whatever took its
         * number. This only happens as the process exits: leave both ends
         * and the lookups to the exit. */
        if (r->n_running == 0) {
                safe_close(r->pipe[0]);
                safe_close(r->pipe[1]);
        }
        free(r);
        return NULL;
}

int egress_resolve(EgressResolver *r, const char *host, egress_lookup_done_t done, void *userdata,
                   EgressLookup **ret) {
        pthread_attr_t attr;
        pthread_t t;
        EgressLookup *l;
        int k;

        assert(r);
        assert(host);
        assert(done);
        assert(ret);

        if (r->n_running >= EGRESS_LOOKUPS_MAX)
                return -EBUSY;
        l = new0(EgressLookup, 1);
        if (!l)
                return -ENOMEM;
        l->host = strdup(host);
        if (!l->host) {
                free(l);
                return -ENOMEM;
        }
        l->done = done;
        l->userdata = userdata;
        l->post_fd = r->pipe[1];

        k = pthread_attr_init(&attr);
        if (k == 0) {
                (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                /* getaddrinfo() with NSS modules needs little; keep the 8 MiB
                 * default off a 64 MiB unit. */
                (void) pthread_attr_setstacksize(&attr, 256 * 1024);
                k = pthread_create(&t, &attr, lookup_thread, l);
                (void) pthread_attr_destroy(&attr);
        }
        if (k != 0) {
                lookup_free(l);
                return -k;
        }
        r->n_running++;
        *ret = l;
        return 0;
}

void egress_lookup_cancel(EgressLookup *l) {
        if (l)
                l->cancelled = true;
}
