/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec: the local command.
 *
 *   mcp-exec stdio           bridge stdin/stdout to the local MCP socket, so a
 *                            client's configuration is {"command": "mcp-exec",
 *                            "args": ["stdio"]}
 *   mcp-exec run [FILE|-]    run a Python file through the sandbox, print its
 *                            output and exit with its exit code; --file passes
 *                            input files, --output-dir saves figures and files
 *   mcp-exec wheels ...      the operator fills the wheelhouse (root, on the
 *                            host): execs mcp-exec-wheels.py (wheels-cmd.h)
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base64.h"
#include "build-config.h"
#include "client-conn.h"
#include "client-output.h"
#include "json-util.h"
#include "language.h"
#include "launch-frame.h"
#include "macro.h"
#include "package-spec.h"
#include "parse-util.h"
#include "task-cmd.h"
#include "utf8.h"
#include "util.h"
#include "wheels-cmd.h"

static int cmd_stdio(void) {
        char buf[64 * 1024];
        bool in_open = true, first_line = true;
        char first[4096];
        size_t first_len = 0;
        _cleanup_close_ int fd = -EBADF;

        fd = client_connect();
        if (fd < 0)
                return EXIT_MCP_EXEC_FAILED;

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = in_open ? STDIN_FILENO : -1, .events = POLLIN },
                        { .fd = fd, .events = POLLIN },
                };
                ssize_t k;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return EXIT_MCP_EXEC_FAILED;
                }
                if (p[0].revents) {
                        k = read(STDIN_FILENO, buf, sizeof buf);
                        if (k <= 0 || loop_write(fd, buf, (size_t) k) < 0) {
                                /* The client is done sending, or the daemon
                                 * stopped reading (a refusal is answered and
                                 * closed at once, maybe before our first
                                 * line): what it sent still follows. */
                                in_open = false;
                                (void) shutdown(fd, SHUT_WR);
                        }
                }
                if (p[1].revents) {
                        k = read(fd, buf, sizeof buf);
                        if (k <= 0)
                                break;
                        if (first_line) {
                                size_t take = MIN((size_t) k, sizeof first - first_len);
                                memcpy(first + first_len, buf, take);
                                first_len += take;
                                char *nl = memchr(first, '\n', first_len);
                                if (nl || first_len == sizeof first) {
                                        client_check_denied(first, nl ? (size_t) (nl - first) : first_len);
                                        first_line = false;
                                }
                        }
                        if (loop_write(STDOUT_FILENO, buf, (size_t) k) < 0)
                                break;
                }
        }
        return 0;
}

/* ---- run ---- */


/* What `run` was asked to do. */
typedef struct RunOptions {
        uint64_t timeout_s;             /* 0: the server's default */
        const char *file;               /* NULL or "-": the code comes on stdin */
        char **input_paths;             /* --file, NULL-terminated, or NULL */
        const char *output_dir;
        bool detach;                    /* a task: print its id, do not wait */
        uint64_t ttl_s;                 /* the ttl to ask for a task; 0: the longest */
        const char *network;            /* an egress policy the operator named, or NULL: no network */
        char **packages;                /* --package, NULL-terminated, or NULL */
        /* --language, or NULL: the "#!" line of FILE says, else the server's
         * default (Python). */
        const char *language;
} RunOptions;

/* tools/call of exec; the response object, or NULL (said on stderr). args
 * is the "arguments" object and task the "task" one (or NULL): both are
 * taken. */
static json_object *call_exec(LineReader *lr, json_object *args, json_object *task) {
        _cleanup_json_ json_object *t = task;
        json_object *params = NULL, *resp = NULL;

        assert(lr);
        assert(args);

        if (json_build(&params, JB_STR("name", "exec"), JB_OBJ("arguments", args), JB_END) < 0 ||
            (t && json_build_into(params, JB_OBJ("task", TAKE_PTR(t)), JB_END) < 0)) {
                json_object_put(params);
                fprintf(stderr, "mcp-exec: out of memory\n");
                return NULL;
        }
        return client_request(lr, 2, "tools/call", params, &resp) < 0 ? NULL : resp;
}

/* The exec arguments; files (the "files" argument, or NULL) is taken. */
static json_object *exec_arguments(const char *code, size_t code_len, const char *in, size_t in_len,
                                   const RunOptions *o, json_object *files) {
        _cleanup_json_ json_object *f = files, *args = NULL;
        int r;

        assert(code);
        assert(o);

        r = json_build(&args, JB_OBJ("code", json_object_new_string_len(code, (int) code_len)), JB_END);
        if (r >= 0 && o->timeout_s > 0)
                r = json_build_into(args, JB_INT("timeout_s", o->timeout_s), JB_END);
        /* The server checks the name against its policies: an unknown one
         * comes back as the tool's error, which print_result() shows. */
        if (r >= 0 && o->network)
                r = json_build_into(args, JB_STR("network", o->network), JB_END);
        if (r >= 0 && o->language)
                r = json_build_into(args, JB_STR("language", o->language), JB_END);
        /* Checked by the server too, against its wheelhouse: an unknown
         * package comes back as the tool's error, listing what it has. */
        if (r >= 0 && o->packages) {
                _cleanup_json_ json_object *a = json_object_new_array();
                for (char **p = o->packages; a && *p && r >= 0; p++)
                        r = json_append(a, json_object_new_string(*p));
                r = r < 0 || !a ? -ENOMEM : json_build_into(args, JB_OBJ("packages", TAKE_PTR(a)), JB_END);
        }
        if (r >= 0 && in)
                r = json_build_into(args, JB_OBJ("stdin", json_object_new_string_len(in, (int) in_len)), JB_END);
        if (r >= 0 && f)
                r = json_build_into(args, JB_OBJ("files", TAKE_PTR(f)), JB_END);
        if (r < 0) {
                fprintf(stderr, "mcp-exec: out of memory\n");
                return NULL;
        }
        return TAKE_PTR(args);
}

/* {"ttl": ms}, or {} for the longest the server grants (it never grants
 * less than the run may take, plus a minute). */
static json_object *task_metadata(uint64_t ttl_s) {
        json_object *o = NULL;

        if (ttl_s == 0)
                return json_object_new_object();
        if (ttl_s > INT64_MAX / 1000 || json_build(&o, JB_INT("ttl", ttl_s * 1000), JB_END) < 0)
                return NULL;
        return o;
}

/* The code from file (or stdin); with a file, our own stdin (when not a
 * terminal) is the program's. */
static int read_input(const char *file, char **ret_code, size_t *ret_code_len, char **ret_in, size_t *ret_in_len) {
        _cleanup_(fclosep) FILE *opened = NULL;
        FILE *f = stdin;
        int r;

        assert(ret_code);
        assert(ret_code_len);
        assert(ret_in);
        assert(ret_in_len);

        if (file && !streq(file, "-")) {
                f = opened = fopen(file, "re");
                if (!f) {
                        fprintf(stderr, "mcp-exec: cannot open %s: %m\n", file);
                        return -errno;
                }
        }
        r = read_full_stream(f, READ_MAX, ret_code, ret_code_len);
        if (r >= 0 && opened && !isatty(STDIN_FILENO))
                r = read_full_stream(stdin, READ_MAX, ret_in, ret_in_len);
        if (r < 0)
                fprintf(stderr, "mcp-exec: cannot read the input: %s\n", strerror(-r));
        return r;
}

/* ---- files in and out ---- */


/* The "files" argument for --file PATH...: each file under its own base
 * name, as text when it is UTF-8, else base64. NULL (said on stderr) on
 * failure. */
static json_object *input_files(char **paths) {
        _cleanup_json_ json_object *files = json_object_new_array();

        if (!files)
                return NULL;
        for (char **p = paths; p && *p; p++) {
                _cleanup_(fclosep) FILE *f = NULL;
                _cleanup_free_ char *data = NULL, *b64 = NULL;
                const char *name = strrchr(*p, '/') ? strrchr(*p, '/') + 1 : *p;
                json_object *o;
                size_t n, len;
                int r;

                if (!launch_file_name_valid(name, strlen(name))) {
                        fprintf(stderr, "mcp-exec: --file %s: \"", *p);
                        print_name(stderr, name);
                        fprintf(stderr, "\" is not a plain file name the sandbox takes\n");
                        return NULL;
                }
                for (size_t i = 0; i < json_object_array_length(files); i++)
                        if (streq(json_object_get_string(json_object_object_get(json_object_array_get_idx(files, i),
                                                                                "name")),
                                  name)) {
                                fprintf(stderr, "mcp-exec: --file %s: a file named %s is already passed\n", *p, name);
                                return NULL;
                        }
                f = fopen(*p, "re");
                if (!f) {
                        fprintf(stderr, "mcp-exec: cannot open %s: %m\n", *p);
                        return NULL;
                }
                r = read_full_stream(f, READ_MAX, &data, &n);
                if (r < 0) {
                        fprintf(stderr, "mcp-exec: cannot read %s: %s\n", *p, strerror(-r));
                        return NULL;
                }
                /* Text as it is, anything else as base64. */
                if (utf8_is_valid(data ?: "", n))
                        r = json_build(&o, JB_STR("name", name),
                                       JB_OBJ("content", json_object_new_string_len(data ?: "", (int) n)), JB_END);
                else {
                        if (base64_encode(data, n, &b64, &len) < 0)
                                return NULL;
                        r = json_build(&o, JB_STR("name", name),
                                       JB_OBJ("content", json_object_new_string_len(b64, (int) len)),
                                       JB_STR("encoding", "base64"), JB_END);
                }
                if (r < 0 || json_append(files, o) < 0)
                        return NULL;
        }
        return TAKE_PTR(files);
}


/* The language a FILE's "#!" line names, when --language did not say;
 * -EINVAL (said) when it names an interpreter the sandbox has not. */
static int shebang_language(RunOptions *o, const char *code, size_t code_len) {
        Language l;
        int r;

        if (o->language || !o->file || streq(o->file, "-"))
                return 0;
        r = language_from_shebang(code, code_len, &l);
        if (r == -EPROTONOSUPPORT) {
                fprintf(stderr, "mcp-exec: %s: its #! line names an interpreter the sandbox does not run (it runs "
                                "python, bash and javascript); pass --language\n", o->file);
                return -EINVAL;
        }
        if (r >= 0)
                o->language = language_to_string(l);
        return 0;
}

static int cmd_run(RunOptions *o) {
        _cleanup_free_ char *code = NULL, *in = NULL;
        _cleanup_(line_reader_freep) LineReader *lr = NULL;
        _cleanup_json_ json_object *resp = NULL;
        json_object *files = NULL, *args, *task = NULL;
        size_t code_len = 0, in_len = 0;
        int status;

        assert(o);

        if (read_input(o->file, &code, &code_len, &in, &in_len) < 0 || shebang_language(o, code ?: "", code_len) < 0)
                return EXIT_MCP_EXEC_FAILED;
        if (o->input_paths && !(files = input_files(o->input_paths)))
                return EXIT_MCP_EXEC_FAILED;
        args = exec_arguments(code ?: "", code_len, in, in_len, o, files);
        if (!args)
                return EXIT_MCP_EXEC_FAILED;
        if (o->detach && !(task = task_metadata(o->ttl_s))) {
                json_object_put(args);
                fprintf(stderr, "mcp-exec: out of memory\n");
                return EXIT_MCP_EXEC_FAILED;
        }
        /* Tasks came with 2025-11-25; a plain run keeps the revision it
         * always spoke. */
        if (line_reader_open(&lr) < 0 || client_initialize(lr, o->detach ? TASK_PROTOCOL_VERSION : "2025-06-18") < 0) {
                json_object_put(args);
                json_object_put(task);
                return EXIT_MCP_EXEC_FAILED;
        }
        resp = call_exec(lr, args, task);
        if (!resp)
                return EXIT_MCP_EXEC_FAILED;
        if (o->detach)
                return task_print_created(resp);
        status = print_result(resp);
        if (status != EXIT_MCP_EXEC_FAILED && save_outputs(resp, o->output_dir) < 0)
                return EXIT_MCP_EXEC_FAILED;
        return status;
}

static void help(void) {
        printf("mcp-exec COMMAND\n\n"
               "Run code (Python, bash or JavaScript) in the mcp-exec sandbox.\n\n"
               "Commands:\n"
               "  stdio                      Bridge stdin/stdout to the local MCP server; use it as\n"
               "                             an MCP client's command: "
               "{\"command\": \"mcp-exec\", \"args\": [\"stdio\"]}\n"
               "  run [--language L] [--timeout S] [--network POLICY] [--package SPEC]... [--file PATH]... "
               "[--output-dir DIR] [FILE|-]\n"
               "                             Run FILE (or stdin) and exit with its exit code; with a\n"
               "                             FILE, this command's stdin becomes the program's stdin;\n"
               "                             --file puts PATH into the run's /tmp, --output-dir\n"
               "                             saves the figures and /tmp/outputs files it returns;\n"
               "                             --network lets it reach the hosts of an egress policy\n"
               "                             the operator configured, through the egress proxy;\n"
               "                             --package installs SPEC from the server's wheelhouse\n"
               "                             first (what was installed is said on stderr);\n"
               "                             --language: python (the default), bash or javascript,\n"
               "                             else the #! line of FILE says (sh: bash)\n"
               "  run --detach [--ttl S] [--timeout S] [--network POLICY] [--package SPEC]... [--file PATH]... "
               "[FILE|-]\n"
               "                             Start the run as a task, print its id and exit; the\n"
               "                             timeout may go up to the server's task maximum\n"
               "  task get [--output-dir DIR] ID\n"
               "                             Print a task's status; once it ended, its output as run\n"
               "                             does, with the program's exit status. Never waits: a\n"
               "                             task still working prints \"working\" and exits 75\n"
               "  task wait [--output-dir DIR] ID\n"
               "                             Wait for the task to end, then as task get\n"
               "  task cancel ID             Cancel a task; its run stops\n"
               "  task list                  List your tasks: id, status, creation time\n"
               "  wheels add NAME... | sync | prepare | list | verify\n"
               "                             Fill the wheelhouse the \"packages\" argument installs\n"
               "                             from (as root, on the host); see mcp-exec wheels --help\n\n"
               "Options:\n"
               "  -h --help                  Show this help\n"
               "     --version               Show the version\n\n"
               "Exit status of run, task get and task wait: the program's, 124 on timeout, 128+N\n"
               "when killed by signal N, 125 when mcp-exec itself failed or there is no such task\n"
               "(or it was cancelled), 75 when task get finds the task still working. See mcp-exec(1).\n");
}

static const char run_usage[] = "mcp-exec: usage: mcp-exec run [--detach [--ttl S]] [--language L] [--timeout S] "
                                "[--network POLICY] "
                                "[--package SPEC]... [--file PATH]... "
                                "[--output-dir DIR] [FILE|-]\n";

/* The words after "run" (optind is at the first). */
static int parse_run(int argc, char *argv[], const struct option *options, RunOptions *o) {
        size_t n_inputs = 0, n_packages = 0;
        int c;

        assert(argv);
        assert(options);
        assert(o);

        while ((c = getopt_long(argc, argv, "t:f:o:", options, NULL)) >= 0) {
                if (c == 't' && parse_uint(optarg, &o->timeout_s) >= 0)
                        continue;
                if (c == 'T' && parse_uint(optarg, &o->ttl_s) >= 0 && o->ttl_s > 0)
                        continue;
                if (c == 'd') {
                        o->detach = true;
                        continue;
                }
                if (c == 'f' && n_inputs < LAUNCH_FILES_MAX) {
                        if (!o->input_paths && !(o->input_paths = new0(char *, LAUNCH_FILES_MAX + 1)))
                                return -ENOMEM;
                        o->input_paths[n_inputs++] = optarg;
                        continue;
                }
                if (c == 'f') {
                        fprintf(stderr, "mcp-exec: at most %u --file options\n", LAUNCH_FILES_MAX);
                        return -EINVAL;
                }
                if (c == 'o') {
                        o->output_dir = optarg;
                        continue;
                }
                if (c == 'n' && !isempty(optarg)) {
                        o->network = optarg;
                        continue;
                }
                if (c == 'l' && language_from_string(optarg, &(Language) { 0 }) >= 0) {
                        o->language = optarg;
                        continue;
                }
                if (c == 'p' && !package_spec_valid(optarg, strlen(optarg))) {
                        fprintf(stderr, "mcp-exec: --package %s: not a package spec (NAME, NAME==VERSION, "
                                        "NAME[extra]>=V,<W)\n", optarg);
                        return -EINVAL;
                }
                if (c == 'p' && n_packages < PACKAGES_MAX) {
                        if (!o->packages && !(o->packages = new0(char *, PACKAGES_MAX + 1)))
                                return -ENOMEM;
                        o->packages[n_packages++] = optarg;
                        continue;
                }
                if (c == 'p') {
                        fprintf(stderr, "mcp-exec: at most %u --package options\n", PACKAGES_MAX);
                        return -EINVAL;
                }
                fputs(run_usage, stderr);
                return -EINVAL;
        }
        if (argc - optind > 1 || (o->ttl_s > 0 && !o->detach)) {
                fputs(run_usage, stderr);
                return -EINVAL;
        }
        if (o->detach && o->output_dir) {
                fprintf(stderr, "mcp-exec: --output-dir goes with task get or task wait, not with run --detach\n");
                return -EINVAL;
        }
        o->file = optind < argc ? argv[optind] : NULL;
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "timeout", required_argument, NULL, 't' },
                { "file", required_argument, NULL, 'f' },
                { "output-dir", required_argument, NULL, 'o' },
                { "detach", no_argument, NULL, 'd' },
                { "ttl", required_argument, NULL, 'T' },
                { "network", required_argument, NULL, 'n' },
                { "package", required_argument, NULL, 'p' },
                { "language", required_argument, NULL, 'l' },
                {},
        };
        RunOptions o = {};
        int c, r;

        (void) signal(SIGPIPE, SIG_IGN);
        while ((c = getopt_long(argc, argv, "+ht:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("mcp-exec %s\n", PACKAGE_VERSION);
                        return 0;
                case 't':
                        if (parse_uint(optarg, &o.timeout_s) < 0) {
                                fprintf(stderr, "mcp-exec: invalid --timeout=%s\n", optarg);
                                return 2;
                        }
                        break;
                default:
                        return 2;
                }
        if (optind >= argc) {
                help();
                return 2;
        }
        if (streq(argv[optind], "stdio") && optind + 1 == argc)
                return cmd_stdio();
        if (streq(argv[optind], "task"))
                return task_cmd(argc - optind, argv + optind);
        if (streq(argv[optind], "wheels"))
                return wheels_cmd(argc - optind, argv + optind);
        if (streq(argv[optind], "run")) {
                optind++;
                r = parse_run(argc, argv, options, &o);
                if (r >= 0)
                        r = cmd_run(&o);
                else
                        r = r == -ENOMEM ? EXIT_MCP_EXEC_FAILED : 2;
                free(o.input_paths);
                free(o.packages);
                return r;
        }
        fprintf(stderr, "mcp-exec: unknown command '%s'; see mcp-exec --help\n", argv[optind]);
        return 2;
}
