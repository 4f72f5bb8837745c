/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reads the result channel (result-frame.h) as its bytes arrive, and checks
 * everything in it: the launcher's parent is trusted to run in the sandbox,
 * not to be right, so every frame is treated as hostile. Lengths are checked
 * against the limits before anything is allocated, so memory stays within
 * MCP_EXEC_MAX_RESULT_BYTES plus a few KiB however the channel misbehaves.
 * No I/O: the exec client feeds it what it reads.
 *
 * What the front end expects on the channel, in this order:
 *   STATUS   once, when the program has ended: {"exit_code":N} (0..255) or
 *            {"signal":N} (1..64); "duration_us" may follow (the program's run time)
 *   INFO     at most once, anywhere before END; its content is not used
 *   IMAGE    {"source":"figure","index":N} (a PNG), or {"source":"file",
 *            "path":"/tmp/outputs/…"}; data: the image
 *   FILE     {"path":"/tmp/outputs/…"}; data: the file
 *   SKIPPED  {"path":…} or {"source":"figure","index":N}, with "reason" (text,
 *            cut to RESULT_REASON_MAX) and optionally "bytes":N; or a summary
 *            without a file's path (none, or "/tmp/outputs" itself),
 *            {"reason":…,"count":N}, for N outputs not named one by one (0:
 *            an unknown number)
 *   PACKAGES at most once, anywhere before END: the installer's report
 *            (result-frame.h); data: pip's log, at most RESULT_PACKAGES_LOG_MAX
 *   END      nothing follows
 * "source" may be "file" on FILE and SKIPPED frames too. A path is the
 * file's absolute path under /tmp/outputs/, its bytes as they are (a JSON
 * string; json-c passes bytes that are not UTF-8 through). What is an image
 * is decided here by the extension (png, jpg, jpeg, gif, webp), whichever
 * frame type carried it; SVG is a file. Outputs past this side's limits
 * (the launcher may have been configured otherwise) are read and dropped and
 * said so; only what no configuration allows is a violation: more than
 * RESULT_FRAMES_MAX frames, more than RESULT_DRAIN_MAX bytes of data, or
 * frames that do not parse. Reading then stops, what was complete is kept,
 * and the error says what happened. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "mem-budget.h"
#include "result-frame.h"

#define RESULT_OUTPUTS_DIR "/tmp/outputs/"
#define RESULT_PATH_MAX 4096U
#define RESULT_REASON_MAX 200U
/* Frames of one run: a launcher caps its own listing far below. */
#define RESULT_FRAMES_MAX 4096U
/* Data read at all, kept or dropped: as much as any configuration allows. */
#define RESULT_DRAIN_MAX (UINT64_C(64) << 20)
/* Left-out items named in the result beyond the returned ones; more are only counted. */
#define RESULT_SKIPPED_LISTED_MAX 32U

typedef struct ResultLimits {
        uint64_t max_images;            /* MCP_EXEC_MAX_IMAGES: figures and image files returned */
        uint64_t max_image_bytes;       /* MCP_EXEC_MAX_IMAGE_BYTES */
        uint64_t max_files;             /* MCP_EXEC_MAX_FILES_OUT: other files returned */
        uint64_t max_result_bytes;      /* MCP_EXEC_MAX_RESULT_BYTES: data of all frames together */
} ResultLimits;

/* One figure or file, returned or left out. */
typedef struct ResultItem {
        bool image;                     /* an image block; else an embedded resource */
        bool figure;                    /* a matplotlib figure: no path */
        uint64_t index;                 /* figures: the launcher's number */
        char *path;                     /* files: "/tmp/outputs/…" as sent, NUL-terminated, no NUL inside */
        size_t path_len;
        const char *mime_type;          /* static; NULL for a left-out figure of unknown format */
        uint64_t bytes;                 /* the size; UINT64_MAX when unknown */
        uint32_t width, height;         /* images that were read: from the header; else 0 */
        bool text;                      /* resources: valid UTF-8 without NUL, sent as text */
        uint8_t *data;                  /* returned items: the content */
        size_t size;
        char *reason;                   /* NULL: returned; else why not (valid UTF-8) */
} ResultItem;

void result_item_done(ResultItem *i);
/* Leaves the item out (its data is freed) because of reason; -ENOMEM. */
int result_item_refuse(ResultItem *i, const char *fmt, ...) _printf_(2, 3);

typedef enum ResultReaderState {
        RESULT_READER_HEADER,
        RESULT_READER_META,
        RESULT_READER_DATA,
        RESULT_READER_DONE,             /* END seen, or a violation */
} ResultReaderState;

typedef struct ResultReader {
        ResultLimits limits;
        ResultReaderState state;

        /* The frame being read. */
        uint8_t header[RESULT_FRAME_HEADER_SIZE];
        size_t header_have;
        ResultFrameHeader frame;
        char meta[RESULT_FRAME_META_MAX];
        size_t meta_have;
        ResultItem item;
        bool discard;                   /* its data is read and dropped */
        uint64_t data_have;

        /* What came. */
        ResultItem *items;              /* in the order they came */
        size_t n_items;
        uint64_t n_images, n_files;     /* returned, counted against the limits */
        unsigned n_frames, n_data_frames, n_listed_left_out;
        uint64_t data_kept, data_total; /* bytes kept for returned items; all bytes read */
        uint64_t unlisted;              /* outputs left out and not named */
        bool unlisted_more;             /* and an unknown number more */
        char *unlisted_reason;          /* the first reason given for them */
        bool have_status, have_info, ended;
        int exit_code;                  /* from STATUS: -1 when a signal ended the program */
        int signal;                     /* from STATUS: 0 for none */
        uint64_t duration_us;           /* from STATUS: UINT64_MAX when not given */
        bool lost;                      /* the channel ended without END */
        char *error;                    /* a violation: what it was */

        /* RESULT_FRAME_PACKAGES: its meta as kept (the members and types
         * result-frame.h names, strings made valid UTF-8), and pip's log,
         * charged like the outputs; a log the budget cannot take is
         * dropped and said so. */
        bool have_packages;
        json_object *packages;
        uint8_t *packages_log;
        size_t packages_log_len;
        bool packages_log_dropped;

        /* Optional, set after init: data kept is charged here first, and
         * an output the budget cannot take is left out. The items handed
         * out count until result_reader_done(). */
        MemCharge *charge;
        uint64_t charged;
} ResultReader;

void result_reader_init(ResultReader *r, const ResultLimits *limits);
void result_reader_done(ResultReader *r);

/* Takes the next n bytes of the channel. 0: more wanted; 1: END was read
 * (bytes after it are a violation); -EBADMSG: a violation, r->error says
 * which (also for any call after one); -ENOMEM. */
int result_reader_feed(ResultReader *r, const void *buf, size_t n);

/* The channel ended. Without END before, r->lost is set (a frame cut off
 * half-way is dropped). */
void result_reader_eof(ResultReader *r);

/* The installer's report for the result: the kept meta plus "log" (a
 * string, invalid UTF-8 replaced) or "log_left_out". NULL if none came (or
 * out of memory: have_packages tells them apart). */
json_object *result_reader_take_packages(ResultReader *r);

/* Moves the items out to the caller (who frees each with
 * result_item_done() and the array with free()). */
ResultItem *result_reader_steal_items(ResultReader *r, size_t *ret_n);
