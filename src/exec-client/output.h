/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Captures a run's stdout and stderr under one shared byte limit, as the Go
 * server did: once stdout+stderr reach the limit, further output is read and
 * dropped and the capture is marked truncated. Memory never exceeds the limit. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem-budget.h"

typedef enum OutputStream {
        OUTPUT_STDOUT,
        OUTPUT_STDERR,
        _OUTPUT_STREAM_MAX,
} OutputStream;

typedef struct OutputCapture {
        char *data[_OUTPUT_STREAM_MAX];
        size_t size[_OUTPUT_STREAM_MAX];
        size_t allocated[_OUTPUT_STREAM_MAX];
        uint64_t limit;
        uint64_t seen;          /* all bytes read, kept or not */
        bool truncated;
        /* Optional: the buffers are charged here as they grow; what the
         * budget cannot give is dropped as if past the limit. */
        MemCharge *charge;
        uint64_t charged;       /* of charge, given back by output_capture_done() */
} OutputCapture;

/* charge may be NULL: not counted. */
void output_capture_init(OutputCapture *c, uint64_t limit, MemCharge *charge);
void output_capture_done(OutputCapture *c);

/* Keeps what fits under the shared limit; -ENOMEM only if allocation fails. */
int output_capture_append(OutputCapture *c, OutputStream s, const void *data, size_t n);

/* Bytes kept for both streams together. */
uint64_t output_capture_kept(const OutputCapture *c);
