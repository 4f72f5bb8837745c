/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/probe-cache.c: the self-check's verdict is used
 * only with its whole key, only when it passed, and only from a file that
 * is root's alone; every part of the key changes it. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "probe-cache.h"
#include "test-helpers.h"

static char dir[] = "/tmp/test-probe-cache-XXXXXX";
static char launcher[PATH_MAX], bootstrap[PATH_MAX];

static SandboxSpec spec(void) {
        return (SandboxSpec) {
                .launcher = launcher,
                .bootstrap = bootstrap,
                .python = "/bin/sh",
                .memory_max = 256 << 20,
                .tasks_max = 128,
                .tmp_size_max = 64 << 20,
                .file_size_max = 64 << 20,
                .cpu_quota_percent = 100,
                .max_code_bytes = 1 << 20,
                .slice = "mcp-exec.slice",
        };
}

static const ProbeCacheSystemd sd = { .version = "252.39-1~deb12u2", .units_load_usec = 123456, .boot_usec = 1733360000000000 };

static char *key_of(const SandboxSpec *s, const ProbeCacheSystemd *d) {
        char *k = NULL;
        ASSERT_EQ_INT(probe_cache_key(s, d, &k), 0);
        ASSERT_TRUE(k != NULL);
        return k;
}

static void write_file(const char *name, const char *text, mode_t mode) {
        char path[PATH_MAX];
        int fd;

        (void) snprintf(path, sizeof path, "%s/%s", dir, name);
        (void) unlink(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT((int) write(fd, text, strlen(text)), (int) strlen(text));
        ASSERT_EQ_INT(fchmod(fd, mode), 0);
        close(fd);
}

TEST(test_roundtrip) {
        SandboxSpec s = spec();
        _cleanup_free_ char *k = key_of(&s, &sd);

        probe_cache_forget(dir);
        ASSERT_FALSE(probe_cache_valid(dir, k));
        ASSERT_EQ_INT(probe_cache_store(dir, k), 0);
        ASSERT_TRUE(probe_cache_valid(dir, k));
        ASSERT_FALSE(probe_cache_valid(dir, NULL));
        probe_cache_forget(dir);
        ASSERT_FALSE(probe_cache_valid(dir, k));
}

/* Each part of the key: a verdict kept for the old one is not used. */
TEST(test_key_parts) {
        SandboxSpec s = spec();
        ProbeCacheSystemd d = sd;
        _cleanup_free_ char *k = key_of(&s, &d);

        ASSERT_EQ_INT(probe_cache_store(dir, k), 0);
#define CHANGED(stmt)                                                   \
        do {                                                            \
                SandboxSpec s2 = spec();                                \
                ProbeCacheSystemd d2 = sd;                              \
                char *k2;                                               \
                (void) s2;                                              \
                (void) d2;                                              \
                stmt;                                                   \
                k2 = key_of(&s2, &d2);                                  \
                ASSERT_FALSE(streq(k, k2));                             \
                ASSERT_FALSE(probe_cache_valid(dir, k2));               \
                free(k2);                                               \
        } while (0)
        CHANGED(d2.version = "253.1");
        CHANGED(d2.units_load_usec++);
        CHANGED(d2.boot_usec++);
        CHANGED(s2.memory_max++);
        CHANGED(s2.tasks_max++);
        CHANGED(s2.tmp_size_max++);
        CHANGED(s2.file_size_max++);
        CHANGED(s2.cpu_quota_percent++);
        CHANGED(s2.max_code_bytes++);
        CHANGED(s2.slice = "other.slice");
        CHANGED(s2.wheelhouse = "/var/lib/mcp-exec/wheels");
        CHANGED(s2.package_store = "/var/lib/mcp-exec/packages");
        CHANGED(s2.python = "/bin/true");
        /* The same binary rewritten (new mtime, size or inode): another key. */
        write_file(strrchr(launcher, '/') + 1, "a new launcher, longer", 0755);
        {
                _cleanup_free_ char *k3 = key_of(&s, &d);
                ASSERT_FALSE(streq(k, k3));
                ASSERT_FALSE(probe_cache_valid(dir, k3));
        }
        write_file(strrchr(bootstrap, '/') + 1, "a new bootstrap", 0644);
        {
                _cleanup_free_ char *k4 = key_of(&s, &d);
                ASSERT_FALSE(streq(k, k4));
        }
        ASSERT_TRUE(probe_cache_valid(dir, k));         /* the old key still matches its verdict */
#undef CHANGED
}

/* No key without every part: a missing binary or no systemd version. */
TEST(test_no_partial_key) {
        SandboxSpec s = spec();
        ProbeCacheSystemd d = sd;
        char *k = NULL;

        s.launcher = "/nonexistent/mcp-exec-launch";
        ASSERT_TRUE(probe_cache_key(&s, &d, &k) < 0);
        ASSERT_TRUE(k == NULL);
        s = spec();
        d.version = NULL;
        ASSERT_TRUE(probe_cache_key(&s, &d, &k) < 0);
        d.version = "252\nforged=1";
        ASSERT_TRUE(probe_cache_key(&s, &d, &k) < 0);
        d = sd;
        d.boot_usec = 0;
        ASSERT_TRUE(probe_cache_key(&s, &d, &k) < 0);
}

/* Only a passed verdict, well-formed, in a file root's alone. */
TEST(test_bad_files) {
        SandboxSpec s = spec();
        _cleanup_free_ char *k = key_of(&s, &sd), *good = NULL, *failed = NULL;
        json_object *j;

        j = json_object_new_object();
        json_object_object_add(j, "verdict", json_object_new_string("passed"));
        json_object_object_add(j, "key", json_object_new_string(k));
        good = strdup(json_object_to_json_string(j));
        json_object_object_add(j, "verdict", json_object_new_string("failed"));
        failed = strdup(json_object_to_json_string(j));
        json_object_put(j);

        write_file(PROBE_CACHE_FILE, good, 0600);
        ASSERT_TRUE(probe_cache_valid(dir, k));         /* the control: this file is accepted */
        write_file(PROBE_CACHE_FILE, good, 0644);
        ASSERT_FALSE(probe_cache_valid(dir, k));        /* readable by others: not ours */
        write_file(PROBE_CACHE_FILE, good, 0620);
        ASSERT_FALSE(probe_cache_valid(dir, k));
        write_file(PROBE_CACHE_FILE, failed, 0600);
        ASSERT_FALSE(probe_cache_valid(dir, k));        /* a failure is never a verdict to keep */
        write_file(PROBE_CACHE_FILE, "", 0600);
        ASSERT_FALSE(probe_cache_valid(dir, k));
        write_file(PROBE_CACHE_FILE, "{\"verdict\":\"passed\",\"key\":", 0600);
        ASSERT_FALSE(probe_cache_valid(dir, k));        /* truncated */
        write_file(PROBE_CACHE_FILE, "{\"verdict\":\"passed\"}", 0600);
        ASSERT_FALSE(probe_cache_valid(dir, k));
        write_file(PROBE_CACHE_FILE, "[1,2,3]", 0600);
        ASSERT_FALSE(probe_cache_valid(dir, k));
        {
                char link[PATH_MAX + 32], target[PATH_MAX + 32];
                (void) snprintf(target, sizeof target, "%s/elsewhere.json", dir);
                (void) snprintf(link, sizeof link, "%s/" PROBE_CACHE_FILE, dir);
                write_file("elsewhere.json", good, 0600);
                (void) unlink(link);
                ASSERT_EQ_INT(symlink(target, link), 0);
                ASSERT_FALSE(probe_cache_valid(dir, k));        /* not followed */
                /* store replaces the link, never writes through it */
                ASSERT_EQ_INT(probe_cache_store(dir, k), 0);
                ASSERT_TRUE(probe_cache_valid(dir, k));
        }
        {
                char big[9000];
                memset(big, ' ', sizeof big - 1);
                big[sizeof big - 1] = 0;
                write_file(PROBE_CACHE_FILE, big, 0600);
                ASSERT_FALSE(probe_cache_valid(dir, k));        /* over the size cap */
        }
}

int main(void) {
        ASSERT_TRUE(mkdtemp(dir) != NULL);
        (void) snprintf(launcher, sizeof launcher, "%s/launch", dir);
        (void) snprintf(bootstrap, sizeof bootstrap, "%s/bootstrap.py", dir);
        write_file("launch", "a launcher", 0755);
        write_file("bootstrap.py", "a bootstrap", 0644);
        RUN(test_roundtrip);
        RUN(test_key_parts);
        RUN(test_no_partial_key);
        RUN(test_bad_files);
        {
                char cmd[PATH_MAX + 16];
                (void) snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
                (void) system(cmd);
        }
        return 0;
}
