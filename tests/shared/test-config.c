/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/config.[ch]: config_parse() over hand-made
 * environments, the typo detector and the interpreter
 * resolution. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "language.h"
#include "macro.h"
#include "test-helpers.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

/* ---- config_parse ---- */

static uint64_t nproc(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (uint64_t) n : 1;
}

static void check_defaults(const Config *c) {
        ASSERT_STREQ(c->transport, "");
        ASSERT_STREQ(c->addr, ":8080");
        ASSERT_STREQ(c->python, "python3");
        ASSERT_EQ_U64(c->default_timeout_s, 30);
        ASSERT_EQ_U64(c->max_timeout_s, 300);
        ASSERT_EQ_U64(c->max_output_bytes, MiB);
        ASSERT_EQ_U64(c->max_stdin_bytes, MiB);
        ASSERT_EQ_U64(c->max_code_bytes, MiB);
        ASSERT_EQ_U64(c->memory_max, 256 * MiB);
        ASSERT_EQ_U64(c->tasks_max, 128);
        ASSERT_EQ_U64(c->cpu_quota_percent, 100);
        ASSERT_EQ_U64(c->file_size_max, 64 * MiB);
        ASSERT_EQ_U64(c->tmp_size_max, 64 * MiB);
        ASSERT_EQ_U64(c->max_concurrent, nproc());
        ASSERT_EQ_U64(c->max_queue, 64);
        ASSERT_EQ_U64(c->max_images, 8);
        ASSERT_EQ_U64(c->max_image_bytes, MiB);
        ASSERT_EQ_U64(c->max_files_out, 16);
        ASSERT_EQ_U64(c->max_result_bytes, 4 * MiB);
        ASSERT_EQ_U64(c->max_input_bytes, 4 * MiB);
        ASSERT_EQ_U64(c->http_max_connections, 256);
        ASSERT_EQ_U64(c->http_header_timeout_s, 10);
        ASSERT_EQ_U64(c->http_timeout_s, 30);
        ASSERT_EQ_U64(c->stdio_max_connections, 256);
        ASSERT_EQ_U64(c->stdio_max_per_uid, 32);
        ASSERT_EQ_U64(c->stdio_hello_timeout_s, 30);
        ASSERT_EQ_U64(c->session_idle_s, 600);
        ASSERT_EQ_U64(c->session_max_s, 3600);
        ASSERT_EQ_U64(c->max_sessions, 16);
        ASSERT_EQ_U64(c->max_sessions_per_caller, 4);
        ASSERT_EQ_U64(c->max_sessions_per_scope, 2);
        ASSERT_STREQ(c->auth_tokens_file, "/etc/mcp-exec/tokens");
        ASSERT_STREQ(c->node_id, "");
        ASSERT_STREQ(c->allowed_hosts, "");
        ASSERT_STREQ(c->wheelhouse, "/var/lib/mcp-exec/wheels");
        ASSERT_STREQ(c->package_store, "/var/lib/mcp-exec/packages");
}

TEST(test_config_defaults) {
        char *const empty[] = { NULL };
        /* Entries that look close to ours but are not: other names, a longer
         * name with one of ours as prefix, one of ours without '=', lower case. */
        char *const near_misses[] = {
                (char *) "PATH=/usr/bin:/bin",
                (char *) "MCP_EXEC_DEFAULT_TIMEOUT_S_EXTRA=5",
                (char *) "MCP_EXEC_MAX_TIMEOUT_SECONDS=x",
                (char *) "MCP_EXEC_TASKS_MAX",
                (char *) "mcp_exec_tasks_max=5",
                (char *) "XMCP_EXEC_MEMORY_MAX=junk",
                (char *) "MCP_EXEC_TRANSPORTX=bogus",
                (char *) "MCP_EXEC_PYTHON3=",
                NULL,
        };
        Config c = {};
        char *err = NULL;

        ASSERT_EQ_INT(config_parse(empty, &c, &err), 0);
        ASSERT_TRUE(err == NULL);
        check_defaults(&c);
        config_done(&c);
        ASSERT_TRUE(c.transport == NULL && c.addr == NULL && c.python == NULL && c.node_id == NULL &&
                    c.allowed_hosts == NULL);
        config_done(&c); /* idempotent */
        config_done(NULL);

        ASSERT_EQ_INT(config_parse(near_misses, &c, &err), 0);
        ASSERT_TRUE(err == NULL);
        check_defaults(&c);
        config_done(&c);

        /* No environment at all is the same as an empty one. */
        ASSERT_EQ_INT(config_parse(NULL, &c, NULL), 0);
        check_defaults(&c);
        config_done(&c);
}

TEST(test_config_all_set) {
        char *const env[] = {
                (char *) "MCP_EXEC_TRANSPORT=http",
                (char *) "MCP_EXEC_ADDR=127.0.0.1:9000",
                (char *) "MCP_EXEC_DEFAULT_TIMEOUT_S=10",
                (char *) "MCP_EXEC_MAX_TIMEOUT_S=20",
                (char *) "MCP_EXEC_MAX_OUTPUT_BYTES=2M",
                (char *) "MCP_EXEC_MAX_STDIN_BYTES=0",
                (char *) "MCP_EXEC_MAX_CODE_BYTES=512K",
                (char *) "MCP_EXEC_PYTHON=/usr/bin/python3",
                (char *) "MCP_EXEC_MEMORY_MAX=1G",
                (char *) "MCP_EXEC_TASKS_MAX=64",
                (char *) "MCP_EXEC_CPU_QUOTA=250%",
                (char *) "MCP_EXEC_FILE_SIZE_MAX=1M",
                (char *) "MCP_EXEC_TMP_SIZE_MAX=32M",
                (char *) "MCP_EXEC_MAX_CONCURRENT=3",
                (char *) "MCP_EXEC_MAX_QUEUE=0",
                (char *) "MCP_EXEC_NODE_ID=rack2-exec-07",
                (char *) "MCP_EXEC_ALLOWED_HOSTS=mcp.example.com, mcp.example.com:8443",
                NULL,
        };
        Config c = {};
        char *err = NULL;

        ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
        ASSERT_TRUE(err == NULL);
        ASSERT_STREQ(c.transport, "http");
        ASSERT_STREQ(c.addr, "127.0.0.1:9000");
        ASSERT_STREQ(c.python, "/usr/bin/python3");
        ASSERT_EQ_U64(c.default_timeout_s, 10);
        ASSERT_EQ_U64(c.max_timeout_s, 20);
        ASSERT_EQ_U64(c.max_output_bytes, 2 * MiB);
        ASSERT_EQ_U64(c.max_stdin_bytes, 0);
        ASSERT_EQ_U64(c.max_code_bytes, 512 * KiB);
        ASSERT_EQ_U64(c.memory_max, GiB);
        ASSERT_EQ_U64(c.tasks_max, 64);
        ASSERT_EQ_U64(c.cpu_quota_percent, 250);
        ASSERT_EQ_U64(c.file_size_max, MiB);
        ASSERT_EQ_U64(c.tmp_size_max, 32 * MiB);
        ASSERT_EQ_U64(c.max_concurrent, 3);
        ASSERT_EQ_U64(c.max_queue, 0);
        ASSERT_STREQ(c.node_id, "rack2-exec-07");
        ASSERT_STREQ(c.allowed_hosts, "mcp.example.com, mcp.example.com:8443");
        config_done(&c);
}

/* Parses a one-variable environment; returns config_parse()'s result. On
 * success *ret_value is the field named by offset. */
static int parse_one(const char *name, const char *value, size_t offset, uint64_t *ret_value, char **ret_err) {
        char *assignment = NULL;
        Config c = {};
        int r;

        ASSERT_TRUE(asprintf(&assignment, "%s=%s", name, value) > 0);
        char *const env[] = { assignment, NULL };
        r = config_parse(env, &c, ret_err);
        if (r == 0) {
                *ret_value = *(const uint64_t *) ((const uint8_t *) &c + offset);
                config_done(&c);
        }
        free(assignment);
        return r;
}

static void expect_ok(const char *name, const char *value, size_t offset, uint64_t want) {
        char *err = NULL;
        uint64_t v = 0;
        int r = parse_one(name, value, offset, &v, &err);

        if (r != 0)
                fprintf(stderr, "%s=%s: %d (%s)\n", name, value, r, err ? err : "no message");
        ASSERT_EQ_INT(r, 0);
        ASSERT_TRUE(err == NULL);
        ASSERT_EQ_U64(v, want);
}

static void expect_bad(const char *name, const char *value, size_t offset) {
        char *err = NULL;
        uint64_t v = 0;
        int r = parse_one(name, value, offset, &v, &err);

        if (r != -EINVAL)
                fprintf(stderr, "%s=%s: expected -EINVAL, got %d\n", name, value, r);
        ASSERT_EQ_INT(r, -EINVAL);
        ASSERT_CONTAINS(err, name);
        ASSERT_TRUE(strchr(err, '\n') == NULL); /* one line */
        free(err);

        /* Without a place for the message the error is the same. */
        ASSERT_EQ_INT(parse_one(name, value, offset, &v, NULL), -EINVAL);
}

TEST(test_config_ranges) {
        static const struct {
                const char *name;
                size_t offset;
                const char *min, *max;          /* smallest and largest accepted */
                uint64_t min_v, max_v;
                const char *below, *above;      /* just outside; NULL if not representable */
                const char *junk;               /* wrong kind of value */
        } t[] = {
                { "MCP_EXEC_DEFAULT_TIMEOUT_S", offsetof(Config, default_timeout_s), "1", "300", 1, 300, "0", "86401", "30s" },
                { "MCP_EXEC_MAX_TIMEOUT_S", offsetof(Config, max_timeout_s), "30", "86400", 30, 86400, "0", "86401", "5m" },
                { "MCP_EXEC_MAX_OUTPUT_BYTES", offsetof(Config, max_output_bytes), "1", "256M", 1, 256 * MiB, "0", "268435457", "1MB" },
                { "MCP_EXEC_MAX_STDIN_BYTES", offsetof(Config, max_stdin_bytes), "0", "256M", 0, 256 * MiB, NULL, "257M", "-1" },
                { "MCP_EXEC_MAX_CODE_BYTES", offsetof(Config, max_code_bytes), "1", "64M", 1, 64 * MiB, "0", "67108865", "lots" },
                { "MCP_EXEC_MEMORY_MAX", offsetof(Config, memory_max), "16M", "1024G", 16 * MiB, 1024 * GiB, "16777215", "1099511627777", "max" },
                { "MCP_EXEC_TASKS_MAX", offsetof(Config, tasks_max), "1", "65536", 1, 65536, "0", "65537", "infinity" },
                { "MCP_EXEC_CPU_QUOTA", offsetof(Config, cpu_quota_percent), "1%", "100000%", 1, 100000, "0%", "100001", "1.5%" },
                { "MCP_EXEC_FILE_SIZE_MAX", offsetof(Config, file_size_max), "4K", "1T", 4096, TiB, "4095", "1099511627777", "64 M" },
                { "MCP_EXEC_TMP_SIZE_MAX", offsetof(Config, tmp_size_max), "1M", "1024G", MiB, 1024 * GiB, "1048575", "1025G", "1MiB" },
                { "MCP_EXEC_MAX_CONCURRENT", offsetof(Config, max_concurrent), "1", "1024", 1, 1024, "0", "1025", "auto" },
                { "MCP_EXEC_MAX_QUEUE", offsetof(Config, max_queue), "0", "65536", 0, 65536, NULL, "65537", "64K" },
                { "MCP_EXEC_MAX_IMAGES", offsetof(Config, max_images), "0", "64", 0, 64, NULL, "65", "eight" },
                { "MCP_EXEC_MAX_IMAGE_BYTES", offsetof(Config, max_image_bytes), "1K", "7M", KiB, 7 * MiB, "1023", "7340033", "1MB" },
                { "MCP_EXEC_MAX_FILES_OUT", offsetof(Config, max_files_out), "0", "256", 0, 256, NULL, "257", "16 " },
                { "MCP_EXEC_MAX_RESULT_BYTES", offsetof(Config, max_result_bytes), "0", "7M", 0, 7 * MiB, NULL, "7340033", "4 MiB" },
                { "MCP_EXEC_MAX_INPUT_BYTES", offsetof(Config, max_input_bytes), "0", "256M", 0, 256 * MiB, NULL, "257M", "x" },
                { "MCP_EXEC_HTTP_MAX_CONNECTIONS", offsetof(Config, http_max_connections), "16", "16384", 16, 16384, "15", "16385", "many" },
                /* Not above MCP_EXEC_HTTP_TIMEOUT_S (30 by default). */
                { "MCP_EXEC_HTTP_HEADER_TIMEOUT_S", offsetof(Config, http_header_timeout_s), "1", "30", 1, 30, "0", "31", "10s" },
                /* Not below MCP_EXEC_HTTP_HEADER_TIMEOUT_S (10 by default). */
                { "MCP_EXEC_HTTP_TIMEOUT_S", offsetof(Config, http_timeout_s), "10", "3600", 10, 3600, "9", "3601", "30s" },
                { "MCP_EXEC_STDIO_MAX_CONNECTIONS", offsetof(Config, stdio_max_connections), "1", "16384", 1, 16384, "0", "16385", "-1" },
                { "MCP_EXEC_STDIO_MAX_PER_UID", offsetof(Config, stdio_max_per_uid), "1", "16384", 1, 16384, "0", "16385", "1e3" },
                { "MCP_EXEC_STDIO_HELLO_TIMEOUT_S", offsetof(Config, stdio_hello_timeout_s), "1", "3600", 1, 3600, "0", "3601", "1h" },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                expect_ok(t[i].name, t[i].min, t[i].offset, t[i].min_v);
                expect_ok(t[i].name, t[i].max, t[i].offset, t[i].max_v);
                if (t[i].below)
                        expect_bad(t[i].name, t[i].below, t[i].offset);
                if (t[i].above)
                        expect_bad(t[i].name, t[i].above, t[i].offset);
                expect_bad(t[i].name, t[i].junk, t[i].offset);
                expect_bad(t[i].name, "", t[i].offset);
                expect_bad(t[i].name, " 5", t[i].offset);
                expect_bad(t[i].name, "99999999999999999999999", t[i].offset);
                expect_bad(t[i].name, "18446744073709551616", t[i].offset);
        }
}

/* One MCP session's share of its caller's sessions: half, rounded up, at
 * least 1, never more than the caller's cap. */
TEST(test_config_scope_share) {
        static const struct {
                const char *caller, *scope;
                uint64_t want;
        } t[] = {
                { "1", NULL, 1 }, { "2", NULL, 1 }, { "3", NULL, 2 }, { "4", NULL, 2 }, { "9", NULL, 5 },
                { "4", "4", 4 },  { "4", "1", 1 },  { "4", "9", 4 }, { "100", "7", 7 },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                char a[64], b[64];
                char *env[] = { a, t[i].scope ? b : NULL, NULL };
                Config c = {};

                (void) snprintf(a, sizeof a, "MCP_EXEC_MAX_SESSIONS_PER_CALLER=%s", t[i].caller);
                (void) snprintf(b, sizeof b, "MCP_EXEC_MAX_SESSIONS_PER_SCOPE=%s", t[i].scope ?: "");
                ASSERT_EQ_INT(config_parse(env, &c, NULL), 0);
                ASSERT_EQ_U64(c.max_sessions_per_scope, t[i].want);
                config_done(&c);
        }
        expect_bad("MCP_EXEC_MAX_SESSIONS_PER_SCOPE", "0", offsetof(Config, max_sessions_per_scope));
        expect_bad("MCP_EXEC_AUTH_TOKENS_FILE", "etc/tokens", 0);
        {
                char *env[] = { (char *) "MCP_EXEC_AUTH_TOKENS_FILE=", NULL };
                Config c = {};

                ASSERT_EQ_INT(config_parse(env, &c, NULL), 0);
                ASSERT_STREQ(c.auth_tokens_file, "");
                config_done(&c);
        }
}

TEST(test_config_timeouts) {
        Config c = {};
        char *err = NULL;

        {
                /* Only the default, above the default maximum of 300. */
                char *const env[] = { (char *) "MCP_EXEC_DEFAULT_TIMEOUT_S=301", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_DEFAULT_TIMEOUT_S");
                ASSERT_CONTAINS(err, "MCP_EXEC_MAX_TIMEOUT_S");
                free(err);
                err = NULL;
        }
        {
                char *const env[] = { (char *) "MCP_EXEC_DEFAULT_TIMEOUT_S=60", (char *) "MCP_EXEC_MAX_TIMEOUT_S=59", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_DEFAULT_TIMEOUT_S");
                ASSERT_CONTAINS(err, "60");
                ASSERT_CONTAINS(err, "59");
                free(err);
                err = NULL;
                ASSERT_EQ_INT(config_parse(env, &c, NULL), -EINVAL);
        }
        {
                /* Only the maximum, below the default default of 30. */
                char *const env[] = { (char *) "MCP_EXEC_MAX_TIMEOUT_S=29", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_DEFAULT_TIMEOUT_S");
                free(err);
                err = NULL;
        }
        {
                /* Equal is fine. */
                char *const env[] = { (char *) "MCP_EXEC_MAX_TIMEOUT_S=45", (char *) "MCP_EXEC_DEFAULT_TIMEOUT_S=45", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_TRUE(err == NULL);
                ASSERT_EQ_U64(c.default_timeout_s, 45);
                ASSERT_EQ_U64(c.max_timeout_s, 45);
                config_done(&c);
        }
        {
                /* The headers' deadline cannot be longer than the whole request's. */
                char *const env[] = { (char *) "MCP_EXEC_HTTP_HEADER_TIMEOUT_S=20", (char *) "MCP_EXEC_HTTP_TIMEOUT_S=19", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_HTTP_HEADER_TIMEOUT_S=20");
                ASSERT_CONTAINS(err, "MCP_EXEC_HTTP_TIMEOUT_S=19");
                free(err);
                err = NULL;
        }
        {
                char *const env[] = { (char *) "MCP_EXEC_HTTP_HEADER_TIMEOUT_S=2", (char *) "MCP_EXEC_HTTP_TIMEOUT_S=2", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_EQ_U64(c.http_header_timeout_s, 2);
                ASSERT_EQ_U64(c.http_timeout_s, 2);
                config_done(&c);
        }
        {
                /* A session idles at most as long as it may live. */
                char *const env[] = { (char *) "MCP_EXEC_SESSION_MAX_S=300", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_SESSION_IDLE_S=600");
                ASSERT_CONTAINS(err, "MCP_EXEC_SESSION_MAX_S=300");
                free(err);
                err = NULL;
        }
        {
                char *const env[] = { (char *) "MCP_EXEC_SESSION_MAX_S=300", (char *) "MCP_EXEC_SESSION_IDLE_S=300",
                                      (char *) "MCP_EXEC_MAX_SESSIONS=0", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_EQ_U64(c.session_idle_s, 300);
                ASSERT_EQ_U64(c.max_sessions, 0);
                config_done(&c);
        }
}

TEST(test_config_transport) {
        static const char *const good[] = { "", "stdio", "http" };
        static const char *const bad[] = { "HTTP", "Stdio", "stdio ", " http", "https", "tcp", "std", "http\n", "stdio,http" };
        Config c = {};

        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
                char *a = NULL, *err = NULL;
                ASSERT_TRUE(asprintf(&a, "MCP_EXEC_TRANSPORT=%s", good[i]) > 0);
                char *const env[] = { a, NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_TRUE(err == NULL);
                ASSERT_STREQ(c.transport, good[i]);
                config_done(&c);
                free(a);
        }
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                char *a = NULL, *err = NULL;
                ASSERT_TRUE(asprintf(&a, "MCP_EXEC_TRANSPORT=%s", bad[i]) > 0);
                char *const env[] = { a, NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_TRANSPORT");
                free(err);
                free(a);
        }
}

/* Parses NAME=VALUE alone: 0, or -EINVAL with a one-line message naming NAME. */
static int parse_string(const char *name, const char *value, Config *ret) {
        char *a = NULL, *err = NULL;
        int r;

        ASSERT_TRUE(asprintf(&a, "%s=%s", name, value) > 0);
        char *const env[] = { a, NULL };
        r = config_parse(env, ret, &err);
        if (r < 0) {
                ASSERT_EQ_INT(r, -EINVAL);
                ASSERT_CONTAINS(err, name);
                ASSERT_TRUE(strchr(err, '\n') == NULL);
        } else
                ASSERT_TRUE(err == NULL);
        free(err);
        free(a);
        return r;
}

TEST(test_config_node_id) {
        static const char *const good[] = { "", "a", "exec1", "node-2", "0123456789abcdef0123456789abcdef" };
        static const char *const bad[] = { "Exec1", "exec.1", "exec_1", " exec1", "exec1 ", "ex/ec",
                                           "0123456789abcdef0123456789abcdef0", "n\xc3\xa9" };
        Config c = {};

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                ASSERT_EQ_INT(parse_string("MCP_EXEC_NODE_ID", good[i], &c), 0);
                ASSERT_STREQ(c.node_id, good[i]);
                config_done(&c);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_EQ_INT(parse_string("MCP_EXEC_NODE_ID", bad[i], &c), -EINVAL);
}

TEST(test_config_allowed_hosts) {
        static const char *const good[] = {
                "", "mcp.example.com", "MCP.Example.COM:443", "10.0.0.5:8080", "[::1]", "[2001:db8::5]:8443",
                "a.example, b.example:8080 ,c", "localhost,", ",,", " \t ",
        };
        static const char *const bad[] = {
                "mcp.example.com:", "mcp.example.com:0", "mcp.example.com:65536", "mcp.example.com:80x",
                "http://mcp.example.com", "mcp.example.com/", "*.example.com", "mcp example.com", "[::1",
                "[]:80", "[::1]x", "[::g]", ".example.com", "-x.example", "a.example,b_x.example", "host:80:80",
                "user@host",
        };
        Config c = {};

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                ASSERT_EQ_INT(parse_string("MCP_EXEC_ALLOWED_HOSTS", good[i], &c), 0);
                ASSERT_STREQ(c.allowed_hosts, good[i]);
                config_done(&c);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_EQ_INT(parse_string("MCP_EXEC_ALLOWED_HOSTS", bad[i], &c), -EINVAL);
}

TEST(test_config_python) {
        Config c = {};
        char *err = NULL;

        {
                char *const env[] = { (char *) "MCP_EXEC_PYTHON=", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_PYTHON");
                free(err);
                err = NULL;
        }
        {
                /* config_parse() keeps the value as given; resolving is separate. */
                char *const env[] = { (char *) "MCP_EXEC_PYTHON=python3.11", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_STREQ(c.python, "python3.11");
                config_done(&c);
        }
        {
                char *const env[] = { (char *) "MCP_EXEC_ADDR=", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_STREQ(c.addr, "");
                config_done(&c);
        }
}

/* Issue 41: MCP_EXEC_PACKAGE_STORE, what runs install from, valid as a
 * wheelhouse is, and apart from the wheelhouse (which runs never see). */
TEST(test_config_package_store) {
        static const char *const bad[] = {
                "MCP_EXEC_PACKAGE_STORE=",                      /* empty: packages are turned off by the wheelhouse */
                "MCP_EXEC_PACKAGE_STORE=var/lib/p",
                "MCP_EXEC_PACKAGE_STORE=/tmp/p",
                "MCP_EXEC_PACKAGE_STORE=/srv/p/",
                "MCP_EXEC_PACKAGE_STORE=/srv/../tmp",
                "MCP_EXEC_PACKAGE_STORE=/var/lib/mcp-exec/wheels",      /* the default wheelhouse itself */
                "MCP_EXEC_PACKAGE_STORE=/var/lib/mcp-exec/wheels/store", /* inside it */
                "MCP_EXEC_PACKAGE_STORE=/var/lib/mcp-exec",             /* holding it */
        };
        Config c = {};
        char *err = NULL;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *const env[] = { (char *) bad[i], NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "MCP_EXEC_PACKAGE_STORE");
                free(err);
                err = NULL;
        }
        {
                /* The default store inside another wheelhouse. */
                char *const env[] = { (char *) "MCP_EXEC_WHEELHOUSE=/var/lib", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), -EINVAL);
                ASSERT_CONTAINS(err, "may not be or hold the other");
                free(err);
                err = NULL;
        }
        {
                char *const env[] = { (char *) "MCP_EXEC_PACKAGE_STORE=/srv/packages",
                                      (char *) "MCP_EXEC_WHEELHOUSE=/srv/packages-raw", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_STREQ(c.package_store, "/srv/packages");
                ASSERT_STREQ(c.wheelhouse, "/srv/packages-raw");
                config_done(&c);
        }
        {
                /* Packages off: no wheelhouse to keep apart from. */
                char *const env[] = { (char *) "MCP_EXEC_WHEELHOUSE=", NULL };
                ASSERT_EQ_INT(config_parse(env, &c, &err), 0);
                ASSERT_STREQ(c.package_store, "/var/lib/mcp-exec/packages");
                config_done(&c);
        }
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_PACKAGE_STORE=/srv/p"));
}

TEST(test_config_first_assignment_wins) {
        /* Like getenv(): the first of several assignments counts, and a bad
         * later duplicate does not matter. */
        char *const env[] = { (char *) "MCP_EXEC_TASKS_MAX=7", (char *) "MCP_EXEC_TASKS_MAX=junk", NULL };
        Config c = {};

        ASSERT_EQ_INT(config_parse(env, &c, NULL), 0);
        ASSERT_EQ_U64(c.tasks_max, 7);
        config_done(&c);
}

/* ---- config_is_unknown_assignment ---- */

TEST(test_unknown_assignment) {
        size_t n = 0;

        for (const char *const *k = config_known_names; *k; k++, n++) {
                char *a = NULL;
                ASSERT_TRUE(strncmp(*k, "MCP_EXEC_", 9) == 0);
                ASSERT_TRUE(asprintf(&a, "%s=value", *k) > 0);
                ASSERT_FALSE(config_is_unknown_assignment(a));
                free(a);
                ASSERT_TRUE(asprintf(&a, "%s=", *k) > 0);
                ASSERT_FALSE(config_is_unknown_assignment(a));
                free(a);
                /* The name with one more or one less character is a typo. */
                ASSERT_TRUE(asprintf(&a, "%sS=1", *k) > 0);
                ASSERT_TRUE(config_is_unknown_assignment(a));
                free(a);
                ASSERT_TRUE(asprintf(&a, "%.*s=1", (int) strlen(*k) - 1, *k) > 0);
                ASSERT_TRUE(config_is_unknown_assignment(a));
                free(a);
        }
        ASSERT_TRUE(n > 0);

        /* Everything config_parse() and the programs' own getenv() calls read is known. */
        static const char *const parsed[] = {
                "MCP_EXEC_TRANSPORT", "MCP_EXEC_ADDR", "MCP_EXEC_DEFAULT_TIMEOUT_S", "MCP_EXEC_MAX_TIMEOUT_S",
                "MCP_EXEC_MAX_OUTPUT_BYTES", "MCP_EXEC_MAX_STDIN_BYTES", "MCP_EXEC_MAX_CODE_BYTES", "MCP_EXEC_PYTHON",
                "MCP_EXEC_MEMORY_MAX", "MCP_EXEC_TASKS_MAX", "MCP_EXEC_CPU_QUOTA", "MCP_EXEC_FILE_SIZE_MAX",
                "MCP_EXEC_TMP_SIZE_MAX", "MCP_EXEC_MAX_CONCURRENT", "MCP_EXEC_MAX_QUEUE", "MCP_EXEC_AUTH_TOKEN",
                "MCP_EXEC_ALLOWED_ORIGINS", "MCP_EXEC_IDLE_EXIT_S", "MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN",
                "MCP_EXEC_LOG_LEVEL", "MCP_EXEC_STDIO_SOCKET", "MCP_EXEC_HTTP_MAX_CONNECTIONS",
                "MCP_EXEC_HTTP_HEADER_TIMEOUT_S", "MCP_EXEC_HTTP_TIMEOUT_S", "MCP_EXEC_STDIO_MAX_CONNECTIONS",
                "MCP_EXEC_STDIO_MAX_PER_UID", "MCP_EXEC_STDIO_HELLO_TIMEOUT_S", "MCP_EXEC_MAX_IMAGES",
                "MCP_EXEC_MAX_IMAGE_BYTES", "MCP_EXEC_MAX_FILES_OUT", "MCP_EXEC_MAX_RESULT_BYTES",
                "MCP_EXEC_MAX_INPUT_BYTES",
                "MCP_EXEC_NODE_ID", "MCP_EXEC_ALLOWED_HOSTS",
        };
        for (size_t i = 0; i < sizeof parsed / sizeof parsed[0]; i++) {
                char *a = NULL;
                ASSERT_TRUE(asprintf(&a, "%s=1", parsed[i]) > 0);
                ASSERT_FALSE(config_is_unknown_assignment(a));
                free(a);
        }

        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_TIMEOUT=5"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_MEMORY=1G"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_=1"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_PYTHON_=x"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_ADD=x"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_MAX_TIMEOUT=1"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_MAX_TIMEOUT_S_=1"));
        ASSERT_TRUE(config_is_unknown_assignment("MCP_EXEC_tasks_max=1"));
        /* The '=' in the value does not count as the end of the name. */
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_ADDR=a=b"));

        /* Not ours at all. */
        ASSERT_FALSE(config_is_unknown_assignment("PATH=/bin"));
        ASSERT_FALSE(config_is_unknown_assignment("mcp_exec_foo=1"));
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXE=1"));
        ASSERT_FALSE(config_is_unknown_assignment("XMCP_EXEC_FOO=1"));
        ASSERT_FALSE(config_is_unknown_assignment(""));
        /* Not an assignment. */
        ASSERT_FALSE(config_is_unknown_assignment("MCP_EXEC_FOO"));
}

/* ---- config_resolve_python ---- */

static void expect_refused(const char *value, const char *why) {
        char *path = NULL, *err = NULL;
        int r = config_resolve_python(value, &path, &err);

        if (r != -EINVAL)
                fprintf(stderr, "config_resolve_python(\"%s\") = %d (%s), expected refusal (%s)\n",
                        value ? value : "(null)", r, path ? path : "-", why);
        ASSERT_EQ_INT(r, -EINVAL);
        ASSERT_TRUE(path == NULL);
        ASSERT_CONTAINS(err, "MCP_EXEC_PYTHON");
        free(err);
        ASSERT_EQ_INT(config_resolve_python(value, &path, NULL), -EINVAL);
        ASSERT_TRUE(path == NULL);
}

static char *make_tmp_exec(const char *dir, const char *name, mode_t mode) {
        char *p = NULL;
        int fd;

        ASSERT_TRUE(asprintf(&p, "%s/%s", dir, name) > 0);
        fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(write(fd, "#!/bin/sh\nexit 0\n", 17) == 17);
        ASSERT_TRUE(close(fd) == 0);
        ASSERT_TRUE(chmod(p, mode) == 0);
        return p;
}

TEST(test_resolve_python) {
        char *path = NULL, *err = NULL, *want = NULL;
        int r;

        /* The bare name: /usr/local/bin first, then /usr/bin, canonicalized. */
        if (access("/usr/local/bin/python3", X_OK) == 0)
                want = realpath("/usr/local/bin/python3", NULL);
        else if (access("/usr/bin/python3", X_OK) == 0)
                want = realpath("/usr/bin/python3", NULL);
        if (want) {
                r = config_resolve_python("python3", &path, &err);
                if (r < 0)
                        fprintf(stderr, "python3: %s\n", err ? err : "?");
                ASSERT_EQ_INT(r, 0);
                ASSERT_TRUE(err == NULL);
                ASSERT_TRUE(path[0] == '/');
                ASSERT_TRUE(strncmp(path, "/usr/", 5) == 0);
                ASSERT_STREQ(path, want);
                ASSERT_TRUE(access(path, X_OK) == 0);
                free(path);
                path = NULL;

                /* An absolute path is canonicalized too (python3 usually is a symlink). */
                ASSERT_EQ_INT(config_resolve_python("/usr/bin/../bin/python3", &path, &err), access("/usr/bin/python3", X_OK) == 0 ? 0 : -EINVAL);
                if (path)
                        ASSERT_STREQ(path, realpath("/usr/bin/python3", (char[PATH_MAX]) {}));
                free(path);
                free(err);
                path = err = NULL;
                free(want);
        } else
                fprintf(stderr, "no python3 in /usr/local/bin or /usr/bin, skipping the positive case\n");

        /* /bin/sh: refused when it really lies outside /usr, accepted (as the
         * canonical path) on merged-/usr systems where it is /usr/bin/... */
        {
                char *real = realpath("/bin/sh", NULL);
                ASSERT_TRUE(real);
                if (strncmp(real, "/usr/", 5) == 0) {
                        ASSERT_EQ_INT(config_resolve_python("/bin/sh", &path, &err), 0);
                        ASSERT_STREQ(path, real);
                        free(path);
                        path = NULL;
                } else
                        expect_refused("/bin/sh", "outside /usr");
                free(real);
        }

        expect_refused(NULL, "NULL");
        expect_refused("", "empty");
        expect_refused("bin/python3", "relative");
        expect_refused("./python3", "relative");
        expect_refused("../usr/bin/python3", "relative");
        /* Relative paths are refused even where they would resolve. */
        {
                char *cwd = getcwd(NULL, 0);
                ASSERT_TRUE(cwd);
                ASSERT_TRUE(chdir("/usr") == 0);
                if (access("bin/python3", X_OK) == 0) {
                        expect_refused("bin/python3", "relative, resolvable from /usr");
                        expect_refused("./bin/python3", "relative, resolvable from /usr");
                }
                ASSERT_TRUE(chdir("/usr/bin") == 0);
                if (access("python3", X_OK) == 0)
                        expect_refused("./python3", "relative, resolvable from /usr/bin");
                ASSERT_TRUE(chdir(cwd) == 0);
                free(cwd);
        }
        expect_refused("mcp-exec-no-such-interpreter-8d1f", "nonexistent");
        expect_refused("/usr/bin/mcp-exec-no-such-interpreter-8d1f", "nonexistent");
        expect_refused("/usr/bin", "a directory under /usr");
        expect_refused("/usr/", "a directory under /usr");
        expect_refused("/", "the root directory");
        expect_refused("/etc/passwd", "outside /usr, not executable");
        expect_refused("/dev/null", "a device");
        expect_refused("/proc/self/exe", "this test, outside /usr");
        if (access("/usr/include/stdio.h", F_OK) == 0)
                expect_refused("/usr/include/stdio.h", "not executable");

        /* An executable of our own, outside /usr: refused by absolute path, by
         * a path that only seems to be under /usr, and by bare name even when
         * its directory is first in $PATH. */
        {
                char dir[] = "/tmp/test-config-XXXXXX";
                char *exe, *noexec, *link = NULL, *dotdot = NULL, *old_path = NULL, *new_path = NULL;

                ASSERT_TRUE(mkdtemp(dir));
                exe = make_tmp_exec(dir, "mcp-exec-test-fake-python", 0755);
                noexec = make_tmp_exec(dir, "noexec", 0644);

                expect_refused(exe, "outside /usr");
                ASSERT_TRUE(asprintf(&dotdot, "/usr/..%s", exe) > 0);
                expect_refused(dotdot, "outside /usr after canonicalization");
                expect_refused(noexec, "outside /usr");

                if (getenv("PATH"))
                        old_path = strdup(getenv("PATH"));
                ASSERT_TRUE(asprintf(&new_path, "%s:%s", dir, old_path ? old_path : "/usr/bin") > 0);
                ASSERT_TRUE(setenv("PATH", new_path, 1) == 0);
                expect_refused("mcp-exec-test-fake-python", "only in $PATH");
                if (old_path)
                        ASSERT_TRUE(setenv("PATH", old_path, 1) == 0);
                else
                        ASSERT_TRUE(unsetenv("PATH") == 0);

                /* A symlink outside /usr to an interpreter under /usr resolves
                 * to the interpreter itself. */
                if (access("/usr/bin/python3", X_OK) == 0) {
                        ASSERT_TRUE(asprintf(&link, "%s/py", dir) > 0);
                        ASSERT_TRUE(symlink("/usr/bin/python3", link) == 0);
                        ASSERT_EQ_INT(config_resolve_python(link, &path, &err), 0);
                        ASSERT_STREQ(path, realpath("/usr/bin/python3", (char[PATH_MAX]) {}));
                        free(path);
                        path = NULL;
                        ASSERT_TRUE(unlink(link) == 0);
                }

                ASSERT_TRUE(unlink(exe) == 0);
                ASSERT_TRUE(unlink(noexec) == 0);
                ASSERT_TRUE(rmdir(dir) == 0);
                free(exe);
                free(noexec);
                free(link);
                free(dotdot);
                free(old_path);
                free(new_path);
        }
}

/* MCP_EXEC_LANGUAGES (issue 42): every language by default; a list of known
 * ones, each once, python among them; anything else names the variable. */
TEST(test_config_languages) {
        Config c = {};
        char *const none[] = { NULL };
        char *const two[] = { (char *) "MCP_EXEC_LANGUAGES=python,bash", NULL };

        ASSERT_EQ_INT(config_parse(none, &c, NULL), 0);
        ASSERT_EQ_INT(c.languages, LANGUAGES_ALL);
        config_done(&c);
        c = (Config) {};
        ASSERT_EQ_INT(config_parse(two, &c, NULL), 0);
        ASSERT_EQ_INT(c.languages, LANGUAGE_BIT(LANGUAGE_PYTHON) | LANGUAGE_BIT(LANGUAGE_BASH));
        config_done(&c);
        expect_bad("MCP_EXEC_LANGUAGES", "bash", 0);
        expect_bad("MCP_EXEC_LANGUAGES", "", 0);
        expect_bad("MCP_EXEC_LANGUAGES", "python,python", 0);
        expect_bad("MCP_EXEC_LANGUAGES", "python, bash", 0);
        expect_bad("MCP_EXEC_LANGUAGES", "python,ruby", 0);
        expect_bad("MCP_EXEC_LANGUAGES", "Python", 0);
}

int main(void) {
        RUN(test_config_defaults);
        RUN(test_config_all_set);
        RUN(test_config_ranges);
        RUN(test_config_scope_share);
        RUN(test_config_timeouts);
        RUN(test_config_transport);
        RUN(test_config_node_id);
        RUN(test_config_allowed_hosts);
        RUN(test_config_python);
        RUN(test_config_package_store);
        RUN(test_config_first_assignment_wins);
        RUN(test_unknown_assignment);
        RUN(test_resolve_python);
        RUN(test_config_languages);
        return 0;
}
