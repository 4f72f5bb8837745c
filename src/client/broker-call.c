/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec-broker-call: talks to the broker directly, for tests and the
 * latency benchmark. Prints one JSON result per run on stdout. With
 * --result-channel it sends the fourth fd (the broker must take it) and the
 * result gains "outputs" (metadata of the figures and files, never bytes),
 * "outputs_lost" and "outputs_error"; --file NAME=PATH passes input files;
 * --network NAME asks for the egress policy NAME (the result gains "egress");
 * --package SPEC (repeatable) sends SPEC in the run's "packages", unchecked,
 * so that tests can show what the broker refuses.
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "broker-proto.h"
#include "config.h"
#include "exec-client.h"
#include "json-util.h"
#include "launch-frame.h"
#include "macro.h"
#include "main-func.h"
#include "package-spec.h"
#include "parse-util.h"
#include "util.h"

static const char *arg_socket = BROKER_SOCKET_PATH;
static uint64_t arg_timeout = 0, arg_max_output = 1 << 20, arg_count = 1, arg_parallel = 1, arg_cancel_ms = 0;
static const char *arg_stdin_file, *arg_network, *arg_language;
static bool arg_result_channel;
static ExecInputFile arg_files[LAUNCH_FILES_MAX];
static char *file_data[LAUNCH_FILES_MAX];
static size_t arg_n_files;
static const char *arg_packages[PACKAGES_MAX + 8];
static size_t arg_n_packages;

typedef struct Job {
        ExecClient *client;
        sd_event_source *cancel_timer;
} Job;

static unsigned n_running, n_started, n_failed;
static ExecRequest request;
static Job *jobs;

static int start_next(sd_event *e);

static json_object *output_json(const ResultItem *it) {
        _cleanup_json_ json_object *x = NULL;
        int r;

        assert(it);

        r = json_build(&x, JB_BOOL("figure", it->figure), JB_STR_OR_NULL("path", it->path),
                       JB_STR_OR_NULL("mimeType", it->mime_type), JB_END);
        /* UINT64_MAX: the size is not known. */
        if (r >= 0)
                r = it->bytes == UINT64_MAX ? json_build_into(x, JB_NULL("bytes"), JB_END) :
                                              json_build_into(x, JB_INT("bytes", it->bytes), JB_END);
        if (r >= 0)
                r = json_build_into(x, JB_INT("width", it->width), JB_INT("height", it->height),
                                    JB_BOOL("text", it->text), JB_STR_OR_NULL("reason", it->reason), JB_END);
        return r < 0 ? NULL : TAKE_PTR(x);
}

static json_object *outputs_json(const ExecResult *r) {
        _cleanup_json_ json_object *a = json_object_new_array();

        assert(r);

        for (size_t i = 0; a && i < r->n_outputs; i++)
                if (json_append(a, output_json(r->outputs + i)) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

/* One JSON line per run: the result as the front end gets it, and what the
 * tests look at besides (the result channel's listing). */
static int result_json(const ExecResult *r, json_object **ret) {
        _cleanup_json_ json_object *o = exec_result_to_json(r);
        int k = 0;

        assert(r);
        assert(ret);

        if (!o)
                return -ENOMEM;
        if (r->error != BROKER_ERROR_NONE)
                k = json_build_into(o, JB_STR("error", broker_error_to_string(r->error)),
                                    JB_STR("error_message", r->error_message ?: ""), JB_END);
        if (k >= 0)
                k = json_build_into(o, JB_BOOL("cancelled", r->cancelled), JB_END);
        if (k >= 0 && r->result_channel)
                k = json_build_into(o, JB_OBJ("outputs", outputs_json(r)),
                                    JB_INT("outputs_unlisted", r->outputs_unlisted),
                                    JB_BOOL("outputs_unlisted_more", r->outputs_unlisted_more),
                                    JB_BOOL("outputs_lost", r->outputs_lost),
                                    JB_STR_OR_NULL("outputs_error", r->outputs_error),
                                    JB_BOOL("have_status", r->have_status), JB_END);
        if (k >= 0)
                k = json_build_into(o, JB_STR_OR_NULL("run_id", r->run_id), JB_END);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(o);
        return 0;
}

static void on_done(ExecClient *c, const ExecResult *r, void *userdata) {
        Job *j = userdata;
        _cleanup_json_ json_object *o = NULL;

        assert(r);
        assert(j);

        if (r->error != BROKER_ERROR_NONE)
                n_failed++;
        if (result_json(r, &o) < 0) {
                fputs("mcp-exec-broker-call: out of memory\n", stderr);
                n_failed++;
        } else
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        fflush(stdout);

        j->cancel_timer = sd_event_source_disable_unref(j->cancel_timer);
        j->client = exec_client_free(j->client);
        n_running--;
        (void) start_next(NULL);
}

static int on_cancel(sd_event_source *s, uint64_t usec, void *userdata) {
        Job *j = userdata;

        assert(j);

        exec_client_cancel(j->client);
        return 0;
}

static sd_event *loop;

static int start_next(sd_event *unused) {
        while (n_started < arg_count && n_running < arg_parallel) {
                Job *j = &jobs[n_started];
                int r = exec_client_start(loop, arg_socket, &request, on_done, j, &j->client);
                if (r < 0) {
                        fprintf(stderr, "mcp-exec-broker-call: cannot reach the broker at %s: %s\n", arg_socket,
                                strerror(-r));
                        return sd_event_exit(loop, 2);
                }
                if (arg_cancel_ms > 0)
                        (void) sd_event_add_time_relative(loop, &j->cancel_timer, CLOCK_MONOTONIC,
                                                          arg_cancel_ms * USEC_PER_MSEC, 0, on_cancel, j);
                n_started++;
                n_running++;
        }
        if (n_running == 0)
                return sd_event_exit(loop, n_failed > 0 ? 1 : 0);
        return 0;
}

/* --file NAME=PATH: the file's bytes, read now, go into the run's /tmp as NAME. */
static int add_file(char *arg) {
        _cleanup_(fclosep) FILE *ff = NULL;
        char *eq = strchr(arg, '=');
        size_t n;

        assert(arg);

        if (!eq || arg_n_files >= LAUNCH_FILES_MAX || !(ff = fopen(eq + 1, "re")) ||
            read_full_stream(ff, SIZE_MAX / 2, &file_data[arg_n_files], &n) < 0) {
                fprintf(stderr, "mcp-exec-broker-call: --file NAME=PATH: cannot read %s\n", arg);
                return -EINVAL;
        }
        arg_files[arg_n_files] = (ExecInputFile) {
                .name = arg, .name_len = (size_t) (eq - arg),
                .data = (const uint8_t *) file_data[arg_n_files], .size = n,
        };
        arg_n_files++;
        return 0;
}

/* Returns 0, or -EINVAL after saying what is wrong on stderr. */
static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },   { "timeout", required_argument, NULL, 't' },
                { "stdin-file", required_argument, NULL, 'i' }, { "max-output", required_argument, NULL, 'o' },
                { "count", required_argument, NULL, 'n' },     { "parallel", required_argument, NULL, 'p' },
                { "cancel-after-ms", required_argument, NULL, 'c' }, { "result-channel", no_argument, NULL, 'r' },
                { "file", required_argument, NULL, 'f' },       { "network", required_argument, NULL, 'N' },
                { "package", required_argument, NULL, 'P' },   { "language", required_argument, NULL, 'L' },
                {},
        };
        int c;

        assert(argv);

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                uint64_t *dst = c == 't' ? &arg_timeout : c == 'o' ? &arg_max_output : c == 'n' ? &arg_count :
                                c == 'p' ? &arg_parallel : c == 'c' ? &arg_cancel_ms : NULL;
                if (c == 'r')
                        arg_result_channel = true;
                else if (c == 'f') {
                        if (add_file(optarg) < 0)
                                return -EINVAL;
                } else if (c == 's')
                        arg_socket = optarg;
                else if (c == 'N')
                        arg_network = optarg;
                else if (c == 'L')
                        arg_language = optarg;
                else if (c == 'P') {
                        /* A few more than any broker takes: "too many" is tested too. */
                        if (arg_n_packages >= ELEMENTSOF(arg_packages))
                                return fprintf(stderr, "mcp-exec-broker-call: too many --package\n"), -EINVAL;
                        arg_packages[arg_n_packages++] = optarg;
                }
                else if (c == 'i')
                        arg_stdin_file = optarg;
                else if (!dst || parse_size(optarg, dst) < 0) {
                        fprintf(stderr, "usage: mcp-exec-broker-call [--socket P] [--timeout S] [--stdin-file F] "
                                        "[--max-output N] [--count N] [--parallel N] [--cancel-after-ms N] "
                                        "[--result-channel] [--file NAME=PATH]... [--network NAME] "
                                        "[--package SPEC]... [--language L] FILE|-\n");
                        return -EINVAL;
                }
        }
        if (optind != argc - 1 || arg_parallel == 0)
                return fprintf(stderr, "mcp-exec-broker-call: one FILE or - expected\n"), -EINVAL;
        return 0;
}

static int run(int argc, char *argv[]) {
        Config config = {};
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        _cleanup_(fclosep) FILE *f = NULL, *g = NULL;
        _cleanup_free_ char *code = NULL, *in = NULL;
        _cleanup_free_ Job *all_jobs = NULL;
        size_t code_len = 0, in_len = 0;
        int r;

        /* A program that does not read all of its stdin closes the pipe. */
        (void) signal(SIGPIPE, SIG_IGN);

        if (parse_argv(argc, argv) < 0)
                return 2;

        if (!streq(argv[optind], "-"))
                f = fopen(argv[optind], "re");
        if ((!f && !streq(argv[optind], "-")) || read_full_stream(f ?: stdin, SIZE_MAX / 2, &code, &code_len) < 0)
                return fprintf(stderr, "mcp-exec-broker-call: cannot read %s\n", argv[optind]), 2;
        if (arg_stdin_file) {
                g = fopen(arg_stdin_file, "re");
                if (!g || read_full_stream(g, SIZE_MAX / 2, &in, &in_len) < 0)
                        return fprintf(stderr, "mcp-exec-broker-call: cannot read %s\n", arg_stdin_file), 2;
        }

        /* The limits of the result channel: the configuration's, as the front end's. */
        if (config_parse(environ, &config, NULL) < 0)
                return fprintf(stderr, "mcp-exec-broker-call: bad MCP_EXEC_* configuration\n"), 2;
        if (arg_n_files > 0 && !arg_result_channel)
                return fprintf(stderr, "mcp-exec-broker-call: --file needs --result-channel\n"), 2;
        /* The front end's form of "packages" (exec-client.h): a JSON array. */
        _cleanup_json_ json_object *packages = NULL;
        if (arg_n_packages > 0) {
                packages = json_object_new_array();
                for (size_t i = 0; packages && i < arg_n_packages; i++)
                        if (json_object_array_add(packages, json_object_new_string(arg_packages[i])) < 0)
                                return 2;
                if (!packages)
                        return 2;
        }
        request = (ExecRequest) {
                .code = code, .code_len = code_len, .stdin_data = in, .stdin_len = in_len,
                .timeout_s = arg_timeout, .max_output_bytes = arg_max_output, .tag = "broker-call",
                .result_channel = arg_result_channel,
                .result_limits = { .max_images = config.max_images, .max_image_bytes = config.max_image_bytes,
                                   .max_files = config.max_files_out, .max_result_bytes = config.max_result_bytes },
                .files = arg_files, .n_files = arg_n_files, .network = arg_network,
                .packages = packages, .language = arg_language,
        };
        config_done(&config);
        jobs = all_jobs = new0(Job, arg_count);
        if (!jobs || sd_event_default(&e) < 0)
                return 2;
        loop = e;
        r = start_next(loop);
        r = r < 0 ? 2 : sd_event_loop(loop);
        for (size_t i = 0; i < arg_n_files; i++)
                free(file_data[i]);
        return r;
}

DEFINE_MAIN_FUNCTION(run);
