/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Logging: metadata only, never code, stdin or output. Under systemd the
 * entries go to the journal with structured fields; elsewhere to stderr. */

#include <syslog.h>
#include <systemd/sd-event.h>

#include "macro.h"

void log_open(const char *ident);
void log_set_max_level(int level);
/* Whether a message at level would be written: work done only for it can be skipped. */
bool log_level_enabled(int level);

/* Logs MESSAGE and returns -abs(error) (or 0 for error == 0), so callers can
 * write "return log_error_errno(r, "...: %m");". %m is expanded from error. */
int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);

/* A structured entry: "FIELD=value" format strings and arguments, terminated
 * by NULL, one of them "MESSAGE=...". */
void log_struct_internal(int level, const char *format, ...) _sentinel_;

#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_ERR, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal(LOG_DEBUG, (e), __VA_ARGS__)
#define log_oom() log_internal(LOG_ERR, ENOMEM, "Out of memory.")
#define log_struct(level, ...) log_struct_internal((level), __VA_ARGS__, NULL)

/* The same entry, written once the event loop has nothing else to do in
 * this turn: after the reply it describes went out, so that journald's
 * waking does not take a core from the client. Its arguments are formatted
 * at once. Without log_after_attach(), or with LOG_AFTER_MAX entries
 * waiting, it is written at once. */
void log_struct_after_internal(int level, const char *format, ...) _sentinel_;
#define log_struct_after(level, ...) log_struct_after_internal((level), __VA_ARGS__, NULL)
int log_after_attach(sd_event *event);
/* Writes what waits and lets go of the loop: before it is freed. */
void log_after_detach(void);
