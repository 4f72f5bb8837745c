/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include "log.h"

#include <printf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void log_struct_internal(int level, const char *format, ...) {
        struct iovec iov[32];
        char *fields[32];
        size_t n = 0;
        va_list ap;

        if (level > log_max_level)
                return;

        va_start(ap, format);
        for (const char *f = format; f && n < ELEMENTSOF(fields) - 2; f = va_arg(ap, const char *)) {
                va_list aq;
                /* Each format consumes its own arguments: format into a
                 * string, then skip them with a throwaway pass. */
                va_copy(aq, ap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                if (vasprintf(&fields[n], f, aq) < 0)
                        fields[n] = NULL;
#pragma GCC diagnostic pop
                va_end(aq);
                /* Advance ap past the arguments this format used. */
                va_skip_format(f, &ap);
                if (fields[n])
                        n++;
        }
        va_end(ap);

        if (asprintf(&fields[n], "PRIORITY=%i", level) >= 0)
                n++;
        if (asprintf(&fields[n], "SYSLOG_IDENTIFIER=%s", log_ident) >= 0)
                n++;

        if (log_to_journal) {
                for (size_t i = 0; i < n; i++)
                        iov[i] = (struct iovec) { .iov_base = fields[i], .iov_len = strlen(fields[i]) };
                (void) sd_journal_sendv(iov, (int) n);
        } else {
                /* Without the journal: the message, then the fields, on one line. */
                const char *msg = "";
                for (size_t i = 0; i < n; i++)
                        if (strneq(fields[i], "MESSAGE=", 8))
                                msg = fields[i] + 8;
                (void) fprintf(stderr, "%s: %s [", log_ident, msg);
                for (size_t i = 0; i < n; i++)
                        if (!strneq(fields[i], "MESSAGE=", 8) && !strneq(fields[i], "PRIORITY=", 9) &&
                            !strneq(fields[i], "SYSLOG_IDENTIFIER=", 18))
                                (void) fprintf(stderr, " %s", fields[i]);
                (void) fprintf(stderr, " ]\n");
        }

        for (size_t i = 0; i < n; i++)
                free(fields[i]);
}
