/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A run the broker makes for itself (the self-check, module discovery): the
 * given stdin, stdout captured up to a small limit, stderr discarded. */

#include <stddef.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "run.h"

typedef struct RunCapture RunCapture;

/* output is NUL-terminated (truncated at the limit); error is NULL unless the
 * sandbox did not run at all. */
typedef void (*run_capture_done_t)(const char *output, const RunResult *result, void *userdata);

int run_capture_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, const void *stdin_data, size_t stdin_len,
                      size_t max_output, run_capture_done_t done, void *userdata, RunCapture **ret);
RunCapture *run_capture_free(RunCapture *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(RunCapture *, run_capture_free);
