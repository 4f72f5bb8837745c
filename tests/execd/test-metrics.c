/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/execd/metrics.[ch]: the Prometheus text of a known
 * snapshot, line by line, and the same text through `promtool check metrics`
 * (Debian's prometheus package) where it is installed. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "metrics.h"
#include "test-helpers.h"

static char *render(const MetricsSnapshot *s) {
        char *text = NULL;
        size_t size = 0;

        ASSERT_EQ_INT(metrics_render(s, &text, &size), 0);
        ASSERT_EQ_INT(strlen(text), size);
        ASSERT_TRUE(size > 0 && text[size - 1] == '\n');
        return text;
}

/* text has this exact line. */
static void has_line(const char *text, const char *line) {
        size_t l = strlen(line);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, line, l) == 0 && (p[l] == '\n' || p[l] == 0))
                        return;
        ASSERT_FAIL_("no line \"%s\" in:\n%s", line, text);
}

/* promtool's verdict on text: 0 clean; -1 if there is no promtool. */
static int promtool(const char *text) {
        const char *p = getenv("PROMTOOL") ?: "/usr/bin/promtool";
        char cmd[512];
        FILE *f;
        int st;

        if (access(p, X_OK) < 0)
                return -1;
        (void) snprintf(cmd, sizeof cmd, "%s check metrics", p);
        f = popen(cmd, "w");
        ASSERT_TRUE(f);
        ASSERT_EQ_INT(fputs(text, f) >= 0, 1);
        st = pclose(f);
        ASSERT_TRUE(st >= 0 && WIFEXITED(st));
        return WEXITSTATUS(st);
}

static RunStats sample_stats(void) {
        RunStats b = { .has_duration = true, .in_flight = 2, .queued = 1, .self_check = SELF_CHECK_PASSED,
                       .has_pool = true, .pool_size = 2, .pool_ready = 1, .pool_hits = 30,
                       .has_sessions = true, .sessions_live = 1, .sessions_max = 16, .sessions_created = 5,
                       .sessions_lost = 1, .session_calls = 12,
                       .has_egress = true, .egress_bytes_up = 1000, .egress_bytes_down = 250000 };

        b.runs[RUN_OUTCOME_OK] = 40;
        b.runs[RUN_OUTCOME_NONZERO_EXIT] = 3;
        b.runs[RUN_OUTCOME_TIMEOUT] = 2;
        b.runs[RUN_OUTCOME_CANCELLED] = 1;
        b.runs[RUN_OUTCOME_REFUSED] = 5;
        b.egress_connections[EGRESS_VERDICT_ALLOWED] = 7;
        b.egress_connections[EGRESS_VERDICT_POLICY] = 2;
        b.has_tools = true;
        ASSERT_EQ_INT(tool_stats_add(&b.tools, "everything", &(ToolServerStats) { .calls = 441, .errors = 3,
                                                                                  .refused = 2, .ms = 12345 }), 0);
        ASSERT_EQ_INT(tool_stats_add(&b.tools, "memory", &(ToolServerStats) { .calls = 1, .ms = 7 }), 0);
        b.duration_counts[0] = 10;      /* <= 50 ms */
        b.duration_counts[1] = 30;      /* <= 100 ms */
        b.duration_counts[5] = 4;       /* <= 2.5 s */
        b.duration_counts[RUN_DURATION_BUCKETS] = 2;    /* > 300 s */
        b.duration_sum_usec = 612345678;
        return b;
}

TEST(test_full) {
        RunStats b = sample_stats();
        static const MetricsCaller callers[] = {
                { .name = "default", .http_sessions = 1, .sandbox_sessions = 0 },
                { .name = "alice", .http_sessions = 3, .sandbox_sessions = 2 },
        };
        MetricsSnapshot s = {
                .node = "exec1", .version = "0.1.0", .healthy = true, .broker = &b,
                .calls_running = 2, .calls_waiting = 0,
                .has_http = true, .http_connections = 3, .http_accepted = 1000, .http_refused = 7, .http_expired = 2,
                .http_sessions_streamable = 4, .http_sessions_legacy = 1, .http_streams = 2,
                .http_callers = callers, .n_http_callers = 2,
                .has_stdio = true, .stdio_connections = 1, .stdio_refused_full = 9, .stdio_refused_uid = 8,
                .stdio_closed_silent = 6,
                .package_installs_ok = 11, .package_installs_failed = 2, .package_installs_refused = 4,
                .package_install_usec = 3 * 1000000 + 250000,
        };
        char *t = render(&s);

        has_line(t, "# HELP mcp_exec_info This front end: its node id and version.");
        has_line(t, "# TYPE mcp_exec_info gauge");
        has_line(t, "mcp_exec_info{node=\"exec1\",version=\"0.1.0\"} 1");
        has_line(t, "mcp_exec_healthy 1");
        has_line(t, "mcp_exec_broker_up 1");
        has_line(t, "# TYPE mcp_exec_runs_total counter");
        has_line(t, "mcp_exec_runs_total{outcome=\"ok\"} 40");
        has_line(t, "mcp_exec_runs_total{outcome=\"nonzero_exit\"} 3");
        has_line(t, "mcp_exec_runs_total{outcome=\"timeout\"} 2");
        has_line(t, "mcp_exec_runs_total{outcome=\"oom\"} 0");
        has_line(t, "mcp_exec_runs_total{outcome=\"refused\"} 5");
        has_line(t, "mcp_exec_runs_total{outcome=\"error\"} 0");
        has_line(t, "mcp_exec_runs_total{outcome=\"cancelled\"} 1");
        /* Buckets are cumulative; bounds in seconds. */
        has_line(t, "# TYPE mcp_exec_run_duration_seconds histogram");
        has_line(t, "mcp_exec_run_duration_seconds_bucket{le=\"0.05\"} 10");
        has_line(t, "mcp_exec_run_duration_seconds_bucket{le=\"0.1\"} 40");
        has_line(t, "mcp_exec_run_duration_seconds_bucket{le=\"0.25\"} 40");
        has_line(t, "mcp_exec_run_duration_seconds_bucket{le=\"2.5\"} 44");
        has_line(t, "mcp_exec_run_duration_seconds_bucket{le=\"300\"} 44");
        has_line(t, "mcp_exec_run_duration_seconds_bucket{le=\"+Inf\"} 46");
        has_line(t, "mcp_exec_run_duration_seconds_sum 612.345678");
        has_line(t, "mcp_exec_run_duration_seconds_count 46");
        has_line(t, "mcp_exec_runs_in_flight 2");
        has_line(t, "mcp_exec_runs_queued 1");
        has_line(t, "mcp_exec_self_check{state=\"pending\"} 0");
        has_line(t, "mcp_exec_self_check{state=\"passed\"} 1");
        has_line(t, "mcp_exec_self_check{state=\"failed\"} 0");
        has_line(t, "mcp_exec_pool_size 2");
        has_line(t, "mcp_exec_pool_ready 1");
        has_line(t, "mcp_exec_sessions 1");
        has_line(t, "mcp_exec_sessions_max 16");
        has_line(t, "mcp_exec_sessions_created_total 5");
        has_line(t, "mcp_exec_sessions_lost_total 1");
        has_line(t, "mcp_exec_session_calls_total 12");
        has_line(t, "# TYPE mcp_exec_egress_connections_total counter");
        has_line(t, "mcp_exec_egress_connections_total{verdict=\"allowed\"} 7");
        has_line(t, "mcp_exec_egress_connections_total{verdict=\"policy\"} 2");
        has_line(t, "mcp_exec_egress_connections_total{verdict=\"sni-mismatch\"} 0");
        has_line(t, "mcp_exec_egress_bytes_total{direction=\"up\"} 1000");
        has_line(t, "mcp_exec_egress_bytes_total{direction=\"down\"} 250000");
        has_line(t, "# TYPE mcp_exec_tool_calls_total counter");
        has_line(t, "mcp_exec_tool_calls_total{server=\"everything\",outcome=\"ok\"} 436");
        has_line(t, "mcp_exec_tool_calls_total{server=\"everything\",outcome=\"error\"} 3");
        has_line(t, "mcp_exec_tool_calls_total{server=\"everything\",outcome=\"refused\"} 2");
        has_line(t, "mcp_exec_tool_calls_total{server=\"memory\",outcome=\"ok\"} 1");
        has_line(t, "# TYPE mcp_exec_tool_call_seconds_total counter");
        has_line(t, "mcp_exec_tool_call_seconds_total{server=\"everything\"} 12.345");
        has_line(t, "mcp_exec_tool_call_seconds_total{server=\"memory\"} 0.007");
        has_line(t, "# TYPE mcp_exec_pool_hits_total counter");
        has_line(t, "mcp_exec_pool_hits_total 30");
        has_line(t, "mcp_exec_calls_running 2");
        has_line(t, "mcp_exec_calls_queued 0");
        has_line(t, "# TYPE mcp_exec_package_installs_total counter");
        has_line(t, "mcp_exec_package_installs_total{result=\"ok\"} 11");
        has_line(t, "mcp_exec_package_installs_total{result=\"failed\"} 2");
        has_line(t, "mcp_exec_package_installs_total{result=\"refused\"} 4");
        has_line(t, "# TYPE mcp_exec_package_install_seconds_total counter");
        has_line(t, "mcp_exec_package_install_seconds_total 3.250000");
        has_line(t, "mcp_exec_http_connections 3");
        has_line(t, "mcp_exec_http_connections_accepted_total 1000");
        has_line(t, "mcp_exec_http_connections_refused_total 7");
        has_line(t, "mcp_exec_http_connections_expired_total 2");
        has_line(t, "mcp_exec_http_sessions{transport=\"streamable\"} 4");
        has_line(t, "mcp_exec_http_sessions{transport=\"sse\"} 1");
        has_line(t, "mcp_exec_http_streams 2");
        has_line(t, "mcp_exec_http_caller_sessions{caller=\"default\"} 1");
        has_line(t, "mcp_exec_http_caller_sessions{caller=\"alice\"} 3");
        has_line(t, "mcp_exec_http_caller_sandbox_sessions{caller=\"alice\"} 2");
        has_line(t, "mcp_exec_stdio_connections 1");
        has_line(t, "mcp_exec_stdio_connections_refused_total{limit=\"total\"} 9");
        has_line(t, "mcp_exec_stdio_connections_refused_total{limit=\"per_uid\"} 8");
        has_line(t, "mcp_exec_stdio_connections_silent_total 6");
        /* Every sample line belongs to our namespace. */
        for (const char *p = t; *p; p = strchr(p, '\n') + 1)
                ASSERT_TRUE(*p == '#' || strncmp(p, "mcp_exec_", 9) == 0);
        if (promtool(t) < 0)
                fprintf(stderr, "no promtool here: the text is not linted\n");
        else
                ASSERT_EQ_INT(promtool(t), 0);
        free(t);
}

TEST(test_broker_down) {
        /* Without the broker: no counters we cannot know, no empty families. */
        MetricsSnapshot s = { .node = "n", .version = "1", .has_http = true };
        char *t = render(&s);

        has_line(t, "mcp_exec_healthy 0");
        has_line(t, "mcp_exec_broker_up 0");
        ASSERT_TRUE(!strstr(t, "mcp_exec_runs_total"));
        ASSERT_TRUE(!strstr(t, "mcp_exec_self_check"));
        ASSERT_TRUE(!strstr(t, "mcp_exec_stdio"));
        has_line(t, "mcp_exec_http_connections 0");
        ASSERT_TRUE(!strstr(t, "caller="));
        if (promtool(t) >= 0)
                ASSERT_EQ_INT(promtool(t), 0);
        free(t);

        /* A histogram a broker of another version sent is left out. */
        RunStats b = sample_stats();
        b.has_duration = false;
        b.has_pool = false;
        s.broker = &b;
        t = render(&s);
        ASSERT_TRUE(!strstr(t, "mcp_exec_run_duration_seconds"));
        ASSERT_TRUE(!strstr(t, "mcp_exec_pool"));
        has_line(t, "mcp_exec_runs_total{outcome=\"ok\"} 40");
        if (promtool(t) >= 0)
                ASSERT_EQ_INT(promtool(t), 0);
        free(t);
}

TEST(test_escape) {
        char buf[64];

        ASSERT_STREQ(metrics_label_escape("a\"b\\c\nd", buf, sizeof buf), "a\\\"b\\\\c\\nd");
        ASSERT_STREQ(metrics_label_escape(NULL, buf, sizeof buf), "");
        /* Cut short, never in the middle of an escape. */
        ASSERT_STREQ(metrics_label_escape("\"\"\"", buf, 4), "\\\"");
}

int main(void) {
        RUN(test_full);
        RUN(test_broker_down);
        RUN(test_escape);
        return 0;
}
