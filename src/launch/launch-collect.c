/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-collect.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirent-util.h"
#include "json-util.h"
#include "macro.h"
#include "image-info.h"
#include "mime-type.h"
#include "parse-util.h"
#include "utf8.h"
#include "util.h"

/* How far the walk of /tmp/outputs goes; past it, one note says so. */
#define WALK_MAX_DEPTH 8
#define WALK_MAX_ENTRIES 4096U
/* Skipped files are each listed up to this many; the rest are counted. */
#define SKIPPED_LISTED_MAX 32U

/* s past prefix, or NULL if it does not start with it. */
static const char *startswith(const char *s, const char *prefix) {
        size_t n;

        assert(s);
        assert(prefix);

        n = strlen(prefix);
        return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

static void clamp_u64(json_object *j, const char *key, uint64_t max, uint64_t *v) {
        json_object *x;

        assert(key);
        assert(v);

        if (j && json_object_object_get_ex(j, key, &x) && json_object_is_type(x, json_type_int)) {
                int64_t n = json_object_get_int64(x);
                if (n >= 0)
                        *v = MIN((uint64_t) n, max);
        }
}

void result_limits_from_json(json_object *j, LaunchLimits *limits) {
        assert(limits);
        /* The broker's configured limits, never beyond what a client could
         * ever take in one message. */
        clamp_u64(j, "max_images", 1024, &limits->max_images);
        clamp_u64(j, "max_image_bytes", 64 << 20, &limits->max_image_bytes);
        clamp_u64(j, "max_files", 1024, &limits->max_files);
        clamp_u64(j, "max_result_bytes", 64 << 20, &limits->max_result_bytes);
        clamp_u64(j, "max_input_bytes", 256 << 20, &limits->max_input_bytes);
}

static int write_all(int fd, const void *buf, uint64_t len) {
        const uint8_t *p = buf;

        assert(buf || len == 0);

        while (len > 0) {
                ssize_t k = write(fd, p, (size_t) MIN(len, (uint64_t) SSIZE_MAX));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                len -= (uint64_t) k;
        }
        return 0;
}

int result_send(ResultWriter *w, ResultFrameType type, json_object *meta, const void *data, uint64_t len) {
        _cleanup_json_ json_object *m = meta;
        uint8_t h[RESULT_FRAME_HEADER_SIZE];
        const char *text = NULL;
        size_t tlen = 0;

        assert(w);
        if (w->fd < 0 || w->broken)
                return -EPIPE;
        if (m && !(text = json_object_to_json_string_length(m, JSON_C_TO_STRING_PLAIN, &tlen)))
                return -ENOMEM;
        if (tlen > RESULT_FRAME_META_MAX)
                /* Never send what the reader refuses; the caller says so in
                 * a frame that fits. */
                return -E2BIG;
        result_frame_header(type, (uint32_t) tlen, len, h);
        if (write_all(w->fd, h, sizeof h) < 0 || (tlen && write_all(w->fd, text, tlen) < 0) ||
            (len && write_all(w->fd, data, len) < 0)) {
                w->broken = true;
                return -EPIPE;
        }
        w->sent += len;
        return 0;
}

static bool out_of_time(ResultWriter *w) {
        assert(w);
        return w->deadline > 0 && now_usec() >= w->deadline;
}

/* The meta that names an output: a figure by index, a file by path. */
static json_object *item_meta_new(const char *source, const char *path, long index) {
        _cleanup_json_ json_object *m = NULL;
        int r;

        assert(source);

        r = json_build(&m, JB_STR("source", source), JB_END);
        if (r >= 0 && path)
                r = json_build_into(m, JB_STR("path", path), JB_END);
        if (r >= 0 && index >= 0)
                r = json_build_into(m, JB_INT("index", index), JB_END);
        return r < 0 ? NULL : TAKE_PTR(m);
}

/* Said instead of an output's own frame when its path does not fit in one. */
#define PATH_TOO_LONG "its path is too long to report"

static void send_skipped(ResultWriter *w, const char *source, const char *path, long index, const char *reason,
                         int64_t bytes) {
        _cleanup_free_ char *why = NULL;
        _cleanup_json_ json_object *m = NULL;
        int r;

        assert(w);
        assert(source);
        assert(reason);

        m = item_meta_new(source, path, index);
        if (!m)
                return;
        r = json_build_into(m, JB_STR("reason", reason), JB_END);
        if (r >= 0 && bytes >= 0)
                r = json_build_into(m, JB_INT("bytes", bytes), JB_END);
        if (r < 0 || result_send(w, RESULT_FRAME_SKIPPED, TAKE_PTR(m), NULL, 0) != -E2BIG || !path)
                return;
        /* Left out unnamed, then: counted by the reader, with the reason. */
        if (asprintf(&why, "%s (" PATH_TOO_LONG ")", reason) < 0)
                return;
        m = item_meta_new(source, NULL, -1);
        if (!m || json_build_into(m, JB_STR("reason", why), JB_END) < 0)
                return;
        (void) result_send(w, RESULT_FRAME_SKIPPED, TAKE_PTR(m), NULL, 0);
}

/* Whether m fits in a frame (json-c keeps the text for the send). */
static bool meta_fits(json_object *m) {
        size_t tlen = 0;

        assert(m);
        return json_object_to_json_string_length(m, JSON_C_TO_STRING_PLAIN, &tlen) && tlen <= RESULT_FRAME_META_MAX;
}

/* Reads fd (a regular file of size bytes) whole; NULL on a short read (the
 * file changed under us) or failure. */
static uint8_t *read_file(int fd, uint64_t size) {
        _cleanup_free_ uint8_t *buf = malloc(size ? size : 1);
        uint64_t got = 0;

        if (!buf)
                return NULL;
        while (got < size) {
                ssize_t k = pread(fd, buf + got, (size_t) (size - got), (off_t) got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return NULL;
                got += (uint64_t) k;
        }
        return TAKE_PTR(buf);
}

/* One image or file: checked against the limits, then sent. */
static void send_item(ResultWriter *w, const char *source, const char *path, long index, int fd, bool image) {
        _cleanup_free_ uint8_t *data = NULL;
        struct stat st;
        uint64_t size;
        json_object *m;

        assert(w);
        assert(source);

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                send_skipped(w, source, path, index, "not a regular file", -1);
                return;
        }
        size = (uint64_t) st.st_size;
        if (image && w->n_images >= w->limits.max_images) {
                send_skipped(w, source, path, index, "more images than MCP_EXEC_MAX_IMAGES", (int64_t) size);
                return;
        }
        if (!image && w->n_files >= w->limits.max_files) {
                send_skipped(w, source, path, index, "more files than MCP_EXEC_MAX_FILES_OUT", (int64_t) size);
                return;
        }
        if (image && size > w->limits.max_image_bytes) {
                send_skipped(w, source, path, index, "larger than MCP_EXEC_MAX_IMAGE_BYTES", (int64_t) size);
                return;
        }
        if (size > w->limits.max_result_bytes - MIN(w->sent, w->limits.max_result_bytes)) {
                send_skipped(w, source, path, index, "over MCP_EXEC_MAX_RESULT_BYTES with what came before",
                             (int64_t) size);
                return;
        }
        m = item_meta_new(source, path, index);
        if (!m)
                return;
        if (!meta_fits(m)) {
                json_object_put(m);
                /* Not read, not counted against any limit. */
                send_skipped(w, source, NULL, index, PATH_TOO_LONG, (int64_t) size);
                return;
        }
        data = read_file(fd, size);
        if (!data) {
                json_object_put(m);
                send_skipped(w, source, path, index, "changed while it was read", (int64_t) size);
                return;
        }
        if (result_send(w, image ? RESULT_FRAME_IMAGE : RESULT_FRAME_FILE, m, data, size) < 0)
                return;
        if (image)
                w->n_images++;
        else
                w->n_files++;
}

int launch_parse_done(const char *msg, int *ret_status) {
        const char *p;
        bool negative;
        uint64_t v;

        assert(msg);
        assert(ret_status);

        p = startswith(msg, "done ");
        if (!p)
                return -EINVAL;
        negative = *p == '-';
        /* Digits only (no blanks, no second sign), in uint64_t: an overflow
         * is -ERANGE, never undefined as it would be with sscanf("%d"). */
        if (parse_uint(p + negative, &v) < 0)
                return -EINVAL;
        if (negative ? v == 0 || v > LAUNCH_SIGNAL_MAX : v > 255)
                return -EINVAL;
        *ret_status = negative ? -(int) v : (int) v;
        return 0;
}

int figure_inbox_read(FigureInbox *in, int sock, uint64_t max, int *ret_done) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 4)];
        } control;
        char msg[32];
        struct iovec iov = { .iov_base = msg, .iov_len = sizeof msg - 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof control };
        _cleanup_close_ int fd = -EBADF;
        const char *p;
        uint64_t n;
        ssize_t k;
        int d;

        assert(in);
        assert(ret_done);

        k = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : -EPIPE;
        if (k == 0)
                return -EPIPE;
        msg[k] = 0;
        /* Whatever came with it is ours to close; keep the first fd. */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < nfd; i++) {
                                int x;
                                memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof x);
                                if (fd < 0)
                                        fd = x;
                                else
                                        safe_close(x);
                        }
                }
        if (mh.msg_flags & MSG_TRUNC)
                return 0;       /* longer than any message of the interpreter: noise */
        if (streq(msg, "fig")) {
                if (fd >= 0 && in->n < MIN((uint64_t) FIGURE_INBOX_MAX, max))
                        in->fds[in->n++] = TAKE_FD(fd);
                else
                        in->skipped++;
                return 0;
        }
        if ((p = startswith(msg, "figskip ")) && parse_uint(p, &n) >= 0) {
                in->skipped += MIN(n, (uint64_t) UINT32_MAX);
                return 0;
        }
        if (launch_parse_done(msg, &d) >= 0) {
                *ret_done = d;
                return 1;
        }
        return 0;       /* the program's noise: ignored */
}

void figure_inbox_send(FigureInbox *in, ResultWriter *w) {
        json_object *m;

        assert(in);
        assert(w);

        for (size_t i = 0; i < in->n; i++)
                if (!w->broken && !out_of_time(w))
                        send_item(w, "figure", NULL, (long) i, in->fds[i], true);
        if (in->skipped > 0 &&
            json_build(&m,
                       JB_STR("source", "figure"),
                       JB_STR("reason", "more figures than MCP_EXEC_MAX_IMAGES"),
                       JB_INT("count", MIN(in->skipped, (uint64_t) UINT32_MAX)),
                       JB_END) >= 0)
                (void) result_send(w, RESULT_FRAME_SKIPPED, m, NULL, 0);
        figure_inbox_clear(in);
}

void figure_inbox_clear(FigureInbox *in) {
        assert(in);

        for (size_t i = 0; i < in->n; i++)
                in->fds[i] = safe_close(in->fds[i]);
        in->n = 0;
        in->skipped = 0;
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void walk(ResultWriter *w, int dirfd, const char *path, unsigned depth, unsigned *n_entries,
                 unsigned *n_skipped) {
        _cleanup_(closedirp) DIR *d = NULL;
        char **names = NULL;
        size_t n = 0, alloc = 0;
        struct dirent *de;
        int fd;

        assert(w);
        assert(path);
        assert(n_entries);
        assert(n_skipped);

        fd = dup(dirfd);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return;
        }
        /* Sorted, so the result does not depend on the file system's order. */
        while ((de = readdir(d)) && *n_entries < WALK_MAX_ENTRIES) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                (*n_entries)++;
                if (n == alloc) {
                        char **p = realloc(names, (alloc = MAX(alloc * 2, (size_t) 16)) * sizeof(char *));
                        if (!p)
                                break;
                        names = p;
                }
                if (!(names[n] = strdup(de->d_name)))
                        break;
                n++;
        }
        qsort(names, n, sizeof(char *), name_cmp);

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                _cleanup_close_ int cfd = -EBADF;
                struct stat st;
                bool image;

                if (w->broken || out_of_time(w) || asprintf(&p, "%s/%s", path, names[i]) < 0)
                        break;
                if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (depth + 1 >= WALK_MAX_DEPTH) {
                                if ((*n_skipped)++ < SKIPPED_LISTED_MAX)
                                        send_skipped(w, "file", utf8_is_valid(p, strlen(p)) ? p : NULL, -1,
                                                     "directory nested too deep", -1);
                                continue;
                        }
                        cfd = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd >= 0)
                                walk(w, cfd, p, depth + 1, n_entries, n_skipped);
                        continue;
                }
                if (!utf8_is_valid(p, strlen(p))) {
                        if ((*n_skipped)++ < SKIPPED_LISTED_MAX)
                                send_skipped(w, "file", NULL, -1, "its name is not valid UTF-8", -1);
                        continue;
                }
                if (!S_ISREG(st.st_mode)) {
                        if ((*n_skipped)++ < SKIPPED_LISTED_MAX)
                                send_skipped(w, "file", p, -1,
                                             S_ISLNK(st.st_mode)    ? "a symbolic link (not followed)"
                                             : S_ISFIFO(st.st_mode) ? "a FIFO"
                                             : S_ISSOCK(st.st_mode) ? "a socket"
                                                                    : "not a regular file",
                                             -1);
                        continue;
                }
                /* O_NONBLOCK and O_NOFOLLOW: if it turned into a FIFO or a
                 * link since we looked, opening neither blocks nor follows. */
                cfd = openat(dirfd, names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                if (cfd < 0) {
                        if ((*n_skipped)++ < SKIPPED_LISTED_MAX)
                                send_skipped(w, "file", p, -1, "cannot be opened", -1);
                        continue;
                }
                /* As the front end will take it (result-reader.c): an image by its name. */
                image = image_format_from_mime_type(mime_type_from_path(names[i], strlen(names[i]))) >= 0;
                send_item(w, "file", p, -1, cfd, image);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

void collect_outputs(ResultWriter *w) {
        _cleanup_close_ int fd = -EBADF;

        assert(w);
        fd = open(LAUNCH_OUTPUTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
                collect_outputs_at(w, fd);
}

void collect_outputs_at(ResultWriter *w, int dirfd) {
        unsigned n_entries = 0, n_skipped = 0;
        json_object *m;

        assert(w);
        assert(dirfd >= 0);
        walk(w, dirfd, LAUNCH_OUTPUTS_DIR, 0, &n_entries, &n_skipped);
        if (n_skipped > SKIPPED_LISTED_MAX || n_entries >= WALK_MAX_ENTRIES || out_of_time(w)) {
                const char *reason = out_of_time(w) ? "collection ran out of time"
                                     : n_entries >= WALK_MAX_ENTRIES ? "too many entries; the rest was not looked at"
                                                                     : "more files skipped than listed";

                if (json_build(&m,
                               JB_STR("source", "file"),
                               JB_STR("path", LAUNCH_OUTPUTS_DIR),
                               JB_STR("reason", reason),
                               /* Those not named one by one; 0: unknown (the walk stopped). */
                               JB_INT("count", n_skipped > SKIPPED_LISTED_MAX ? n_skipped - SKIPPED_LISTED_MAX : 0),
                               JB_END) < 0)
                        return;
                (void) result_send(w, RESULT_FRAME_SKIPPED, m, NULL, 0);
        }
}
