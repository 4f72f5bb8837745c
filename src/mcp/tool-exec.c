/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tool-exec.h"
#include "tool-result.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "file-uri.h"
#include "json-util.h"
#include "launch-frame.h"
#include "macro.h"
#include "mcp-tool.h"
#include "tool-arg-language.h"
#include "tool-arg-network.h"
#include "tool-arg-packages.h"
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
              "installed packages or processes. Pass everything the program needs in the code or on stdin.\n",
              f);
        if (c->max_sessions > 0)
                fprintf(f, "- Unless you pass \"session\" (from session_create): then the code runs in that session's "
                           "interpreter, and variables, imports and files of its earlier calls are there. A session "
                           "ends after %" PRIu64 " s without a call or %" PRIu64 " s after it started; one call at a "
                           "time.\n",
                        c->session_idle_s, c->session_max_s);
        if (tool_packages_enabled(c->packages))
                fputs("- There is no network at all: no internet, no DNS, no local services; downloads fail, and "
                      "pip install works only for the wheelhouse's packages (below).\n",
                      f);
        else
                fputs("- There is no network at all: no internet, no DNS, no local services; pip install and "
                      "downloads fail.\n",
                      f);
        tool_network_describe(f, c->egress);
        tool_packages_describe(f, c->packages);
        tool_language_describe(f, c);
        fputs(c->result_channel ? "- /tmp is a fresh, private directory in every run, empty but for the input files.\n"
                                : "- /tmp is a fresh, empty, private directory in every run.\n",
              f);
        fprintf(f,
                "- Limits: wall-clock timeout %" PRIu64 " s unless timeout_s asks otherwise, at most %" PRIu64 " s; ",
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
        if (c->max_tasks > 0 && c->task_max_timeout_s > c->max_timeout_s)
                /* So a model knows a long job is possible, and how. */
                fprintf(f, "- A longer run (up to %" PRIu64 " s) works as an MCP task, where the client supports "
                           "tasks: its result is fetched later by task id.\n", c->task_max_timeout_s);
        if (c->python_version)
                fprintf(f, "- Python %s.", c->python_version);
        else
                fputs("- Python (version unknown).", f);
        describe_modules(f, c->modules);
        if (c->preloaded && c->preloaded[0]) {
                fputs(" Imported ahead in warm sandboxes, so nearly free to import:", f);
                for (size_t i = 0; c->preloaded[i]; i++)
                        fprintf(f, "%s %s", i > 0 ? "," : "", c->preloaded[i]);
                fputc('.', f);
        }
        if (c->result_channel) {
                char img[FORMAT_BYTES_MAX], all[FORMAT_BYTES_MAX], inb[FORMAT_BYTES_MAX];

                /* Both conventions in two sentences, then the numbers. */
                fprintf(f, "\n- Figures and files: every matplotlib figure passed to plt.show() or still open at the "
                           "end comes back as a PNG image, and files the program writes under /tmp/outputs/ (make "
                           "the directory) come back, images as images and others as embedded resources; files passed "
                           "in "
                           "\"files\" are written into the working directory /tmp before the code starts. At most "
                           "%" PRIu64 " images of up to %s each and %" PRIu64 " other files, %s in all; input files "
                           "up to %s together. What is left out is listed with returned: false and a reason.",
                        c->max_images, format_bytes(c->max_image_bytes, img), c->max_files_out,
                        format_bytes(c->max_result_bytes, all), format_bytes(c->max_input_bytes, inb));
                fputs("\n- Besides those, only what the program prints comes back; the value of a last expression is "
                      "not shown.\n",
                      f);
        } else
                fputs("\n- Only what the program prints comes back; the value of a last expression is not shown.\n", f);
        fputs("- A non-zero exit code, an exception, a timeout (timed_out) or running out of memory (oom_killed) "
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
        "\"description\":\"Peak memory use in bytes, or null if this host does not report it.\"},"
        "\"session_lost\":{\"type\":\"boolean\",\"description\":\"Calls in a session only: true if the session "
        "ended with this call (its state is gone).\"},"
        "\"egress\":{\"type\":\"object\",\"description\":\"Runs with a network only: what its connections through "
        "the egress proxy came to (in a session: those that ended during this call).\",\"properties\":{"
        "\"policy\":{\"type\":\"string\"},"
        "\"connections\":{\"type\":\"object\",\"description\":\"Connections by verdict: allowed, policy (host or port "
        "not allowed), ip-literal, non-public, sni-mismatch, cap, bad-request, upstream-failed.\","
        "\"additionalProperties\":{\"type\":\"integer\",\"minimum\":0}},"
        "\"bytes_up\":{\"type\":\"integer\",\"minimum\":0},"
        "\"bytes_down\":{\"type\":\"integer\",\"minimum\":0}"
        "}},"
        "\"packages\":{\"type\":\"object\",\"description\":\"Calls with \\\"packages\\\" only: what the installer did "
        "before the code ran. ok false: nothing ran, error says why (the call is then an error).\",\"properties\":{"
        "\"ok\":{\"type\":\"boolean\"},"
        "\"error\":{\"type\":\"string\"},"
        "\"requested\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
        "\"installed\":{\"type\":\"array\",\"description\":\"Distributions installed, dependencies "
        "included.\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
        "\"version\":{\"type\":\"string\"}}}},"
        "\"already\":{\"type\":\"array\",\"description\":\"In a session: specs an earlier call installed.\","
        "\"items\":{\"type\":\"string\"}},"
        "\"replaced\":{\"type\":\"array\",\"description\":\"System distributions shadowed by another "
        "version.\",\"items\":{\"type\":\"string\"}},"
        "\"fresh_interpreter\":{\"type\":\"boolean\",\"description\":\"The warm interpreter's preloaded "
        "modules were dropped for these packages.\"},"
        "\"duration_us\":{\"type\":\"integer\",\"minimum\":0},"
        "\"log\":{\"type\":\"string\",\"description\":\"pip's output (its end), never part of stdout.\"},"
        "\"log_left_out\":{\"type\":\"string\",\"description\":\"Why the log is missing.\"}"
        "}},"
        "\"images\":{\"type\":\"array\",\"description\":\"Figures and image files (png, jpeg, gif, webp under "
        "/tmp/outputs), metadata only: those returned are the image blocks of the content, in this order.\","
        "\"items\":{\"type\":\"object\",\"properties\":{"
        "\"source\":{\"enum\":[\"figure\",\"file\"],\"description\":\"A matplotlib figure, or a file.\"},"
        "\"path\":{\"type\":\"string\",\"description\":\"Files: the path in the run.\"},"
        "\"mimeType\":{\"type\":\"string\"},"
        "\"bytes\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":0},{\"type\":\"null\"}],"
        "\"description\":\"Size of the image file, or null if unknown.\"},"
        "\"width\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":1},{\"type\":\"null\"}]},"
        "\"height\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":1},{\"type\":\"null\"}]},"
        "\"returned\":{\"type\":\"boolean\",\"description\":\"False: left out, see reason.\"},"
        "\"reason\":{\"type\":\"string\",\"description\":\"Why it was left out.\"}"
        "},\"required\":[\"source\",\"mimeType\",\"bytes\",\"width\",\"height\",\"returned\"]}},"
        "\"files\":{\"type\":\"array\",\"description\":\"Other files under /tmp/outputs, metadata only: those "
        "returned are the embedded resources of the content (uri file:///tmp/outputs/...), in this order.\","
        "\"items\":{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\",\"description\":\"The path in the run.\"},"
        "\"mimeType\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},"
        "\"bytes\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":0},{\"type\":\"null\"}]},"
        "\"returned\":{\"type\":\"boolean\",\"description\":\"False: left out, see reason.\"},"
        "\"reason\":{\"type\":\"string\",\"description\":\"Why it was left out.\"}"
        "},\"required\":[\"path\",\"mimeType\",\"bytes\",\"returned\"]}}"
        "},\"required\":[\"stdout\",\"stderr\",\"exit_code\",\"duration_ms\",\"truncated\",\"timed_out\","
        "\"oom_killed\",\"signal\",\"cpu_ms\",\"memory_peak_bytes\",\"images\",\"files\"]}";

#define SESSION_ARG_TEXT                                                                                   \
        "A handle from session_create: the code runs in that session's interpreter, where variables, imports " \
        "and files in /tmp of earlier calls are still there. Without it, the run is new and isolated."

static json_object *input_schema(const McpServerConfig *c, const McpRevision *rev) {
        _cleanup_json_ json_object *schema = NULL, *network = NULL, *packages = NULL;
        _cleanup_free_ char *s = NULL, *files = NULL;
        char code[FORMAT_BYTES_MAX], in[FORMAT_BYTES_MAX], inb[FORMAT_BYTES_MAX];

        (void) format_bytes(c->max_code_bytes, code);
        (void) format_bytes(c->max_stdin_bytes, in);
        /* Only our own numbers go into this text, so formatting it is safe. */
        if (c->result_channel &&
            asprintf(&files,
                     ",\"files\":{\"type\":\"array\",\"maxItems\":%u,\"description\":\"Files written into the "
                     "working directory /tmp before the code starts (open(\\\"data.csv\\\") finds them), up to %s "
                     "together.\",\"items\":{\"type\":\"object\",\"properties\":{"
                     "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":%u,\"description\":\"A plain "
                     "file name: no '/', not '.' or '..', no control characters; unique.\"},"
                     "\"content\":{\"type\":\"string\",\"description\":\"The content, as text or base64.\"},"
                     "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],\"default\":\"utf-8\","
                     "\"description\":\"How content is given: utf-8 (the default) for text, base64 for any bytes.\"}"
                     "},\"required\":[\"name\",\"content\"],\"additionalProperties\":false}}",
                     LAUNCH_FILES_MAX, format_bytes(c->max_input_bytes, inb), LAUNCH_FILE_NAME_MAX) < 0)
                return NULL;
        if (asprintf(&s,
                     "{\"type\":\"object\",\"properties\":{"
                     "\"code\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The program to run, in "
                     "Python unless language says otherwise: a complete source file, up to %s of UTF-8.\"},"
                     "\"timeout_s\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Wall-clock limit in "
                     "seconds. 0 or absent: the default of %" PRIu64 " s; more than %" PRIu64 " is lowered to %"
                     PRIu64 ".\"},"
                     "\"stdin\":{\"type\":\"string\",\"description\":\"Text for the program's standard input, up "
                     "to %s. Without it, stdin is empty.\"}%s%s"
                     "},\"required\":[\"code\"],\"additionalProperties\":false}",
                     code, c->default_timeout_s, c->max_timeout_s, c->max_timeout_s, in, files ?: "",
                     c->max_sessions == 0 ? ""
                     /* 2026-07-28: mirrored as Mcp-Param-Session, so that a load
                      * balancer can send the call to the host of the session. */
                     : rev->stateless ? ",\"session\":{\"type\":\"string\",\"x-mcp-header\":\"Session\","
                                        "\"description\":\"" SESSION_ARG_TEXT "\"}"
                                      : ",\"session\":{\"type\":\"string\","
                                        "\"description\":\"" SESSION_ARG_TEXT "\"}") < 0)
                return NULL;
        schema = json_tokener_parse(s);
        if (!schema || tool_network_schema(c->egress, &network) < 0)
                return NULL;
        if (network && json_add(json_get(schema, "properties"), "network", TAKE_PTR(network)) < 0)
                return NULL;
        if (tool_packages_schema(c->packages, &packages) < 0 ||
            (packages && json_add(json_get(schema, "properties"), "packages", TAKE_PTR(packages)) < 0))
                return NULL;
        if (tool_language_schema_add(c, json_get(schema, "properties"), false) < 0)
                return NULL;
        return TAKE_PTR(schema);
}

json_object *tool_exec_definition(const McpServerConfig *c, const McpRevision *rev) {
        static const char title[] = "Run Python in a sandbox";
        _cleanup_json_ json_object *t = json_object_new_object(), *a = NULL;
        _cleanup_free_ char *description = describe(c);

        if (!t || !description)
                return NULL;
        if (json_add_string(t, "name", TOOL_EXEC_NAME) < 0 || (rev->titles && json_add_string(t, "title", title) < 0) ||
            json_add_string(t, "description", description) < 0 ||
            json_add(t, "inputSchema", input_schema(c, rev)) < 0 ||
            (rev->structured && json_add(t, "outputSchema", json_tokener_parse(output_schema)) < 0))
                return NULL;
        if (rev->annotations) {
                a = json_object_new_object();
                if (!a || json_add_string(a, "title", title) < 0 || json_add_bool(a, "readOnlyHint", false) < 0 ||
                    json_add_bool(a, "destructiveHint", true) < 0 || json_add_bool(a, "idempotentHint", false) < 0 ||
                    json_add_bool(a, "openWorldHint", false) < 0 || json_add(t, "annotations", TAKE_PTR(a)) < 0)
                        return NULL;
        }
        /* A long run as a task; "optional", as a plain call works too. */
        if (rev->tasks && c->max_tasks > 0) {
                _cleanup_json_ json_object *e = NULL;
                if (json_build(&e, JB_STR("taskSupport", "optional"), JB_END) < 0 ||
                    json_add(t, "execution", TAKE_PTR(e)) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

int tool_arg_error(char **ret_error, const char *fmt, ...) {
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

void exec_args_done(ExecArgs *a) {
        if (!a)
                return;
        for (size_t i = 0; i < ELEMENTSOF(a->decoded); i++)
                a->decoded[i] = mfree(a->decoded[i]);
        a->n_files = 0;
}

/* One entry of "files" into a->files[a->n_files]. */
static int parse_file(const McpServerConfig *c, json_object *f, size_t i, ExecArgs *a, char **ret_error) {
        ExecInputFile *file = a->files + a->n_files;
        const char *name, *content, *encoding = "utf-8";
        size_t name_len, content_len, left, off = 0, len;
        char echo[NAME_MAX_ECHO + 1], limit[FORMAT_BYTES_MAX];
        json_object *v;
        uint8_t *data;
        int r;

        if (!json_object_is_type(f, json_type_object))
                return tool_arg_error(ret_error, "files[%zu] must be an object: {\"name\": \"data.csv\", \"content\": "
                                                 "\"...\", \"encoding\": \"utf-8\"}", i);
        json_object_object_foreach(f, key, val) {
                (void) val;
                if (!streq(key, "name") && !streq(key, "content") && !streq(key, "encoding"))
                        return tool_arg_error(ret_error,
                                              "files[%zu]: unknown key \"%.*s\" (only name, content and encoding)", i,
                                              utf8_prefix_len(key, NAME_MAX_ECHO), key);
        }
        if (!json_object_object_get_ex(f, "name", &v) || !json_object_is_type(v, json_type_string))
                return tool_arg_error(ret_error, "files[%zu] needs a \"name\" string", i);
        name = json_object_get_string(v);
        name_len = (size_t) json_object_get_string_len(v);
        str_printable(name, echo, sizeof echo);
        if (!launch_file_name_valid(name, name_len))
                return tool_arg_error(ret_error,
                                      "files[%zu]: \"%s\" is not a plain file name (1 to %u bytes of UTF-8, no '/', "
                                      "not '.' or '..', no control characters)",
                                      i, echo, LAUNCH_FILE_NAME_MAX);
        for (size_t k = 0; k < a->n_files; k++)
                if (a->files[k].name_len == name_len && memcmp(a->files[k].name, name, name_len) == 0)
                        return tool_arg_error(ret_error, "files[%zu]: the name \"%s\" is given twice", i, echo);
        if (!json_object_object_get_ex(f, "content", &v) || !json_object_is_type(v, json_type_string))
                return tool_arg_error(ret_error, "files[%zu] (\"%s\") needs a \"content\" string", i, echo);
        content = json_object_get_string(v);
        content_len = (size_t) json_object_get_string_len(v);
        if (json_object_object_get_ex(f, "encoding", &v)) {
                encoding = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                if (!streq(encoding, "utf-8") && !streq(encoding, "base64"))
                        return tool_arg_error(ret_error,
                                              "files[%zu] (\"%s\"): \"encoding\" must be \"utf-8\" or \"base64\"", i,
                                              echo);
        }

        left = (size_t) MIN(c->max_input_bytes - a->files_bytes, (uint64_t) SIZE_MAX);
        (void) format_bytes(c->max_input_bytes, limit);
        if (streq(encoding, "base64")) {
                r = base64_decode(content, content_len, left, &data, &len, &off);
                if (r == -EINVAL)
                        return tool_arg_error(ret_error,
                                              "files[%zu] (\"%s\"): content is not valid base64 (at byte %zu)", i,
                                              echo, off);
                if (r == -ENOMEM)
                        return r;
                a->decoded[a->n_files] = r >= 0 ? data : NULL;
                /* The text is not needed again, and a queued call would
                 * hold it beside what it decoded to (issue 19). */
                if (r >= 0)
                        json_object_object_del(f, "content");
        } else {
                r = content_len > left ? -EFBIG : 0;
                data = (uint8_t *) content;
                len = content_len;
        }
        if (r == -EFBIG)
                return tool_arg_error(ret_error,
                                      "the input files are more than %s together, the limit "
                                      "(MCP_EXEC_MAX_INPUT_BYTES); files[%zu] (\"%s\") is past it",
                                      limit, i, echo);
        *file = (ExecInputFile) { .name = name, .name_len = name_len, .data = data, .size = len };
        a->files_bytes += len;
        a->n_files++;
        return 0;
}

static int parse_files(const McpServerConfig *c, json_object *files, ExecArgs *a, char **ret_error) {
        size_t n;
        int r;

        if (!c->result_channel)
                return tool_arg_error(ret_error, "\"files\" is not available: this server's sandbox cannot take input "
                                                 "files yet (its broker has no result channel)");
        if (!json_object_is_type(files, json_type_array))
                return tool_arg_error(ret_error, "\"files\" must be an array of {\"name\", \"content\", \"encoding\"} "
                                                 "objects");
        n = json_object_array_length(files);
        if (n > LAUNCH_FILES_MAX)
                return tool_arg_error(ret_error, "\"files\" has %zu entries, more than the limit of %u", n,
                                      LAUNCH_FILES_MAX);
        for (size_t i = 0; i < n; i++) {
                r = parse_file(c, json_object_array_get_idx(files, i), i, a, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

int tool_exec_parse_arguments(const McpServerConfig *c, json_object *arguments, ExecArgs *ret, char **ret_error) {
        _cleanup_(exec_args_done) ExecArgs a = {};
        json_object *v;
        int64_t t = 0;
        int r;

        *ret_error = NULL;
        if (arguments && !json_object_is_type(arguments, json_type_object))
                return tool_arg_error(ret_error, "the arguments must be an object: {\"code\": \"...\"}");

        if (arguments) {
                json_object_object_foreach(arguments, key, val) {
                        (void) val;
                        if (!streq(key, "code") && !streq(key, "timeout_s") && !streq(key, "stdin") &&
                            (!streq(key, "files") || !c->result_channel) &&
                            (!streq(key, "session") || c->max_sessions == 0) &&
                            /* Always known, so that a server without egress
                             * says so clearly (tool_network_check()). */
                            !streq(key, "network") && !streq(key, "packages") && !streq(key, "language"))
                                return tool_arg_error(ret_error,
                                                      "unknown argument \"%.*s\": the exec tool takes only %s%s%s%s",
                                                      utf8_prefix_len(key, NAME_MAX_ECHO), key,
                                                      c->result_channel ? "code, language, timeout_s, stdin, files"
                                                                        : "code, language, timeout_s, stdin",
                                                      c->max_sessions > 0 ? ", session" : "",
                                                      tool_network_enabled(c->egress) ? ", network" : "",
                                                      tool_packages_enabled(c->packages) ? ", packages" : "");
                }
        }

        if (!json_object_object_get_ex(arguments, "code", &v))
                return tool_arg_error(ret_error, "missing argument \"code\": the Python source to run");
        if (!json_object_is_type(v, json_type_string))
                return tool_arg_error(ret_error, "\"code\" must be a string of Python source");
        a.code = json_object_get_string(v);
        a.code_len = (size_t) json_object_get_string_len(v);
        if (a.code_len == 0)
                return tool_arg_error(ret_error, "\"code\" is empty: there is nothing to run");
        if (a.code_len > c->max_code_bytes)
                return tool_arg_error(ret_error, "\"code\" is %zu bytes, more than the limit of %" PRIu64 " bytes",
                                      a.code_len, c->max_code_bytes);

        if (json_object_object_get_ex(arguments, "stdin", &v)) {
                if (!json_object_is_type(v, json_type_string))
                        return tool_arg_error(ret_error, "\"stdin\" must be a string");
                a.stdin_data = json_object_get_string(v);
                a.stdin_len = (size_t) json_object_get_string_len(v);
                if (a.stdin_len > c->max_stdin_bytes)
                        return tool_arg_error(ret_error,
                                              "\"stdin\" is %zu bytes, more than the limit of %" PRIu64 " bytes",
                                              a.stdin_len, c->max_stdin_bytes);
        }

        if (json_object_object_get_ex(arguments, "timeout_s", &v)) {
                if (get_integer(v, &t) < 0)
                        return tool_arg_error(ret_error, "\"timeout_s\" must be a whole number of seconds");
                if (t < 0)
                        return tool_arg_error(ret_error, "\"timeout_s\" must not be negative (0 means the default "
                                                         "of %" PRIu64 " s)",
                                              c->default_timeout_s);
        }
        a.timeout_s = t == 0 ? c->default_timeout_s : (uint64_t) t;
        a.timeout_s = CLAMP(a.timeout_s, (uint64_t) 1, c->max_timeout_s);

        if (json_object_object_get_ex(arguments, "files", &v)) {
                r = parse_files(c, v, &a, ret_error);
                if (r < 0)
                        return r;
        }

        if (json_object_object_get_ex(arguments, "session", &v) && !json_object_is_type(v, json_type_null)) {
                /* Its form is checked by the caller: any string that is not
                 * a live session of ours is a session that is gone. */
                if (!json_object_is_type(v, json_type_string))
                        return tool_arg_error(ret_error, "\"session\" must be the handle session_create returned");
                a.session = json_object_get_string(v);
        }

        if (json_object_object_get_ex(arguments, "network", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_string))
                        return tool_arg_error(ret_error, "\"network\" must be the name of an egress policy");
                a.network = json_object_get_string(v);
                /* A session's network is chosen once, at session_create:
                 * its interpreter and its unit are already there. */
                if (a.session)
                        return tool_arg_error(ret_error,
                                              "\"network\" cannot be given with \"session\": a session has the "
                                              "network it was created with (session_create's \"network\"); call "
                                              "without \"network\", or make a new session with it");
        }

        /* Checked with the wheelhouse later (tool_packages_check()); with
         * "session" too: the session's call installs more. */
        if (json_object_object_get_ex(arguments, "packages", &v) && !json_object_is_type(v, json_type_null))
                a.packages = v;

        *ret = a;
        a = (ExecArgs) {};      /* the decoded buffers are the caller's now */
        return 0;
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

/* What becomes of one output in this reply. */
typedef struct OutputFate {
        bool returned;
        const char *reason;     /* left out here (static text); else the item's own reason, if any */
} OutputFate;

#define REPLY_SIZE_REASON "it would take the reply past 10 MiB, the most MCP clients take in one message"
/* Room kept per output for the reason of one left out late, and for the note. */
#define FATE_SLACK 1024U
#define NOTE_SLACK 4096U

/* v if known, else null: -ENOMEM as json_add(). */
static int json_add_int_or_null(json_object *o, const char *key, bool known, int64_t v) {
        assert(o);
        assert(key);

        return known ? json_add_int(o, key, v) : json_add_null(o, key);
}

/* The path as the model reads it: invalid UTF-8 shown as U+FFFD (the
 * resource's URI keeps the exact bytes). */
static json_object *json_path(const ResultItem *i) {
        _cleanup_free_ char *p = NULL;
        size_t n;

        p = utf8_sanitize(i->path, i->path_len, &n);
        return p ? json_object_new_string_len(p, (int) n) : NULL;
}

/* An entry of "images" or "files": metadata only, never content. */
static json_object *output_entry(const ResultItem *i, const OutputFate *f) {
        _cleanup_json_ json_object *o = json_object_new_object();
        const char *reason = f->returned ? NULL : f->reason ?: i->reason;

        if (!o)
                return NULL;
        if (i->image && json_add_string(o, "source", i->figure ? "figure" : "file") < 0)
                return NULL;
        if (i->path && json_add(o, "path", json_path(i)) < 0)
                return NULL;
        if ((i->mime_type ? json_add_string(o, "mimeType", i->mime_type) : json_add_null(o, "mimeType")) < 0)
                return NULL;
        if (json_add_int_or_null(o, "bytes", i->bytes != UINT64_MAX && i->bytes <= INT64_MAX, (int64_t) i->bytes) < 0)
                return NULL;
        if (i->image && (json_add_int_or_null(o, "width", i->width > 0, i->width) < 0 ||
                         json_add_int_or_null(o, "height", i->height > 0, i->height) < 0))
                return NULL;
        if (json_add_bool(o, "returned", f->returned) < 0 || (reason && json_add_string(o, "reason", reason) < 0))
                return NULL;
        return TAKE_PTR(o);
}

static int add_output_lists(json_object *structured, const ExecResult *r, const OutputFate *fates) {
        _cleanup_json_ json_object *images = json_object_new_array(), *files = json_object_new_array();

        if (!images || !files)
                return -ENOMEM;
        for (size_t k = 0; k < r->n_outputs; k++)
                if (json_append(r->outputs[k].image ? images : files, output_entry(r->outputs + k, fates + k)) < 0)
                        return -ENOMEM;
        if (json_add(structured, "images", TAKE_PTR(images)) < 0 || json_add(structured, "files", TAKE_PTR(files)) < 0)
                return -ENOMEM;
        return 0;
}

static json_object *image_block(const ResultItem *i) {
        _cleanup_json_ json_object *b = json_object_new_object();
        _cleanup_free_ char *data = NULL;
        size_t n;

        if (!b || base64_encode(i->data, i->size, &data, &n) < 0 || json_add_string(b, "type", "image") < 0 ||
            json_add(b, "data", json_object_new_string_len(data, (int) n)) < 0 ||
            json_add_string(b, "mimeType", i->mime_type) < 0)
                return NULL;
        return TAKE_PTR(b);
}

static json_object *resource_block(const ResultItem *i) {
        _cleanup_json_ json_object *b = json_object_new_object(), *res = json_object_new_object();
        _cleanup_free_ char *uri = NULL, *data = NULL;
        size_t n;

        if (!b || !res || file_uri_from_path(i->path, i->path_len, &uri) < 0 || json_add_string(res, "uri", uri) < 0 ||
            json_add_string(res, "mimeType", i->mime_type) < 0)
                return NULL;
        if (i->text) {
                if (json_add(res, "text", json_object_new_string_len((const char *) i->data, (int) i->size)) < 0)
                        return NULL;
        } else if (base64_encode(i->data, i->size, &data, &n) < 0 ||
                   json_add(res, "blob", json_object_new_string_len(data, (int) n)) < 0)
                return NULL;
        if (json_add_string(b, "type", "resource") < 0 || json_add(b, "resource", TAKE_PTR(res)) < 0)
                return NULL;
        return TAKE_PTR(b);
}

/* What a returned output adds to the reply, about. */
static size_t block_cost(const ResultItem *i) {
        size_t cost = 0;

        if (i->image)
                return base64_encoded_len(i->size) + 128;
        if (i->text)
                (void) utf8_json_prefix((const char *) i->data, i->size, SIZE_MAX, &cost);
        else
                cost = base64_encoded_len(i->size);
        return cost + 3 * i->path_len + 256;
}

/* A short text for the model about what is missing, or NULL if nothing. */
static char *outputs_note(const ExecResult *r, const OutputFate *fates) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0, left = 0;
        FILE *f;

        for (size_t k = 0; k < r->n_outputs; k++)
                left += !fates[k].returned;
        if (left == 0 && r->outputs_unlisted == 0 && !r->outputs_unlisted_more && !r->outputs_lost && !r->outputs_error)
                return NULL;
        f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        if (left > 0)
                fprintf(f, "%zu of the figures and files were left out: see the entries with returned: false in "
                           "\"images\" and \"files\". ", left);
        if (r->outputs_unlisted_more && r->outputs_unlisted == 0)
                fprintf(f, "More outputs were left out in the sandbox and are not listed (%s). ",
                        r->outputs_unlisted_reason ?: "no reason given");
        else if (r->outputs_unlisted > 0)
                fprintf(f, "%s%" PRIu64 " more outputs were left out in the sandbox and are not listed (%s). ",
                        r->outputs_unlisted_more ? "At least " : "", r->outputs_unlisted,
                        r->outputs_unlisted_reason ?: "no reason given");
        if (r->outputs_lost) {
                if (r->timed_out || r->oom_killed || r->cancelled)
                        fputs("The run was killed before its figures and files were collected. ", f);
                else
                        fputs("The sandbox's launcher ended without finishing its report: figures and files may be "
                              "missing. ", f);
        }
        if (r->outputs_error)
                fprintf(f, "The result channel from the sandbox broke its protocol (%s): figures and files after that "
                           "point were dropped. ", r->outputs_error);
        if (fclose(f) != 0)
                return NULL;
        if (size > 0 && text[size - 1] == ' ')
                text[size - 1] = 0;
        return TAKE_PTR(text);
}

/* The installer's error when it failed (then the code did not run), else NULL. */
static const char *packages_failure(const ExecResult *r) {
        if (!r->packages || json_get_bool(r->packages, "ok"))
                return NULL;
        return json_get_string(r->packages, "error") ?: "the packages could not be installed; the code did not run";
}

/* The whole CallToolResult for these fates, the blocks only if with_blocks. */
static json_object *build_result(const ExecResult *cut, const McpRevision *rev, const OutputFate *fates,
                                 bool with_blocks) {
        _cleanup_json_ json_object *result = json_object_new_object(), *structured = exec_result_to_json(cut),
                                   *content = NULL;
        _cleanup_free_ char *note = NULL;
        const char *text, *failed = packages_failure(cut);
        size_t len;

        if (!result || !structured || add_output_lists(structured, cut, fates) < 0)
                return NULL;
        text = json_serialize(structured, &len);
        if (!text)
                return NULL;
        if (failed) {
                /* The error first (what clients show of an isError result),
                 * then the result with the installer's report and log. */
                _cleanup_json_ json_object *b = NULL;
                content = tool_text_content(failed, strlen(failed));
                if (!content || json_build(&b, JB_STR("type", "text"),
                                           JB_OBJ("text", json_object_new_string_len(text, (int) len)), JB_END) < 0 ||
                    json_append(content, TAKE_PTR(b)) < 0)
                        return NULL;
        } else if (!(content = tool_text_content(text, len)))
                return NULL;
        if (cut->session_lost) {
                _cleanup_json_ json_object *b = json_object_new_object();
                if (!b || json_add_string(b, "type", "text") < 0 ||
                    json_add_string(b, "text",
                                    cut->timed_out ? "The session is lost: the code did not stop when its time was up "
                                                     "and was killed. Its variables and files are gone; start again "
                                                     "with session_create."
                                                   : "The session is lost: its interpreter ended (out of memory, a "
                                                     "crash, or the program ended it). Its variables and files are "
                                                     "gone; start again with session_create.") < 0 ||
                    json_append(content, TAKE_PTR(b)) < 0)
                        return NULL;
        }
        note = outputs_note(cut, fates);
        if (note) {
                _cleanup_json_ json_object *b = json_object_new_object();
                if (!b || json_add_string(b, "type", "text") < 0 || json_add_string(b, "text", note) < 0 ||
                    json_append(content, TAKE_PTR(b)) < 0)
                        return NULL;
        }
        /* Images first, then the other files: each group in its list's order. */
        for (int pass = 0; with_blocks && pass < 2; pass++)
                for (size_t k = 0; k < cut->n_outputs; k++) {
                        const ResultItem *i = cut->outputs + k;
                        if (!fates[k].returned || i->image != (pass == 0))
                                continue;
                        if (json_append(content, i->image ? image_block(i) : resource_block(i)) < 0)
                                return NULL;
                }
        if (json_add(result, "content", TAKE_PTR(content)) < 0 ||
            (rev->structured && json_add(result, "structuredContent", TAKE_PTR(structured)) < 0) ||
            json_add_bool(result, "isError", failed != NULL) < 0)
                return NULL;
        return TAKE_PTR(result);
}

json_object *tool_exec_result(const McpServerConfig *c, const ExecResult *r, const McpRevision *rev) {
        /* As JSON, stdout and stderr together take at most twice the output
         * limit (stdout first): a megabyte of control bytes would otherwise
         * make a reply of more than 12 MB, more than clients accept (the
         * TypeScript SDK drops a message over 10 MiB). Only the lengths and
         * the flag of this copy change; the texts are the client's. */
        size_t budget = (size_t) MIN(c->max_output_bytes, (uint64_t) SIZE_MAX / 4) * 2, used = 0, len;
        _cleanup_free_ OutputFate *fates = NULL;
        _cleanup_json_ json_object *skeleton = NULL;
        ExecResult cut = *r;

        cut_to_json_budget(cut.stdout_text ?: "", &cut.stdout_len, &budget, &cut.truncated);
        cut_to_json_budget(cut.stderr_text ?: "", &cut.stderr_len, &budget, &cut.truncated);

        fates = new0(OutputFate, MAX(r->n_outputs, (size_t) 1));
        if (!fates)
                return NULL;
        for (size_t k = 0; k < r->n_outputs; k++)
                fates[k].returned = r->outputs[k].data && !r->outputs[k].reason;

        /* What the outputs may take: what the rest leaves of the limit, with
         * room for each to be left out after all, and for the note. */
        skeleton = build_result(&cut, rev, fates, false);
        if (!skeleton || !json_serialize(skeleton, &len))
                return NULL;
        used = len + NOTE_SLACK + FATE_SLACK * r->n_outputs;
        for (int pass = 0; pass < 2; pass++)
                for (size_t k = 0; k < r->n_outputs; k++) {
                        const ResultItem *i = r->outputs + k;
                        size_t cost;

                        if (!fates[k].returned || i->image != (pass == 0))
                                continue;
                        cost = block_cost(i);
                        if (used > TOOL_EXEC_REPLY_MAX || cost > TOOL_EXEC_REPLY_MAX - used)
                                fates[k] = (OutputFate) { .reason = REPLY_SIZE_REASON };
                        else
                                used += cost;
                }

        /* The estimate errs on the safe side; should it ever not, outputs
         * go, last first, until the reply fits. */
        for (;;) {
                _cleanup_json_ json_object *result = build_result(&cut, rev, fates, true);
                ssize_t last = -1;

                if (!result || !json_serialize(result, &len))
                        return NULL;
                if (len <= TOOL_EXEC_REPLY_MAX)
                        return TAKE_PTR(result);
                for (size_t k = 0; k < r->n_outputs; k++)
                        if (fates[k].returned)
                                last = (ssize_t) k;
                if (last < 0)
                        return TAKE_PTR(result);        /* output alone: the output budget's business */
                fates[last] = (OutputFate) { .reason = REPLY_SIZE_REASON };
        }
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
        else if (error == BROKER_ERROR_EGRESS_UNAVAILABLE)
                r = asprintf(&s, "the code did not run: its network (the egress proxy) could not be set up: %s; "
                                 "retry later, or run without \"network\"", m);
        else if (error == BROKER_ERROR_LOST)
                r = asprintf(&s, "the run was lost: %s", m);
        else
                r = asprintf(&s, "the run failed (%s): %s", broker_error_to_string(error) ?: "error", m);
        return r < 0 ? NULL : s;
}

static int exec_parse(const McpServerConfig *c, json_object *arguments, McpToolArgs *a, char **ret_error) {
        int r;

        assert(c);
        assert(a);
        assert(ret_error);

        r = tool_exec_parse_arguments(c, arguments, &a->exec, ret_error);
        if (r < 0)
                return r;
        /* Issue 42: python, bash, javascript, as the server has them. */
        r = tool_language_parse(c, json_get(arguments, "language"), a->exec.packages, &a->exec.language, ret_error);
        if (r < 0)
                return r;
        a->network = a->exec.network;
        a->packages = a->exec.packages;
        /* Not a handle of ours: as gone as one that ended. */
        if (a->exec.session && tool_session_parse_handle(a->exec.session, a->session_id) < 0)
                return -ESRCH;
        return 0;
}

const McpTool tool_exec = {
        .name = TOOL_EXEC_NAME,
        .definition = tool_exec_definition,
        .parse = exec_parse,
        .tasks = true,
};
