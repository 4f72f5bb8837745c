/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "client-conn.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buffer.h"
#include "build-config.h"
#include "json-util.h"
#include "socket-util.h"
#include "util.h"

#define STDIO_SOCKET_PATH "/run/mcp-exec/stdio.sock"

static const char *socket_path(void) {
        const char *p = getenv("MCP_EXEC_STDIO_SOCKET");
        return p ?: STDIO_SOCKET_PATH;
}

int client_connect(void) {
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

void client_check_denied(const char *line, size_t n) {
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

/* Reads lines from our connection to the local server's stdio socket (one
 * MCP session runs over it): the fd, what was read past the last newline,
 * and the last whole line. */
struct LineReader {
        int fd;
        char buf[1 << 16];              /* read from fd, not yet a whole line */
        size_t size;
        Buffer line;                    /* the last line read, NUL-terminated; no limit */
};

LineReader *line_reader_free(LineReader *lr) {
        if (!lr)
                return NULL;
        safe_close(lr->fd);
        buffer_free(&lr->line);
        free(lr);
        return NULL;
}

int line_reader_open(LineReader **ret) {
        _cleanup_(line_reader_freep) LineReader *lr = NULL;

        assert(ret);

        lr = new0(LineReader, 1);
        if (!lr)
                return -ENOMEM;
        lr->line = BUFFER_INIT(SIZE_MAX);
        lr->fd = client_connect();
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

int client_send(LineReader *lr, json_object *j) {
        size_t len;
        const char *s;
        int r;

        assert(lr);
        assert(j);

        s = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &len);
        r = loop_write(lr->fd, s, len);
        return r < 0 ? r : loop_write(lr->fd, "\n", 1);
}

json_object *client_wait_response(LineReader *lr, int id) {
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
                        client_check_denied(lr->line.data, lr->line.size);
                        json_object_put(j);
                        return NULL;
                }
                json_object_put(j);
        }
}

int client_initialize(LineReader *lr, const char *protocol_version) {
        _cleanup_json_ json_object *req = NULL, *resp = NULL, *note = NULL, *info = NULL;
        json_object *params = NULL;

        assert(lr);
        assert(protocol_version);

        if (json_build(&info, JB_STR("name", "mcp-exec-run"), JB_STR("version", PACKAGE_VERSION), JB_END) < 0 ||
            json_build(&params, JB_STR("protocolVersion", protocol_version),
                       JB_OBJ("capabilities", json_object_new_object()), JB_OBJ("clientInfo", TAKE_PTR(info)),
                       JB_END) < 0 ||
            json_build(&req, JB_STR("jsonrpc", "2.0"), JB_INT("id", 1), JB_STR("method", "initialize"),
                       JB_OBJ("params", params), JB_END) < 0 ||
            json_build(&note, JB_STR("jsonrpc", "2.0"), JB_STR("method", "notifications/initialized"), JB_END) < 0) {
                fprintf(stderr, "mcp-exec: out of memory\n");
                return -ENOMEM;
        }
        /* A refused session is answered and closed at once, maybe before our
         * request is all written: read the answer even if writing failed. */
        (void) client_send(lr, req);
        resp = client_wait_response(lr, 1);
        if (!resp || !json_get(resp, "result")) {
                if (!denied_reported)
                        fprintf(stderr, "mcp-exec: the server did not accept the session\n");
                return -EPROTO;
        }
        return client_send(lr, note);
}

int client_request(LineReader *lr, int id, const char *method, json_object *params, json_object **ret) {
        _cleanup_json_ json_object *req = NULL;
        json_object *resp;

        assert(lr);
        assert(method);
        assert(ret);

        /* params is taken whatever happens. */
        if (json_build(&req, JB_STR("jsonrpc", "2.0"), JB_INT("id", id), JB_STR("method", method), JB_END) < 0) {
                json_object_put(params);
                req = NULL;
        }
        if (!req || (params && json_build_into(req, JB_OBJ("params", params), JB_END) < 0)) {
                fprintf(stderr, "mcp-exec: out of memory\n");
                return -ENOMEM;
        }
        if (client_send(lr, req) < 0 || !(resp = client_wait_response(lr, id))) {
                fprintf(stderr, "mcp-exec: no answer from the server\n");
                return -EPROTO;
        }
        *ret = resp;
        return 0;
}
