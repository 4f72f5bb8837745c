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

typedef struct ResultLimits {
        uint64_t max_images;            /* figures and image files together */
        uint64_t max_image_bytes;       /* one image */
        uint64_t max_files;             /* other files */
        uint64_t max_result_bytes;      /* all data sent together */
        uint64_t max_input_bytes;       /* all input files together (read side) */
} ResultLimits;

#define RESULT_LIMITS_DEFAULT                                                   \
        {                                                                       \
                .max_images = 8, .max_image_bytes = 1 << 20, .max_files = 16,   \
                .max_result_bytes = 6 << 20, .max_input_bytes = 8 << 20,        \
        }

typedef struct ResultWriter {
        int fd;                         /* the result channel; -EBADF: none (nothing is sent) */
        bool broken;                    /* the reader went away */
        ResultLimits limits;
        uint64_t sent;                  /* data bytes so far */
        uint64_t n_images, n_files;
        uint64_t deadline;              /* CLOCK_MONOTONIC µs: collection stops then */
} ResultWriter;

/* Fills limits from the "limits" object of the run message, keeping the
 * defaults for what is absent; values are clamped to the defaults' order of
 * magnitude so that a bad message cannot make us read gigabytes. */
void result_limits_from_json(json_object *j, ResultLimits *limits);

/* One frame with meta (taken) and data from buf. Errors mark the writer
 * broken; later frames are then dropped. */
void result_send(ResultWriter *w, ResultFrameType type, json_object *meta, const void *data, uint64_t len);

/* Drains figure messages ("fig" with one memfd each) from the interpreter's
 * control socket, without blocking. */
void collect_figures(ResultWriter *w, int control_fd);

/* One figure (a memfd from the interpreter), as the index-th. */
void collect_figure(ResultWriter *w, int fd, long index);

/* Walks LAUNCH_OUTPUTS_DIR. */
void collect_outputs(ResultWriter *w);
