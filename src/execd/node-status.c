/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "node-status.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker-info.h"
#include "log.h"
#include "util.h"

struct NodeStatus {
        sd_event *event;
        char *broker_socket;
        node_status_ready_t ready;
        void *userdata;
        BrokerInfo *query;              /* under way */
        sd_event_source *report;        /* ready() from the loop, for answers had at once */
        bool have;                      /* an answer (or silence) was had at settled_at */
        bool broker_up;
        uint64_t settled_at;
        RunStats stats;
};

static int on_report(sd_event_source *s, void *userdata) {
        NodeStatus *n = userdata;

        assert(n);

        n->ready(n, n->userdata);
        return 0;
}

static void settle(NodeStatus *n, json_object *answer) {
        RunStats st;

        assert(n);

        n->have = true;
        /* Fresh from now: an answer that took long is still worth a second. */
        n->settled_at = now_usec();
        n->broker_up = answer && run_stats_from_json(answer, &st) >= 0;
        if (n->broker_up)
                n->stats = st;
        else if (answer)
                log_warning("The broker's answer to a stats question was unreadable.");
        /* Never from inside node_status_get(): the caller is not ready for it. */
        (void) sd_event_source_set_enabled(n->report, SD_EVENT_ONESHOT);
}

static void on_answer(json_object *answer, void *userdata) {
        NodeStatus *n = userdata;

        assert(n);

        settle(n, answer);
        /* Its connection goes now (freeing from its callback is fine): an
         * open one would hold one of the broker's client slots and keep it
         * from ever going idle. */
        n->query = broker_info_free(n->query);
}

int node_status_new(sd_event *e, const char *broker_socket, node_status_ready_t ready, void *userdata,
                    NodeStatus **ret) {
        _cleanup_(node_status_freep) NodeStatus *n = NULL;
        int r;

        assert(e);
        assert(broker_socket);
        assert(ready);
        assert(ret);

        n = new0(NodeStatus, 1);
        if (!n)
                return -ENOMEM;
        n->event = sd_event_ref(e);
        n->ready = ready;
        n->userdata = userdata;
        n->broker_socket = strdup(broker_socket);
        if (!n->broker_socket)
                return -ENOMEM;
        r = sd_event_add_defer(e, &n->report, on_report, n);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(n->report, SD_EVENT_OFF);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(n);
        return 0;
}

NodeStatus *node_status_free(NodeStatus *n) {
        if (!n)
                return NULL;
        broker_info_free(n->query);
        sd_event_source_disable_unref(n->report);
        sd_event_unref(n->event);
        free(n->broker_socket);
        free(n);
        return NULL;
}

int node_status_get(NodeStatus *n, const RunStats **ret_stats) {
        int r;

        assert(n);
        assert(ret_stats);

        if (n->have && now_usec() - n->settled_at < NODE_STATUS_MAX_AGE_USEC) {
                *ret_stats = n->broker_up ? &n->stats : NULL;
                return 1;
        }
        if (n->query)
                return 0;       /* asked already */

        n->have = false;
        r = broker_query_start(n->event, n->broker_socket, "stats", NODE_STATUS_TIMEOUT_USEC, on_answer, n, &n->query);
        if (r < 0) {
                /* Not there at all: that is the answer. */
                log_debug("Cannot ask the broker for its stats: %s", strerror(-r));
                settle(n, NULL);
        }
        return 0;
}
