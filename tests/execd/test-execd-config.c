/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/execd/execd-config.[ch] and the reader of the broker's
 * "info" reply beside its builder (broker_sandbox_info_parse(),
 * src/shared/broker-proto.c): what the MCP server is told, from our
 * configuration and what the broker says it enforces. */

#include <stdlib.h>
#include <string.h>

#include "broker-proto.h"
#include "config.h"
#include "execd-config.h"
#include "json-util.h"
#include "launch-frame.h"
#include "test-helpers.h"

static Config defaults(void) {
        char *env[] = { NULL };
        char *err = NULL;
        Config c = {};

        ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
        ASSERT_TRUE(err == NULL);
        return c;
}

static json_object *parse_json(const char *s) {
        json_object *j = json_tokener_parse(s);

        ASSERT_TRUE(j);
        return j;
}

/* What the broker builds is what the front end reads. */
TEST(test_parse_round_trip) {
        json_object *modules = parse_json("[\"numpy\",\"pandas\"]"), *preloaded = parse_json("[\"numpy\"]");
        json_object *pyver = json_object_new_string("3.11.2"), *j = NULL;
        BrokerInfoReply reply = {
                .version = "1.0", .python = "/usr/bin/python3", .sandbox = "failed", .sandbox_failure = "no pidfd",
                .default_timeout_s = 30, .max_timeout_s = 120, .task_max_timeout_s = 1800, .max_code_bytes = 1000,
                .memory_max_bytes = 1 << 28, .tasks_max = 48, .cpu_quota_percent = 150, .max_concurrent = 2,
                .python_version = pyver, .modules = modules, .preloaded = preloaded,
                .max_sessions = 16, .max_sessions_per_caller = 4, .max_sessions_per_scope = 2,
                .session_idle_s = 600, .session_max_s = 3600, .sessions = 1,
        };
        BrokerSandboxInfo i = {};

        ASSERT_EQ_INT(broker_event_info(&reply, &j), 0);
        ASSERT_EQ_INT(broker_sandbox_info_parse(j, &i), 0);
        ASSERT_STREQ(i.sandbox, "failed");
        ASSERT_STREQ(i.sandbox_failure, "no pidfd");
        ASSERT_STREQ(i.python_version, "3.11.2");
        ASSERT_EQ_U64(i.max_timeout_s, 120);
        ASSERT_EQ_U64(i.task_max_timeout_s, 1800);
        ASSERT_EQ_U64(i.max_code_bytes, 1000);
        ASSERT_EQ_U64(i.memory_max_bytes, 1 << 28);
        ASSERT_EQ_U64(i.tasks_max, 48);
        ASSERT_EQ_U64(i.cpu_quota_percent, 150);
        ASSERT_EQ_U64(i.max_sessions, 16);
        ASSERT_EQ_U64(i.max_sessions_per_caller, 4);
        ASSERT_EQ_U64(i.session_idle_s, 600);
        ASSERT_EQ_U64(i.session_max_s, 3600);
        ASSERT_TRUE(i.result_channel);
        ASSERT_TRUE(i.modules && i.preloaded);
        ASSERT_STREQ(i.modules[0], "numpy");
        ASSERT_STREQ(i.modules[1], "pandas");
        ASSERT_TRUE(i.modules[2] == NULL);
        ASSERT_STREQ(i.preloaded[0], "numpy");
        ASSERT_TRUE(i.preloaded[1] == NULL);
        /* Copies: the reply may go. */
        json_object_put(j);
        json_object_put(modules);
        json_object_put(preloaded);
        json_object_put(pyver);
        ASSERT_STREQ(i.modules[1], "pandas");
        broker_sandbox_info_done(&i);
        ASSERT_TRUE(i.modules == NULL && i.sandbox == NULL);
        broker_sandbox_info_done(&i);   /* idempotent */
        broker_sandbox_info_done(NULL);
}

static void assert_all_unset(const BrokerSandboxInfo *i) {
        ASSERT_TRUE(!i->sandbox && !i->sandbox_failure && !i->python_version && !i->modules && !i->preloaded);
        ASSERT_FALSE(i->result_channel);
        ASSERT_EQ_U64(i->max_timeout_s, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->task_max_timeout_s, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->max_code_bytes, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->memory_max_bytes, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->tasks_max, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->cpu_quota_percent, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->max_sessions, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->max_sessions_per_caller, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->session_idle_s, BROKER_INFO_UNSET);
        ASSERT_EQ_U64(i->session_max_s, BROKER_INFO_UNSET);
}

/* No reply, an older broker's, and members of the wrong type: unset, never
 * a crash nor a guess. */
TEST(test_parse_lacking) {
        BrokerSandboxInfo i = {};
        json_object *j;

        ASSERT_EQ_INT(broker_sandbox_info_parse(NULL, &i), 0);
        assert_all_unset(&i);
        broker_sandbox_info_done(&i);

        j = parse_json("{\"event\":\"info\"}");
        ASSERT_EQ_INT(broker_sandbox_info_parse(j, &i), 0);
        assert_all_unset(&i);
        broker_sandbox_info_done(&i);
        json_object_put(j);

        j = parse_json("{\"event\":\"info\",\"sandbox\":1,\"python_version\":[\"3\"],\"max_timeout_s\":-5,"
                       "\"tasks_max\":\"48\",\"memory_max_bytes\":1.5,\"result_channel\":\"yes\","
                       "\"modules\":\"numpy\",\"preloaded\":{\"a\":1},\"max_sessions\":null}");
        ASSERT_EQ_INT(broker_sandbox_info_parse(j, &i), 0);
        assert_all_unset(&i);
        broker_sandbox_info_done(&i);
        json_object_put(j);

        /* Lists: each member's string form, nulls left out; [] is a list. */
        j = parse_json("{\"modules\":[],\"preloaded\":[1,null,\"x\"],\"max_timeout_s\":0}");
        ASSERT_EQ_INT(broker_sandbox_info_parse(j, &i), 0);
        ASSERT_TRUE(i.modules && i.modules[0] == NULL);
        ASSERT_STREQ(i.preloaded[0], "1");
        ASSERT_STREQ(i.preloaded[1], "x");
        ASSERT_TRUE(i.preloaded[2] == NULL);
        ASSERT_EQ_U64(i.max_timeout_s, 0);
        broker_sandbox_info_done(&i);
        json_object_put(j);
}

/* Without the broker's word: our configuration, no sessions, no result
 * channel, and tasks no longer than a call. */
TEST(test_merge_without_broker) {
        Config c = defaults();
        BrokerSandboxInfo i = {};
        McpServerConfig cfg;

        c.task_max_timeout_s = 3600;
        ASSERT_EQ_INT(broker_sandbox_info_parse(NULL, &i), 0);
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.default_timeout_s, c.default_timeout_s);
        ASSERT_EQ_U64(cfg.max_timeout_s, c.max_timeout_s);
        ASSERT_EQ_U64(cfg.task_max_timeout_s, c.max_timeout_s);
        ASSERT_EQ_U64(cfg.max_code_bytes, c.max_code_bytes);
        ASSERT_EQ_U64(cfg.max_output_bytes, c.max_output_bytes);
        ASSERT_EQ_U64(cfg.max_stdin_bytes, c.max_stdin_bytes);
        ASSERT_EQ_U64(cfg.max_input_bytes, c.max_input_bytes);
        ASSERT_EQ_U64(cfg.max_concurrent, c.max_concurrent);
        ASSERT_EQ_U64(cfg.max_queue, c.max_queue);
        ASSERT_EQ_U64(cfg.max_tasks, c.max_tasks);
        ASSERT_EQ_U64(cfg.max_tasks_per_caller, c.max_tasks_per_caller);
        ASSERT_EQ_U64(cfg.task_ttl_max_s, c.task_ttl_max_s);
        ASSERT_EQ_U64(cfg.task_after_ms, c.task_after_ms);
        ASSERT_EQ_U64(cfg.memory_max_bytes, c.memory_max);
        ASSERT_EQ_U64(cfg.tasks_max, c.tasks_max);
        ASSERT_EQ_U64(cfg.cpu_quota_percent, c.cpu_quota_percent);
        ASSERT_EQ_U64(cfg.max_sessions, 0);
        ASSERT_FALSE(cfg.result_channel);
        ASSERT_TRUE(!cfg.python_version && !cfg.modules && !cfg.preloaded);
        /* The live objects are the caller's to add. */
        ASSERT_TRUE(!cfg.broker_socket && !cfg.budget && !cfg.egress && !cfg.packages);
        config_done(&c);
}

/* The broker's sandbox limits win, larger or smaller; timeouts and code
 * size take the smaller; a task's run never shorter than a call's. */
TEST(test_merge_with_broker) {
        Config c = defaults();
        BrokerSandboxInfo i = {};
        McpServerConfig cfg;
        json_object *j;

        c.max_timeout_s = 300;
        c.task_max_timeout_s = 3600;
        c.max_code_bytes = 1000;
        j = parse_json("{\"memory_max_bytes\":1073741824,\"tasks_max\":7,\"cpu_quota_percent\":400,"
                       "\"max_timeout_s\":120,\"task_max_timeout_s\":1800,\"max_code_bytes\":5000,"
                       "\"python_version\":\"3.12.1\",\"result_channel\":true,\"modules\":[\"numpy\"],"
                       "\"preloaded\":[\"numpy\"],\"max_sessions\":8,\"max_sessions_per_caller\":2,"
                       "\"session_idle_s\":600,\"session_max_s\":3600}");
        ASSERT_EQ_INT(broker_sandbox_info_parse(j, &i), 0);
        json_object_put(j);
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.memory_max_bytes, 1073741824);
        ASSERT_EQ_U64(cfg.tasks_max, 7);
        ASSERT_EQ_U64(cfg.cpu_quota_percent, 400);
        ASSERT_EQ_U64(cfg.max_timeout_s, 120);
        ASSERT_EQ_U64(cfg.task_max_timeout_s, 1800);
        ASSERT_EQ_U64(cfg.max_code_bytes, 1000);
        ASSERT_STREQ(cfg.python_version, "3.12.1");
        ASSERT_TRUE(cfg.result_channel);
        ASSERT_STREQ(cfg.modules[0], "numpy");
        ASSERT_STREQ(cfg.preloaded[0], "numpy");
        ASSERT_EQ_U64(cfg.max_sessions, 8);
        ASSERT_EQ_U64(cfg.max_sessions_per_caller, 2);
        ASSERT_EQ_U64(cfg.session_idle_s, 600);
        ASSERT_EQ_U64(cfg.session_max_s, 3600);

        /* Ours the smaller: ours. A task's run: the smaller of both maxima,
         * but never below a call's. */
        c.max_timeout_s = 60;
        c.task_max_timeout_s = 90;
        i.max_code_bytes = 10;
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.max_timeout_s, 60);
        ASSERT_EQ_U64(cfg.task_max_timeout_s, 90);
        ASSERT_EQ_U64(cfg.max_code_bytes, 10);
        c.task_max_timeout_s = 60;
        i.max_timeout_s = 30;
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.max_timeout_s, 30);
        ASSERT_EQ_U64(cfg.task_max_timeout_s, 60);
        i.task_max_timeout_s = 10;
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.task_max_timeout_s, 30);

        /* Sessions: none unless the broker gives every limit. */
        i.session_idle_s = 0;
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.max_sessions, 0);
        i.session_idle_s = 600;
        i.session_max_s = BROKER_INFO_UNSET;
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.max_sessions, 0);
        ASSERT_EQ_U64(cfg.session_max_s, 0);
        i.session_max_s = 3600;
        i.max_sessions_per_caller = 0;
        execd_server_config(&c, &i, &cfg);
        ASSERT_EQ_U64(cfg.max_sessions, 0);

        broker_sandbox_info_done(&i);
        config_done(&c);
}

TEST(test_max_line) {
        Config c = defaults();
        size_t base;

        c.max_code_bytes = c.max_stdin_bytes = c.max_input_bytes = 0;
        base = execd_max_line(&c);
        ASSERT_EQ_U64(base, LAUNCH_FILES_MAX * (6 * LAUNCH_FILE_NAME_MAX + 64) + 64 * 1024);
        c.max_code_bytes = 1000;
        c.max_stdin_bytes = 100;
        c.max_input_bytes = 10;
        ASSERT_EQ_U64(execd_max_line(&c), base + 2 * 1110);
        config_done(&c);
}

int main(void) {
        RUN(test_parse_round_trip);
        RUN(test_parse_lacking);
        RUN(test_merge_without_broker);
        RUN(test_merge_with_broker);
        RUN(test_max_line);
        return 0;
}
