/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-exec.[ch]: the tool definition per revision,
 * argument validation and limits, and the result shapes. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "broker-proto.h"
#include "json-util.h"
#include "macro.h"
#include "revision.h"
#include "test-helpers.h"
#include "test-images.h"
#include "tool-config.h"
#include "tool-exec.h"
#include "tool-result.h"

static const char *const modules[] = { "numpy", "pandas", NULL };

static const McpServerConfig config = {
        TOOL_CONFIG,
        .tasks_max = 128,
        .cpu_quota_percent = 100,
        .python_version = "3.11.2",
        .modules = modules,
};

static const char *const output_fields[] = {
        "stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out", "oom_killed", "signal", "cpu_ms",
        "memory_peak_bytes", "images", "files",
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
        /* Every field, session_lost, which only calls in a session have,
         * egress, which only runs with a network have, and packages, which
         * only calls with packages have. */
        ASSERT_EQ_INT(json_object_object_length(props), ELEMENTSOF(output_fields) + 3);
        ASSERT_STREQ(json_get_string(json_get(props, "session_lost"), "type"), "boolean");
        ASSERT_TRUE(json_get_string(json_get(props, "session_lost"), "description"));
        ASSERT_FALSE(array_has(json_get(out, "required"), "session_lost"));
        ASSERT_STREQ(json_get_string(json_get(props, "egress"), "type"), "object");
        ASSERT_FALSE(array_has(json_get(out, "required"), "egress"));
        ASSERT_STREQ(json_get_string(json_get(props, "packages"), "type"), "object");
        ASSERT_FALSE(array_has(json_get(out, "required"), "packages"));
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
        _cleanup_json_ json_object *parsed = NULL, *err = tool_error_result("boom");
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

static McpServerConfig rich_config(void) {
        McpServerConfig c = config;

        c.result_channel = true;
        c.max_images = 8;
        c.max_image_bytes = 1 << 20;
        c.max_files_out = 16;
        c.max_result_bytes = 4 << 20;
        c.max_input_bytes = 100;
        return c;
}

TEST(test_definition_outputs) {
        McpServerConfig rich = rich_config();
        _cleanup_json_ json_object *t = tool_exec_definition(&rich, mcp_revision_find("2025-06-18"));
        _cleanup_json_ json_object *plain = tool_exec_definition(&config, mcp_revision_find("2025-06-18"));
        json_object *props, *files, *item, *out;
        const char *d;

        /* Both conventions, with the numbers. */
        d = json_get_string(t, "description");
        ASSERT_CONTAINS(d, "plt.show()");
        ASSERT_CONTAINS(d, "comes back as a PNG image");
        ASSERT_CONTAINS(d, "/tmp/outputs/ (make the directory)");
        ASSERT_CONTAINS(d, "written into the working directory /tmp before the code starts");
        ASSERT_CONTAINS(d, "/tmp is a fresh, private directory in every run, empty but for the input files");
        ASSERT_CONTAINS(d, "At most 8 images of up to 1 MiB each and 16 other files, 4 MiB in all");
        ASSERT_CONTAINS(d, "input files up to 100 bytes together");
        ASSERT_CONTAINS(d, "returned: false");

        props = json_get(json_get(t, "inputSchema"), "properties");
        ASSERT_EQ_INT(json_object_object_length(props), 4);
        files = json_get(props, "files");
        ASSERT_STREQ(json_get_string(files, "type"), "array");
        ASSERT_EQ_INT(json_object_get_int(json_get(files, "maxItems")), 64);
        ASSERT_CONTAINS(json_get_string(files, "description"), "working directory /tmp");
        item = json_get(files, "items");
        ASSERT_TRUE(bool_member(item, "additionalProperties", false));
        ASSERT_EQ_INT(json_object_array_length(json_get(item, "required")), 2);
        ASSERT_EQ_INT(json_object_get_int(json_get(json_get(json_get(item, "properties"), "name"), "maxLength")), 255);
        ASSERT_EQ_INT(json_object_array_length(json_get(json_get(json_get(item, "properties"), "encoding"), "enum")), 2);

        /* Metadata only: neither list has room for bytes. */
        out = json_get(json_get(t, "outputSchema"), "properties");
        for (const char *const *k = (const char *const[]) { "images", "files", NULL }; *k; k++) {
                json_object *p = json_get(json_get(json_get(out, *k), "items"), "properties");
                ASSERT_TRUE(p && json_get(p, "returned") && json_get(p, "reason") && json_get(p, "bytes"));
                ASSERT_TRUE(!json_get(p, "data") && !json_get(p, "blob") && !json_get(p, "text"));
        }

        /* Without the broker's result channel: no files in, no promise out. */
        d = json_get_string(plain, "description");
        ASSERT_TRUE(!strstr(d, "/tmp/outputs"));
        ASSERT_TRUE(!strstr(d, "plt.show"));
        ASSERT_EQ_INT(json_object_object_length(json_get(json_get(plain, "inputSchema"), "properties")), 3);
}

static void files_ok(const McpServerConfig *c, const char *json, size_t n, const char *const *names,
                     const char *const *contents, const size_t *sizes) {
        _cleanup_json_ json_object *a = json_tokener_parse(json);
        _cleanup_free_ char *error = NULL;
        _cleanup_(exec_args_done) ExecArgs args = {};
        uint64_t total = 0;

        ASSERT_TRUE(a);
        if (tool_exec_parse_arguments(c, a, &args, &error) != 0)
                ASSERT_FAIL_("%s: %s", json, error);
        ASSERT_EQ_INT(args.n_files, n);
        for (size_t i = 0; i < n; i++) {
                ASSERT_EQ_U64(args.files[i].name_len, strlen(names[i]));
                ASSERT_MEMEQ(args.files[i].name, names[i], strlen(names[i]));
                ASSERT_EQ_U64(args.files[i].size, sizes[i]);
                ASSERT_MEMEQ(args.files[i].data, contents[i], sizes[i]);
                total += sizes[i];
                /* A base64 text is dropped once decoded; utf-8 content is
                 * the data itself and stays. */
                json_object *f = json_object_array_get_idx(json_get(a, "files"), i);
                ASSERT_EQ_INT(!!json_get(f, "content"), !streq_ptr(json_get_string(f, "encoding"), "base64"));
        }
        ASSERT_EQ_U64(args.files_bytes, total);
}

static void files_bad(const McpServerConfig *c, const char *json, const char *message) {
        _cleanup_json_ json_object *a = json_tokener_parse(json);
        _cleanup_free_ char *error = NULL;
        ExecArgs args = { .n_files = 99 };

        ASSERT_TRUE(a);
        ASSERT_EQ_INT(tool_exec_parse_arguments(c, a, &args, &error), -EINVAL);
        if (!error || !strstr(error, message))
                ASSERT_FAIL_("%s: \"%s\" does not contain \"%s\"", json, error ?: "(null)", message);
        ASSERT_EQ_INT(args.n_files, 99);        /* untouched */
}

TEST(test_files_arguments) {
        McpServerConfig c = rich_config();
        char j[4096], *p;

        files_ok(&c, "{\"code\":\"x\",\"files\":[]}", 0, NULL, NULL, NULL);
        files_ok(&c,
                 "{\"code\":\"x\",\"files\":[{\"name\":\"data.csv\",\"content\":\"a,b\\n1,2\\n\"},"
                 "{\"name\":\"b.bin\",\"content\":\"AAEC/w==\",\"encoding\":\"base64\"},"
                 "{\"name\":\"r\\u00e9sum\\u00e9 v2.txt\",\"content\":\"\",\"encoding\":\"utf-8\"},"
                 "{\"name\":\"e\",\"content\":\"\",\"encoding\":\"base64\"}]}",
                 4, (const char *const[]) { "data.csv", "b.bin", "r\xc3\xa9sum\xc3\xa9 v2.txt", "e" },
                 (const char *const[]) { "a,b\n1,2\n", "\x00\x01\x02\xff", "", "" }, (const size_t[]) { 8, 4, 0, 0 });
        /* Exactly the limit, in both encodings. */
        p = j + sprintf(j, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"");
        memset(p, 'x', 70);
        p += 70;
        p += sprintf(p, "\"},{\"name\":\"b\",\"encoding\":\"base64\",\"content\":\"");
        memset(p, 'A', 40);     /* 30 zero bytes */
        p += 40;
        strcpy(p, "\"}]}");
        {
                char seventy[71], zeros[30] = {};
                memset(seventy, 'x', 70);
                seventy[70] = 0;
                files_ok(&c, j, 2, (const char *const[]) { "a", "b" }, (const char *const[]) { seventy, zeros },
                         (const size_t[]) { 70, 30 });
        }
        /* One byte more, in either. */
        j[strlen("{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"")] = 'y';
        p = strstr(j, "\"},{");
        memmove(p + 1, p, strlen(p) + 1);
        *p = 'x';
        files_bad(&c, j, "more than 100 bytes together, the limit (MCP_EXEC_MAX_INPUT_BYTES); files[1] (\"b\")");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"encoding\":\"base64\",\"content\":\""
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      "\"}]}",
                  "MCP_EXEC_MAX_INPUT_BYTES");

        files_bad(&c, "{\"code\":\"x\",\"files\":{}}", "\"files\" must be an array");
        files_bad(&c, "{\"code\":\"x\",\"files\":\"a.csv\"}", "\"files\" must be an array");
        files_bad(&c, "{\"code\":\"x\",\"files\":null}", "\"files\" must be an array");
        files_bad(&c, "{\"code\":\"x\",\"files\":[\"a.csv\"]}", "files[0] must be an object");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"content\":\"x\"}]}", "files[0] needs a \"name\" string");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":1,\"content\":\"x\"}]}", "needs a \"name\" string");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\"}]}", "files[0] (\"a\") needs a \"content\" string");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":[1]}]}", "needs a \"content\" string");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"x\",\"mode\":\"0755\"}]}",
                  "files[0]: unknown key \"mode\"");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"x\",\"encoding\":\"latin1\"}]}",
                  "\"encoding\" must be \"utf-8\" or \"base64\"");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"x\",\"encoding\":null}]}",
                  "\"encoding\" must be");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"Zm9v!mFy\",\"encoding\":\"base64\"}]}",
                  "files[0] (\"a\"): content is not valid base64 (at byte 4)");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"Zg=\",\"encoding\":\"base64\"}]}",
                  "not valid base64");
        files_bad(&c, "{\"code\":\"x\",\"files\":[{\"name\":\"a\",\"content\":\"1\"},{\"name\":\"a\",\"content\":\"2\"}]}",
                  "files[1]: the name \"a\" is given twice");

        static const char *const bad_names[] = {
                "../etc/passwd", "a/b", "/abs", ".", "..", "", "a\\nb", "\\u001b[31m", "a\\u0000b", "tab\\there", "del\\u007f",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_names); i++) {
                (void) snprintf(j, sizeof j, "{\"code\":\"x\",\"files\":[{\"name\":\"%s\",\"content\":\"x\"}]}", bad_names[i]);
                files_bad(&c, j, "is not a plain file name");
        }
        /* 255 bytes are a name; 256 are not. */
        p = j + sprintf(j, "{\"code\":\"x\",\"files\":[{\"name\":\"");
        memset(p, 'n', 255);
        strcpy(p + 255, "\",\"content\":\"x\"}]}");
        {
                char name[256];
                memset(name, 'n', 255);
                name[255] = 0;
                files_ok(&c, j, 1, (const char *const[]) { name }, (const char *const[]) { "x" }, (const size_t[]) { 1 });
        }
        memmove(p + 1, p, strlen(p) + 1);
        files_bad(&c, j, "is not a plain file name");

        /* At most 64 files. */
        p = j + sprintf(j, "{\"code\":\"x\",\"files\":[");
        for (int i = 0; i < 65; i++)
                p += sprintf(p, "%s{\"name\":\"f%d\",\"content\":\"\"}", i ? "," : "", i);
        strcpy(p, "]}");
        files_bad(&c, j, "\"files\" has 65 entries, more than the limit of 64");
        *strrchr(j, '{') = 0;
        strcpy(strrchr(j, ','), "]}");
        {
                _cleanup_json_ json_object *a = json_tokener_parse(j);
                _cleanup_free_ char *error = NULL;
                _cleanup_(exec_args_done) ExecArgs args = {};
                ASSERT_EQ_INT(tool_exec_parse_arguments(&c, a, &args, &error), 0);
                ASSERT_EQ_INT(args.n_files, 64);
        }

        /* A server whose broker has no result channel takes no files. */
        files_bad(&config, "{\"code\":\"x\",\"files\":[]}", "unknown argument \"files\"");
}

/* An ExecResult with one of each kind of output, as the exec client makes it. */
typedef struct Outputs {
        ResultItem items[8];
        uint8_t csv[8], blob[4], png[sizeof png_3x2], jpeg[sizeof jpeg_3x2];
        char odd[64];
} Outputs;

static void outputs_init(Outputs *o, ExecResult *r) {
        static const char odd[] = "/tmp/outputs/a b\n\x1b[1m\xff.txt";

        memcpy(o->png, png_3x2, sizeof png_3x2);
        memcpy(o->jpeg, jpeg_3x2, sizeof jpeg_3x2);
        memcpy(o->csv, "a,b\n1,2\n", 8);
        memcpy(o->blob, "\x00\x01\xfe\xff", 4);
        memcpy(o->odd, odd, sizeof odd);
        o->items[0] = (ResultItem) { .image = true, .figure = true, .index = 1, .mime_type = "image/png",
                                     .bytes = sizeof png_3x2, .width = 3, .height = 2, .data = o->png,
                                     .size = sizeof png_3x2 };
        o->items[1] = (ResultItem) { .image = true, .path = (char *) "/tmp/outputs/photo.jpg", .path_len = 22,
                                     .mime_type = "image/jpeg", .bytes = sizeof jpeg_3x2, .width = 3, .height = 2,
                                     .data = o->jpeg, .size = sizeof jpeg_3x2 };
        o->items[2] = (ResultItem) { .path = (char *) "/tmp/outputs/data.csv", .path_len = 21, .mime_type = "text/csv",
                                     .bytes = 8, .text = true, .data = o->csv, .size = 8 };
        o->items[3] = (ResultItem) { .path = (char *) "/tmp/outputs/x.bin", .path_len = 18,
                                     .mime_type = "application/octet-stream", .bytes = 4, .data = o->blob, .size = 4 };
        o->items[4] = (ResultItem) { .image = true, .path = (char *) "/tmp/outputs/fake.png", .path_len = 21,
                                     .mime_type = "image/png", .bytes = 100, .reason = (char *) "not a valid image/png image" };
        o->items[5] = (ResultItem) { .path = o->odd, .path_len = sizeof odd - 1, .mime_type = "text/plain", .bytes = 1,
                                     .text = true, .data = (uint8_t *) "z", .size = 1 };
        o->items[6] = (ResultItem) { .path = (char *) "/tmp/outputs/fifo", .path_len = 17, .bytes = UINT64_MAX,
                                     .reason = (char *) "not a regular file" };
        *r = (ExecResult) { .stdout_text = (char *) "ok\n", .stdout_len = 3, .stderr_text = (char *) "", .cpu_ms = -1,
                            .memory_peak_bytes = -1, .result_channel = true, .outputs = o->items, .n_outputs = 7,
                            .outputs_unlisted = 9984, .outputs_unlisted_reason = (char *) "too many files" };
}

static json_object *block(json_object *res, size_t i) {
        json_object *content = json_get(res, "content");
        ASSERT_TRUE(i < json_object_array_length(content));
        return json_object_array_get_idx(content, i);
}

static void check_base64(const char *s, const void *want, size_t n) {
        _cleanup_free_ uint8_t *d = NULL;
        size_t len;

        ASSERT_TRUE(s);
        ASSERT_EQ_INT(base64_decode(s, strlen(s), SIZE_MAX, &d, &len, NULL), 0);
        ASSERT_EQ_U64(len, n);
        ASSERT_MEMEQ(d, want, n);
}

TEST(test_result_outputs) {
        McpServerConfig c = rich_config();
        Outputs o;
        ExecResult r;

        outputs_init(&o, &r);
        for (size_t v = 0; mcp_protocol_versions[v]; v++) {
                const McpRevision *rev = mcp_revision_find(mcp_protocol_versions[v]);
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev), *text = NULL;
                json_object *sc, *images, *files, *b, *e;
                const char *ser;

                ASSERT_TRUE(res);
                ASSERT_TRUE(bool_member(res, "isError", false));
                /* result JSON, note, 2 images, 3 resources */
                ASSERT_EQ_INT(json_object_array_length(json_get(res, "content")), 7);
                text = json_tokener_parse(json_get_string(block(res, 0), "text"));
                ASSERT_TRUE(text);
                sc = json_get(res, "structuredContent");
                ASSERT_EQ_INT(!!sc, rev->structured);
                if (sc)
                        ASSERT_TRUE(json_object_equal(text, sc));
                /* Metadata only: none of the bytes in the result object. */
                ser = json_serialize(text, NULL);
                ASSERT_TRUE(!strstr(ser, "iVBORw0KGgo"));       /* a PNG's base64 */
                ASSERT_TRUE(!strstr(ser, "a,b"));

                images = json_get(text, "images");
                files = json_get(text, "files");
                ASSERT_EQ_INT(json_object_array_length(images), 3);
                ASSERT_EQ_INT(json_object_array_length(files), 4);
                e = json_object_array_get_idx(images, 0);
                ASSERT_STREQ(json_get_string(e, "source"), "figure");
                ASSERT_TRUE(!json_get(e, "path"));
                ASSERT_STREQ(json_get_string(e, "mimeType"), "image/png");
                ASSERT_EQ_INT(json_get_int64(e, "bytes", -1), sizeof png_3x2);
                ASSERT_EQ_INT(json_get_int64(e, "width", -1), 3);
                ASSERT_EQ_INT(json_get_int64(e, "height", -1), 2);
                ASSERT_TRUE(bool_member(e, "returned", true) && !json_get(e, "reason"));
                e = json_object_array_get_idx(images, 1);
                ASSERT_STREQ(json_get_string(e, "source"), "file");
                ASSERT_STREQ(json_get_string(e, "path"), "/tmp/outputs/photo.jpg");
                e = json_object_array_get_idx(images, 2);
                ASSERT_TRUE(bool_member(e, "returned", false));
                ASSERT_STREQ(json_get_string(e, "reason"), "not a valid image/png image");
                ASSERT_TRUE(json_object_object_get_ex(e, "width", NULL) && !json_get(e, "width"));
                e = json_object_array_get_idx(files, 0);
                ASSERT_STREQ(json_get_string(e, "path"), "/tmp/outputs/data.csv");
                ASSERT_STREQ(json_get_string(e, "mimeType"), "text/csv");
                ASSERT_EQ_INT(json_get_int64(e, "bytes", -1), 8);
                ASSERT_TRUE(!json_get(e, "source") && !json_get(e, "width"));
                /* The odd name as text the model can read; the URI keeps the bytes. */
                e = json_object_array_get_idx(files, 2);
                ASSERT_STREQ(json_get_string(e, "path"), "/tmp/outputs/a b\n\x1b[1m\xef\xbf\xbd.txt");
                e = json_object_array_get_idx(files, 3);
                ASSERT_TRUE(bool_member(e, "returned", false));
                ASSERT_TRUE(json_object_object_get_ex(e, "mimeType", NULL) && !json_get(e, "mimeType"));
                ASSERT_TRUE(json_object_object_get_ex(e, "bytes", NULL) && !json_get(e, "bytes"));

                /* The note says what is missing. */
                b = block(res, 1);
                ASSERT_STREQ(json_get_string(b, "type"), "text");
                ASSERT_CONTAINS(json_get_string(b, "text"), "2 of the figures and files were left out");
                ASSERT_CONTAINS(json_get_string(b, "text"), "9984 more outputs were left out in the sandbox and are not "
                                                            "listed (too many files)");

                b = block(res, 2);
                ASSERT_STREQ(json_get_string(b, "type"), "image");
                ASSERT_STREQ(json_get_string(b, "mimeType"), "image/png");
                check_base64(json_get_string(b, "data"), png_3x2, sizeof png_3x2);
                ASSERT_EQ_INT(json_object_object_length(b), 3);
                b = block(res, 3);
                ASSERT_STREQ(json_get_string(b, "mimeType"), "image/jpeg");
                check_base64(json_get_string(b, "data"), jpeg_3x2, sizeof jpeg_3x2);

                b = block(res, 4);
                ASSERT_STREQ(json_get_string(b, "type"), "resource");
                e = json_get(b, "resource");
                ASSERT_STREQ(json_get_string(e, "uri"), "file:///tmp/outputs/data.csv");
                ASSERT_STREQ(json_get_string(e, "mimeType"), "text/csv");
                ASSERT_STREQ(json_get_string(e, "text"), "a,b\n1,2\n");
                ASSERT_TRUE(!json_get(e, "blob"));
                e = json_get(block(res, 5), "resource");
                ASSERT_STREQ(json_get_string(e, "uri"), "file:///tmp/outputs/x.bin");
                ASSERT_TRUE(!json_get(e, "text"));
                check_base64(json_get_string(e, "blob"), "\x00\x01\xfe\xff", 4);
                e = json_get(block(res, 6), "resource");
                ASSERT_STREQ(json_get_string(e, "uri"), "file:///tmp/outputs/a%20b%0A%1B%5B1m%FF.txt");
                ASSERT_STREQ(json_get_string(e, "text"), "z");
        }
}

TEST(test_result_channel_notes) {
        McpServerConfig c = rich_config();
        const McpRevision *rev = mcp_revision_find("2025-11-25");
        ExecResult r = { .stdout_text = (char *) "", .stderr_text = (char *) "", .cpu_ms = -1, .memory_peak_bytes = -1,
                         .result_channel = true };

        /* Nothing came and nothing is missing: no note, empty lists. */
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                ASSERT_EQ_INT(json_object_array_length(json_get(res, "content")), 1);
                ASSERT_EQ_INT(json_object_array_length(json_get(json_get(res, "structuredContent"), "images")), 0);
                ASSERT_EQ_INT(json_object_array_length(json_get(json_get(res, "structuredContent"), "files")), 0);
        }
        r.outputs_lost = true;
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                ASSERT_CONTAINS(json_get_string(block(res, 1), "text"),
                                "launcher ended without finishing its report: figures and files may be missing");
        }
        r.outputs_lost = false;
        r.outputs_unlisted_more = true;
        r.outputs_unlisted_reason = (char *) "too many entries";
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                ASSERT_CONTAINS(json_get_string(block(res, 1), "text"),
                                "More outputs were left out in the sandbox and are not listed (too many entries)");
        }
        r.outputs_unlisted = 40;
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                ASSERT_CONTAINS(json_get_string(block(res, 1), "text"), "At least 40 more outputs were left out");
        }
        r.outputs_unlisted = 0;
        r.outputs_unlisted_more = false;
        r.outputs_lost = true;
        r.timed_out = true;
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                ASSERT_CONTAINS(json_get_string(block(res, 1), "text"), "killed before its figures and files were collected");
        }
        r = (ExecResult) { .stdout_text = (char *) "", .stderr_text = (char *) "", .cpu_ms = -1, .memory_peak_bytes = -1,
                           .result_channel = true, .outputs_error = (char *) "bytes that are not a result frame" };
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                ASSERT_CONTAINS(json_get_string(block(res, 1), "text"),
                                "broke its protocol (bytes that are not a result frame)");
                ASSERT_TRUE(bool_member(res, "isError", false));
        }
}

/* Outputs are left out where they would take the reply past 10 MiB; the
 * output text counts first, with its own budget. */
TEST(test_reply_budget) {
        McpServerConfig c = rich_config();
        const McpRevision *rev = mcp_revision_find("2025-06-18");
        ResultItem items[6];
        char *ctl = malloc(1 << 20);
        uint8_t *blob = malloc(3 << 20);
        ExecResult r;
        size_t len;

        ASSERT_TRUE(ctl && blob);
        memset(ctl, '"', 1 << 20);              /* \" as JSON, \\\" once more inside the text block */
        memset(blob, 0xab, 3 << 20);
        for (size_t i = 0; i < ELEMENTSOF(items); i++)
                items[i] = (ResultItem) { .path = (char *) "/tmp/outputs/b.bin", .path_len = 18,
                                          .mime_type = "application/octet-stream", .bytes = 3 << 20, .data = blob,
                                          .size = 3 << 20 };
        r = (ExecResult) { .stdout_text = (char *) "", .stderr_text = (char *) "", .cpu_ms = -1,
                           .memory_peak_bytes = -1, .result_channel = true, .outputs = items, .n_outputs = 6 };

        /* Little output: two blobs of 3 MiB (4 MiB of base64 each) fit. */
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                json_object *files = json_get(json_get(res, "structuredContent"), "files");
                ASSERT_TRUE(json_serialize(res, &len));
                ASSERT_TRUE(len <= TOOL_EXEC_REPLY_MAX);
                ASSERT_TRUE(len > 8 * 1024 * 1024);
                ASSERT_TRUE(bool_member(json_object_array_get_idx(files, 0), "returned", true));
                ASSERT_TRUE(bool_member(json_object_array_get_idx(files, 1), "returned", true));
                for (size_t i = 2; i < 6; i++) {
                        json_object *e = json_object_array_get_idx(files, i);
                        ASSERT_TRUE(bool_member(e, "returned", false));
                        ASSERT_CONTAINS(json_get_string(e, "reason"), "past 10 MiB");
                }
                ASSERT_EQ_INT(json_object_array_length(json_get(res, "content")), 2 + 2);
                ASSERT_CONTAINS(json_get_string(block(res, 1), "text"), "4 of the figures and files were left out");
        }
        /* A megabyte of quotes takes about 6 MiB (structured, and escaped
         * again in the text): one blob fits beside it. */
        r.stdout_text = ctl;
        r.stdout_len = 1 << 20;
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                json_object *files = json_get(json_get(res, "structuredContent"), "files");
                ASSERT_TRUE(json_serialize(res, &len));
                ASSERT_TRUE(len <= TOOL_EXEC_REPLY_MAX);
                ASSERT_TRUE(bool_member(json_object_array_get_idx(files, 0), "returned", false));
                ASSERT_EQ_INT(json_object_array_length(json_get(res, "content")), 2);
        }
        c.max_output_bytes = 64 * 1024;
        {
                _cleanup_json_ json_object *res = tool_exec_result(&c, &r, rev);
                json_object *files = json_get(json_get(res, "structuredContent"), "files");
                ASSERT_TRUE(json_serialize(res, &len));
                ASSERT_TRUE(len <= TOOL_EXEC_REPLY_MAX);
                ASSERT_TRUE(bool_member(json_object_array_get_idx(files, 0), "returned", true));
                ASSERT_TRUE(bool_member(json_object_array_get_idx(files, 1), "returned", true));
                ASSERT_TRUE(bool_member(json_object_array_get_idx(files, 2), "returned", false));
        }
        free(ctl);
        free(blob);
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
        RUN(test_definition_outputs);
        RUN(test_files_arguments);
        RUN(test_result_outputs);
        RUN(test_result_channel_notes);
        RUN(test_reply_budget);
        RUN(test_failure_text);
        RUN(test_revisions);
        return 0;
}
