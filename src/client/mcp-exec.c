/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-exec: the local command.
 *
 *   mcp-exec stdio           bridge stdin/stdout to the local MCP socket, so a
 *                            client's configuration is {"command": "mcp-exec",
 *                            "args": ["stdio"]}
 *   mcp-exec run [FILE|-]    run a Python file through the sandbox, print its
 *                            output and exit with its exit code
 */
#include <errno.h>
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

#include "build-config.h"
#include "json-cleanup.h"
#include "macro.h"
#include "parse-util.h"
#include "socket-util.h"
#include "util.h"

#define STDIO_SOCKET_PATH "/run/mcp-exec/stdio.sock"
#define EXIT_MCP_EXEC_FAILED 125
#define EXIT_TIMEOUT 124

static const char *socket_path(void) {
        const char *p = getenv("MCP_EXEC_STDIO_SOCKET");
        return p ?: STDIO_SOCKET_PATH;
}

static int connect_local(void) {
        const char *path = socket_path();
        int r;

        r = socket_connect_unix(SOCK_STREAM, path);
        if (r >= 0)
                return r;
        if (r == -ENAMETOOLONG)
                fprintf(stderr, "mcp-exec: socket path too long: %s\n", path);
        else if (r == -ENOENT)
                fprintf(stderr, "mcp-exec: %s does not exist; enable the local MCP socket with: "
                                "sudo systemctl enable --now mcp-exec-stdio.socket\n", path);
        else if (r == -ECONNREFUSED)
                fprintf(stderr, "mcp-exec: nothing listens on %s; restart it with: "
                                "sudo systemctl restart mcp-exec-stdio.socket\n", path);
        else if (r == -EACCES || r == -EPERM)
                fprintf(stderr, "mcp-exec: permission denied connecting to %s\n", path);
        else
                fprintf(stderr, "mcp-exec: cannot connect to %s: %s\n", path, strerror(-r));
        return r;
}

/* The daemon refuses a peer with one JSON-RPC error (id null, code -32001)
 * and closes; say so on stderr too, where a person will see it. */
static bool denied_reported;

static void check_denied(const char *line, size_t n) {
        _cleanup_free_ char *copy = strndup(line, n);
        json_object *j, *e, *c, *m;

        if (!copy || !(j = json_tokener_parse(copy)))
                return;
        if (json_object_object_get_ex(j, "error", &e) && json_object_object_get_ex(e, "code", &c) &&
            json_object_get_int(c) == -32001 && json_object_object_get_ex(e, "message", &m)) {
                fprintf(stderr, "mcp-exec: %s\n", json_object_get_string(m));
                denied_reported = true;
        }
        json_object_put(j);
}

static int cmd_stdio(void) {
        char buf[64 * 1024];
        bool in_open = true, first_line = true;
        char first[4096];
        size_t first_len = 0;
        int fd;

        fd = connect_local();
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
                        if (k <= 0) {
                                /* The client is done sending; replies may follow. */
                                in_open = false;
                                (void) shutdown(fd, SHUT_WR);
                        } else if (loop_write(fd, buf, (size_t) k) < 0)
                                break;
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
                                        check_denied(first, nl ? (size_t) (nl - first) : first_len);
                                        first_line = false;
                                }
                        }
                        if (loop_write(STDOUT_FILENO, buf, (size_t) k) < 0)
                                break;
                }
        }
        close(fd);
        return 0;
}

/* ---- run ---- */

typedef struct LineReader {
        int fd;
        char buf[1 << 16];
        size_t size;
        char *line;
        size_t line_size, line_alloc;
} LineReader;

/* Reads one line (without the newline) into r->line; 0 at EOF. */
static int read_line(LineReader *r) {
        r->line_size = 0;
        for (;;) {
                char *nl = memchr(r->buf, '\n', r->size);
                size_t n = nl ? (size_t) (nl - r->buf) : r->size;

                if (r->line_size + n + 1 > r->line_alloc) {
                        size_t want = MAX(r->line_alloc * 2, r->line_size + n + 1);
                        char *p = realloc(r->line, want);
                        if (!p)
                                return -ENOMEM;
                        r->line = p;
                        r->line_alloc = want;
                }
                memcpy(r->line + r->line_size, r->buf, n);
                r->line_size += n;
                r->line[r->line_size] = 0;
                if (nl) {
                        memmove(r->buf, nl + 1, r->size - n - 1);
                        r->size -= n + 1;
                        return 1;
                }
                r->size = 0;
                ssize_t k = read(r->fd, r->buf, sizeof r->buf);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return 0;
                r->size = (size_t) k;
        }
}

static int send_json(int fd, json_object *j) {
        size_t len;
        const char *s = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &len);
        int r = loop_write(fd, s, len);
        return r < 0 ? r : loop_write(fd, "\n", 1);
}

/* Waits for the response with the given id; prints and skips the rest. */
static json_object *wait_response(LineReader *lr, int id) {
        for (;;) {
                json_object *j, *v;
                int r = read_line(lr);
                if (r <= 0)
                        return NULL;
                j = json_tokener_parse(lr->line);
                if (!j)
                        continue;
                if (json_object_object_get_ex(j, "id", &v) && json_object_is_type(v, json_type_int) &&
                    json_object_get_int(v) == id)
                        return j;
                if (json_object_object_get_ex(j, "error", &v)) {
                        check_denied(lr->line, lr->line_size);
                        json_object_put(j);
                        return NULL;
                }
                json_object_put(j);
        }
}

/* Far more than the server takes; the server says what its limit is. */
#define READ_MAX (256U * 1024U * 1024U)

static int cmd_run(uint64_t timeout_s, const char *file) {
        _cleanup_free_ char *code = NULL, *in = NULL;
        _cleanup_(json_object_putp) json_object *req = NULL, *resp = NULL;
        json_object *args, *params, *result, *sc, *v;
        size_t code_len = 0, in_len = 0;
        LineReader lr = {};
        int fd, r, ret = EXIT_MCP_EXEC_FAILED;
        FILE *f;

        f = !file || streq(file, "-") ? stdin : fopen(file, "re");
        if (!f) {
                fprintf(stderr, "mcp-exec: cannot open %s: %m\n", file);
                return EXIT_MCP_EXEC_FAILED;
        }
        r = read_full_stream(f, READ_MAX, &code, &code_len);
        if (f != stdin)
                fclose(f);
        /* With a FILE, our own stdin (when not a terminal) is the program's. */
        if (r >= 0 && f != stdin && !isatty(STDIN_FILENO))
                r = read_full_stream(stdin, READ_MAX, &in, &in_len);
        if (r < 0) {
                fprintf(stderr, "mcp-exec: cannot read the input: %s\n", strerror(-r));
                return EXIT_MCP_EXEC_FAILED;
        }

        fd = connect_local();
        if (fd < 0)
                return EXIT_MCP_EXEC_FAILED;
        lr.fd = fd;

        req = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                                 "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                                 "\"clientInfo\":{\"name\":\"mcp-exec-run\",\"version\":\"" PACKAGE_VERSION "\"}}}");
        /* A refused session is answered and closed at once, maybe before our
         * request is all written: read the answer even if writing failed. */
        (void) send_json(fd, req);
        if (!(resp = wait_response(&lr, 1)) || !json_object_object_get_ex(resp, "result", &v)) {
                if (!denied_reported)
                        fprintf(stderr, "mcp-exec: the server did not accept the session\n");
                goto out;
        }
        json_object_put(req);
        req = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        if (send_json(fd, req) < 0)
                goto out;

        json_object_put(req);
        req = json_object_new_object();
        params = json_object_new_object();
        args = json_object_new_object();
        json_object_object_add(args, "code", json_object_new_string_len(code, (int) code_len));
        if (timeout_s > 0)
                json_object_object_add(args, "timeout_s", json_object_new_int64((int64_t) timeout_s));
        if (in)
                json_object_object_add(args, "stdin", json_object_new_string_len(in, (int) in_len));
        json_object_object_add(params, "name", json_object_new_string("exec"));
        json_object_object_add(params, "arguments", args);
        json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(req, "id", json_object_new_int(2));
        json_object_object_add(req, "method", json_object_new_string("tools/call"));
        json_object_object_add(req, "params", params);
        json_object_put(resp);
        if (send_json(fd, req) < 0 || !(resp = wait_response(&lr, 2))) {
                fprintf(stderr, "mcp-exec: no answer from the server\n");
                goto out;
        }
        if (json_object_object_get_ex(resp, "error", &v)) {
                json_object *m;
                fprintf(stderr, "mcp-exec: %s\n",
                        json_object_object_get_ex(v, "message", &m) ? json_object_get_string(m) : "error");
                goto out;
        }
        if (!json_object_object_get_ex(resp, "result", &result))
                goto out;
        if (json_object_object_get_ex(result, "isError", &v) && json_object_get_boolean(v)) {
                json_object *content, *t;
                if (json_object_object_get_ex(result, "content", &content) &&
                    json_object_is_type(content, json_type_array) && json_object_array_length(content) > 0 &&
                    json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &t))
                        fprintf(stderr, "mcp-exec: %s\n", json_object_get_string(t));
                goto out;
        }
        if (!json_object_object_get_ex(result, "structuredContent", &sc))
                goto out;
        if (json_object_object_get_ex(sc, "stdout", &v))
                (void) loop_write(STDOUT_FILENO, json_object_get_string(v), (size_t) json_object_get_string_len(v));
        if (json_object_object_get_ex(sc, "stderr", &v))
                (void) loop_write(STDERR_FILENO, json_object_get_string(v), (size_t) json_object_get_string_len(v));
        if (json_object_object_get_ex(sc, "truncated", &v) && json_object_get_boolean(v))
                fprintf(stderr, "mcp-exec: output truncated\n");
        if (json_object_object_get_ex(sc, "timed_out", &v) && json_object_get_boolean(v)) {
                fprintf(stderr, "mcp-exec: timed out\n");
                ret = EXIT_TIMEOUT;
        } else if (json_object_object_get_ex(sc, "oom_killed", &v) && json_object_get_boolean(v)) {
                fprintf(stderr, "mcp-exec: killed: out of memory\n");
                ret = 128 + SIGKILL;
        } else if (json_object_object_get_ex(sc, "signal", &v) && json_object_is_type(v, json_type_string)) {
                const char *name = json_object_get_string(v);
                int sig = 0;
                for (int i = 1; i < 65; i++)
                        if (signal_to_name(i) && streq(signal_to_name(i), name))
                                sig = i;
                fprintf(stderr, "mcp-exec: killed by %s\n", name);
                ret = 128 + sig;
        } else if (json_object_object_get_ex(sc, "exit_code", &v))
                ret = json_object_get_int(v) & 0xff;
out:
        close(fd);
        free(lr.line);
        return ret;
}

static void help(void) {
        printf("mcp-exec COMMAND\n\n"
               "Run Python code in the mcp-exec sandbox.\n\n"
               "Commands:\n"
               "  stdio                      Bridge stdin/stdout to the local MCP server; use it as\n"
               "                             an MCP client's command: {\"command\": \"mcp-exec\", \"args\": [\"stdio\"]}\n"
               "  run [--timeout S] [FILE|-] Run FILE (or stdin) and exit with its exit code; with a\n"
               "                             FILE, this command's stdin becomes the program's stdin\n\n"
               "Options:\n"
               "  -h --help                  Show this help\n"
               "     --version               Show the version\n\n"
               "Exit status of run: the program's, 124 on timeout, 128+N when killed by signal N,\n"
               "125 when mcp-exec itself failed. See mcp-exec(1).\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "timeout", required_argument, NULL, 't' },
                {},
        };
        uint64_t timeout_s = 0;
        int c;

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
                        if (parse_uint(optarg, &timeout_s) < 0) {
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
        if (streq(argv[optind], "run")) {
                optind++;
                while ((c = getopt_long(argc, argv, "t:", options, NULL)) >= 0)
                        if (c != 't' || parse_uint(optarg, &timeout_s) < 0) {
                                fprintf(stderr, "mcp-exec: usage: mcp-exec run [--timeout S] [FILE|-]\n");
                                return 2;
                        }
                if (argc - optind > 1) {
                        fprintf(stderr, "mcp-exec: usage: mcp-exec run [--timeout S] [FILE|-]\n");
                        return 2;
                }
                return cmd_run(timeout_s, optind < argc ? argv[optind] : NULL);
        }
        fprintf(stderr, "mcp-exec: unknown command '%s'; see mcp-exec --help\n", argv[optind]);
        return 2;
}
