/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/launch/launch-collect.[ch]: the interpreter's "done N"
 * (which the program can forge, so any value must be safe), and the result
 * channel as the launcher writes it when an output's metadata does not fit in
 * a frame: read back by the front end's own reader (result-reader.h). */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "launch-collect.h"
#include "macro.h"
#include "result-reader.h"
#include "test-helpers.h"

TEST(test_parse_done) {
        static const struct {
                const char *msg;
                int status;
        } good[] = {
                { "done 0", 0 },   { "done 3", 3 },     { "done 255", 255 },
                { "done -2", -2 }, { "done -64", -64 }, { "done 007", 7 },
        };
        static const char *const bad[] = {
                "done -2147483648",          /* INT_MIN: negating it is undefined */
                "done 2147483648",           "done 4294967296",
                "done 99999999999999999999", /* past uint64_t */
                "done 256",                  "done -65",
                "done -0",                   "done --1",
                "done +1",                   "done  1",
                "done 1 ",                   "done 0x1",
                "done ",                     "done",
                "done1",                     "DONE 0",
                "fig",                       "",
        };
        int v;

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                v = 12345;
                ASSERT_EQ_INT(launch_parse_done(good[i].msg, &v), 0);
                ASSERT_EQ_INT(v, good[i].status);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                v = 12345;
                if (launch_parse_done(bad[i], &v) != -EINVAL)
                        ASSERT_FAIL_("\"%s\" was taken", bad[i]);
                ASSERT_EQ_INT(v, 12345);
        }
}

/* A writer on a memfd; reads back what it wrote. */
static int writer_fd(void) {
        int fd = memfd_create("result", MFD_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        return fd;
}

static ResultReader *read_back(int fd) {
        static const ResultLimits limits = { .max_images = 8, .max_image_bytes = 1 << 20, .max_files = 16,
                                             .max_result_bytes = 4 << 20 };
        ResultReader *r = calloc(1, sizeof *r);
        uint8_t buf[4096];
        off_t off = 0;
        ssize_t k;
        int last = 0;

        ASSERT_TRUE(r);
        result_reader_init(r, &limits);
        while ((k = pread(fd, buf, sizeof buf, off)) > 0) {
                last = result_reader_feed(r, buf, (size_t) k);
                ASSERT_TRUE(last >= 0);
                off += k;
        }
        if (last != 1)
                result_reader_eof(r);
        return r;
}

static json_object *meta_with_path(size_t n) {
        json_object *m;
        char *p = malloc(n + 1);

        ASSERT_TRUE(p);
        memset(p, 0x01, n);
        p[n] = 0;
        ASSERT_EQ_INT(json_build(&m, JB_STR("path", p), JB_END), 0);
        free(p);
        return m;
}

TEST(test_send_oversized_meta) {
        ResultWriter w = { .fd = writer_fd(), .limits = LAUNCH_LIMITS_DEFAULT };
        ResultReader *r;
        struct stat st;

        /* 1000 control bytes are 6000 bytes of JSON: refused, nothing written,
         * and the writer goes on. */
        ASSERT_EQ_INT(result_send(&w, RESULT_FRAME_SKIPPED, meta_with_path(1000), NULL, 0), -E2BIG);
        ASSERT_FALSE(w.broken);
        ASSERT_TRUE(fstat(w.fd, &st) == 0 && st.st_size == 0);
        ASSERT_EQ_INT(result_send(&w, RESULT_FRAME_END, NULL, NULL, 0), 0);
        ASSERT_TRUE(fstat(w.fd, &st) == 0 && st.st_size == RESULT_FRAME_HEADER_SIZE);
        safe_close(w.fd);

        /* A write error still breaks it: the reader is gone. */
        w = (ResultWriter) { .fd = open("/dev/null", O_RDONLY | O_CLOEXEC), .limits = LAUNCH_LIMITS_DEFAULT };
        ASSERT_TRUE(w.fd >= 0);
        ASSERT_TRUE(result_send(&w, RESULT_FRAME_END, NULL, NULL, 0) < 0);
        ASSERT_TRUE(w.broken);
        safe_close(w.fd);

        w = (ResultWriter) { .fd = writer_fd(), .limits = LAUNCH_LIMITS_DEFAULT };
        ASSERT_EQ_INT(result_send(&w, RESULT_FRAME_END, NULL, NULL, 0), 0);
        r = read_back(w.fd);
        ASSERT_TRUE(r->ended && !r->error);
        result_reader_done(r);
        free(r);
        safe_close(w.fd);
}

static int mkdir_in(int dirfd, const char *name) {
        int fd;

        ASSERT_TRUE(mkdirat(dirfd, name, 0700) == 0);
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        return fd;
}

static void write_in(int dirfd, const char *name, const char *text) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        safe_close(fd);
}

#define DEEP_LEVELS 3
#define TEMP_ROOT "/var/tmp/test-launch-collect.XXXXXX"

/* A fresh directory from tmpl (a mkdtemp() template, filled in), opened. */
static int temp_root(char *tmpl) {
        int fd;

        ASSERT_TRUE(mkdtemp(tmpl));
        fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        return fd;
}

static void remove_root(int root, const char *tmpl) {
        char cmd[64 + sizeof TEMP_ROOT];

        safe_close(root);
        ASSERT_TRUE(strlen(tmpl) < sizeof TEMP_ROOT);
        (void) snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmpl);
        ASSERT_EQ_INT(system(cmd), 0);
}

/* DEEP_LEVELS nested directories under root, each named by 255 bytes of
 * fill[i] (NAME_MAX, so their path is longer than a frame's meta can carry
 * once escaped); their fds in ret[], outermost first. */
static void deep_tree(int root, const char fill[static DEEP_LEVELS], int ret[static DEEP_LEVELS]) {
        char name[NAME_MAX + 1];
        int parent = root;

        for (size_t i = 0; i < DEEP_LEVELS; i++) {
                memset(name, fill[i], NAME_MAX);
                name[NAME_MAX] = 0;
                ret[i] = parent = mkdir_in(parent, name);
        }
}

static void close_tree(int d[static DEEP_LEVELS]) {
        for (size_t i = DEEP_LEVELS; i > 0; i--)
                d[i - 1] = safe_close(d[i - 1]);
}

static const ResultItem *find_file(const ResultReader *r, const char *path) {
        for (size_t i = 0; i < r->n_items; i++)
                if (r->items[i].path && streq(r->items[i].path, path))
                        return r->items + i;
        return NULL;
}

/* The case: three nested directories of 255 control bytes each (six
 * bytes each in JSON), a file inside, and ordinary files around them. */
TEST(test_collect_long_path) {
        char tmpl[] = TEMP_ROOT, name[NAME_MAX + 1], path[512];
        ResultWriter w = { .fd = writer_fd(), .limits = LAUNCH_LIMITS_DEFAULT };
        int root, d[DEEP_LEVELS];
        const ResultItem *a, *z, *n;
        ResultReader *r;
        json_object *m;

        root = temp_root(tmpl);
        deep_tree(root, (const char[]) { 0x01, 0x02, 0x1b }, d);
        write_in(d[2], "deep.txt", "deep");
        write_in(root, "a.txt", "A");
        write_in(root, "z.txt", "Z");
        /* Beside the long directory inside the first: its path fits. */
        write_in(d[0], "b.txt", "B");

        collect_outputs_at(&w, root);
        ASSERT_FALSE(w.broken);
        ASSERT_EQ_INT(json_build(&m, JB_INT("exit_code", 0), JB_END), 0);
        ASSERT_EQ_INT(result_send(&w, RESULT_FRAME_STATUS, m, NULL, 0), 0);
        ASSERT_EQ_INT(result_send(&w, RESULT_FRAME_END, NULL, NULL, 0), 0);

        r = read_back(w.fd);
        ASSERT_TRUE(!r->error);
        ASSERT_TRUE(r->ended && !r->lost && r->have_status && r->exit_code == 0);
        a = find_file(r, "/tmp/outputs/a.txt");
        z = find_file(r, "/tmp/outputs/z.txt");
        ASSERT_TRUE(a && !a->reason && a->size == 1 && a->data[0] == 'A');
        ASSERT_TRUE(z && !z->reason && z->size == 1 && z->data[0] == 'Z');
        /* b.txt's path (255 control bytes) fits: returned, named. */
        memset(name, 0x01, NAME_MAX);
        name[NAME_MAX] = 0;
        (void) snprintf(path, sizeof path, "/tmp/outputs/%s/b.txt", name);
        n = find_file(r, path);
        ASSERT_TRUE(n && !n->reason && n->size == 1 && n->data[0] == 'B');
        /* deep.txt: left out, unnamed, counted with the reason. */
        ASSERT_EQ_U64(r->unlisted, 1);
        ASSERT_CONTAINS(r->unlisted_reason, "too long");
        ASSERT_EQ_U64(r->n_items, 3);
        result_reader_done(r);
        free(r);

        close_tree(d);
        remove_root(root, tmpl);
        safe_close(w.fd);
}

/* A skipped entry (here a FIFO) whose path does not fit: still reported,
 * unnamed, with its own reason and the length. */
TEST(test_collect_long_path_skipped) {
        char tmpl[] = TEMP_ROOT;
        ResultWriter w = { .fd = writer_fd(), .limits = LAUNCH_LIMITS_DEFAULT };
        int root, d[DEEP_LEVELS];
        ResultReader *r;

        root = temp_root(tmpl);
        deep_tree(root, (const char[]) { 0x03, 0x03, 0x03 }, d);
        ASSERT_TRUE(mkfifoat(d[2], "pipe", 0600) == 0);
        write_in(root, "ok.txt", "ok");

        collect_outputs_at(&w, root);
        ASSERT_EQ_INT(result_send(&w, RESULT_FRAME_END, NULL, NULL, 0), 0);
        r = read_back(w.fd);
        ASSERT_TRUE(!r->error && r->ended);
        ASSERT_TRUE(find_file(r, "/tmp/outputs/ok.txt"));
        ASSERT_EQ_U64(r->unlisted, 1);
        ASSERT_CONTAINS(r->unlisted_reason, "a FIFO");
        ASSERT_CONTAINS(r->unlisted_reason, "too long");
        result_reader_done(r);
        free(r);

        close_tree(d);
        remove_root(root, tmpl);
        safe_close(w.fd);
}

int main(void) {
        RUN(test_parse_done);
        RUN(test_send_oversized_meta);
        RUN(test_collect_long_path);
        RUN(test_collect_long_path_skipped);
        return 0;
}
