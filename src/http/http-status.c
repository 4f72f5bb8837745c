/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GET /healthz and GET /metrics: the answers come from the daemon's status
 * handler (it knows the broker and the queue; we do not). When it has to ask
 * the broker first, the request waits, suspended, in a list the handler's
 * http_server_status_ready() walks. */
#include <assert.h>
#include <stdlib.h>

#include "http-internal.h"
#include "jsonrpc.h"
#include "list.h"
#include "log.h"
#include "macro.h"

void http_server_set_status_handler(HttpServer *h, http_status_t handler, void *userdata) {
        assert(h);

        h->status_handler = handler;
        h->status_userdata = userdata;
}

static mhd_result answer(HttpRequest *req, HttpStatusAnswer *a) {
        struct MHD_Response *resp;

        assert(req);
        assert(a);

        resp = MHD_create_response_from_buffer(a->size, a->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(a->body);
                return MHD_NO;
        }
        a->body = NULL;
        /* Checks and scrapes want the state of now, never a cached copy. */
        if (MHD_add_response_header(resp, "Content-Type", a->content_type) == MHD_NO ||
            MHD_add_response_header(resp, "Cache-Control", "no-store") == MHD_NO) {
                MHD_destroy_response(resp);
                return MHD_NO;
        }
        return http_request_queue(req, a->status, resp);
}

static int ask(HttpRequest *req, HttpStatusAnswer *ret) {
        HttpServer *h = req->server;

        assert(req);
        assert(ret);

        *ret = (HttpStatusAnswer) {};
        return h->status_handler(h, req->status.kind, req->status.details, ret, h->status_userdata);
}

mhd_result http_status_handle(HttpRequest *req) {
        HttpServer *h = req->server;
        HttpStatusAnswer a;
        int r;

        assert(req);

        assert(req->status.wanted);

        r = ask(req, &a);
        if (r < 0) {
                log_debug("The status handler failed: %s", strerror(-r));
                return http_request_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, JSONRPC_INTERNAL_ERROR,
                                          "Internal Server Error");
        }
        if (r > 0)
                return answer(req, &a);
        req->status.waiting = true;
        LIST_PREPEND(status, h->status_waiting, req);
        req->state = REQUEST_WAITING;
        http_request_suspend(req);
        return MHD_YES;
}

void http_status_request_gone(HttpRequest *req) {
        assert(req);

        if (!req->status.waiting)
                return;
        LIST_REMOVE(status, req->server->status_waiting, req);
        req->status.waiting = false;
}

void http_server_status_ready(HttpServer *h) {
        HttpRequest *waiting;

        if (!h)
                return;
        /* Taken off first: a handler that is still not ready puts them back. */
        waiting = TAKE_PTR(h->status_waiting);
        while (waiting) {
                HttpRequest *req = waiting;
                HttpStatusAnswer a;
                int r;

                LIST_REMOVE(status, waiting, req);
                req->status.waiting = false;
                r = ask(req, &a);
                if (r == 0) {
                        req->status.waiting = true;
                        LIST_PREPEND(status, h->status_waiting, req);
                        continue;
                }
                if (r < 0) {
                        /* Nothing to say: the connection ends without an answer. */
                        req->peer_gone = true;
                        http_request_resume(req);
                        continue;
                }
                (void) http_request_set_reply(req, a.status, a.content_type, a.body, a.size, NULL);
        }
}
