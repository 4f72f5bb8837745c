/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "broker-info.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "broker-request.h"
#include "util.h"

/* The broker answers once its self-check and module discovery are done. */
#define INFO_TIMEOUT_USEC (30 * USEC_PER_SEC)

/* A BrokerRequest that takes only the answer of its own name. */
struct BrokerInfo {
        char op[16];
        BrokerRequest *request;
        broker_info_done_t done;
        void *userdata;
};

static void on_reply(BrokerRequest *r, json_object *reply, BrokerError error, const char *message, void *userdata) {
        BrokerInfo *b = userdata;

        assert(b);

        /* EOF, an error event, any other answer or none in time: no answer. */
        b->done(streq_ptr(json_get_string(reply, "event"), b->op) ? reply : NULL, b->userdata);
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
        strcpy(b->op, op);
        b->done = done;
        b->userdata = userdata;
        r = json_build(&req, JB_STR("op", op), JB_END);
        if (r < 0)
                return r;
        r = broker_request_start(e, socket_path, req, timeout_usec, on_reply, b, &b->request);
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
        broker_request_free(b->request);
        free(b);
        return NULL;
}
