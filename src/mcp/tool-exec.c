/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tool-exec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "broker-proto.h"
#include "utf8.h"
#include "util.h"

/* The description goes into every model's context: past this many bytes the
 * module list is cut short. */
#define MODULES_MAX_BYTES 2048U
/* Argument names echoed in error messages are cut to this. */
#define NAME_MAX_ECHO 64

static void describe_modules(FILE *f, const char *const *modules) {
        size_t used = 0, n = 0, left = 0;

        if (!modules) {
                fputs(" Modules beyond the standard library: unknown.", f);
                return;
        }
        if (!modules[0]) {
                fputs(" Modules beyond the standard library: none.", f);
                return;
        }
        fputs(" Modules beyond the standard library:", f);
        for (; modules[n]; n++) {
                if (used + strlen(modules[n]) > MODULES_MAX_BYTES) {
                        left++;
                        continue;
                }
                fprintf(f, "%s %s", n > 0 ? "," : "", modules[n]);
                used += strlen(modules[n]) + 2;
        }
        if (left > 0)
                fprintf(f, " and %zu more", left);
        fputc('.', f);
}

static char *describe(const McpServerConfig *c) {
        char *text = NULL;
        size_t size = 0;
        char out[FORMAT_BYTES_MAX], code[FORMAT_BYTES_MAX], in[FORMAT_BYTES_MAX], mem[FORMAT_BYTES_MAX];
        FILE *f;

        f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        (void) format_bytes(c->max_output_bytes, out);
        (void) format_bytes(c->max_code_bytes, code);
        (void) format_bytes(c->max_stdin_bytes, in);

        fputs("Runs Python code in a locked-down sandbox and returns its stdout, stderr, exit code and resource use.\n"
              "\n"
              "What you can rely on:\n"
              "- Every call is a new, isolated run. Nothing persists between runs: no variables, files, "
              "installed packages or processes. Pass everything the program needs in the code or on stdin.\n"
              "- There is no network at all: no internet, no DNS, no local services; pip install and "
              "downloads fail.\n"
              "- /tmp is a fresh, empty, private directory in every run.\n",
              f);
        fprintf(f, "- Limits: wall-clock timeout %" PRIu64 " s unless timeout_s asks otherwise, at most %" PRIu64 " s; ",
                c->default_timeout_s, c->max_timeout_s);
        if (c->memory_max_bytes > 0) {
                (void) format_bytes(c->memory_max_bytes, mem);
                fprintf(f, "memory %s; ", mem);
        } else
                fputs("memory limit unknown; ", f);
        if (c->tasks_max > 0)
                fprintf(f, "at most %" PRIu64 " processes and threads; ", c->tasks_max);
        else
                fputs("process and thread limit unknown; ", f);
        if (c->cpu_quota_percent > 0)
                fprintf(f, "CPU %" PRIu64 "%% of one core; ", c->cpu_quota_percent);
        else
                fputs("CPU limit unknown; ", f);
        fprintf(f, "stdout and stderr together up to %s (the rest is dropped and \"truncated\" is set); "
                   "code up to %s; stdin up to %s.\n", out, code, in);
        if (c->python_version)
                fprintf(f, "- Python %s.", c->python_version);
        else
                fputs("- Python (version unknown).", f);
        describe_modules(f, c->modules);
        fputs("\n- Only what the program prints comes back; the value of a last expression is not shown.\n"
              "- A non-zero exit code, an exception, a timeout (timed_out) or running out of memory (oom_killed) "
              "is a normal result, not a tool error: read stderr and the flags.",
              f);

        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

static const char output_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"stdout\":{\"type\":\"string\",\"description\":\"What the program wrote to standard output "
        "(invalid UTF-8 replaced by U+FFFD).\"},"
        "\"stderr\":{\"type\":\"string\",\"description\":\"What the program wrote to standard error, "
        "tracebacks included.\"},"
        "\"exit_code\":{\"type\":\"integer\",\"description\":\"The program's exit status; -1 when it did not "
        "exit by itself (timeout, out of memory, killed by a signal).\"},"
        "\"duration_ms\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Wall-clock run time in "
        "milliseconds.\"},"
        "\"truncated\":{\"type\":\"boolean\",\"description\":\"True if stdout and stderr together went past "
        "the output limit and the rest was dropped.\"},"
        "\"timed_out\":{\"type\":\"boolean\",\"description\":\"True if the run was killed at its timeout.\"},"
        "\"oom_killed\":{\"type\":\"boolean\",\"description\":\"True if the run was killed for going past its "
        "memory limit.\"},"
        "\"signal\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],\"description\":\"The signal that "
        "ended the program, e.g. \\\"SIGKILL\\\", or null.\"},"
        "\"cpu_ms\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":0},{\"type\":\"null\"}],\"description\":"
        "\"CPU time used in milliseconds, or null if unknown.\"},"
        "\"memory_peak_bytes\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":0},{\"type\":\"null\"}],"
        "\"description\":\"Peak memory use in bytes, or null if this host does not report it.\"}"
        "},\"required\":[\"stdout\",\"stderr\",\"exit_code\",\"duration_ms\",\"truncated\",\"timed_out\","
        "\"oom_killed\",\"signal\",\"cpu_ms\",\"memory_peak_bytes\"]}";

static json_object *input_schema(const McpServerConfig *c) {
        _cleanup_free_ char *s = NULL;
        char code[FORMAT_BYTES_MAX], in[FORMAT_BYTES_MAX];

        (void) format_bytes(c->max_code_bytes, code);
        (void) format_bytes(c->max_stdin_bytes, in);
        /* Only our own numbers go into this text, so formatting it is safe. */
        if (asprintf(&s,
                     "{\"type\":\"object\",\"properties\":{"
                     "\"code\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The Python program to run: "
                     "a complete source file, up to %s of UTF-8.\"},"
                     "\"timeout_s\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Wall-clock limit in "
                     "seconds. 0 or absent: the default of %" PRIu64 " s; more than %" PRIu64 " is lowered to %"
                     PRIu64 ".\"},"
                     "\"stdin\":{\"type\":\"string\",\"description\":\"Text for the program's standard input, up "
                     "to %s. Without it, stdin is empty.\"}"
                     "},\"required\":[\"code\"],\"additionalProperties\":false}",
                     code, c->default_timeout_s, c->max_timeout_s, c->max_timeout_s, in) < 0)
                return NULL;
        return json_tokener_parse(s);
}

json_object *tool_exec_definition(const McpServerConfig *c, const McpRevision *rev) {
        static const char title[] = "Run Python in a sandbox";
        _cleanup_json_ json_object *t = json_object_new_object(), *a = NULL;
        _cleanup_free_ char *description = describe(c);

        if (!t || !description)
                return NULL;
        if (json_add_string(t, "name", TOOL_EXEC_NAME) < 0 || (rev->titles && json_add_string(t, "title", title) < 0) ||
            json_add_string(t, "description", description) < 0 || json_add(t, "inputSchema", input_schema(c)) < 0 ||
            (rev->structured && json_add(t, "outputSchema", json_tokener_parse(output_schema)) < 0))
                return NULL;
        if (rev->annotations) {
                a = json_object_new_object();
                if (!a || json_add_string(a, "title", title) < 0 || json_add_bool(a, "readOnlyHint", false) < 0 ||
                    json_add_bool(a, "destructiveHint", true) < 0 || json_add_bool(a, "idempotentHint", false) < 0 ||
                    json_add_bool(a, "openWorldHint", false) < 0 || json_add(t, "annotations", TAKE_PTR(a)) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

static int argument_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int argument_error(char **ret_error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret_error, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

/* JSON Schema's "integer" is a number with no fractional part, 5.0 included. */
static int get_integer(json_object *v, int64_t *ret) {
        if (json_object_is_type(v, json_type_int)) {
                /* Past INT64_MAX json-c keeps a uint64; saturate, it is clamped anyway. */
                *ret = json_object_get_int64(v);
                return 0;
        }
        if (json_object_is_type(v, json_type_double)) {
                double d = json_object_get_double(v);
                if (d >= -9.2e18 && d <= 9.2e18 && d == (double) (int64_t) d) {
                        *ret = (int64_t) d;
                        return 0;
                }
        }
        return -EINVAL;
}

int tool_exec_parse_arguments(const McpServerConfig *c, json_object *arguments, ExecArgs *ret, char **ret_error) {
        ExecArgs a = {};
        json_object *v;
        int64_t t = 0;

        *ret_error = NULL;
        if (arguments && !json_object_is_type(arguments, json_type_object))
                return argument_error(ret_error, "the arguments must be an object: {\"code\": \"...\"}");

        if (arguments) {
                json_object_object_foreach(arguments, key, val) {
                        (void) val;
                        if (!streq(key, "code") && !streq(key, "timeout_s") && !streq(key, "stdin"))
                                return argument_error(ret_error,
                                                      "unknown argument \"%.*s\": the exec tool takes only code, "
                                                      "timeout_s and stdin",
                                                      utf8_prefix_len(key, NAME_MAX_ECHO), key);
                }
        }

        if (!json_object_object_get_ex(arguments, "code", &v))
                return argument_error(ret_error, "missing argument \"code\": the Python source to run");
        if (!json_object_is_type(v, json_type_string))
                return argument_error(ret_error, "\"code\" must be a string of Python source");
        a.code = json_object_get_string(v);
        a.code_len = (size_t) json_object_get_string_len(v);
        if (a.code_len == 0)
                return argument_error(ret_error, "\"code\" is empty: there is nothing to run");
        if (a.code_len > c->max_code_bytes)
                return argument_error(ret_error, "\"code\" is %zu bytes, more than the limit of %" PRIu64 " bytes",
                                      a.code_len, c->max_code_bytes);

        if (json_object_object_get_ex(arguments, "stdin", &v)) {
                if (!json_object_is_type(v, json_type_string))
                        return argument_error(ret_error, "\"stdin\" must be a string");
                a.stdin_data = json_object_get_string(v);
                a.stdin_len = (size_t) json_object_get_string_len(v);
                if (a.stdin_len > c->max_stdin_bytes)
                        return argument_error(ret_error,
                                              "\"stdin\" is %zu bytes, more than the limit of %" PRIu64 " bytes",
                                              a.stdin_len, c->max_stdin_bytes);
        }

        if (json_object_object_get_ex(arguments, "timeout_s", &v)) {
                if (get_integer(v, &t) < 0)
                        return argument_error(ret_error, "\"timeout_s\" must be a whole number of seconds");
                if (t < 0)
                        return argument_error(ret_error, "\"timeout_s\" must not be negative (0 means the default "
                                                         "of %" PRIu64 " s)",
                                              c->default_timeout_s);
        }
        a.timeout_s = t == 0 ? c->default_timeout_s : (uint64_t) t;
        a.timeout_s = CLAMP(a.timeout_s, (uint64_t) 1, c->max_timeout_s);

        *ret = a;
        return 0;
}

static json_object *text_content(const char *text, size_t len) {
        _cleanup_json_ json_object *content = json_object_new_array(), *block = json_object_new_object();

        if (!content || !block || json_add_string(block, "type", "text") < 0 ||
            json_add(block, "text", json_object_new_string_len(text, (int) len)) < 0 ||
            json_append(content, TAKE_PTR(block)) < 0)
                return NULL;
        return TAKE_PTR(content);
}

/* Cuts *len to the whole characters of text that fit in *budget bytes as
 * JSON, and takes them from the budget. */
static void cut_to_json_budget(const char *text, size_t *len, size_t *budget, bool *truncated) {
        size_t used, n;

        n = utf8_json_prefix(text, *len, *budget, &used);
        if (n < *len) {
                *len = n;
                *truncated = true;
        }
        *budget -= used;
}

json_object *tool_exec_result(const McpServerConfig *c, const ExecResult *r, const McpRevision *rev) {
        _cleanup_json_ json_object *result = json_object_new_object(), *structured = NULL;
        /* As JSON, stdout and stderr together take at most twice the output
         * limit (stdout first): a megabyte of control bytes would otherwise
         * make a reply of more than 12 MB, more than clients accept (the
         * TypeScript SDK drops a message over 10 MiB). Only the lengths and
         * the flag of this copy change; the texts are the client's. */
        size_t budget = (size_t) MIN(c->max_output_bytes, (uint64_t) SIZE_MAX / 4) * 2;
        ExecResult cut = *r;
        const char *text;
        size_t len;

        cut_to_json_budget(cut.stdout_text ?: "", &cut.stdout_len, &budget, &cut.truncated);
        cut_to_json_budget(cut.stderr_text ?: "", &cut.stderr_len, &budget, &cut.truncated);
        structured = exec_result_to_json(&cut);
        if (!result || !structured)
                return NULL;
        text = json_serialize(structured, &len);
        if (!text || json_add(result, "content", text_content(text, len)) < 0 ||
            (rev->structured && json_add(result, "structuredContent", TAKE_PTR(structured)) < 0) ||
            json_add_bool(result, "isError", false) < 0)
                return NULL;
        return TAKE_PTR(result);
}

json_object *tool_exec_error_result(const char *text) {
        _cleanup_json_ json_object *result = json_object_new_object();

        if (!result || json_add(result, "content", text_content(text, strlen(text))) < 0 ||
            json_add_bool(result, "isError", true) < 0)
                return NULL;
        return TAKE_PTR(result);
}

char *tool_exec_failure_text(BrokerError error, const char *error_message) {
        const char *m = error_message ?: "no details";
        char *s;
        int r;

        if (error == BROKER_ERROR_SANDBOX_UNAVAILABLE)
                r = asprintf(&s, "the sandbox is unavailable: %s", m);
        else if (error == BROKER_ERROR_UNAVAILABLE)
                r = asprintf(&s, "the code did not run: the sandbox broker is unreachable (%s)", m);
        else if (error == BROKER_ERROR_BUSY)
                r = asprintf(&s, "the sandbox is busy: %s; retry later", m);
        else if (error == BROKER_ERROR_START_FAILED)
                r = asprintf(&s, "the run could not start: %s", m);
        else if (error == BROKER_ERROR_LOST)
                r = asprintf(&s, "the run was lost: %s", m);
        else
                r = asprintf(&s, "the run failed (%s): %s", broker_error_to_string(error) ?: "error", m);
        return r < 0 ? NULL : s;
}
