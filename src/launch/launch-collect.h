/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a run leaves behind, sent on the result channel (result-frame.h) by
 * the launcher's parent after the program ended: the figures the interpreter
 * handed over (memfds) and the regular files under /tmp/outputs. Everything
 * there is the program's and untrusted: symlinks, FIFOs, sockets and devices
 * are skipped and reported, never followed or opened for reading in a way
 * that could block; every size is checked before reading; the whole
 * collection has a time budget. */

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "result-frame.h"

#define LAUNCH_OUTPUTS_DIR "/tmp/outputs"

typedef struct LaunchLimits {
        uint64_t max_images;            /* figures and image files together */
        uint64_t max_image_bytes;       /* one image */
        uint64_t max_files;             /* other files */
        uint64_t max_result_bytes;      /* all data sent together */
        uint64_t max_input_bytes;       /* all input files together (read side) */
} LaunchLimits;

#define LAUNCH_LIMITS_DEFAULT                                                   \
        {                                                                       \
                .max_images = 8, .max_image_bytes = 1 << 20, .max_files = 16,   \
                .max_result_bytes = 4 << 20, .max_input_bytes = 4 << 20,        \
        }

typedef struct ResultWriter {
        int fd;                         /* the result channel; -EBADF: none (nothing is sent) */
        bool broken;                    /* the reader went away */
        LaunchLimits limits;
        uint64_t sent;                  /* data bytes so far */
        uint64_t n_images, n_files;
        uint64_t deadline;              /* CLOCK_MONOTONIC µs: collection stops then */
} ResultWriter;

/* Fills limits from the "limits" object of the run message, keeping the
 * defaults for what is absent; values are clamped to the defaults' order of
 * magnitude so that a bad message cannot make us read gigabytes. */
void result_limits_from_json(json_object *j, LaunchLimits *limits);

/* One frame with meta (taken) and data from buf. -E2BIG: the meta does not
 * fit in a frame (RESULT_FRAME_META_MAX); nothing was sent and the writer
 * goes on, so one item's problem never costs the frames after it. Write
 * errors (the reader went away) mark the writer broken; later frames are
 * then dropped. */
int result_send(ResultWriter *w, ResultFrameType type, json_object *meta, const void *data, uint64_t len);

/* The figures the interpreter hands over while it runs: memfds on its
 * control socket ("fig"), held here until the program is over, up to the
 * limit; past it the interpreter only counts them ("figskip N"), and so do
 * we for any it sends anyway. Read as they come, so that the interpreter
 * never blocks on a full socket. */
#define FIGURE_INBOX_MAX 1024U          /* result_limits_from_json()'s cap of max_images */

typedef struct FigureInbox {
        int fds[FIGURE_INBOX_MAX];
        size_t n;
        uint64_t skipped;
} FigureInbox;

/* The status in the interpreter's "done N": an exit code 0..255, or -S for
 * a signal S (1..LAUNCH_SIGNAL_MAX, a session's call ended by SIGINT). The
 * program can send this message too, so anything else is refused
 * (-EINVAL), INT_MIN and overflows included, never negated or truncated. */
#define LAUNCH_SIGNAL_MAX 64            /* as the front end takes it (result-reader.h) */
int launch_parse_done(const char *msg, int *ret_status);

/* One message from the interpreter, without blocking: 1 for a valid "done
 * N" (*ret_done = N, see launch_parse_done()), 0 for anything else (kept,
 * counted or ignored), -EAGAIN when none is waiting, -EPIPE when the
 * interpreter closed its end. The program shares the interpreter's process:
 * a "done" is its word, never proof that it ended. */
int figure_inbox_read(FigureInbox *in, int sock, uint64_t max, int *ret_done);

/* Sends the held figures as images, then one note for those left out, and
 * empties the inbox. */
void figure_inbox_send(FigureInbox *in, ResultWriter *w);

/* Closes what it holds. */
void figure_inbox_clear(FigureInbox *in);

/* Walks LAUNCH_OUTPUTS_DIR. An output whose metadata does not fit in a frame
 * (a path of long names that escape to six bytes each in JSON) is left out
 * and counted, unnamed, as "its path is too long to report". */
void collect_outputs(ResultWriter *w);

/* The same for the directory dirfd, its entries named as if it were
 * LAUNCH_OUTPUTS_DIR. */
void collect_outputs_at(ResultWriter *w, int dirfd);
