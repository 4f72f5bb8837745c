/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* GET /metrics in the Prometheus text format (version 0.0.4). The writer
 * puts out one family at a time; a new gauge is one metrics_gauge() line in
 * metrics_render(). Names start with mcp_exec_. Pure: unit-tested, and
 * checked with promtool where it is installed. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "run-stats.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct MetricsWriter {
        FILE *f;
        char *buf;
        size_t size;
} MetricsWriter;

int metrics_writer_open(MetricsWriter *w);
/* The text (taken), or -ENOMEM if any write failed. */
int metrics_writer_finish(MetricsWriter *w, char **ret, size_t *ret_size);
void metrics_writer_done(MetricsWriter *w);

/* "# HELP" and "# TYPE" of a family; then its samples. */
void metrics_family(MetricsWriter *w, const char *name, const char *type, const char *help);
/* One sample: labels is NULL or 'key="value"' pairs, already escaped. */
void metrics_sample(MetricsWriter *w, const char *name, const char *labels, uint64_t value);
/* A family of one unlabelled sample. */
void metrics_gauge(MetricsWriter *w, const char *name, const char *help, uint64_t value);
void metrics_counter(MetricsWriter *w, const char *name, const char *help, uint64_t value);

/* Escapes a label value (backslash, double quote, newline) into buf. */
const char *metrics_label_escape(const char *value, char *buf, size_t size);

/* One HTTP caller: a token's name, "default" for the single token, or
 * "loopback" without one. Never the token. */
typedef struct MetricsCaller {
        const char *name;
        uint64_t http_sessions, sandbox_sessions;
} MetricsCaller;

/* What one front end process shows. */
typedef struct MetricsSnapshot {
        const char *node;
        const char *version;
        bool healthy;                   /* what /healthz says */
        const RunStats *broker;         /* NULL: the broker did not answer; its metrics are left out */
        uint64_t calls_running, calls_waiting;  /* this front end's queue */
        /* MCP tasks held now, by status, and those that ended since start. */
        uint64_t tasks_working, tasks_completed, tasks_failed, tasks_cancelled;
        uint64_t tasks_ended_completed, tasks_ended_failed, tasks_ended_cancelled;
        /* Calls with "packages" (issue 23): installed, failed in the
         * sandbox, refused by this front end's checks; the installs' time. */
        uint64_t package_installs_ok, package_installs_failed, package_installs_refused;
        uint64_t package_install_usec;
        bool has_http;                  /* this process serves HTTP */
        uint64_t http_connections, http_accepted, http_refused, http_expired;
        uint64_t http_sessions_streamable, http_sessions_legacy, http_streams;
        const MetricsCaller *http_callers;      /* one per configured name: bounded label values */
        size_t n_http_callers;
        bool has_stdio;                 /* this process serves the local socket */
        uint64_t stdio_connections, stdio_refused_full, stdio_refused_uid, stdio_closed_silent;
} MetricsSnapshot;

int metrics_render(const MetricsSnapshot *s, char **ret, size_t *ret_size);
