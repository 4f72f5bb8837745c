/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/broker-proto.[ch]: the error names and the events
 * the broker sends (the framing: test-packet.c). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-proto.h"
#include "json-util.h"
#include "test-helpers.h"

TEST(test_error_names) {
        /* Every error has one distinct wire name, and the name leads back. */
        for (int i = BROKER_ERROR_NONE + 1; i < _BROKER_ERROR_MAX; i++) {
                const char *name = broker_error_to_string(i);

                ASSERT_TRUE(name);
                ASSERT_EQ_INT(broker_error_from_string(name), i);
                for (int k = i + 1; k < _BROKER_ERROR_MAX; k++)
                        ASSERT_TRUE(strcmp(name, broker_error_to_string(k)) != 0);
        }
        /* The names on the wire, as clients and older brokers know them. */
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_BUSY), "busy");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_SANDBOX_UNAVAILABLE), "sandbox-unavailable");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_START_FAILED), "start-failed");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_UNAVAILABLE), "broker-unavailable");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_LOST), "broker-timeout");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_REQUEST_TIMEOUT), "timeout");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_SESSION_NOT_FOUND), "session-not-found");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_SESSION_BUSY), "session-busy");
        ASSERT_STREQ(broker_error_to_string(BROKER_ERROR_SESSION_LIMIT), "session-limit");

        ASSERT_TRUE(!broker_error_to_string(BROKER_ERROR_NONE));
        ASSERT_TRUE(!broker_error_to_string(_BROKER_ERROR_MAX));
        ASSERT_TRUE(!broker_error_to_string(_BROKER_ERROR_INVALID));
        ASSERT_EQ_INT(broker_error_from_string(NULL), _BROKER_ERROR_INVALID);
        ASSERT_EQ_INT(broker_error_from_string(""), _BROKER_ERROR_INVALID);
        ASSERT_EQ_INT(broker_error_from_string("Busy"), _BROKER_ERROR_INVALID);
        ASSERT_EQ_INT(broker_error_from_string("busy "), _BROKER_ERROR_INVALID);
        ASSERT_EQ_INT(broker_error_from_string("weird"), _BROKER_ERROR_INVALID);
}

/* The events as the broker has always sent them: the same members, in the
 * same order, with null only where the protocol says so. */
static void expect_json(json_object *j, const char *want) {
        ASSERT_TRUE(j);
        ASSERT_STREQ(json_serialize(j, NULL), want);
        json_object_put(j);
}

static void test_events(void) {
        json_object *j = NULL;
        BrokerExit x = {
                .run_id = "r1", .exit_code = -1, .signal = "SIGKILL", .oom_killed = true, .duration_usec = 2500000,
        };
        json_object *modules = json_object_new_array();
        BrokerInfoReply info = {
                .version = "1.0", .python = "/usr/bin/python3", .sandbox = "probing",
                .default_timeout_s = 30, .max_timeout_s = 300, .task_max_timeout_s = 3600, .max_code_bytes = 1, .memory_max_bytes = 2,
                .tasks_max = 3, .cpu_quota_percent = 100, .file_size_max_bytes = 4, .tmp_size_max_bytes = 5,
                .max_concurrent = 2, .modules = modules, .pool_size = 2, .pool_ready = 1, .pool_hits = 7,
                .max_sessions = 16, .max_sessions_per_caller = 4, .max_sessions_per_scope = 2,
                .session_idle_s = 600, .session_max_s = 3600, .sessions = 1,
        };

        ASSERT_EQ_INT(broker_event_error(BROKER_ERROR_BUSY, "too many connections", &j), 0);
        expect_json(j, "{\"event\":\"error\",\"code\":\"busy\",\"message\":\"too many connections\"}");
        ASSERT_EQ_INT(broker_event_started("r1", "mcp-exec-run-r1.service", &j), 0);
        expect_json(j, "{\"event\":\"started\",\"run_id\":\"r1\",\"unit\":\"mcp-exec-run-r1.service\"}");
        ASSERT_EQ_INT(broker_event_exit(&x, &j), 0);
        expect_json(j, "{\"event\":\"exit\",\"run_id\":\"r1\",\"exit_code\":-1,\"signal\":\"SIGKILL\","
                       "\"timed_out\":false,\"oom_killed\":true,\"cancelled\":false,\"duration_ms\":2500}");
        x.signal = NULL;
        ASSERT_EQ_INT(broker_event_exit(&x, &j), 0);
        ASSERT_CONTAINS(json_serialize(j, NULL), "\"signal\":null,");
        json_object_put(j);
        ASSERT_EQ_INT(broker_event_session("00ff", "u.service", 600, 3600, 1024, &j), 0);
        expect_json(j, "{\"event\":\"session\",\"session\":\"00ff\",\"unit\":\"u.service\",\"idle_timeout_s\":600,"
                       "\"max_lifetime_s\":3600,\"memory_max_bytes\":1024}");
        ASSERT_EQ_INT(broker_event_closed(3, &j), 0);
        expect_json(j, "{\"event\":\"closed\",\"count\":3}");

        /* Absent optional members are left out, not null. */
        ASSERT_TRUE(modules);
        ASSERT_EQ_INT(broker_event_info(&info, &j), 0);
        expect_json(j, "{\"event\":\"info\",\"version\":\"1.0\",\"python\":\"/usr/bin/python3\",\"sandbox\":\"probing\","
                       "\"default_timeout_s\":30,\"max_timeout_s\":300,\"task_max_timeout_s\":3600,\"max_code_bytes\":1,\"memory_max_bytes\":2,"
                       "\"tasks_max\":3,\"cpu_quota_percent\":100,\"file_size_max_bytes\":4,\"tmp_size_max_bytes\":5,"
                       "\"max_concurrent\":2,\"modules\":[],\"pool_size\":2,\"pool_ready\":1,\"pool_hits\":7,"
                       "\"max_sessions\":16,\"max_sessions_per_caller\":4,\"max_sessions_per_scope\":2,"
                       "\"session_idle_s\":600,\"session_max_s\":3600,\"sessions\":1,\"languages\":\"python\","
                       "\"result_channel\":true}");
        /* Borrowed: the caller's reference is still its own. */
        ASSERT_EQ_INT(json_object_array_length(modules), 0);
        info.sandbox = "failed";
        info.sandbox_failure = "no pidfd";
        ASSERT_EQ_INT(broker_event_info(&info, &j), 0);
        ASSERT_CONTAINS(json_serialize(j, NULL), "\"sandbox\":\"failed\",\"sandbox_failure\":\"no pidfd\",\"default_timeout_s\"");
        json_object_put(j);
        json_object_put(modules);
}

static json_object *parse(const char *text) {
        json_object *j = json_tokener_parse(text);

        ASSERT_TRUE(j);
        return j;
}

TEST(test_confirm_messages) {
        static const char *const bad_asks[] = {
                "{\"id\":0,\"server\":\"fs\",\"tool\":\"edit_file\"}",
                "{\"id\":-1,\"server\":\"fs\",\"tool\":\"edit_file\"}",
                "{\"id\":9007199254740993,\"server\":\"fs\",\"tool\":\"edit_file\"}",
                "{\"id\":\"1\",\"server\":\"fs\",\"tool\":\"edit_file\"}",
                "{\"id\":1,\"server\":\"Fs\",\"tool\":\"edit_file\"}",
                "{\"id\":1,\"server\":\"fs\",\"tool\":\"edit file\"}",
                "{\"id\":1,\"server\":\"fs\"}",
                "{\"id\":1,\"tool\":\"x\"}",
                "[1]",
        };
        static const char *const bad_answers[] = {
                "{\"id\":1}",
                "{\"id\":1,\"accept\":1}",
                "{\"id\":1,\"accept\":\"true\"}",
                "{\"id\":0,\"accept\":true}",
                "{\"accept\":true}",
                "{\"id\":1,\"accept\":true,\"reason\":5}",
        };
        BrokerConfirmAnswer b = {};
        BrokerConfirmAsk a = {};
        json_object *j = NULL;
        char big[600];

        for (size_t i = 0; i < sizeof bad_asks / sizeof bad_asks[0]; i++) {
                j = parse(bad_asks[i]);
                ASSERT_EQ_INT(broker_confirm_ask_parse(j, &a), -EBADMSG);
                json_object_put(j);
        }
        for (size_t i = 0; i < sizeof bad_answers / sizeof bad_answers[0]; i++) {
                j = parse(bad_answers[i]);
                ASSERT_EQ_INT(broker_confirm_answer_parse(j, &b), -EBADMSG);
                json_object_put(j);
        }

        /* Built and read back: the same on every leg. */
        a = (BrokerConfirmAsk) { .id = 7, .server = "files", .tool = "edit_file" };
        ASSERT_EQ_INT(broker_confirm_ask_build("event", "confirm", &a, &j), 0);
        ASSERT_STREQ(json_serialize(j, NULL),
                     "{\"event\":\"confirm\",\"id\":7,\"server\":\"files\",\"tool\":\"edit_file\"}");
        a = (BrokerConfirmAsk) {};
        ASSERT_EQ_INT(broker_confirm_ask_parse(j, &a), 0);
        ASSERT_EQ_U64(a.id, 7);
        ASSERT_STREQ(a.server, "files");
        ASSERT_STREQ(a.tool, "edit_file");
        json_object_put(j);

        /* A reason is made printable and cut, never refused for its size. */
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = 0;
        big[3] = '\n';
        j = json_object_new_object();
        ASSERT_TRUE(j);
        ASSERT_EQ_INT(json_add_int(j, "id", 9007199254740992LL), 0);
        ASSERT_EQ_INT(json_add_bool(j, "accept", false), 0);
        ASSERT_EQ_INT(json_add_string(j, "reason", big), 0);
        ASSERT_EQ_INT(broker_confirm_answer_parse(j, &b), 0);
        ASSERT_EQ_U64(b.id, 9007199254740992ULL);
        ASSERT_FALSE(b.accept);
        ASSERT_EQ_INT(strlen(b.reason), BROKER_CONFIRM_REASON_MAX);
        ASSERT_TRUE(b.reason[3] == '?');
        json_object_put(j);

        b = (BrokerConfirmAnswer) { .id = 3, .accept = true };
        ASSERT_EQ_INT(broker_confirm_answer_build("op", "confirmed", &b, &j), 0);
        ASSERT_STREQ(json_serialize(j, NULL), "{\"op\":\"confirmed\",\"id\":3,\"accept\":true,\"reason\":\"\"}");
        b = (BrokerConfirmAnswer) {};
        ASSERT_EQ_INT(broker_confirm_answer_parse(j, &b), 0);
        ASSERT_TRUE(b.accept);
        ASSERT_EQ_U64(b.id, 3);
        json_object_put(j);
}

int main(void) {
        /* A stray SIGPIPE must fail the test loudly rather than pass. */
        signal(SIGPIPE, SIG_DFL);

        RUN(test_error_names);
        RUN(test_events);
        RUN(test_confirm_messages);
        return 0;
}
