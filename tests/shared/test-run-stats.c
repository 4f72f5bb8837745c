/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/run-stats.[ch]: counting into the histogram's
 * buckets, and the wire form both ways, also from a broker of another
 * version and from garbage. */

#include <errno.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "run-stats.h"
#include "test-helpers.h"

TEST(test_names) {
        ASSERT_STREQ(run_outcome_to_string(RUN_OUTCOME_OK), "ok");
        ASSERT_STREQ(run_outcome_to_string(RUN_OUTCOME_NONZERO_EXIT), "nonzero_exit");
        ASSERT_STREQ(run_outcome_to_string(RUN_OUTCOME_CANCELLED), "cancelled");
        ASSERT_TRUE(run_outcome_to_string(_RUN_OUTCOME_MAX) == NULL);
        ASSERT_TRUE(run_outcome_to_string(_RUN_OUTCOME_INVALID) == NULL);
        for (int i = 0; i < _SELF_CHECK_MAX; i++)
                ASSERT_EQ_INT(self_check_state_from_string(self_check_state_to_string(i)), i);
        ASSERT_EQ_INT(self_check_state_from_string("ok"), -EINVAL);
        ASSERT_EQ_INT(self_check_state_from_string(NULL), -EINVAL);
}

TEST(test_count) {
        RunStats s = {};

        run_stats_count(&s, RUN_OUTCOME_OK, 0);                 /* first bucket */
        run_stats_count(&s, RUN_OUTCOME_OK, 50 * 1000);         /* on the bound: still the first */
        run_stats_count(&s, RUN_OUTCOME_OK, 50 * 1000 + 1);     /* just above: the second */
        run_stats_count(&s, RUN_OUTCOME_TIMEOUT, 300 * 1000 * 1000);
        run_stats_count(&s, RUN_OUTCOME_CANCELLED, 301 * 1000 * 1000);  /* past the last: +Inf */
        run_stats_count(&s, RUN_OUTCOME_REFUSED, 7);            /* nothing ran: no duration */
        run_stats_count(&s, RUN_OUTCOME_ERROR, 7);
        ASSERT_EQ_U64(s.runs[RUN_OUTCOME_OK], 3);
        ASSERT_EQ_U64(s.runs[RUN_OUTCOME_TIMEOUT], 1);
        ASSERT_EQ_U64(s.runs[RUN_OUTCOME_REFUSED], 1);
        ASSERT_EQ_U64(s.runs[RUN_OUTCOME_ERROR], 1);
        ASSERT_EQ_U64(s.duration_counts[0], 2);
        ASSERT_EQ_U64(s.duration_counts[1], 1);
        ASSERT_EQ_U64(s.duration_counts[RUN_DURATION_BUCKETS - 1], 1);
        ASSERT_EQ_U64(s.duration_counts[RUN_DURATION_BUCKETS], 1);
        ASSERT_EQ_U64(s.duration_sum_usec, 100001 + 601000000ULL);
}

TEST(test_round_trip) {
        _cleanup_json_ json_object *j = NULL;
        RunStats s = { .in_flight = 3, .queued = 2, .self_check = SELF_CHECK_FAILED,
                       .has_pool = true, .pool_size = 2, .pool_ready = 1, .pool_hits = 77,
                       .has_sessions = true, .sessions_live = 3, .sessions_max = 16, .sessions_created = 9,
                       .sessions_lost = 2, .session_calls = 41,
                       .has_egress = true, .egress_bytes_up = 123, .egress_bytes_down = 4567 }, t;
        const char *text;

        for (int i = 0; i < _RUN_OUTCOME_MAX; i++)
                s.runs[i] = (uint64_t) i * 1000 + 1;
        for (int v = 0; v < _EGRESS_VERDICT_MAX; v++)
                s.egress_connections[v] = (uint64_t) v * 10 + 3;
        s.has_tools = true;
        ASSERT_EQ_INT(tool_stats_add(&s.tools, "everything", &(ToolServerStats) { .calls = 10, .errors = 1, .refused = 2, .ms = 300 }), 0);
        ASSERT_EQ_INT(tool_stats_add(&s.tools, "everything", &(ToolServerStats) { .calls = 5, .ms = 5 }), 0);
        ASSERT_EQ_INT(tool_stats_add(&s.tools, "memory", &(ToolServerStats) { .calls = 1 }), 0);
        ASSERT_EQ_INT(tool_stats_add(&s.tools, "../x", &(ToolServerStats) { .calls = 1 }), -EINVAL);
        run_stats_count(&s, RUN_OUTCOME_OK, 1234567);
        ASSERT_EQ_INT(run_stats_to_json(&s, &j), 0);
        text = json_serialize(j, NULL);
        ASSERT_CONTAINS(text, "\"event\":\"stats\"");
        ASSERT_CONTAINS(text, "\"nonzero_exit\":1001");
        ASSERT_CONTAINS(text, "\"le_ms\":[50,100,250,500,1000,2500,5000,10000,30000,60000,300000]");
        ASSERT_CONTAINS(text, "\"self_check\":\"failed\"");

        ASSERT_EQ_INT(run_stats_from_json(j, &t), 0);
        ASSERT_TRUE(t.has_duration);
        ASSERT_MEMEQ(t.runs, s.runs, sizeof s.runs);
        ASSERT_MEMEQ(t.duration_counts, s.duration_counts, sizeof s.duration_counts);
        ASSERT_EQ_U64(t.duration_sum_usec, 1234567);
        ASSERT_EQ_U64(t.in_flight, 3);
        ASSERT_EQ_U64(t.queued, 2);
        ASSERT_EQ_INT(t.self_check, SELF_CHECK_FAILED);
        ASSERT_TRUE(t.has_pool);
        ASSERT_EQ_U64(t.pool_size, 2);
        ASSERT_EQ_U64(t.pool_ready, 1);
        ASSERT_EQ_U64(t.pool_hits, 77);
        ASSERT_TRUE(t.has_sessions);
        ASSERT_EQ_U64(t.sessions_live, 3);
        ASSERT_EQ_U64(t.sessions_max, 16);
        ASSERT_EQ_U64(t.sessions_created, 9);
        ASSERT_EQ_U64(t.sessions_lost, 2);
        ASSERT_EQ_U64(t.session_calls, 41);
        ASSERT_TRUE(t.has_egress);
        ASSERT_MEMEQ(t.egress_connections, s.egress_connections, sizeof s.egress_connections);
        ASSERT_EQ_U64(t.egress_bytes_up, 123);
        ASSERT_EQ_U64(t.egress_bytes_down, 4567);
        ASSERT_CONTAINS(text, "\"sni-mismatch\":43");
        ASSERT_CONTAINS(text, "\"tool_calls\":{\"everything\":{\"calls\":15,\"errors\":1,\"refused\":2,\"ms\":305},"
                              "\"memory\":{\"calls\":1,\"errors\":0,\"refused\":0,\"ms\":0}}");
        ASSERT_TRUE(t.has_tools);
        ASSERT_EQ_U64(t.tools.n, 2);
        ASSERT_STREQ(t.tools.servers[0].name, "everything");
        ASSERT_EQ_U64(t.tools.servers[0].calls, 15);
        ASSERT_EQ_U64(t.tools.servers[0].ms, 305);
        ASSERT_STREQ(t.tools.servers[1].name, "memory");

        /* Without egress: no member, and none back. */
        json_object_put(j);
        j = NULL;
        s.has_egress = false;
        ASSERT_EQ_INT(run_stats_to_json(&s, &j), 0);
        ASSERT_TRUE(!json_get(j, "egress"));
        ASSERT_EQ_INT(run_stats_from_json(j, &t), 0);
        ASSERT_FALSE(t.has_egress);

        /* Without code mode: the same. */
        json_object_put(j);
        j = NULL;
        s.has_tools = false;
        ASSERT_EQ_INT(run_stats_to_json(&s, &j), 0);
        ASSERT_TRUE(!json_get(j, "tool_calls"));
        ASSERT_EQ_INT(run_stats_from_json(j, &t), 0);
        ASSERT_FALSE(t.has_tools);
}

static int parse(const char *text, RunStats *ret) {
        _cleanup_json_ json_object *j = json_tokener_parse(text);

        ASSERT_TRUE(j);
        return run_stats_from_json(j, ret);
}

TEST(test_from_json) {
        RunStats t;

        /* Minimal, and outcomes an older broker did not count: zero. */
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{\"ok\":5},\"in_flight\":0,\"queued\":0,"
                            "\"self_check\":\"passed\"}", &t), 0);
        ASSERT_EQ_U64(t.runs[RUN_OUTCOME_OK], 5);
        ASSERT_EQ_U64(t.runs[RUN_OUTCOME_CANCELLED], 0);
        ASSERT_FALSE(t.has_duration);
        ASSERT_FALSE(t.has_pool);
        ASSERT_FALSE(t.has_sessions);
        ASSERT_EQ_INT(t.self_check, SELF_CHECK_PASSED);

        /* Other bounds: the counters stay, the histogram is left out. */
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{\"ok\":5},\"in_flight\":1,\"queued\":0,"
                            "\"self_check\":\"pending\",\"duration\":{\"le_ms\":[1,2,3,4,5,6,7,8,9,10,11],"
                            "\"counts\":[1,1,1,1,1,1,1,1,1,1,1,1],\"sum_us\":9}}", &t), 0);
        ASSERT_FALSE(t.has_duration);
        ASSERT_EQ_U64(t.duration_sum_usec, 0);
        ASSERT_EQ_U64(t.duration_counts[0], 0);
        ASSERT_EQ_U64(t.in_flight, 1);

        /* Not a stats answer at all. */
        ASSERT_EQ_INT(parse("{\"event\":\"info\",\"runs\":{},\"in_flight\":0,\"queued\":0,\"self_check\":\"passed\"}",
                            &t), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"in_flight\":0,\"queued\":0,\"self_check\":\"passed\"}", &t),
                      -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{\"ok\":-1},\"in_flight\":0,\"queued\":0,"
                            "\"self_check\":\"passed\"}", &t), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{\"ok\":\"5\"},\"in_flight\":0,\"queued\":0,"
                            "\"self_check\":\"passed\"}", &t), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{},\"queued\":0,\"self_check\":\"passed\"}", &t), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{},\"in_flight\":0,\"queued\":0,\"self_check\":\"ok\"}", &t),
                      -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{},\"in_flight\":0,\"queued\":0,\"self_check\":\"passed\","
                            "\"pool\":{\"size\":2,\"ready\":-1,\"hits\":0}}", &t), -EBADMSG);
        /* Tool counts: each field a count, each name one servers.d could have, once. */
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{},\"in_flight\":0,\"queued\":0,\"self_check\":\"passed\","
                            "\"tool_calls\":{\"a\":{\"calls\":1,\"errors\":0,\"refused\":0,\"ms\":-1}}}", &t), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{},\"in_flight\":0,\"queued\":0,\"self_check\":\"passed\","
                            "\"tool_calls\":{\"A b\":{\"calls\":1,\"errors\":0,\"refused\":0,\"ms\":1}}}", &t), -EBADMSG);
        ASSERT_EQ_INT(parse("{\"event\":\"stats\",\"runs\":{},\"in_flight\":0,\"queued\":0,\"self_check\":\"passed\","
                            "\"tool_calls\":[]}", &t), -EBADMSG);
        ASSERT_EQ_INT(parse("[]", &t), -EBADMSG);
        ASSERT_EQ_INT(run_stats_from_json(NULL, &t), -EBADMSG);
}

int main(void) {
        RUN(test_names);
        RUN(test_count);
        RUN(test_round_trip);
        RUN(test_from_json);
        return 0;
}
