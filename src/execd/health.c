/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "health.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

static const char *const health_table[_HEALTH_MAX] = {
        [HEALTH_OK] = "ok",
        [HEALTH_BROKER_UNREACHABLE] = "broker-unreachable",
        [HEALTH_SELF_CHECK_PENDING] = "self-check-pending",
        [HEALTH_SELF_CHECK_FAILED] = "self-check-failed",
        [HEALTH_QUEUE_FULL] = "queue-full",
};

const char *health_state_to_string(HealthState s) {
        return s >= 0 && s < _HEALTH_MAX ? health_table[s] : NULL;
}

HealthState health_decide(const HealthInput *in) {
        assert(in);

        if (!in->broker)
                return HEALTH_BROKER_UNREACHABLE;
        if (in->broker->self_check == SELF_CHECK_FAILED)
                return HEALTH_SELF_CHECK_FAILED;
        if (in->broker->self_check != SELF_CHECK_PASSED)
                return HEALTH_SELF_CHECK_PENDING;
        /* Every slot taken and the line full: the next call gets "busy". */
        if (in->calls_running >= in->max_running && in->calls_waiting >= in->max_waiting)
                return HEALTH_QUEUE_FULL;
        return HEALTH_OK;
}

static int details_json(const HealthInput *in, HealthState s, char **ret, size_t *ret_size) {
        _cleanup_json_ json_object *j = json_object_new_object(), *calls = json_object_new_object(), *runs = NULL;
        const char *text;
        size_t len;
        int r;

        assert(in);
        assert(ret);
        assert(ret_size);

        if (!j || !calls)
                return -ENOMEM;
        r = json_add_string(j, "status", s == HEALTH_OK ? "ok" : "unavailable");
        if (r >= 0)
                r = json_add_string(j, "reason", health_state_to_string(s));
        if (r >= 0)
                r = json_add_string(j, "node", in->node ?: "");
        if (r >= 0)
                r = in->broker ? json_add_string(j, "self_check", self_check_state_to_string(in->broker->self_check))
                               : json_add_null(j, "self_check");
        if (r >= 0 && in->broker) {
                runs = json_object_new_object();
                r = runs ? json_add_int(runs, "in_flight", (int64_t) in->broker->in_flight) : -ENOMEM;
                if (r >= 0)
                        r = json_add_int(runs, "queued", (int64_t) in->broker->queued);
                if (r >= 0)
                        r = json_add(j, "broker_runs", TAKE_PTR(runs));
        } else if (r >= 0)
                r = json_add_null(j, "broker_runs");
        if (r >= 0)
                r = json_add_int(calls, "running", (int64_t) in->calls_running);
        if (r >= 0)
                r = json_add_int(calls, "waiting", (int64_t) in->calls_waiting);
        if (r >= 0)
                r = json_add_int(calls, "max_running", (int64_t) in->max_running);
        if (r >= 0)
                r = json_add_int(calls, "max_waiting", (int64_t) in->max_waiting);
        if (r >= 0)
                r = json_add(j, "calls", TAKE_PTR(calls));
        if (r < 0)
                return r;
        text = json_serialize(j, &len);
        if (!text || !(*ret = malloc(len + 2)))
                return -ENOMEM;
        memcpy(*ret, text, len);
        (*ret)[len] = '\n';
        (*ret)[len + 1] = 0;    /* not sent; for whoever reads it as a string */
        *ret_size = len + 1;
        return 0;
}

int health_answer(const HealthInput *in, bool details, unsigned *ret_status, const char **ret_content_type,
                  char **ret_body, size_t *ret_size) {
        HealthState s = health_decide(in);
        char *body = NULL;
        size_t size;
        int r;

        assert(in);
        assert(ret_status);
        assert(ret_content_type);
        assert(ret_body);
        assert(ret_size);

        if (details) {
                r = details_json(in, s, &body, &size);
                if (r < 0)
                        return r;
                *ret_content_type = "application/json";
        } else {
                body = strdup(s == HEALTH_OK ? "ok\n" : "unavailable\n");
                if (!body)
                        return -ENOMEM;
                size = strlen(body);
                *ret_content_type = "text/plain; charset=utf-8";
        }
        *ret_status = s == HEALTH_OK ? 200 : 503;
        *ret_body = body;
        *ret_size = size;
        return 0;
}
