/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "metrics.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int metrics_writer_open(MetricsWriter *w) {
        assert(w);

        *w = (MetricsWriter) {};
        w->f = open_memstream(&w->buf, &w->size);
        return w->f ? 0 : -ENOMEM;
}

int metrics_writer_finish(MetricsWriter *w, char **ret, size_t *ret_size) {
        bool failed;

        assert(w);
        assert(ret);
        assert(ret_size);

        failed = ferror(w->f);
        if (fclose(w->f) != 0)
                failed = true;
        w->f = NULL;
        if (failed || !w->buf) {
                metrics_writer_done(w);
                return -ENOMEM;
        }
        *ret = TAKE_PTR(w->buf);
        *ret_size = w->size;
        return 0;
}

void metrics_writer_done(MetricsWriter *w) {
        if (!w)
                return;
        if (w->f)
                (void) fclose(w->f);
        w->f = NULL;
        w->buf = mfree(w->buf);
}

void metrics_family(MetricsWriter *w, const char *name, const char *type, const char *help) {
        assert(w);
        assert(name);
        assert(type);
        assert(help);

        (void) fprintf(w->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_sample(MetricsWriter *w, const char *name, const char *labels, uint64_t value) {
        assert(w);
        assert(name);

        if (labels)
                (void) fprintf(w->f, "%s{%s} %" PRIu64 "\n", name, labels, value);
        else
                (void) fprintf(w->f, "%s %" PRIu64 "\n", name, value);
}

void metrics_gauge(MetricsWriter *w, const char *name, const char *help, uint64_t value) {
        assert(w);
        assert(name);
        assert(help);

        metrics_family(w, name, "gauge", help);
        metrics_sample(w, name, NULL, value);
}

void metrics_counter(MetricsWriter *w, const char *name, const char *help, uint64_t value) {
        assert(w);
        assert(name);
        assert(help);

        metrics_family(w, name, "counter", help);
        metrics_sample(w, name, NULL, value);
}

const char *metrics_label_escape(const char *value, char *buf, size_t size) {
        size_t o = 0;

        assert(buf);
        assert(size > 0);

        for (const char *p = value ?: ""; *p && o + 2 < size; p++) {
                if (*p == '\\' || *p == '"') {
                        buf[o++] = '\\';
                        buf[o++] = *p;
                } else if (*p == '\n') {
                        buf[o++] = '\\';
                        buf[o++] = 'n';
                } else
                        buf[o++] = *p;
        }
        buf[o] = 0;
        return buf;
}

/* Milliseconds as Prometheus spells a bound in seconds: 50 → 0.05, 2500 → 2.5. */
static void format_le(uint64_t ms, char *buf, size_t size) {
        uint64_t frac = ms % 1000;
        int digits = 3;

        assert(buf);

        if (frac == 0) {
                (void) snprintf(buf, size, "%" PRIu64, ms / 1000);
                return;
        }
        while (frac % 10 == 0) {
                frac /= 10;
                digits--;
        }
        (void) snprintf(buf, size, "%" PRIu64 ".%0*" PRIu64, ms / 1000, digits, frac);
}

/* Code mode: per server (at most TOOL_STATS_SERVERS_MAX, names as
 * servers.d allows), the calls by outcome and the time they took. */
static void render_tools(MetricsWriter *w, const ToolStats *t) {
        char name[2 * TOOL_STATS_NAME_MAX + 2], labels[2 * TOOL_STATS_NAME_MAX + 64];

        assert(w);
        assert(t);

        if (t->n == 0)
                return;
        metrics_family(w, "mcp_exec_tool_calls_total", "counter",
                       "Calls of runs' code to MCP servers' tools (code mode), by server and outcome: ok, error (the "
                       "tool failed, timed out or its server did), refused (policy or a cap); since the broker "
                       "started.");
        for (size_t i = 0; i < t->n; i++) {
                const ToolServerStats *v = &t->servers[i];
                uint64_t failed = v->errors + v->refused;

                metrics_label_escape(v->name, name, sizeof name);
                (void) snprintf(labels, sizeof labels, "server=\"%s\",outcome=\"ok\"", name);
                metrics_sample(w, "mcp_exec_tool_calls_total", labels, v->calls > failed ? v->calls - failed : 0);
                (void) snprintf(labels, sizeof labels, "server=\"%s\",outcome=\"error\"", name);
                metrics_sample(w, "mcp_exec_tool_calls_total", labels, v->errors);
                (void) snprintf(labels, sizeof labels, "server=\"%s\",outcome=\"refused\"", name);
                metrics_sample(w, "mcp_exec_tool_calls_total", labels, v->refused);
        }
        metrics_family(w, "mcp_exec_tool_call_seconds_total", "counter",
                       "Time runs' tool calls took, by server (code mode); since the broker started.");
        for (size_t i = 0; i < t->n; i++) {
                const ToolServerStats *v = &t->servers[i];

                (void) fprintf(w->f, "mcp_exec_tool_call_seconds_total{server=\"%s\"} %" PRIu64 ".%03" PRIu64 "\n",
                               metrics_label_escape(v->name, name, sizeof name), v->ms / 1000, v->ms % 1000);
        }
}

static void render_runs(MetricsWriter *w, const RunStats *b) {
        char labels[64], le[32];
        uint64_t cumulative = 0;

        assert(w);
        assert(b);

        metrics_family(w, "mcp_exec_runs_total", "counter",
                       "Runs ended on this host (all front ends), by outcome; since the broker started.");
        for (int o = 0; o < _RUN_OUTCOME_MAX; o++) {
                (void) snprintf(labels, sizeof labels, "outcome=\"%s\"", run_outcome_to_string(o));
                metrics_sample(w, "mcp_exec_runs_total", labels, b->runs[o]);
        }
        if (b->has_duration) {
                metrics_family(w, "mcp_exec_run_duration_seconds", "histogram",
                               "Wall-clock time of runs that started, from the unit's start to its end.");
                for (size_t i = 0; i <= RUN_DURATION_BUCKETS; i++) {
                        cumulative += b->duration_counts[i];
                        if (i < RUN_DURATION_BUCKETS)
                                format_le(run_duration_bounds_ms[i], le, sizeof le);
                        else
                                strcpy(le, "+Inf");
                        (void) snprintf(labels, sizeof labels, "le=\"%s\"", le);
                        metrics_sample(w, "mcp_exec_run_duration_seconds_bucket", labels, cumulative);
                }
                (void) fprintf(w->f, "mcp_exec_run_duration_seconds_sum %" PRIu64 ".%06" PRIu64 "\n",
                               b->duration_sum_usec / USEC_PER_SEC, b->duration_sum_usec % USEC_PER_SEC);
                metrics_sample(w, "mcp_exec_run_duration_seconds_count", NULL, cumulative);
        }
        metrics_gauge(w, "mcp_exec_runs_in_flight", "Runs going now on this host (all front ends).", b->in_flight);
        metrics_gauge(w, "mcp_exec_runs_queued", "Runs waiting for a slot at the broker (all front ends).", b->queued);
        metrics_family(w, "mcp_exec_self_check", "gauge", "The broker's sandbox self-check: 1 for the current state.");
        for (int st = 0; st < _SELF_CHECK_MAX; st++) {
                (void) snprintf(labels, sizeof labels, "state=\"%s\"", self_check_state_to_string(st));
                metrics_sample(w, "mcp_exec_self_check", labels, b->self_check == (SelfCheckState) st);
        }
        if (b->has_pool) {
                metrics_gauge(w, "mcp_exec_pool_size",
                              "Warm units the broker keeps ready (MCP_EXEC_POOL_SIZE; 0 if it gave up).", b->pool_size);
                metrics_gauge(w, "mcp_exec_pool_ready", "Warm units ready now.", b->pool_ready);
                metrics_counter(w, "mcp_exec_pool_hits_total", "Runs that took a warm unit; since the broker started.",
                                b->pool_hits);
        }
        if (b->has_sessions) {
                metrics_gauge(w, "mcp_exec_sessions", "Python sessions (session_create) alive now.", b->sessions_live);
                metrics_gauge(w, "mcp_exec_sessions_max", "Sessions the broker holds at most (MCP_EXEC_MAX_SESSIONS).",
                              b->sessions_max);
                metrics_counter(w, "mcp_exec_sessions_created_total", "Sessions handed out; since the broker started.",
                                b->sessions_created);
                metrics_counter(w, "mcp_exec_sessions_lost_total",
                                "Sessions whose interpreter ended under them (out of memory, a crash, a kill after a "
                                "timeout); since the broker started.",
                                b->sessions_lost);
                metrics_counter(w, "mcp_exec_session_calls_total", "Calls run in sessions; since the broker started.",
                                b->session_calls);
        }
        if (b->has_egress) {
                metrics_family(w, "mcp_exec_egress_connections_total", "counter",
                               "Connections of runs through mcp-exec-egressd that ended, by verdict; since the broker "
                               "started.");
                for (EgressVerdict v = 0; v < _EGRESS_VERDICT_MAX; v++) {
                        (void) snprintf(labels, sizeof labels, "verdict=\"%s\"", egress_verdict_to_string(v));
                        metrics_sample(w, "mcp_exec_egress_connections_total", labels, b->egress_connections[v]);
                }
                metrics_family(w, "mcp_exec_egress_bytes_total", "counter",
                               "Bytes of runs' connections through mcp-exec-egressd, up (to the host) and down; since "
                               "the broker started.");
                metrics_sample(w, "mcp_exec_egress_bytes_total", "direction=\"up\"", b->egress_bytes_up);
                metrics_sample(w, "mcp_exec_egress_bytes_total", "direction=\"down\"", b->egress_bytes_down);
        }
        if (b->has_tools)
                render_tools(w, &b->tools);
}

/* Per HTTP caller: the name of its token, never the token. */
static void render_callers(MetricsWriter *w, const MetricsCaller *c, size_t n) {
        assert(w);
        assert(c || n == 0);

        char name[2 * 64], labels[2 * 64 + 16];

        if (n == 0)
                return;
        metrics_family(w, "mcp_exec_http_caller_sessions", "gauge",
                       "HTTP sessions open now, by caller (the name of the token they use).");
        for (size_t i = 0; i < n; i++) {
                (void) snprintf(labels, sizeof labels, "caller=\"%s\"",
                                metrics_label_escape(c[i].name, name, sizeof name));
                metrics_sample(w, "mcp_exec_http_caller_sessions", labels, c[i].http_sessions);
        }
        metrics_family(w, "mcp_exec_http_caller_sandbox_sessions", "gauge",
                       "Sandbox sessions (session_create) of this front end that may live, by HTTP caller.");
        for (size_t i = 0; i < n; i++) {
                (void) snprintf(labels, sizeof labels, "caller=\"%s\"",
                                metrics_label_escape(c[i].name, name, sizeof name));
                metrics_sample(w, "mcp_exec_http_caller_sandbox_sessions", labels, c[i].sandbox_sessions);
        }
}

int metrics_render(const MetricsSnapshot *s, char **ret, size_t *ret_size) {
        char node[2 * 64], version[2 * 64], labels[300];
        MetricsWriter w;
        int r;

        assert(s);
        assert(ret);
        assert(ret_size);

        r = metrics_writer_open(&w);
        if (r < 0)
                return r;

        (void) snprintf(labels, sizeof labels, "node=\"%s\",version=\"%s\"",
                        metrics_label_escape(s->node, node, sizeof node),
                        metrics_label_escape(s->version, version, sizeof version));
        metrics_family(&w, "mcp_exec_info", "gauge", "This front end: its node id and version.");
        metrics_sample(&w, "mcp_exec_info", labels, 1);
        metrics_gauge(&w, "mcp_exec_healthy", "1 if this node can run code now (GET /healthz answers 200).",
                      s->healthy);
        metrics_gauge(&w, "mcp_exec_broker_up", "1 if the broker answered this scrape's question.", s->broker != NULL);
        if (s->broker)
                render_runs(&w, s->broker);

        metrics_gauge(&w, "mcp_exec_calls_running", "Tool calls of this front end whose run is going.",
                      s->calls_running);
        metrics_gauge(&w, "mcp_exec_calls_queued", "Tool calls of this front end waiting for a slot.",
                      s->calls_waiting);

        metrics_family(&w, "mcp_exec_tasks", "gauge",
                       "MCP tasks this front end holds now (running, or with a result kept until its ttl), by status.");
        metrics_sample(&w, "mcp_exec_tasks", "status=\"working\"", s->tasks_working);
        metrics_sample(&w, "mcp_exec_tasks", "status=\"completed\"", s->tasks_completed);
        metrics_sample(&w, "mcp_exec_tasks", "status=\"failed\"", s->tasks_failed);
        metrics_sample(&w, "mcp_exec_tasks", "status=\"cancelled\"", s->tasks_cancelled);
        metrics_family(&w, "mcp_exec_tasks_ended_total", "counter", "MCP tasks that ended, by status.");
        metrics_sample(&w, "mcp_exec_tasks_ended_total", "status=\"completed\"", s->tasks_ended_completed);
        metrics_sample(&w, "mcp_exec_tasks_ended_total", "status=\"failed\"", s->tasks_ended_failed);
        metrics_sample(&w, "mcp_exec_tasks_ended_total", "status=\"cancelled\"", s->tasks_ended_cancelled);

        metrics_family(&w, "mcp_exec_package_installs_total", "counter",
                       "Calls of this front end that asked for packages, by result: ok (installed), failed (the "
                       "installer refused or pip failed; the code did not run), refused (stopped by this front end's "
                       "checks before a unit was asked for).");
        metrics_sample(&w, "mcp_exec_package_installs_total", "result=\"ok\"", s->package_installs_ok);
        metrics_sample(&w, "mcp_exec_package_installs_total", "result=\"failed\"", s->package_installs_failed);
        metrics_sample(&w, "mcp_exec_package_installs_total", "result=\"refused\"", s->package_installs_refused);
        metrics_family(&w, "mcp_exec_package_install_seconds_total", "counter",
                       "Time the sandboxes' installers took for this front end's calls with packages, ok or failed.");
        (void) fprintf(w.f, "mcp_exec_package_install_seconds_total %" PRIu64 ".%06" PRIu64 "\n",
                       s->package_install_usec / USEC_PER_SEC, s->package_install_usec % USEC_PER_SEC);

        if (s->has_http) {
                metrics_gauge(&w, "mcp_exec_http_connections", "HTTP connections open now.", s->http_connections);
                metrics_counter(&w, "mcp_exec_http_connections_accepted_total",
                                "HTTP connections accepted, also those refused at once.", s->http_accepted);
                metrics_counter(&w, "mcp_exec_http_connections_refused_total",
                                "HTTP connections refused with 503 at the connection limit.", s->http_refused);
                metrics_counter(&w, "mcp_exec_http_connections_expired_total",
                                "HTTP connections closed at their header or body deadline.", s->http_expired);
                metrics_family(&w, "mcp_exec_http_sessions", "gauge", "HTTP sessions open now, by transport.");
                metrics_sample(&w, "mcp_exec_http_sessions", "transport=\"streamable\"", s->http_sessions_streamable);
                metrics_sample(&w, "mcp_exec_http_sessions", "transport=\"sse\"", s->http_sessions_legacy);
                metrics_gauge(&w, "mcp_exec_http_streams", "Open event streams (GET /mcp and /sse).", s->http_streams);
                render_callers(&w, s->http_callers, s->n_http_callers);
        }
        if (s->has_stdio) {
                metrics_gauge(&w, "mcp_exec_stdio_connections", "Local sessions (stdio.sock) open now.",
                              s->stdio_connections);
                metrics_family(&w, "mcp_exec_stdio_connections_refused_total", "counter",
                               "Local connections refused, by limit.");
                metrics_sample(&w, "mcp_exec_stdio_connections_refused_total", "limit=\"total\"",
                               s->stdio_refused_full);
                metrics_sample(&w, "mcp_exec_stdio_connections_refused_total", "limit=\"per_uid\"",
                               s->stdio_refused_uid);
                metrics_counter(&w, "mcp_exec_stdio_connections_silent_total",
                                "Local connections closed for sending nothing in time.", s->stdio_closed_silent);
        }
        return metrics_writer_finish(&w, ret, ret_size);
}
