/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "result-reader.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image-info.h"
#include "json-util.h"
#include "mime-type.h"
#include "utf8.h"
#include "util.h"

void result_item_done(ResultItem *i) {
        if (!i)
                return;
        free(i->path);
        free(i->data);
        free(i->reason);
        *i = (ResultItem) {};
}

int result_item_refuse(ResultItem *i, const char *fmt, ...) {
        char *reason;
        va_list ap;
        int r;

        assert(i);
        assert(fmt);

        va_start(ap, fmt);
        r = vasprintf(&reason, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(i->reason);
        i->reason = reason;
        i->data = mfree(i->data);
        i->size = 0;
        return 0;
}

void result_reader_init(ResultReader *r, const ResultLimits *limits) {
        assert(r);
        assert(limits);

        *r = (ResultReader) { .limits = *limits, .exit_code = -1, .duration_us = UINT64_MAX };
}

void result_reader_done(ResultReader *r) {
        if (!r)
                return;
        result_item_done(&r->item);
        for (size_t i = 0; i < r->n_items; i++)
                result_item_done(r->items + i);
        free(r->items);
        free(r->unlisted_reason);
        free(r->error);
        json_object_put(r->packages);
        free(r->packages_log);
        mem_charge_shrink(r->charge, r->charged);
        *r = (ResultReader) { .exit_code = -1 };
}

ResultItem *result_reader_steal_items(ResultReader *r, size_t *ret_n) {
        assert(r);
        assert(ret_n);

        *ret_n = TAKE_GENERIC(r->n_items, size_t, 0);
        return TAKE_PTR(r->items);
}

static int violation(ResultReader *r, const char *fmt, ...) _printf_(2, 3);
static int violation(ResultReader *r, const char *fmt, ...) {
        va_list ap;
        int k;

        assert(r);

        r->state = RESULT_READER_DONE;
        result_item_done(&r->item);
        if (r->error)
                return -EBADMSG;
        va_start(ap, fmt);
        k = vasprintf(&r->error, fmt, ap);
        va_end(ap);
        if (k < 0) {
                r->error = NULL;
                return -ENOMEM;
        }
        return -EBADMSG;
}

/* Takes r->item into the list. The list is bounded by the frame limits. */
static int keep_item(ResultReader *r) {
        ResultItem *p;

        assert(r);

        p = reallocarray(r->items, r->n_items + 1, sizeof *p);
        if (!p)
                return -ENOMEM;
        r->items = p;
        r->items[r->n_items++] = TAKE_GENERIC(r->item, ResultItem, (ResultItem) {});
        return 0;
}

/* An absolute path under /tmp/outputs/ without empty, "." or ".."
 * components and without NUL: what the launcher makes of a name. */
static bool output_path_valid(const char *p, size_t n) {
        size_t start = strlen(RESULT_OUTPUTS_DIR);

        if (n <= start || n > RESULT_PATH_MAX || !strneq(p, RESULT_OUTPUTS_DIR, start) || memchr(p, 0, n))
                return false;
        for (size_t i = start; i <= n; i++) {
                if (i < n && p[i] != '/')
                        continue;
                size_t l = i - start;
                if (l == 0 || (l == 1 && p[start] == '.') || (l == 2 && p[start] == '.' && p[start + 1] == '.'))
                        return false;
                start = i + 1;
        }
        return true;
}

static json_object *parse_meta(ResultReader *r) {
        json_object *j = NULL;
        const char *why;
        size_t end;

        assert(r);

        /* Strict (json-util.h says why not json-c's strict mode). */
        if (json_parse_strict(r->meta, r->meta_have, 4, 0, &j, &end, &why) < 0)
                return NULL;
        if (end != r->meta_have || !json_object_is_type(j, json_type_object))
                j = (json_object_put(j), NULL);
        return j;
}

/* A non-negative integer member; -ENOENT when absent, -EBADMSG otherwise. */
static int get_uint(json_object *o, const char *key, uint64_t max, uint64_t *ret) {
        json_object *v;
        int64_t x;

        if (!json_object_object_get_ex(o, key, &v))
                return -ENOENT;
        if (!json_object_is_type(v, json_type_int))
                return -EBADMSG;
        x = json_object_get_int64(v);
        if (x < 0 || (uint64_t) x > max)
                return -EBADMSG;
        *ret = (uint64_t) x;
        return 0;
}

/* Fills in the item's identity from "source", "index" and "path". */
static int item_identify(ResultReader *r, json_object *meta, bool need_path) {
        ResultItem *i = &r->item;
        const char *source = json_get_string(meta, "source"), *path;
        json_object *v;
        int k;

        assert(r);

        if (source && streq(source, "figure")) {
                k = get_uint(meta, "index", UINT32_MAX, &i->index);
                /* A SKIPPED summary of figures past the limit names none. */
                if (k == -ENOENT && r->frame.type == RESULT_FRAME_SKIPPED && !json_get(meta, "path"))
                        return 0;
                if (k < 0 || json_get(meta, "path"))
                        return violation(r, "a figure without a valid index");
                i->figure = i->image = true;
                i->mime_type = "image/png";
                return 0;
        }
        if (source && !streq(source, "file"))
                return violation(r, "an unknown source");
        if (!json_object_object_get_ex(meta, "path", &v)) {
                if (need_path)
                        return violation(r, "an output without a path");
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return violation(r, "a path that is not a string");
        path = json_object_get_string(v);
        i->path_len = (size_t) json_object_get_string_len(v);
        /* A summary about the directory as a whole names no file. */
        if (!need_path && i->path_len == strlen(RESULT_OUTPUTS_DIR) - 1 &&
            strneq(path, RESULT_OUTPUTS_DIR, i->path_len)) {
                i->path_len = 0;
                return 0;
        }
        if (!output_path_valid(path, i->path_len))
                return violation(r, "a path that is not a file under " RESULT_OUTPUTS_DIR);
        i->path = strndup(path, i->path_len);
        if (!i->path)
                return -ENOMEM;
        i->mime_type = mime_type_from_path(i->path, i->path_len);
        i->image = image_format_from_mime_type(i->mime_type) >= 0;
        return 0;
}

static int handle_status(ResultReader *r, json_object *meta) {
        uint64_t code, sig;
        uint64_t d;
        int a, b;

        if (r->have_status)
                return violation(r, "a second STATUS frame");
        a = get_uint(meta, "exit_code", 255, &code);
        b = get_uint(meta, "signal", 64, &sig);
        if ((a == 0) == (b == 0) || a == -EBADMSG || b == -EBADMSG || (b == 0 && sig == 0))
                return violation(r, "a STATUS frame with neither a valid exit code nor a signal");
        r->have_status = true;
        r->exit_code = a == 0 ? (int) code : -1;
        r->signal = b == 0 ? (int) sig : 0;
        if (get_uint(meta, "duration_us", UINT64_C(1) << 52, &d) == 0)
                r->duration_us = d;
        return 0;
}

/* An output left out that is not named: counted, with the first reason.
 * count 0: an unknown number. Takes reason. */
static void count_unlisted(ResultReader *r, uint64_t count, char *reason) {
        assert(r);

        if (!r->unlisted_reason)
                r->unlisted_reason = reason;
        else
                free(reason);
        if (count == 0)
                r->unlisted_more = true;
        r->unlisted = count > UINT64_MAX - r->unlisted ? UINT64_MAX : r->unlisted + count;
}

/* Whether another left-out item may be named in the result. */
static bool may_list_left_out(ResultReader *r) {
        return r->n_listed_left_out < RESULT_SKIPPED_LISTED_MAX;
}

static int handle_skipped(ResultReader *r, json_object *meta) {
        const char *reason = json_get_string(meta, "reason");
        _cleanup_free_ char *text = NULL;
        uint64_t count = 1, bytes = UINT64_MAX;
        int k;

        if (!reason)
                return violation(r, "a SKIPPED frame without a reason");
        text = utf8_sanitize(reason, (size_t) utf8_prefix_len(reason, RESULT_REASON_MAX), NULL);
        if (!text)
                return -ENOMEM;
        if (get_uint(meta, "count", UINT32_MAX, &count) == -EBADMSG ||
            get_uint(meta, "bytes", INT64_MAX, &bytes) == -EBADMSG)
                return violation(r, "a SKIPPED frame with a bad count or size");
        k = item_identify(r, meta, false);
        if (k < 0)
                return k;

        if ((!r->item.figure && !r->item.path) || count != 1 || !may_list_left_out(r)) {
                /* Not named, or too many to name: counted. */
                result_item_done(&r->item);
                count_unlisted(r, count, TAKE_PTR(text));
                return 0;
        }
        r->item.bytes = bytes;
        r->item.reason = TAKE_PTR(text);
        r->n_listed_left_out++;
        return keep_item(r);
}

/* After the meta of an IMAGE or FILE frame: whether its data is kept. */
static int start_data(ResultReader *r, json_object *meta) {
        ResultItem *i = &r->item;
        char limit[FORMAT_BYTES_MAX];
        const char *source = json_get_string(meta, "source");
        int k;

        r->n_data_frames++;
        if (r->frame.type == RESULT_FRAME_FILE && source && !streq(source, "file"))
                return violation(r, "a FILE frame with a source other than file");
        k = item_identify(r, meta, r->frame.type == RESULT_FRAME_FILE);
        if (k < 0)
                return k;
        if (r->frame.type == RESULT_FRAME_IMAGE && !i->figure && !i->path)
                return violation(r, "an IMAGE frame that is neither a figure nor a file");
        i->bytes = r->frame.data_len;

        if (r->frame.data_len > r->limits.max_result_bytes - r->data_kept)
                k = result_item_refuse(i, "over MCP_EXEC_MAX_RESULT_BYTES (%s) with what came before",
                                       format_bytes(r->limits.max_result_bytes, limit));
        else if (i->image && r->n_images >= r->limits.max_images)
                k = result_item_refuse(i, "over MCP_EXEC_MAX_IMAGES (%" PRIu64 ")", r->limits.max_images);
        else if (i->image && r->frame.data_len > r->limits.max_image_bytes)
                k = result_item_refuse(i, "over MCP_EXEC_MAX_IMAGE_BYTES (%s)",
                                       format_bytes(r->limits.max_image_bytes, limit));
        else if (!i->image && r->n_files >= r->limits.max_files)
                k = result_item_refuse(i, "over MCP_EXEC_MAX_FILES_OUT (%" PRIu64 ")", r->limits.max_files);
        else if (mem_charge_grow(r->charge, r->frame.data_len) < 0)
                k = result_item_refuse(i, "the server's memory budget is spent (too many calls or unread replies); "
                                          "retry later");
        else {
                r->charged += r->charge ? r->frame.data_len : 0;
                /* Within the limits checked: at most max_image_bytes or
                 * what is left of max_result_bytes. */
                i->data = malloc(r->frame.data_len > 0 ? (size_t) r->frame.data_len : 1);
                if (!i->data) {
                        /* Given back with the rest at result_reader_done(). */
                        return -ENOMEM;
                }
                r->data_kept += r->frame.data_len;
                if (i->image)
                        r->n_images++;
                else
                        r->n_files++;
        }
        if (k < 0)
                return k;
        r->discard = !i->data;
        r->data_have = 0;
        /* Left out and past the listing: counted only (and its data dropped). */
        if (r->discard) {
                if (!may_list_left_out(r)) {
                        char *reason = TAKE_PTR(i->reason);
                        result_item_done(i);
                        count_unlisted(r, 1, reason);
                } else
                        r->n_listed_left_out++;
        }
        return 0;
}

/* The data of an IMAGE or FILE frame is complete: is it what it claims? */
static int finish_data(ResultReader *r) {
        ResultItem *i = &r->item;
        ImageInfo info;
        int k = 0;

        if (r->discard && !i->reason)
                return 0;       /* counted, not listed */
        if (!r->discard) {
                i->size = (size_t) r->frame.data_len;
                if (i->image) {
                        ImageFormat want = image_format_from_mime_type(i->mime_type);

                        if (image_probe(i->data, i->size, &info) < 0 || info.format != want)
                                k = result_item_refuse(i, "not a valid %s image", i->mime_type);
                        else {
                                i->width = info.width;
                                i->height = info.height;
                                if (!image_size_ok(info.width, info.height))
                                        k = result_item_refuse(i,
                                                               "%" PRIu32 "x%" PRIu32
                                                               " pixels, more than %ux%u or %" PRIu64 " Mpixel",
                                                               info.width, info.height, IMAGE_MAX_SIDE, IMAGE_MAX_SIDE,
                                                               IMAGE_MAX_PIXELS / 1000000);
                        }
                        if (k >= 0 && i->reason) {
                                r->n_images--;  /* its place is free again */
                                r->data_kept -= r->frame.data_len;
                                r->n_listed_left_out++;
                        }
                } else {
                        i->text = utf8_is_valid((const char *) i->data, i->size) && !memchr(i->data, 0, i->size);
                        if (!i->mime_type)
                                i->mime_type = i->text ? "text/plain" : "application/octet-stream";
                }
        }
        if (k < 0)
                return k;
        if (!i->mime_type)
                i->mime_type = "application/octet-stream";
        return keep_item(r);
}

/* A string made valid UTF-8 (json-c passes other bytes through), or NULL. */
static json_object *clean_string(json_object *v) {
        _cleanup_free_ char *s = NULL;
        size_t n;

        if (!json_object_is_type(v, json_type_string))
                return NULL;
        s = utf8_sanitize(json_object_get_string(v), (size_t) json_object_get_string_len(v), &n);
        return s ? json_object_new_string_len(s, (int) n) : NULL;
}

/* An array of strings, each clean; entries of other types are left out. */
static json_object *clean_strings(json_object *a) {
        _cleanup_json_ json_object *o = json_object_new_array();

        if (!o)
                return NULL;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *v = json_object_array_get_idx(a, i);
                if (json_object_is_type(v, json_type_string) && json_append(o, clean_string(v)) < 0)
                        return NULL;
        }
        return TAKE_PTR(o);
}

/* "installed": [{"name", "version"}], both strings, nothing else. */
static json_object *clean_installed(json_object *a) {
        _cleanup_json_ json_object *o = json_object_new_array();

        if (!o)
                return NULL;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *d = json_object_array_get_idx(a, i), *e = NULL;
                json_object *name = json_get(d, "name"), *version = json_get(d, "version");

                if (!json_object_is_type(name, json_type_string) || !json_object_is_type(version, json_type_string))
                        continue;
                e = json_object_new_object();
                if (!e || json_add(e, "name", clean_string(name)) < 0 ||
                    json_add(e, "version", clean_string(version)) < 0 || json_append(o, e) < 0) {
                        json_object_put(e);
                        return NULL;
                }
        }
        return TAKE_PTR(o);
}

/* The installer's meta as the result shows it. -EBADMSG without "ok". */
static int packages_meta(json_object *meta, json_object **ret) {
        static const char *const lists[] = { "requested", "already", "replaced" };
        _cleanup_json_ json_object *o = NULL;
        json_object *v;
        uint64_t us;

        if (!json_object_is_type(json_get(meta, "ok"), json_type_boolean))
                return -EBADMSG;
        if (json_build(&o, JB_BOOL("ok", json_get_bool(meta, "ok")), JB_END) < 0)
                return -ENOMEM;
        v = json_get(meta, "error");
        if (json_object_is_type(v, json_type_string) && json_add(o, "error", clean_string(v)) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                v = json_get(meta, lists[i]);
                if (json_object_is_type(v, json_type_array) && json_add(o, lists[i], clean_strings(v)) < 0)
                        return -ENOMEM;
        }
        v = json_get(meta, "installed");
        if (json_object_is_type(v, json_type_array) && json_add(o, "installed", clean_installed(v)) < 0)
                return -ENOMEM;
        v = json_get(meta, "fresh_interpreter");
        if (json_object_is_type(v, json_type_boolean) &&
            json_add_bool(o, "fresh_interpreter", json_object_get_boolean(v)) < 0)
                return -ENOMEM;
        if (get_uint(meta, "duration_us", UINT64_C(1) << 52, &us) == 0 &&
            json_add_int(o, "duration_us", (int64_t) us) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int start_packages(ResultReader *r, json_object *meta) {
        int k;

        if (r->have_packages)
                return violation(r, "a second PACKAGES frame");
        k = packages_meta(meta, &r->packages);
        if (k == -EBADMSG)
                return violation(r, "a PACKAGES frame without \"ok\"");
        if (k < 0)
                return k;
        r->have_packages = true;
        r->data_have = 0;
        r->discard = true;
        if (r->frame.data_len == 0)
                return 0;
        /* At most RESULT_PACKAGES_LOG_MAX (result_frame_parse()). */
        if (mem_charge_grow(r->charge, r->frame.data_len) < 0) {
                r->packages_log_dropped = true;
                return 0;
        }
        r->charged += r->charge ? r->frame.data_len : 0;
        r->packages_log = malloc((size_t) r->frame.data_len);
        if (!r->packages_log)
                return -ENOMEM;
        r->discard = false;
        return 0;
}

json_object *result_reader_take_packages(ResultReader *r) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *log = NULL;
        size_t n;

        assert(r);

        if (!r->have_packages || !r->packages)
                return NULL;
        o = TAKE_PTR(r->packages);
        if (r->packages_log_dropped) {
                if (json_add_string(o, "log_left_out", "the server's memory budget is spent (too many calls or "
                                                       "unread replies)") < 0)
                        return NULL;
        } else {
                log = utf8_sanitize((const char *) r->packages_log ?: "", r->packages_log_len, &n);
                if (!log || json_add(o, "log", json_object_new_string_len(log, (int) n)) < 0)
                        return NULL;
        }
        r->packages_log = mfree(r->packages_log);
        return TAKE_PTR(o);
}

/* The header and meta of a frame are in. */
static int handle_frame(ResultReader *r) {
        _cleanup_json_ json_object *meta = NULL;

        if (r->frame.type == RESULT_FRAME_END) {
                r->ended = true;
                r->state = RESULT_READER_DONE;
                return 1;
        }
        meta = parse_meta(r);
        if (!meta)
                return violation(r, "frame metadata that is not a JSON object");

        switch (r->frame.type) {
        case RESULT_FRAME_STATUS:
                return handle_status(r, meta);
        case RESULT_FRAME_INFO:
                if (r->have_info)
                        return violation(r, "a second INFO frame");
                r->have_info = true;
                return 0;
        case RESULT_FRAME_SKIPPED:
                return handle_skipped(r, meta);
        case RESULT_FRAME_IMAGE:
        case RESULT_FRAME_FILE:
                return start_data(r, meta);
        case RESULT_FRAME_PACKAGES:
                return start_packages(r, meta);
        default:
                return violation(r, "an unknown frame");
        }
}

static int after_meta(ResultReader *r) {
        int k = handle_frame(r);

        if (k != 0 || r->state == RESULT_READER_DONE)
                return k;
        if (r->frame.type == RESULT_FRAME_PACKAGES && r->frame.data_len > 0) {
                r->state = RESULT_READER_DATA;
                return 0;
        }
        if (r->frame.type == RESULT_FRAME_IMAGE || r->frame.type == RESULT_FRAME_FILE) {
                if (r->frame.data_len > 0) {
                        r->state = RESULT_READER_DATA;
                        return 0;
                }
                k = finish_data(r);
        } else
                result_item_done(&r->item);
        r->state = RESULT_READER_HEADER;
        return k;
}

int result_reader_feed(ResultReader *r, const void *buf, size_t n) {
        const uint8_t *p = buf;
        int k;

        assert(r);
        assert(buf || n == 0);

        while (n > 0) {
                size_t take;

                switch (r->state) {
                case RESULT_READER_HEADER:
                        take = MIN(n, sizeof r->header - r->header_have);
                        memcpy(r->header + r->header_have, p, take);
                        r->header_have += take;
                        if (r->header_have == sizeof r->header) {
                                uint64_t left = RESULT_DRAIN_MAX - r->data_total;

                                r->header_have = 0;
                                if (++r->n_frames > RESULT_FRAMES_MAX)
                                        return violation(r, "more than %u frames", RESULT_FRAMES_MAX);
                                k = result_frame_parse(r->header, sizeof r->header, left, &r->frame);
                                if (k == -EFBIG)
                                        return violation(r, "a frame of more data than any limit allows");
                                if (k < 0)
                                        return violation(r, "bytes that are not a result frame");
                                r->data_total += r->frame.data_len;
                                r->meta_have = 0;
                                if (r->frame.meta_len == 0) {
                                        k = after_meta(r);
                                        if (k != 0)
                                                /* END: what follows is a violation. */
                                                return k > 0 && n > take ? violation(r, "bytes after END") : k;
                                } else
                                        r->state = RESULT_READER_META;
                        }
                        break;
                case RESULT_READER_META:
                        take = MIN(n, r->frame.meta_len - r->meta_have);
                        memcpy(r->meta + r->meta_have, p, take);
                        r->meta_have += take;
                        if (r->meta_have == r->frame.meta_len) {
                                k = after_meta(r);
                                if (k != 0)
                                        return k;
                        }
                        break;
                case RESULT_READER_DATA:
                        take = (size_t) MIN((uint64_t) n, r->frame.data_len - r->data_have);
                        if (!r->discard)
                                memcpy((r->frame.type == RESULT_FRAME_PACKAGES ? r->packages_log : r->item.data) +
                                               r->data_have,
                                       p, take);
                        r->data_have += take;
                        if (r->data_have == r->frame.data_len) {
                                r->state = RESULT_READER_HEADER;
                                if (r->frame.type == RESULT_FRAME_PACKAGES) {
                                        r->packages_log_len = r->discard ? 0 : (size_t) r->frame.data_len;
                                        break;
                                }
                                k = finish_data(r);
                                if (k < 0)
                                        return k;
                        }
                        break;
                case RESULT_READER_DONE:
                default:
                        return r->error ? -EBADMSG : violation(r, "bytes after END");
                }
                p += take;
                n -= take;
        }
        return r->ended ? 1 : 0;
}

void result_reader_eof(ResultReader *r) {
        assert(r);

        if (r->ended || r->error)
                return;
        result_item_done(&r->item);
        r->state = RESULT_READER_DONE;
        r->lost = true;
}
