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
#include "buffer.h"
#include "build-config.h"
#include "file-uri.h"
#include "json-util.h"
#include "launch-frame.h"
#include "macro.h"
#include "parse-util.h"
#include "socket-util.h"
#include "utf8.h"
#include "util.h"
#include "write-beneath.h"

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

/* The daemon refuses a peer with one JSON-RPC error (id null: -32001 when
 * polkit says no, -32000 when the server is full) and closes; say so on
 * stderr too, where a person will see it. */
static bool denied_reported;

static void check_denied(const char *line, size_t n) {
        _cleanup_free_ char *copy = NULL;
        json_object *j, *e, *c, *m, *i;

        assert(line);

        copy = strndup(line, n);
        if (!copy || !(j = json_tokener_parse(copy)))
                return;
        if (json_object_object_get_ex(j, "error", &e) && json_object_object_get_ex(e, "code", &c) &&
            json_object_object_get_ex(j, "id", &i) && !i && json_object_object_get_ex(e, "message", &m)) {
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
        _cleanup_close_ int fd = -EBADF;

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
                                        check_denied(first, nl ? (size_t) (nl - first) : first_len);
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

/* Reads lines from our connection to the local server's stdio socket (one
 * MCP session runs over it): the fd, what was read past the last newline,
 * and the last whole line. */
typedef struct LineReader {
        int fd;
        char buf[1 << 16];              /* read from fd, not yet a whole line */
        size_t size;
        Buffer line;                    /* the last line read, NUL-terminated; no limit */
} LineReader;

static LineReader *line_reader_free(LineReader *lr) {
        if (!lr)
                return NULL;
        safe_close(lr->fd);
        buffer_free(&lr->line);
        free(lr);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(LineReader *, line_reader_free);

/* Connects to the local server; the reader starts empty. */
static int line_reader_open(LineReader **ret) {
        _cleanup_(line_reader_freep) LineReader *lr = NULL;

        assert(ret);

        lr = new0(LineReader, 1);
        if (!lr)
                return -ENOMEM;
        lr->line = BUFFER_INIT(SIZE_MAX);
        lr->fd = connect_local();
        if (lr->fd < 0)
                return lr->fd;
        *ret = TAKE_PTR(lr);
        return 0;
}

/* Reads one line (without the newline) into lr->line.data; 0 at EOF. */
static int read_line(LineReader *lr) {
        assert(lr);

        lr->line.size = 0;
        for (;;) {
                char *nl = memchr(lr->buf, '\n', lr->size);
                size_t n = nl ? (size_t) (nl - lr->buf) : lr->size;
                int r;

                r = buffer_append(&lr->line, lr->buf, n);
                if (r < 0)
                        return r;
                lr->line.data[lr->line.size] = 0;      /* the spare byte */
                if (nl) {
                        memmove(lr->buf, nl + 1, lr->size - n - 1);
                        lr->size -= n + 1;
                        return 1;
                }
                lr->size = 0;
                ssize_t k = read(lr->fd, lr->buf, sizeof lr->buf);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return 0;
                lr->size = (size_t) k;
        }
}

static int send_json(int fd, json_object *j) {
        assert(j);

        size_t len;
        const char *s = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &len);
        int r = loop_write(fd, s, len);
        return r < 0 ? r : loop_write(fd, "\n", 1);
}

/* Waits for the response with the given id; prints and skips the rest. */
static json_object *wait_response(LineReader *lr, int id) {
        assert(lr);

        for (;;) {
                json_object *j, *v;
                int r = read_line(lr);
                if (r <= 0)
                        return NULL;
                j = json_tokener_parse(lr->line.data);
                if (!j)
                        continue;
                if (json_object_object_get_ex(j, "id", &v) && json_object_is_type(v, json_type_int) &&
                    json_object_get_int(v) == id)
                        return j;
                if (json_object_object_get_ex(j, "error", &v)) {
                        check_denied(lr->line.data, lr->line.size);
                        json_object_put(j);
                        return NULL;
                }
                json_object_put(j);
        }
}

/* initialize, then notifications/initialized. */
static int mcp_initialize(LineReader *lr) {
        _cleanup_json_ json_object *req = NULL, *resp = NULL, *note = NULL;
        json_object *v;

        assert(lr);

        req = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                                 "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                                 "\"clientInfo\":{\"name\":\"mcp-exec-run\",\"version\":\"" PACKAGE_VERSION "\"}}}");
        /* A refused session is answered and closed at once, maybe before our
         * request is all written: read the answer even if writing failed. */
        (void) send_json(lr->fd, req);
        resp = wait_response(lr, 1);
        if (!resp || !json_object_object_get_ex(resp, "result", &v)) {
                if (!denied_reported)
                        fprintf(stderr, "mcp-exec: the server did not accept the session\n");
                return -EPROTO;
        }
        note = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        return send_json(lr->fd, note);
}

/* tools/call of exec; the response object, or NULL (said on stderr). files
 * is the "files" argument or NULL; it is taken. */
static json_object *call_exec(LineReader *lr, const char *code, size_t code_len, const char *in, size_t in_len,
                              uint64_t timeout_s, json_object *files) {
        _cleanup_json_ json_object *f = files, *args = NULL, *req = NULL;
        json_object *resp;
        int r;

        assert(lr);
        assert(code);

        r = json_build(&args, JB_OBJ("code", json_object_new_string_len(code, (int) code_len)), JB_END);
        if (r >= 0 && timeout_s > 0)
                r = json_build_into(args, JB_INT("timeout_s", timeout_s), JB_END);
        if (r >= 0 && in)
                r = json_build_into(args, JB_OBJ("stdin", json_object_new_string_len(in, (int) in_len)), JB_END);
        if (r >= 0 && f)
                r = json_build_into(args, JB_OBJ("files", TAKE_PTR(f)), JB_END);
        if (r >= 0) {
                json_object *params = NULL;

                r = json_build(&params, JB_STR("name", "exec"), JB_OBJ("arguments", TAKE_PTR(args)), JB_END);
                if (r >= 0)
                        r = json_build(&req, JB_STR("jsonrpc", "2.0"), JB_INT("id", 2), JB_STR("method", "tools/call"),
                                       JB_OBJ("params", params), JB_END);
        }
        if (r < 0) {
                fprintf(stderr, "mcp-exec: out of memory\n");
                return NULL;
        }
        if (send_json(lr->fd, req) < 0 || !(resp = wait_response(lr, 2))) {
                fprintf(stderr, "mcp-exec: no answer from the server\n");
                return NULL;
        }
        return resp;
}

/* Prints the program's output and returns the exit status that stands for
 * its end, as mcp-exec(1) says. */
static int print_result(json_object *resp) {
        json_object *result, *sc, *v;

        assert(resp);

        if (json_object_object_get_ex(resp, "error", &v)) {
                json_object *m;
                fprintf(stderr, "mcp-exec: %s\n",
                        json_object_object_get_ex(v, "message", &m) ? json_object_get_string(m) : "error");
                return EXIT_MCP_EXEC_FAILED;
        }
        if (!json_object_object_get_ex(resp, "result", &result))
                return EXIT_MCP_EXEC_FAILED;
        if (json_object_object_get_ex(result, "isError", &v) && json_object_get_boolean(v)) {
                json_object *content, *t;
                if (json_object_object_get_ex(result, "content", &content) &&
                    json_object_is_type(content, json_type_array) && json_object_array_length(content) > 0 &&
                    json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &t))
                        fprintf(stderr, "mcp-exec: %s\n", json_object_get_string(t));
                return EXIT_MCP_EXEC_FAILED;
        }
        if (!json_object_object_get_ex(result, "structuredContent", &sc))
                return EXIT_MCP_EXEC_FAILED;
        if (json_object_object_get_ex(sc, "stdout", &v))
                (void) loop_write(STDOUT_FILENO, json_object_get_string(v), (size_t) json_object_get_string_len(v));
        if (json_object_object_get_ex(sc, "stderr", &v))
                (void) loop_write(STDERR_FILENO, json_object_get_string(v), (size_t) json_object_get_string_len(v));
        if (json_object_object_get_ex(sc, "truncated", &v) && json_object_get_boolean(v))
                fprintf(stderr, "mcp-exec: output truncated\n");
        if (json_object_object_get_ex(sc, "timed_out", &v) && json_object_get_boolean(v)) {
                fprintf(stderr, "mcp-exec: timed out\n");
                return EXIT_TIMEOUT;
        }
        if (json_object_object_get_ex(sc, "oom_killed", &v) && json_object_get_boolean(v)) {
                fprintf(stderr, "mcp-exec: killed: out of memory\n");
                return 128 + SIGKILL;
        }
        if (json_object_object_get_ex(sc, "signal", &v) && json_object_is_type(v, json_type_string)) {
                const char *name = json_object_get_string(v);
                int sig = 0;
                for (int i = 1; i < 65; i++)
                        if (signal_to_name(i) && streq(signal_to_name(i), name))
                                sig = i;
                fprintf(stderr, "mcp-exec: killed by %s\n", name);
                return 128 + sig;
        }
        if (json_object_object_get_ex(sc, "exit_code", &v))
                return json_object_get_int(v) & 0xff;
        return EXIT_MCP_EXEC_FAILED;
}

/* Far more than the server takes; the server says what its limit is. */
#define READ_MAX (256U * 1024U * 1024U)

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

/* Names from the server may hold anything: show them with invalid UTF-8 as
 * U+FFFD and control characters (C0, DEL, C1) and backslashes escaped, so a
 * name cannot drive the terminal. */
static void print_name(FILE *f, const char *s) {
        _cleanup_free_ char *clean = NULL;
        size_t n;

        assert(f);
        assert(s);

        clean = utf8_sanitize(s, strlen(s), &n);
        if (!clean)
                return;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) clean[i];
                if (c < 0x20 || c == 0x7f || c == '\\')
                        fprintf(f, "\\x%02x", c);
                else if (c == 0xc2 && i + 1 < n && (unsigned char) clean[i + 1] < 0xa0) {
                        fprintf(f, "\\u%04x", (unsigned char) clean[i + 1]);
                        i++;
                } else
                        fputc(c, f);
        }
}

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

/* Where a returned file goes beneath --output-dir: its path under
 * /tmp/outputs/. NULL if the server named something else. */
static const char *output_relative(const char *path) {
        static const char prefix[] = "/tmp/outputs/";

        return path && strneq(path, prefix, sizeof prefix - 1) ? path + sizeof prefix - 1 : NULL;
}

static int save_one(int dir_fd, const char *dir, const char *rel, const void *data, size_t n) {
        int r;

        assert(dir);
        assert(rel);
        assert(data || n == 0);

        r = write_beneath(dir_fd, rel, data, n);
        fprintf(stderr, r < 0 ? "mcp-exec: cannot write %s/" : "mcp-exec: wrote %s/", dir);
        print_name(stderr, rel);
        if (r < 0)
                fprintf(stderr, ": %s\n", r == -EINVAL ? "not a plain relative path" : strerror(-r));
        else
                fprintf(stderr, " (%zu bytes)\n", n);
        return r;
}

/* Saves one content block if it is an image or a resource. Image blocks
 * follow the result's "images" entries with returned: true, in order;
 * *image is the next entry to look at, *figures counts figures saved.
 * -EBADMSG: a block that names no file under /tmp/outputs or whose data is
 * no base64. */
static int save_block(int dir_fd, const char *dir, json_object *b, json_object *images, size_t *image,
                      size_t *figures) {
        const char *type = json_object_get_string(json_object_object_get(b, "type")), *rel = NULL, *enc;
        _cleanup_free_ uint8_t *data = NULL;
        _cleanup_free_ char *path = NULL;
        json_object *entry = NULL, *res, *text;
        char name[32];
        size_t n;

        assert(dir);
        assert(image);
        assert(figures);

        if (type && streq(type, "image")) {
                while (!entry && *image < json_object_array_length(images)) {
                        json_object *e = json_object_array_get_idx(images, (*image)++);
                        if (json_object_get_boolean(json_object_object_get(e, "returned")))
                                entry = e;
                }
                if (json_object_get_string(json_object_object_get(entry, "path")))
                        rel = output_relative(json_object_get_string(json_object_object_get(entry, "path")));
                else {
                        (void) snprintf(name, sizeof name, "figure-%zu.png", ++*figures);
                        rel = name;
                }
                enc = json_object_get_string(json_object_object_get(b, "data"));
        } else if (type && streq(type, "resource")) {
                res = json_object_object_get(b, "resource");
                if (file_uri_to_path(json_object_get_string(json_object_object_get(res, "uri")) ?: "", &path, &n) < 0)
                        return -EBADMSG;
                rel = output_relative(path);
                enc = json_object_get_string(json_object_object_get(res, "blob"));
                text = json_object_object_get(res, "text");
                if (!enc && rel && json_object_is_type(text, json_type_string))
                        return save_one(dir_fd, dir, rel, json_object_get_string(text),
                                        (size_t) json_object_get_string_len(text));
        } else
                return 0;
        if (!rel || !enc || base64_decode(enc, strlen(enc), READ_MAX, &data, &n, NULL) < 0)
                return -EBADMSG;
        return save_one(dir_fd, dir, rel, data, n);
}

/* Saves the returned figures (figure-N.png) and files (by their path under
 * /tmp/outputs/) beneath dir, and says what was left out. Image blocks
 * follow the result's "images" entries with returned: true, in order. */
static int save_outputs(json_object *resp, const char *dir) {
        json_object *result = json_object_object_get(resp, "result"), *sc, *content, *images, *files;
        _cleanup_close_ int dir_fd = -EBADF;
        size_t image = 0, figures = 0, saved = 0;
        int ret = 0;

        assert(resp);

        sc = json_object_object_get(result, "structuredContent");
        content = json_object_object_get(result, "content");
        images = json_object_object_get(sc, "images");
        files = json_object_object_get(sc, "files");
        if (!json_object_is_type(content, json_type_array))
                return 0;

        /* The server's note on what is missing, then the entries it means. */
        for (size_t i = 1; i < json_object_array_length(content); i++) {
                json_object *b = json_object_array_get_idx(content, i);
                const char *type = json_object_get_string(json_object_object_get(b, "type"));
                if (type && streq(type, "text")) {
                        fputs("mcp-exec: ", stderr);
                        print_name(stderr, json_object_get_string(json_object_object_get(b, "text")) ?: "");
                        fputc('\n', stderr);
                }
        }
        for (int pass = 0; pass < 2; pass++) {
                json_object *list = pass == 0 ? images : files;
                for (size_t i = 0; i < json_object_array_length(list); i++) {
                        json_object *e = json_object_array_get_idx(list, i), *v;
                        if (json_object_object_get_ex(e, "returned", &v) && !json_object_get_boolean(v)) {
                                fprintf(stderr, "mcp-exec: left out: ");
                                print_name(stderr, json_object_get_string(json_object_object_get(e, "path")) ?: "a figure");
                                fprintf(stderr, " (%s)\n", json_object_get_string(json_object_object_get(e, "reason")) ?: "no reason");
                        }
                }
        }
        if (!dir) {
                for (size_t i = 1; i < json_object_array_length(content); i++) {
                        const char *type = json_object_get_string(
                                json_object_object_get(json_object_array_get_idx(content, i), "type"));
                        saved += type && (streq(type, "image") || streq(type, "resource"));
                }
                if (saved > 0)
                        fprintf(stderr, "mcp-exec: %zu output%s returned (figures and files); --output-dir DIR saves "
                                        "them\n", saved, saved == 1 ? "" : "s");
                return 0;
        }

        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) {
                fprintf(stderr, "mcp-exec: cannot open --output-dir %s: %m\n", dir);
                return -errno;
        }
        for (size_t i = 1; i < json_object_array_length(content); i++) {
                int r = save_block(dir_fd, dir, json_object_array_get_idx(content, i), images, &image, &figures);
                if (r == -EBADMSG)
                        fprintf(stderr, "mcp-exec: the server sent an output that cannot be saved (content block %zu)\n",
                                i);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

static int cmd_run(uint64_t timeout_s, const char *file, char **input_paths, const char *output_dir) {
        _cleanup_free_ char *code = NULL, *in = NULL;
        _cleanup_(line_reader_freep) LineReader *lr = NULL;
        _cleanup_json_ json_object *resp = NULL;
        json_object *files = NULL;
        size_t code_len = 0, in_len = 0;
        int status;

        if (read_input(file, &code, &code_len, &in, &in_len) < 0)
                return EXIT_MCP_EXEC_FAILED;
        if (input_paths && !(files = input_files(input_paths)))
                return EXIT_MCP_EXEC_FAILED;
        if (line_reader_open(&lr) < 0 || mcp_initialize(lr) < 0) {
                json_object_put(files);
                return EXIT_MCP_EXEC_FAILED;
        }
        resp = call_exec(lr, code, code_len, in, in_len, timeout_s, files);
        if (!resp)
                return EXIT_MCP_EXEC_FAILED;
        status = print_result(resp);
        if (status != EXIT_MCP_EXEC_FAILED && save_outputs(resp, output_dir) < 0)
                return EXIT_MCP_EXEC_FAILED;
        return status;
}

static void help(void) {
        printf("mcp-exec COMMAND\n\n"
               "Run Python code in the mcp-exec sandbox.\n\n"
               "Commands:\n"
               "  stdio                      Bridge stdin/stdout to the local MCP server; use it as\n"
               "                             an MCP client's command: {\"command\": \"mcp-exec\", \"args\": [\"stdio\"]}\n"
               "  run [--timeout S] [--file PATH]... [--output-dir DIR] [FILE|-]\n"
               "                             Run FILE (or stdin) and exit with its exit code; with a\n"
               "                             FILE, this command's stdin becomes the program's stdin;\n"
               "                             --file puts PATH into the run's /tmp, --output-dir\n"
               "                             saves the figures and /tmp/outputs files it returns\n\n"
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
                { "file", required_argument, NULL, 'f' },
                { "output-dir", required_argument, NULL, 'o' },
                {},
        };
        static const char usage[] = "mcp-exec: usage: mcp-exec run [--timeout S] [--file PATH]... [--output-dir DIR] "
                                    "[FILE|-]\n";
        _cleanup_free_ char **input_paths = NULL;
        const char *output_dir = NULL;
        size_t n_inputs = 0;
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
                while ((c = getopt_long(argc, argv, "t:f:o:", options, NULL)) >= 0) {
                        if (c == 't' && parse_uint(optarg, &timeout_s) >= 0)
                                continue;
                        if (c == 'f' && n_inputs < LAUNCH_FILES_MAX) {
                                if (!input_paths && !(input_paths = new0(char *, LAUNCH_FILES_MAX + 1)))
                                        return EXIT_MCP_EXEC_FAILED;
                                input_paths[n_inputs++] = optarg;
                                continue;
                        }
                        if (c == 'f') {
                                fprintf(stderr, "mcp-exec: at most %u --file options\n", LAUNCH_FILES_MAX);
                                return 2;
                        }
                        if (c == 'o') {
                                output_dir = optarg;
                                continue;
                        }
                        fputs(usage, stderr);
                        return 2;
                }
                if (argc - optind > 1) {
                        fputs(usage, stderr);
                        return 2;
                }
                return cmd_run(timeout_s, optind < argc ? argv[optind] : NULL, input_paths, output_dir);
        }
        fprintf(stderr, "mcp-exec: unknown command '%s'; see mcp-exec --help\n", argv[optind]);
        return 2;
}
