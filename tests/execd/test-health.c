/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/execd/health.[ch]: when a node says it can run code,
 * and what it says to whom. */

#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "json-util.h"
#include "test-helpers.h"

static RunStats passed(void) {
        return (RunStats) { .self_check = SELF_CHECK_PASSED, .in_flight = 1, .queued = 0 };
}

TEST(test_decide) {
        RunStats ok = passed(), pending = { .self_check = SELF_CHECK_PENDING },
                 failed = { .self_check = SELF_CHECK_FAILED };
        HealthInput in = { .node = "exec1", .broker = &ok, .max_running = 2, .max_waiting = 3 };

        ASSERT_EQ_INT(health_decide(&in), HEALTH_OK);
        in.broker = NULL;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_BROKER_UNREACHABLE);
        in.broker = &pending;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_SELF_CHECK_PENDING);
        in.broker = &failed;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_SELF_CHECK_FAILED);

        /* The queue: full only when a new call would be refused. */
        in.broker = &ok;
        in.calls_running = 2;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_OK);           /* it would wait in line */
        in.calls_waiting = 2;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_OK);
        in.calls_waiting = 3;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_QUEUE_FULL);
        in.calls_running = 1;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_OK);           /* a slot is free */
        /* No line at all (MCP_EXEC_MAX_QUEUE=0): full when the slots are. */
        in.max_waiting = 0;
        in.calls_waiting = 0;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_OK);
        in.calls_running = 2;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_QUEUE_FULL);
        /* A broken broker says more than a full queue. */
        in.broker = &failed;
        ASSERT_EQ_INT(health_decide(&in), HEALTH_SELF_CHECK_FAILED);

        ASSERT_STREQ(health_state_to_string(HEALTH_QUEUE_FULL), "queue-full");
        ASSERT_TRUE(health_state_to_string(_HEALTH_MAX) == NULL);
}

static void answer(const HealthInput *in, bool details, unsigned want_status, const char *want_type, char **ret) {
        unsigned status = 0;
        const char *type = NULL;
        char *body = NULL;
        size_t size = 0;

        ASSERT_EQ_INT(health_answer(in, details, &status, &type, &body, &size), 0);
        ASSERT_EQ_INT(status, want_status);
        ASSERT_STREQ(type, want_type);
        ASSERT_EQ_INT(strlen(body), size);
        *ret = body;
}

TEST(test_answer) {
        RunStats ok = passed(), failed = { .self_check = SELF_CHECK_FAILED };
        HealthInput in = { .node = "exec1", .broker = &ok, .calls_running = 1, .max_running = 2, .max_waiting = 3 };
        _cleanup_json_ json_object *j = NULL;
        char *body;

        /* Without the token: the verdict only. */
        answer(&in, false, 200, "text/plain; charset=utf-8", &body);
        ASSERT_STREQ(body, "ok\n");
        free(body);
        in.broker = &failed;
        answer(&in, false, 503, "text/plain; charset=utf-8", &body);
        ASSERT_STREQ(body, "unavailable\n");
        ASSERT_TRUE(!strstr(body, "self") && !strstr(body, "exec1"));
        free(body);

        /* With it: why. */
        answer(&in, true, 503, "application/json", &body);
        j = json_tokener_parse(body);
        ASSERT_TRUE(j);
        ASSERT_STREQ(json_get_string(j, "status"), "unavailable");
        ASSERT_STREQ(json_get_string(j, "reason"), "self-check-failed");
        ASSERT_STREQ(json_get_string(j, "node"), "exec1");
        ASSERT_STREQ(json_get_string(j, "self_check"), "failed");
        ASSERT_EQ_INT(json_get_int64(json_get(j, "calls"), "running", -1), 1);
        ASSERT_EQ_INT(json_get_int64(json_get(j, "calls"), "max_waiting", -1), 3);
        free(body);
        json_object_put(j);

        in.broker = NULL;
        answer(&in, true, 503, "application/json", &body);
        j = json_tokener_parse(body);
        ASSERT_STREQ(json_get_string(j, "reason"), "broker-unreachable");
        ASSERT_TRUE(json_get(j, "broker_runs") == NULL);
        free(body);
        json_object_put(j);

        in.broker = &ok;
        answer(&in, true, 200, "application/json", &body);
        j = json_tokener_parse(body);
        ASSERT_STREQ(json_get_string(j, "status"), "ok");
        ASSERT_EQ_INT(json_get_int64(json_get(j, "broker_runs"), "in_flight", -1), 1);
        free(body);
}

int main(void) {
        RUN(test_decide);
        RUN(test_answer);
        return 0;
}
