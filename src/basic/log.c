/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include "log.h"

#include <errno.h>
#include <printf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>

static const char *log_ident = "mcp-exec";
static int log_max_level = LOG_INFO;
static bool log_to_journal;

void log_open(const char *ident) {
        const char *e;

        log_ident = ident;
        /* JOURNAL_STREAM is set by systemd when stderr is connected to the
         * journal: then structured entries can go there directly. */
        log_to_journal = getenv("JOURNAL_STREAM") != NULL;
        e = getenv("MCP_EXEC_LOG_LEVEL");
        if (e && streq(e, "debug"))
                log_max_level = LOG_DEBUG;
}

bool log_level_enabled(int level) {
        return level <= log_max_level;
}

void log_set_max_level(int level) {
        log_max_level = level;
}

int log_internal(int level, int error, const char *fmt, ...) {
        char buf[1024];
        va_list ap;

        error = error < 0 ? -error : error;
        if (level <= log_max_level) {
                errno = error;
                va_start(ap, fmt);
                (void) vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);
                if (log_to_journal)
                        (void) sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%i", level,
                                               "SYSLOG_IDENTIFIER=%s", log_ident, NULL);
                else
                        (void) fprintf(stderr, "%s: %s\n", log_ident, buf);
        }
        return -error;
}

/* Skip the arguments that one printf format consumes, by the types glibc's
 * parser reports for it. */
static void va_skip_format(const char *f, va_list *ap) {
        int types[16];
        size_t n = parse_printf_format(f, ELEMENTSOF(types), types);

        for (size_t i = 0; i < n && i < ELEMENTSOF(types); i++) {
                int t = types[i];
                if (t & PA_FLAG_PTR)
                        (void) va_arg(*ap, void *);
                else if ((t & ~PA_FLAG_MASK) == PA_DOUBLE)
                        (void) va_arg(*ap, double);
                else if ((t & ~PA_FLAG_MASK) == PA_STRING || (t & ~PA_FLAG_MASK) == PA_POINTER)
                        (void) va_arg(*ap, void *);
                else if (t & (PA_FLAG_LONG_LONG | PA_FLAG_LONG))
                        (void) va_arg(*ap, long long);
                else
                        (void) va_arg(*ap, int);
        }
}

/* At most this many fields an entry, ours included. */
#define LOG_FIELDS_MAX 32
/* Entries waiting for the loop's idle moment; more are written at once. */
#define LOG_AFTER_MAX 64

typedef struct LogEntry {
        char *fields[LOG_FIELDS_MAX];
        size_t n_fields;
} LogEntry;

static LogEntry log_after[LOG_AFTER_MAX];
static size_t n_log_after;
static sd_event_source *log_after_source;

/* The "FIELD=value" formats and their arguments, each into a string of its
 * own, then PRIORITY and SYSLOG_IDENTIFIER. */
static void log_entry_format(LogEntry *e, int level, const char *format, va_list *ap) {
        size_t n = 0;

        for (const char *f = format; f && n < ELEMENTSOF(e->fields) - 2; f = va_arg(*ap, const char *)) {
                va_list aq;
                /* Each format consumes its own arguments: format into a
                 * string, then skip them with a throwaway pass. */
                va_copy(aq, *ap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                if (vasprintf(&e->fields[n], f, aq) < 0)
                        e->fields[n] = NULL;
#pragma GCC diagnostic pop
                va_end(aq);
                /* Advance ap past the arguments this format used. */
                va_skip_format(f, ap);
                if (e->fields[n])
                        n++;
        }
        if (asprintf(&e->fields[n], "PRIORITY=%i", level) >= 0)
                n++;
        if (asprintf(&e->fields[n], "SYSLOG_IDENTIFIER=%s", log_ident) >= 0)
                n++;
        e->n_fields = n;
}

/* Writes the entry and frees its fields. */
static void log_entry_write(LogEntry *e) {
        if (log_to_journal) {
                struct iovec iov[LOG_FIELDS_MAX];
                for (size_t i = 0; i < e->n_fields; i++)
                        iov[i] = (struct iovec) { .iov_base = e->fields[i], .iov_len = strlen(e->fields[i]) };
                (void) sd_journal_sendv(iov, (int) e->n_fields);
        } else {
                /* Without the journal: the message, then the fields, on one line. */
                const char *msg = "";
                for (size_t i = 0; i < e->n_fields; i++)
                        if (strneq(e->fields[i], "MESSAGE=", 8))
                                msg = e->fields[i] + 8;
                (void) fprintf(stderr, "%s: %s [", log_ident, msg);
                for (size_t i = 0; i < e->n_fields; i++)
                        if (!strneq(e->fields[i], "MESSAGE=", 8) && !strneq(e->fields[i], "PRIORITY=", 9) &&
                            !strneq(e->fields[i], "SYSLOG_IDENTIFIER=", 18))
                                (void) fprintf(stderr, " %s", e->fields[i]);
                (void) fprintf(stderr, " ]\n");
        }

        for (size_t i = 0; i < e->n_fields; i++)
                free(e->fields[i]);
        e->n_fields = 0;
}

void log_struct_internal(int level, const char *format, ...) {
        LogEntry e;
        va_list ap;

        if (level > log_max_level)
                return;

        va_start(ap, format);
        log_entry_format(&e, level, format, &ap);
        va_end(ap);
        log_entry_write(&e);
}

static void log_after_flush(void) {
        /* In the order they were logged. */
        for (size_t i = 0; i < n_log_after; i++)
                log_entry_write(&log_after[i]);
        n_log_after = 0;
}

static int on_log_after(sd_event_source *s, void *userdata) {
        log_after_flush();
        return 0;
}

void log_struct_after_internal(int level, const char *format, ...) {
        int saved_errno = errno;        /* for a %m in the formats */
        LogEntry e;
        va_list ap;

        if (level > log_max_level)
                return;

        va_start(ap, format);
        if (log_after_source && n_log_after < ELEMENTSOF(log_after) &&
            sd_event_source_set_enabled(log_after_source, SD_EVENT_ONESHOT) >= 0) {
                errno = saved_errno;
                log_entry_format(&log_after[n_log_after++], level, format, &ap);
                va_end(ap);
                return;
        }
        /* No loop, or too many waiting: now, behind those waiting. */
        log_after_flush();
        errno = saved_errno;
        log_entry_format(&e, level, format, &ap);
        va_end(ap);
        log_entry_write(&e);
}

int log_after_attach(sd_event *event) {
        int r;

        if (log_after_source)
                return 0;
        r = sd_event_add_defer(event, &log_after_source, on_log_after, NULL);
        if (r < 0)
                return r;
        /* After everything else ready in the same turn of the loop: the
         * replies the entries describe are written first. */
        r = sd_event_source_set_priority(log_after_source, SD_EVENT_PRIORITY_IDLE);
        if (r >= 0)
                r = sd_event_source_set_enabled(log_after_source, SD_EVENT_OFF);
        if (r < 0) {
                log_after_source = sd_event_source_unref(log_after_source);
                return r;
        }
        return 0;
}

void log_after_detach(void) {
        log_after_flush();
        log_after_source = sd_event_source_disable_unref(log_after_source);
}
