/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "client-output.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "file-uri.h"
#include "json-util.h"
#include "macro.h"
#include "util.h"
#include "utf8.h"
#include "write-beneath.h"

/* A list of strings from the server, escaped, comma-separated. */
static void print_names(FILE *f, json_object *a) {
        for (size_t i = 0; json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++) {
                fputs(i > 0 ? ", " : "", f);
                print_name(f, json_object_get_string(json_object_array_get_idx(a, i)) ?: "");
        }
}

static bool array_nonempty(json_object *a) {
        return json_object_is_type(a, json_type_array) && json_object_array_length(a) > 0;
}

/* The installer's report (structuredContent.packages), in human form, on
 * stderr: never mixed into the program's stdout. On failure pip's output
 * follows, line by line, escaped as names are. */
static void print_packages(json_object *sc) {
        json_object *p = json_object_object_get(sc, "packages"), *installed;
        const char *log;

        if (!json_object_is_type(p, json_type_object))
                return;
        installed = json_object_object_get(p, "installed");
        if (!json_object_get_boolean(json_object_object_get(p, "ok"))) {
                log = json_object_get_string(json_object_object_get(p, "log"));
                if (isempty(log))
                        return;
                fputs("mcp-exec: pip's output:\n", stderr);
                for (const char *l = log; *l;) {
                        const char *nl = strchr(l, '\n');
                        _cleanup_free_ char *line = strndup(l, nl ? (size_t) (nl - l) : strlen(l));

                        if (!line)
                                return;
                        fputs("  ", stderr);
                        print_name(stderr, line);
                        fputc('\n', stderr);
                        l = nl ? nl + 1 : l + strlen(l);
                }
                return;
        }
        fputs("mcp-exec: packages: ", stderr);
        if (array_nonempty(installed)) {
                fputs("installed ", stderr);
                for (size_t i = 0; i < json_object_array_length(installed); i++) {
                        json_object *d = json_object_array_get_idx(installed, i);
                        fputs(i > 0 ? ", " : "", stderr);
                        print_name(stderr, json_object_get_string(json_object_object_get(d, "name")) ?: "?");
                        fputc(' ', stderr);
                        print_name(stderr, json_object_get_string(json_object_object_get(d, "version")) ?: "?");
                }
        } else
                fputs("nothing new installed", stderr);
        if (array_nonempty(json_object_object_get(p, "already"))) {
                fputs("; already in the session: ", stderr);
                print_names(stderr, json_object_object_get(p, "already"));
        }
        if (array_nonempty(json_object_object_get(p, "replaced"))) {
                fputs("; shadowing the system's ", stderr);
                print_names(stderr, json_object_object_get(p, "replaced"));
        }
        if (json_object_get_boolean(json_object_object_get(p, "fresh_interpreter")))
                fputs("; on a fresh interpreter (the preloaded modules were dropped)", stderr);
        if (json_object_is_type(json_object_object_get(p, "duration_us"), json_type_int)) {
                int64_t us = json_object_get_int64(json_object_object_get(p, "duration_us"));
                fprintf(stderr, " (%" PRId64 ".%01" PRId64 " s)", us / 1000000, us % 1000000 / 100000);
        }
        fputc('\n', stderr);
}

/* Prints the program's output and returns the exit status that stands for
 * its end, as mcp-exec(1) says. */
int print_result(json_object *resp) {
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
                /* A failed install: the code did not run; pip said why. */
                print_packages(json_object_object_get(result, "structuredContent"));
                return EXIT_MCP_EXEC_FAILED;
        }
        if (!json_object_object_get_ex(result, "structuredContent", &sc))
                return EXIT_MCP_EXEC_FAILED;
        /* Before the program's output: it was installed before it ran. */
        print_packages(sc);
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

/* Names from the server may hold anything: show them with invalid UTF-8 as
 * U+FFFD and control characters (C0, DEL, C1) and backslashes escaped, so a
 * name cannot drive the terminal. */
void print_name(FILE *f, const char *s) {
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

/* The length of a, which came from the server: 0 unless it is an array
 * (json-c asserts on anything else). */
static size_t array_length(json_object *a) {
        return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
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
                while (!entry && *image < array_length(images)) {
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
int save_outputs(json_object *resp, const char *dir) {
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
                for (size_t i = 0; i < array_length(list); i++) {
                        json_object *e = json_object_array_get_idx(list, i), *v;
                        if (json_object_object_get_ex(e, "returned", &v) && !json_object_get_boolean(v)) {
                                fprintf(stderr, "mcp-exec: left out: ");
                                print_name(stderr,
                                           json_object_get_string(json_object_object_get(e, "path")) ?: "a figure");
                                fprintf(stderr, " (%s)\n",
                                        json_object_get_string(json_object_object_get(e, "reason")) ?: "no reason");
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
                        fprintf(stderr,
                                "mcp-exec: the server sent an output that cannot be saved (content block %zu)\n", i);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}
