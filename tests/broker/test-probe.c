/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for probe_evaluate() in src/broker/probe.c: the launcher's
 * "key=value" self-report from inside the sandbox is checked line by line,
 * and anything short of the expected sandbox fails closed. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "syscall-filter.h"
#include "test-helpers.h"

#define MiB (UINT64_C(1) << 20)

/* The digest of this build's system call filter, filled in by main(). */
static char digest[17], digest_wx[17];

/* What the launcher prints in a correct sandbox (its --probe mode). */
static const char *const good_lines[][2] = {
        { "uid", "61234" },
        { "euid", "61234" },
        { "netdevs", "lo" },
        { "af_inet", "blocked" },
        { "usr_readonly", "1" },
        { "etc_readonly", "1" },
        { "home_hidden", "1" },
        { "run_readonly", "1" },
        { "run_entries", "systemd" },
        { "tmp_fs", "tmpfs" },
        { "tmp_bytes", "67108864" },
        { "tmp_dev", "47" },
        { "var_tmp_fs", "tmpfs" },
        { "var_tmp_bytes", "67108864" },
        { "var_tmp_dev", "47" },
        { "memory_max", "268435456" },
        { "tasks_max", "128" },
        { "no_new_privs", "1" },
        { "seccomp", "2" },
        { "cap_bounding", "0000000000000000" },
        { "cap_effective", "0000000000000000" },
        { "seccomp_filter", digest },
        { "denied_io_uring_setup", "EPERM" },
        { "denied_add_key", "EPERM" },
        { "denied_perf_event_open", "EPERM" },
        /* Issue 42: W^X in a unit without --jit (spec(); jit_report() has --jit's). */
        { "wx_filter", digest_wx },
        { "wx_mmap", "EPERM" },
        { "wx_mprotect", "EPERM" },
        { "x_mprotect", "EPERM" },
        /* systemd 252 (spec()): no PID namespace, only our own uid's processes. */
        { "pid", "2345" },
        { "proc_pids", "2345,2351" },
        { "proc_others", "0" },
        /* Issue 41: the raw wheelhouse (spec() names none, wheelhouse_spec() does). */
        { "inaccessible", "denied" },
};
#define N_LINES (sizeof good_lines / sizeof good_lines[0])

static SandboxSpec spec(void) {
        return (SandboxSpec) {
                .launcher = "/usr/libexec/mcp-exec/mcp-exec-launch",
                .python = "/usr/bin/python3.11",
                .max_code_bytes = MiB,
                .timeout_usec = 30 * UINT64_C(1000000),
                .memory_max = 256 * MiB,
                .tasks_max = 128,
                .cpu_quota_percent = 100,
                .file_size_max = 64 * MiB,
                .tmp_size_max = 64 * MiB,
                .slice = "mcp-exec.slice",
                .probe = true,
                .systemd_version = 252,
        };
}

/* The good report with line `key` replaced by `key=value`, or dropped when
 * value is NULL. key may be NULL to change nothing. */
static char *report_with(const char *key, const char *value) {
        char *r = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&r, &n);
        bool found = key == NULL;

        ASSERT_TRUE(f);
        for (size_t i = 0; i < N_LINES; i++) {
                if (key && strcmp(good_lines[i][0], key) == 0) {
                        found = true;
                        if (value)
                                fprintf(f, "%s=%s\n", key, value);
                } else
                        fprintf(f, "%s=%s\n", good_lines[i][0], good_lines[i][1]);
        }
        ASSERT_TRUE(fclose(f) == 0);
        ASSERT_TRUE(found);
        return r;
}

static void expect_pass(const char *report, const SandboxSpec *s) {
        char *failure = NULL;
        int r = probe_evaluate(report, s, &failure);

        if (r != 0)
                fprintf(stderr, "report:\n%s\nfailed: %s\n", report, failure ? failure : "(no message)");
        ASSERT_EQ_INT(r, 0);
        ASSERT_TRUE(failure == NULL);
}

static void expect_fail(const char *report, const SandboxSpec *s, const char *must_mention) {
        char *failure = NULL;
        int r = probe_evaluate(report, s, &failure);

        if (r != -EPERM)
                fprintf(stderr, "report:\n%s\nexpected to fail naming \"%s\", got %d\n", report, must_mention, r);
        ASSERT_EQ_INT(r, -EPERM);
        ASSERT_CONTAINS(failure, must_mention);
        free(failure);
}

static void expect_line_fails(const char *key, const char *value, const char *must_mention) {
        SandboxSpec s = spec();
        char *report = report_with(key, value);

        fprintf(stderr, "   %s=%s\n", key, value ? value : "(missing)");
        expect_fail(report, &s, must_mention);
        free(report);
}

TEST(test_good_report_passes) {
        SandboxSpec s = spec();
        char *report = report_with(NULL, NULL);

        expect_pass(report, &s);

        /* Order does not matter, nor does a missing final newline, nor extra
         * keys the broker does not check. */
        {
                char *rev = NULL;
                size_t n = 0;
                FILE *f = open_memstream(&rev, &n);
                ASSERT_TRUE(f);
                fprintf(f, "future_check=whatever\n");
                for (size_t i = N_LINES; i > 0; i--)
                        fprintf(f, "%s=%s%s", good_lines[i - 1][0], good_lines[i - 1][1], i > 1 ? "\n" : "");
                ASSERT_TRUE(fclose(f) == 0);
                expect_pass(rev, &s);
                free(rev);
        }
        free(report);

        /* Limits stricter than asked for are fine. */
        report = report_with("memory_max", "134217728");
        expect_pass(report, &s);
        free(report);
        report = report_with("tasks_max", "1");
        expect_pass(report, &s);
        free(report);
        /* The capability mask is all zero in any width. */
        report = report_with("cap_bounding", "0");
        expect_pass(report, &s);
        free(report);
}

TEST(test_each_check) {
        static const struct {
                const char *key, *value, *mention;
        } t[] = {
                { "uid", "0", "DynamicUser" },
                { "uid", NULL, "DynamicUser" },
                { "euid", "0", "DynamicUser" },
                { "euid", NULL, "DynamicUser" },

                { "netdevs", "lo,eth0", "PrivateNetwork" },
                { "netdevs", "eth0,lo", "PrivateNetwork" },
                { "netdevs", "eth0", "PrivateNetwork" },
                { "netdevs", "", "PrivateNetwork" },
                { "netdevs", "unknown", "PrivateNetwork" },
                { "netdevs", "lo ", "PrivateNetwork" },
                { "netdevs", NULL, "PrivateNetwork" },

                { "af_inet", "allowed", "RestrictAddressFamilies" },
                { "af_inet", "unknown", "RestrictAddressFamilies" },
                { "af_inet", "", "RestrictAddressFamilies" },
                { "af_inet", NULL, "RestrictAddressFamilies" },

                { "usr_readonly", "0", "/usr" },
                { "usr_readonly", NULL, "/usr" },
                { "etc_readonly", "0", "/etc" },
                { "etc_readonly", NULL, "/etc" },
                { "usr_readonly", "0", "ProtectSystem" },
                { "etc_readonly", "0", "ProtectSystem" },

                { "home_hidden", "0", "ProtectHome" },
                { "home_hidden", NULL, "ProtectHome" },

                { "run_readonly", "0", "private /run" },
                { "run_readonly", NULL, "private /run" },
                { "run_entries", "systemd,dbus", "private /run" },
                { "run_entries", "dbus,systemd", "private /run" },
                { "run_entries", "lock", "private /run" },
                { "run_entries", "systemd ", "private /run" },
                { "run_entries", "", "private /run" },
                { "run_entries", NULL, "private /run" },

                /* systemd 252: PrivateTmp= won, /tmp is the host's file system. */
                { "tmp_fs", "other", "private /tmp" },
                { "tmp_fs", "missing", "private /tmp" },
                { "tmp_fs", NULL, "private /tmp" },
                { "tmp_bytes", "12884901888", "MCP_EXEC_TMP_SIZE_MAX" },
                { "tmp_bytes", "67112960", "MCP_EXEC_TMP_SIZE_MAX" }, /* one page over */
                { "tmp_bytes", "0", "MCP_EXEC_TMP_SIZE_MAX" },
                { "tmp_bytes", NULL, "MCP_EXEC_TMP_SIZE_MAX" },
                { "var_tmp_dev", "2049", "/var/tmp" },
                { "var_tmp_dev", NULL, "/var/tmp" },
                { "tmp_dev", NULL, "/var/tmp" },

                { "memory_max", "max", "MemoryMax" },
                { "memory_max", "9223372036854771712", "MemoryMax" }, /* cgroup v1 "no limit" */
                { "memory_max", "268435457", "MemoryMax" },          /* one byte over */
                { "memory_max", "536870912", "MemoryMax" },
                { "memory_max", "0", "MemoryMax" },
                { "memory_max", "unknown", "MemoryMax" },
                { "memory_max", "", "MemoryMax" },
                { "memory_max", "-1", "MemoryMax" },
                { "memory_max", "268435456 ", "MemoryMax" },
                { "memory_max", "99999999999999999999999", "MemoryMax" },
                { "memory_max", NULL, "MemoryMax" },

                { "tasks_max", "max", "TasksMax" },
                { "tasks_max", "129", "TasksMax" },
                { "tasks_max", "4194304", "TasksMax" },
                { "tasks_max", "0", "TasksMax" },
                { "tasks_max", "unknown", "TasksMax" },
                { "tasks_max", "", "TasksMax" },
                { "tasks_max", NULL, "TasksMax" },

                { "no_new_privs", "0", "NoNewPrivileges" },
                { "no_new_privs", "unknown", "NoNewPrivileges" },
                { "no_new_privs", NULL, "NoNewPrivileges" },

                { "seccomp", "0", "system call filter" },
                { "seccomp", "1", "system call filter" },
                { "seccomp", "unknown", "system call filter" },
                { "seccomp", NULL, "system call filter" },

                /* The launcher's filter: this build's program, and it denies. */
                { "seccomp_filter", "0123456789abcdef", "expected" },
                { "seccomp_filter", "unknown", "expected" },
                { "seccomp_filter", "", "expected" },
                { "seccomp_filter", NULL, "loaded nothing" },
                { "denied_io_uring_setup", "other", "io_uring_setup" },
                { "denied_io_uring_setup", "ok", "io_uring_setup" },
                { "denied_io_uring_setup", NULL, "io_uring_setup" },
                { "denied_add_key", "other", "add_key" },
                { "denied_perf_event_open", "other", "perf_event_open" },
                { "denied_perf_event_open", NULL, "perf_event_open" },

                { "cap_bounding", "000001ffffffffff", "CapabilityBoundingSet" },
                { "cap_bounding", "0000000000000001", "CapabilityBoundingSet" },
                { "cap_bounding", "8000000000000000", "CapabilityBoundingSet" },
                { "cap_bounding", "unknown", "CapabilityBoundingSet" },
                { "cap_bounding", NULL, "CapabilityBoundingSet" },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
                expect_line_fails(t[i].key, t[i].value, t[i].mention);
}

TEST(test_processes) {
        SandboxSpec s = spec();
        char *report = report_with(NULL, NULL), *ns = NULL;

        /* Every version: nothing of another uid in /proc (ProtectProc=invisible). */
        expect_line_fails("proc_others", "1", "ProtectProc=invisible");
        expect_line_fails("proc_others", "unknown", "ProtectProc=invisible");
        expect_line_fails("proc_others", NULL, "ProtectProc=invisible");

        /* A version we do not know is never taken for one. */
        s.systemd_version = 0;
        expect_fail(report, &s, "systemd's version");

        /* 257 has PrivatePIDs=: the same report (PID 2345, beside another)
         * fails there, as a missing namespace would. */
        s.systemd_version = 257;
        expect_fail(report, &s, "PrivatePIDs=, systemd 257): the probe is PID 2345");
        s.systemd_version = 258;
        expect_fail(report, &s, "PrivatePIDs=");
        free(report);

        report = report_with("pid", "1");
        s.systemd_version = 257;
        expect_fail(report, &s, "/proc lists 2345,2351");
        s.systemd_version = 256;
        expect_pass(report, &s);
        free(report);

        /* PID 1, alone: passes on 257 and on 252 alike. */
        ns = report_with("pid", "1");
        ASSERT_TRUE(strstr(ns, "proc_pids=2345,2351\n"));
        memcpy(strstr(ns, "proc_pids=2345,2351\n"), "proc_pids=1\n#######\n", strlen("proc_pids=2345,2351\n"));
        s.systemd_version = 257;
        expect_pass(ns, &s);
        s.systemd_version = 252;
        expect_pass(ns, &s);
        free(ns);
}

/* Issue 42: W^X proven where it is claimed (every unit without --jit),
 * and absent where the JIT needs it (spec->jit: JavaScript); either report
 * fails against the other spec, and anything else fails both. */
static char *jit_report(void) {
        char *a = report_with("wx_filter", "-"), *b = NULL;
        const char *const keys[] = { "wx_mmap", "wx_mprotect", "x_mprotect" };

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                char from[32], to[32], *at;
                (void) snprintf(from, sizeof from, "\n%s=EPERM\n", keys[i]);
                (void) snprintf(to, sizeof to, "\n%s=ok\n", keys[i]);
                at = strstr(a, from);
                ASSERT_TRUE(at);
                ASSERT_TRUE(asprintf(&b, "%.*s%s%s", (int) (at - a), a, to, at + strlen(from)) > 0);
                free(a);
                a = TAKE_PTR(b);
        }
        return a;
}

TEST(test_wx) {
        static const char *const keys[] = { "wx_mmap", "wx_mprotect", "x_mprotect" };
        static const char *const bad[] = { "ok", "other", "", "EPERM ", NULL };
        SandboxSpec s = spec(), j = spec();
        char *report = report_with(NULL, NULL), *jr = jit_report();

        j.jit = true;
        expect_pass(report, &s);
        expect_pass(jr, &j);
        /* A unit that says W^X to a JIT kills node; one without it where W^X
         * is claimed lies to the caller. */
        expect_fail(report, &j, "none with --jit");
        expect_fail(jr, &s, "W^X filter");
        free(report);
        {
                /* --jit and no filter, yet no writable code: node would die. */
                char *at = strstr(jr, "wx_mprotect=ok\n");
                ASSERT_TRUE(at);
                memcpy(at, "wx_mprotect=no", strlen("wx_mprotect=no"));
                expect_fail(jr, &j, "writable code for the JIT (--jit): wx_mprotect is no");
        }
        free(jr);

        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                for (size_t k = 0; k < ELEMENTSOF(bad); k++) {
                        fprintf(stderr, "   %s=%s\n", keys[i], bad[k] ?: "(missing)");
                        report = report_with(keys[i], bad[k]);
                        expect_fail(report, &s, keys[i]);
                        free(report);
                }
        /* The filter loaded must be this build's W^X program, and none with --jit. */
        expect_line_fails("wx_filter", "-", "W^X filter");
        expect_line_fails("wx_filter", digest, "W^X filter");
        expect_line_fails("wx_filter", "unknown", "W^X filter");
        expect_line_fails("wx_filter", NULL, "W^X filter");
        jr = jit_report();
        report = NULL;
        ASSERT_TRUE(asprintf(&report, "%swx_filter=%s\n", jr, digest_wx) > 0); /* the first line counts */
        expect_pass(report, &j);
        free(report);
        {
                char *at = strstr(jr, "wx_filter=-\n");
                ASSERT_TRUE(at);
                at[strlen("wx_filter=")] = 'x';
                expect_fail(jr, &j, "none with --jit");
        }
        free(jr);
}

/* Issue 41: with a wheelhouse, the run must have found it denied
 * (InaccessiblePaths=): readable, absent (it could appear later, made
 * while a unit lives), anything else or nothing refuses every run. */
TEST(test_wheelhouse_denied) {
        static const char *const bad[] = { "readable", "absent", "other", "-", "", "denied ", NULL };
        SandboxSpec s = spec();
        char *report;

        s.wheelhouse = "/var/lib/mcp-exec/wheels";
        report = report_with(NULL, NULL);
        expect_pass(report, &s);
        free(report);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                fprintf(stderr, "   inaccessible=%s\n", bad[i] ?: "(missing)");
                report = report_with("inaccessible", bad[i]);
                expect_fail(report, &s, "InaccessiblePaths=/var/lib/mcp-exec/wheels");
                free(report);
        }
        /* Without one (MCP_EXEC_WHEELHOUSE=): nothing to deny. */
        s.wheelhouse = NULL;
        report = report_with("inaccessible", "-");
        expect_pass(report, &s);
        free(report);
}

TEST(test_systemd_version) {
        static const struct {
                const char *in;
                unsigned want;  /* 0: refused */
        } t[] = {
                { "252.39-1~deb12u1", 252 },
                { "257.9-1~deb13u1", 257 },
                { "257", 257 },
                { "258~rc1", 258 },
                { "", 0 },
                { "v257", 0 },
                { "0.1", 0 },
                { "-257", 0 },
                { "99999999999999999999", 0 },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                unsigned v = 4711;
                int r = probe_parse_systemd_version(t[i].in, &v);

                if (t[i].want == 0) {
                        ASSERT_EQ_INT(r, -EINVAL);
                        ASSERT_EQ_INT((int) v, 4711);
                } else {
                        ASSERT_EQ_INT(r, 0);
                        ASSERT_EQ_INT((int) v, (int) t[i].want);
                }
        }
        ASSERT_EQ_INT(probe_parse_systemd_version(NULL, &(unsigned) { 0 }), -EINVAL);
}

TEST(test_spec_values_are_used) {
        /* The same report fails against a tighter spec: the limits come from
         * the spec, not from constants. */
        SandboxSpec s = spec();
        char *report = report_with(NULL, NULL);

        s.memory_max = 256 * MiB - 1;
        expect_fail(report, &s, "MemoryMax");
        s = spec();
        s.tasks_max = 127;
        expect_fail(report, &s, "TasksMax");
        s = spec();
        s.memory_max = 1024 * MiB;
        s.tasks_max = 4096;
        expect_pass(report, &s);
        free(report);
}

TEST(test_keys_match_whole_lines) {
        SandboxSpec s = spec();
        char *report;

        /* "euid=" must not satisfy "uid", nor a key in the middle of a line. */
        report = report_with("uid", NULL);
        expect_fail(report, &s, "DynamicUser");
        free(report);
        {
                char *r2 = NULL, *base = report_with("uid", NULL);
                ASSERT_TRUE(asprintf(&r2, "x uid=61234\n%s", base) > 0);
                expect_fail(r2, &s, "DynamicUser");
                free(r2);
                free(base);
        }
        /* A longer key with ours as prefix is another key. */
        {
                char *r2 = NULL, *base = report_with("seccomp", NULL);
                ASSERT_TRUE(asprintf(&r2, "%sseccomp_mode=2\nseccomp2=2\n", base) > 0);
                expect_fail(r2, &s, "system call filter");
                free(r2);
                free(base);
        }

        /* Empty and garbage reports. */
        expect_fail("", &s, "DynamicUser");
        expect_fail("\n\n\n", &s, "DynamicUser");
        expect_fail("garbage", &s, "DynamicUser");
        expect_fail("uid", &s, "DynamicUser");
}

TEST(test_first_failure_is_named) {
        /* Everything wrong: the first check in order is reported. */
        SandboxSpec s = spec();
        expect_fail("uid=0\neuid=0\nnetdevs=lo,eth0\naf_inet=allowed\n", &s, "uid 0");
        expect_fail("uid=1000\neuid=0\nnetdevs=lo,eth0\n", &s, "euid 0");
        expect_fail("uid=1000\neuid=1000\nnetdevs=lo,eth0\naf_inet=allowed\n", &s, "lo,eth0");
}

/* ---- fail-closed on malformed values (known bugs, see main()) ---- */

TEST(test_malformed_values_fail_closed) {
        /* A value that says nothing must not count as a pass. */
        expect_line_fails("uid", "", "DynamicUser");
        expect_line_fails("euid", "", "DynamicUser");
        expect_line_fails("uid", "unknown", "DynamicUser");
        expect_line_fails("uid", "00", "DynamicUser");
        expect_line_fails("cap_bounding", "", "CapabilityBoundingSet");
        /* A value too long for the parser's buffer must not be cut down to
         * something that passes: 300 zeros and then a capability bit. */
        {
                char longcap[302];
                memset(longcap, '0', 300);
                longcap[300] = '1';
                longcap[301] = 0;
                expect_line_fails("cap_bounding", longcap, "CapabilityBoundingSet");
        }
}

int main(int argc, char *argv[]) {
        ASSERT_EQ_INT(syscall_filter_digest(digest), 0);
        ASSERT_EQ_INT(syscall_filter_digest_wx(digest_wx), 0);
        RUN(test_malformed_values_fail_closed);
        RUN(test_good_report_passes);
        RUN(test_wheelhouse_denied);
        RUN(test_wx);
        RUN(test_each_check);
        RUN(test_processes);
        RUN(test_systemd_version);
        RUN(test_spec_values_are_used);
        RUN(test_keys_match_whole_lines);
        RUN(test_first_failure_is_named);
        return 0;
}
