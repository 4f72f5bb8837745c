/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-exec.[ch]: the tool definition per revision,
 * argument validation and limits, and the result shapes. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "revision.h"
#include "broker-proto.h"
#include "test-helpers.h"
#include "tool-exec.h"

static const char *const modules[] = { "numpy", "pandas", NULL };

static const McpServerConfig config = {
        .default_timeout_s = 30,
        .max_timeout_s = 300,
        .max_output_bytes = 1 << 20,
        .max_stdin_bytes = 100,
        .max_code_bytes = 50,
        .max_concurrent = 2,
        .max_queue = 4,
        .memory_max_bytes = 256ULL << 20,
        .tasks_max = 128,
        .cpu_quota_percent = 100,
        .python_version = "3.11.2",
        .modules = modules,
};

static const char *const output_fields[] = {
        "stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out", "oom_killed", "signal", "cpu_ms",
        "memory_peak_bytes",
};

static bool array_has(json_object *a, const char *s) {
        for (size_t i = 0; i < json_object_array_length(a); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(a, i)), s))
                        return true;
        return false;
}

static bool bool_member(json_object *o, const char *key, bool want) {
        json_object *v = json_get(o, key);
        return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v) == want;
}

TEST(test_definition) {
        _cleanup_json_ json_object *t = tool_exec_definition(&config, mcp_revision_find("2025-11-25"));
        json_object *in, *out, *props, *a;
        const char *d;

        ASSERT_TRUE(t);
        ASSERT_STREQ(json_get_string(t, "name"), "exec");
        ASSERT_TRUE(json_get_string(t, "title"));
        d = json_get_string(t, "description");
        /* What the model may rely on, with the configured numbers. */
        ASSERT_CONTAINS(d, "no network");
        ASSERT_CONTAINS(d, "/tmp is a fresh, empty");
        ASSERT_CONTAINS(d, "Nothing persists between runs");
        ASSERT_CONTAINS(d, "30 s");
        ASSERT_CONTAINS(d, "at most 300 s");
        ASSERT_CONTAINS(d, "memory 256 MiB");
        ASSERT_CONTAINS(d, "128 processes and threads");
        ASSERT_CONTAINS(d, "CPU 100% of one core");
        ASSERT_CONTAINS(d, "up to 1 MiB");
        ASSERT_CONTAINS(d, "code up to 50 bytes");
        ASSERT_CONTAINS(d, "stdin up to 100 bytes");
        ASSERT_CONTAINS(d, "Python 3.11.2");
        ASSERT_CONTAINS(d, "numpy, pandas");

        a = json_get(t, "annotations");
        ASSERT_TRUE(bool_member(a, "readOnlyHint", false));
        ASSERT_TRUE(bool_member(a, "destructiveHint", true));
        ASSERT_TRUE(bool_member(a, "idempotentHint", false));
        ASSERT_TRUE(bool_member(a, "openWorldHint", false));

        in = json_get(t, "inputSchema");
        ASSERT_STREQ(json_get_string(in, "type"), "object");
        ASSERT_TRUE(bool_member(in, "additionalProperties", false));
        ASSERT_EQ_INT(json_object_array_length(json_get(in, "required")), 1);
        ASSERT_TRUE(array_has(json_get(in, "required"), "code"));
        props = json_get(in, "properties");
        ASSERT_EQ_INT(json_object_object_length(props), 3);
        ASSERT_STREQ(json_get_string(json_get(props, "code"), "type"), "string");
        ASSERT_EQ_INT(json_object_get_int(json_get(json_get(props, "code"), "minLength")), 1);
        ASSERT_STREQ(json_get_string(json_get(props, "timeout_s"), "type"), "integer");
        ASSERT_EQ_INT(json_object_get_int(json_get(json_get(props, "timeout_s"), "minimum")), 0);
        ASSERT_STREQ(json_get_string(json_get(props, "stdin"), "type"), "string");

        out = json_get(t, "outputSchema");
        ASSERT_STREQ(json_get_string(out, "type"), "object");
        props = json_get(out, "properties");
        ASSERT_EQ_INT(json_object_object_length(props), ELEMENTSOF(output_fields));
        ASSERT_EQ_INT(json_object_array_length(json_get(out, "required")), ELEMENTSOF(output_fields));
        for (size_t i = 0; i < ELEMENTSOF(output_fields); i++) {
                ASSERT_TRUE(json_get(props, output_fields[i]));
                ASSERT_TRUE(json_get_string(json_get(props, output_fields[i]), "description"));
                ASSERT_TRUE(array_has(json_get(out, "required"), output_fields[i]));
        }
        /* Nullable fields say so (anyOf: portable to single-type dialects). */
        ASSERT_EQ_INT(json_object_array_length(json_get(json_get(props, "signal"), "anyOf")), 2);
        ASSERT_EQ_INT(json_object_array_length(json_get(json_get(props, "cpu_ms"), "anyOf")), 2);
        ASSERT_EQ_INT(json_object_array_length(json_get(json_get(props, "memory_peak_bytes"), "anyOf")), 2);

        /* Deterministic. */
        {
                _cleanup_json_ json_object *t2 = tool_exec_definition(&config, mcp_revision_find("2025-11-25"));
                ASSERT_STREQ(json_serialize(t, NULL), json_serialize(t2, NULL));
        }
}

TEST(test_definition_revisions) {
        _cleanup_json_ json_object *old = tool_exec_definition(&config, mcp_revision_find("2024-11-05"));
        _cleanup_json_ json_object *mid = tool_exec_definition(&config, mcp_revision_find("2025-03-26"));
        _cleanup_json_ json_object *new = tool_exec_definition(&config, mcp_revision_find("2026-07-28"));
        McpServerConfig unknown = config;

        /* Only what each revision's Tool has. */
        ASSERT_TRUE(!json_get(old, "annotations") && !json_get(old, "title") && !json_get(old, "outputSchema"));
        ASSERT_TRUE(json_get(mid, "annotations") && !json_get(mid, "title") && !json_get(mid, "outputSchema"));
        ASSERT_TRUE(json_get(new, "annotations") && json_get(new, "title") && json_get(new, "outputSchema"));

        unknown.python_version = NULL;
        unknown.modules = NULL;
        unknown.memory_max_bytes = unknown.tasks_max = unknown.cpu_quota_percent = 0;
        {
                _cleanup_json_ json_object *t = tool_exec_definition(&unknown, mcp_revision_find("2025-06-18"));
                const char *d = json_get_string(t, "description");
                ASSERT_CONTAINS(d, "version unknown");
                ASSERT_CONTAINS(d, "standard library: unknown");
                ASSERT_CONTAINS(d, "memory limit unknown");
        }
}

static void args_ok(const char *json, const char *code, const char *in, uint64_t timeout) {
        _cleanup_json_ json_object *a = json_tokener_parse(json);
        _cleanup_free_ char *error = NULL;
        ExecArgs args;

        ASSERT_TRUE(a);
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, a, &args, &error), 0);
        ASSERT_TRUE(!error);
        ASSERT_EQ_U64(args.code_len, strlen(code));
        ASSERT_MEMEQ(args.code, code, args.code_len);
        if (in) {
                ASSERT_EQ_U64(args.stdin_len, strlen(in));
                ASSERT_MEMEQ(args.stdin_data, in, args.stdin_len);
        } else
                ASSERT_TRUE(!args.stdin_data);
        ASSERT_EQ_U64(args.timeout_s, timeout);
}

static void args_bad(const char *json, const char *message) {
        _cleanup_json_ json_object *a = json ? json_tokener_parse(json) : NULL;
        _cleanup_free_ char *error = NULL;
        ExecArgs args;

        ASSERT_TRUE(!json || a);
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, a, &args, &error), -EINVAL);
        ASSERT_TRUE(error);
        ASSERT_CONTAINS(error, message);
}

TEST(test_arguments) {
        char big[128];

        args_ok("{\"code\":\"print(1)\"}", "print(1)", NULL, 30);
        args_ok("{\"code\":\"x\",\"stdin\":\"hello\",\"timeout_s\":5}", "x", "hello", 5);
        args_ok("{\"code\":\"x\",\"stdin\":\"\"}", "x", "", 30);
        args_ok("{\"code\":\"x\",\"timeout_s\":0}", "x", NULL, 30);
        args_ok("{\"code\":\"x\",\"timeout_s\":1}", "x", NULL, 1);
        args_ok("{\"code\":\"x\",\"timeout_s\":300}", "x", NULL, 300);
        args_ok("{\"code\":\"x\",\"timeout_s\":301}", "x", NULL, 300);
        args_ok("{\"code\":\"x\",\"timeout_s\":18446744073709551615}", "x", NULL, 300);
        args_ok("{\"code\":\"x\",\"timeout_s\":7.0}", "x", NULL, 7);

        args_bad(NULL, "missing argument \"code\"");
        args_bad("{}", "missing argument \"code\"");
        args_bad("{\"code\":\"\"}", "empty");
        args_bad("{\"code\":5}", "must be a string");
        args_bad("{\"code\":null}", "must be a string");
        args_bad("{\"code\":[\"x\"]}", "must be a string");
        memset(big, 'x', 51);
        big[51] = 0;
        {
                char j[200];
                (void) snprintf(j, sizeof j, "{\"code\":\"%s\"}", big);
                args_bad(j, "51 bytes, more than the limit of 50 bytes");
        }
        memset(big, 'y', 101);
        big[101] = 0;
        {
                char j[300];
                (void) snprintf(j, sizeof j, "{\"code\":\"x\",\"stdin\":\"%s\"}", big);
                args_bad(j, "\"stdin\" is 101 bytes");
        }
        args_bad("{\"code\":\"x\",\"stdin\":1}", "\"stdin\" must be a string");
        args_bad("{\"code\":\"x\",\"timeout_s\":-1}", "must not be negative");
        args_bad("{\"code\":\"x\",\"timeout_s\":1.5}", "whole number");
        args_bad("{\"code\":\"x\",\"timeout_s\":\"5\"}", "whole number");
        args_bad("{\"code\":\"x\",\"timeout_s\":null}", "whole number");
        args_bad("{\"code\":\"x\",\"timeout\":5}", "unknown argument \"timeout\"");
        args_bad("[]", "must be an object");
}

TEST(test_results) {
        ExecResult r = {
                .stdout_text = (char *) "42\n",
                .stdout_len = 3,
                .stderr_text = (char *) "",
                .exit_code = 3,
                .duration_ms = 12,
                .cpu_ms = -1,
                .memory_peak_bytes = 1000,
        };
        _cleanup_json_ json_object *res = tool_exec_result(&config, &r, mcp_revision_find("2025-06-18"));
        _cleanup_json_ json_object *old = tool_exec_result(&config, &r, mcp_revision_find("2025-03-26"));
        _cleanup_json_ json_object *parsed = NULL, *err = tool_exec_error_result("boom");
        json_object *content, *sc;

        ASSERT_TRUE(res);
        ASSERT_TRUE(bool_member(res, "isError", false));
        content = json_get(res, "content");
        ASSERT_EQ_INT(json_object_array_length(content), 1);
        ASSERT_STREQ(json_get_string(json_object_array_get_idx(content, 0), "type"), "text");
        parsed = json_tokener_parse(json_get_string(json_object_array_get_idx(content, 0), "text"));
        sc = json_get(res, "structuredContent");
        ASSERT_TRUE(parsed && sc);
        ASSERT_TRUE(json_object_equal(parsed, sc));
        for (size_t i = 0; i < ELEMENTSOF(output_fields); i++)
                ASSERT_TRUE(json_object_object_get_ex(sc, output_fields[i], NULL));
        ASSERT_EQ_INT(json_object_get_int(json_get(sc, "exit_code")), 3);
        ASSERT_TRUE(json_object_object_get_ex(sc, "cpu_ms", NULL) && !json_get(sc, "cpu_ms"));
        ASSERT_TRUE(json_object_object_get_ex(sc, "signal", NULL) && !json_get(sc, "signal"));

        /* Revisions before structured content get the text only. */
        ASSERT_TRUE(!json_get(old, "structuredContent"));
        ASSERT_EQ_INT(json_object_array_length(json_get(old, "content")), 1);

        ASSERT_TRUE(bool_member(err, "isError", true));
        ASSERT_TRUE(!json_get(err, "structuredContent"));
        ASSERT_STREQ(json_get_string(json_object_array_get_idx(json_get(err, "content"), 0), "text"), "boom");
}

/* stdout and stderr of one result as the client gets them. */
static void budgeted(const McpServerConfig *c, const ExecResult *r, size_t *ret_out, size_t *ret_err,
                     bool *ret_truncated, size_t *ret_reply) {
        _cleanup_json_ json_object *res = tool_exec_result(c, r, mcp_revision_find("2025-06-18"));
        json_object *sc = json_get(res, "structuredContent");

        ASSERT_TRUE(res && sc);
        *ret_out = (size_t) json_object_get_string_len(json_get(sc, "stdout"));
        *ret_err = (size_t) json_object_get_string_len(json_get(sc, "stderr"));
        *ret_truncated = bool_member(sc, "truncated", true);
        (void) json_serialize(res, ret_reply);
}

/* The JSON budget is the core's (the exec client hands over raw bytes):
 * output that escapes to more than twice the output limit is cut, stdout
 * first, at whole characters, and the result says truncated. */
TEST(test_json_budget) {
        McpServerConfig c = config;
        char ctl[1000], plain[1000], mixed[] = "\x01\xc3\xa9\x01";
        size_t out, err, reply;
        bool truncated;
        ExecResult r = { .stdout_text = ctl, .stdout_len = sizeof ctl, .stderr_text = (char *) "abcdef", .stderr_len = 6,
                         .cpu_ms = -1, .memory_peak_bytes = -1 };

        memset(ctl, 0x01, sizeof ctl);          /* \u0001: six bytes each */
        memset(plain, 'x', sizeof plain);
        c.max_output_bytes = 1000;

        budgeted(&c, &r, &out, &err, &truncated, &reply);
        ASSERT_EQ_INT(out, 2000 / 6);
        ASSERT_EQ_INT(err, 2000 % 6);           /* what is left of the budget */
        ASSERT_TRUE(truncated);
        ASSERT_EQ_INT(r.stdout_len, sizeof ctl);  /* the client's result is untouched */
        ASSERT_FALSE(r.truncated);
        /* The reply: the two texts twice (text and structuredContent) in
         * JSON, escaped once more inside the text, and a little framing. */
        ASSERT_TRUE(reply < 2 * (2000 + 2000 / 6 + 6) + 1024);

        /* What fits is kept whole; truncated stays as the run said. */
        r.stdout_text = plain;
        r.stdout_len = sizeof plain;
        budgeted(&c, &r, &out, &err, &truncated, &reply);
        ASSERT_EQ_INT(out, sizeof plain);
        ASSERT_EQ_INT(err, 6);
        ASSERT_FALSE(truncated);
        r.truncated = true;
        budgeted(&c, &r, &out, &err, &truncated, &reply);
        ASSERT_TRUE(truncated);
        r.truncated = false;

        /* Whole characters only: a budget of 8 takes \u0001 (6) and é (2),
         * not the second \u0001. */
        c.max_output_bytes = 4;
        r.stdout_text = mixed;
        r.stdout_len = sizeof mixed - 1;
        r.stderr_len = 0;
        budgeted(&c, &r, &out, &err, &truncated, &reply);
        ASSERT_EQ_INT(out, 1 + 2);
        ASSERT_TRUE(truncated);
}

TEST(test_failure_text) {
        static const struct {
                BrokerError error;
                const char *want;
        } cases[] = {
                { BROKER_ERROR_SANDBOX_UNAVAILABLE, "the sandbox is unavailable: why" },
                { BROKER_ERROR_UNAVAILABLE, "unreachable" },
                { BROKER_ERROR_BUSY, "busy" },
                { BROKER_ERROR_START_FAILED, "could not start: why" },
                { BROKER_ERROR_UNKNOWN, "(broker-error): why" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *t = tool_exec_failure_text(cases[i].error, "why");
                ASSERT_CONTAINS(t, cases[i].want);
        }
        {
                _cleanup_free_ char *t = tool_exec_failure_text(BROKER_ERROR_NONE, NULL);
                ASSERT_TRUE(t);
        }
}

TEST(test_revisions) {
        ASSERT_TRUE(mcp_revision_find("2025-03-26")->batches);
        for (size_t i = 0; mcp_protocol_versions[i]; i++) {
                const McpRevision *r = mcp_revision_find(mcp_protocol_versions[i]);
                ASSERT_TRUE(r);
                ASSERT_EQ_INT(r->batches, streq(mcp_protocol_versions[i], "2025-03-26"));
                ASSERT_EQ_INT(r->stateless, streq(mcp_protocol_versions[i], "2026-07-28"));
                ASSERT_EQ_INT(r->logging, !r->stateless);
        }
        ASSERT_TRUE(!mcp_revision_find("2025-01-01"));
        ASSERT_TRUE(!mcp_revision_find(NULL));
        ASSERT_STREQ(mcp_revision_latest_legacy()->version, "2025-11-25");
        ASSERT_STREQ(mcp_revision_stateless()->version, "2026-07-28");
        {
                _cleanup_json_ json_object *s = mcp_revision_supported_json();
                ASSERT_STREQ(json_serialize(s, NULL),
                             "[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\",\"2025-03-26\",\"2024-11-05\"]");
        }
}

int main(void) {
        RUN(test_definition);
        RUN(test_definition_revisions);
        RUN(test_arguments);
        RUN(test_results);
        RUN(test_json_budget);
        RUN(test_failure_text);
        RUN(test_revisions);
        return 0;
}
