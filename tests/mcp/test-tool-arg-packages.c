/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-arg-packages.[ch] and the `packages` argument of
 * exec and session_create (issue 23): the schemas and descriptions with and
 * without a wheelhouse, every isError text the model reads, and when the
 * manifest is read again. */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "package-spec.h"
#include "revision.h"
#include "test-helpers.h"
#include "tool-arg-packages.h"
#include "tool-config.h"
#include "tool-exec.h"
#include "tool-session.h"

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TWO_PROJECTS HASH "  a-1.0-py3-none-any.whl\n" HASH "  b-2.0-py3-none-any.whl\n" HASH "  b-2.1-py3-none-any.whl\n"

static char dir[] = "/tmp/test-tool-packages.XXXXXX";
static char manifest[128];

static McpServerConfig config = {
        TOOL_CONFIG,
        .max_sessions = 4,
        .max_sessions_per_caller = 2,
        .session_idle_s = 600,
        .session_max_s = 3600,
};

/* Replaces the manifest by rename, as `mcp-exec wheels` does. */
static void write_manifest(const char *text) {
        char tmp[160];
        FILE *f;

        (void) snprintf(tmp, sizeof tmp, "%s.new", manifest);
        f = fopen(tmp, "we");
        ASSERT_TRUE(f);
        ASSERT_TRUE(fputs(text, f) >= 0 || !*text);
        ASSERT_TRUE(fclose(f) == 0);
        ASSERT_TRUE(rename(tmp, manifest) == 0);
}

static int check(ToolPackages *p, const char *json, char **error) {
        _cleanup_json_ json_object *v = json_tokener_parse(json);

        ASSERT_TRUE(v || streq(json, "null"));
        return tool_packages_check(p, v, error);
}

static void expect_error(ToolPackages *p, const char *json, const char *want) {
        char *error = NULL;

        ASSERT_EQ_INT(check(p, json, &error), -EINVAL);
        ASSERT_STREQ(error, want);
        free(error);
}

/* One packages argument (JSON) and what checking it must give: want NULL
 * for allowed, else the isError text (all of it, or a part of it with part
 * set), which is always printable. */
typedef struct PackagesCase {
        const char *json, *want;
        bool part;
} PackagesCase;

static void check_cases(ToolPackages *p, const PackagesCase *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const PackagesCase *c = &cases[i];
                char *error = NULL;

                fprintf(stderr, "case %zu: %s\n", i, c->json);
                if (!c->want) {
                        ASSERT_EQ_INT(check(p, c->json, &error), 0);
                        ASSERT_TRUE(!error);
                        continue;
                }
                ASSERT_EQ_INT(check(p, c->json, &error), -EINVAL);
                ASSERT_TRUE(error && !strchr(error, '\n') && !strchr(error, '\x1b'));
                if (c->part)
                        ASSERT_CONTAINS(error, c->want);
                else
                        ASSERT_STREQ(error, c->want);
                free(error);
        }
}

static json_object *schema_props(json_object *tool) {
        return json_get(json_get(tool, "inputSchema"), "properties");
}

TEST(test_off) {
        static const PackagesCase off_cases[] = {
                { .json = "null" },
                { .json = "[]" },
                /* The type is checked first, whatever the configuration. */
                { .json = "\"polars\"", .want = TOOL_PACKAGES_NOT_ARRAY_TEXT },
                { .json = "[\"a\",1]", .want = TOOL_PACKAGES_NOT_ARRAY_TEXT },
        };
        _cleanup_(tool_packages_freep) ToolPackages *none = NULL, *zero = NULL, *missing = NULL;
        char want[512];
        char *error = NULL;

        /* Not configured: off, and saying so. */
        ASSERT_EQ_INT(tool_packages_new("", 16, &none), 0);
        tool_packages_refresh(none);
        ASSERT_FALSE(tool_packages_enabled(none));
        ASSERT_FALSE(tool_packages_enabled(NULL));
        expect_error(none, "[\"a\"]",
                     "packages are not enabled on this server: the operator has not configured a wheelhouse "
                     "(MCP_EXEC_WHEELHOUSE, MCP_EXEC_MAX_PACKAGES); runs have only the preinstalled modules");
        expect_error(NULL, "[\"a\"]",
                     "packages are not enabled on this server: the operator has not configured a wheelhouse "
                     "(MCP_EXEC_WHEELHOUSE, MCP_EXEC_MAX_PACKAGES); runs have only the preinstalled modules");
        ASSERT_EQ_INT(tool_packages_new(dir, 0, &zero), 0);
        write_manifest(TWO_PROJECTS);
        tool_packages_refresh(zero);
        ASSERT_FALSE(tool_packages_enabled(zero));

        /* No manifest, then an empty one: off, naming the wheelhouse. */
        ASSERT_EQ_INT(unlink(manifest), 0);
        ASSERT_EQ_INT(tool_packages_new(dir, 16, &missing), 0);
        tool_packages_refresh(missing);
        ASSERT_FALSE(tool_packages_enabled(missing));
        (void) snprintf(want, sizeof want,
                        "packages are not enabled on this server: its wheelhouse %s is empty or missing; the operator "
                        "fills it with `mcp-exec wheels add NAME`",
                        dir);
        expect_error(missing, "[\"a\"]", want);
        write_manifest("");
        tool_packages_refresh(missing);
        ASSERT_FALSE(tool_packages_enabled(missing));
        expect_error(missing, "[\"a\"]", want);
        /* Unreadable: off, and why. */
        write_manifest("not a manifest\n");
        tool_packages_refresh(missing);
        ASSERT_FALSE(tool_packages_enabled(missing));
        ASSERT_EQ_INT(check(missing, "[\"a\"]", &error), -EINVAL);
        ASSERT_CONTAINS(error, "cannot be read (Bad message)");
        error = mfree(error);

        /* Nothing asked: nothing to refuse, on or off. */
        check_cases(none, off_cases, ELEMENTSOF(off_cases));
        ASSERT_EQ_INT(tool_packages_check(none, NULL, &error), 0);
        ASSERT_TRUE(!error);
}

TEST(test_check) {
        static const PackagesCase cases[] = {
                { .json = "[\"a\"]" },
                { .json = "[\"A==1.0\",\"b[x]>=2,<3\"]" },
                { .json = "{\"a\":1}", .want = TOOL_PACKAGES_NOT_ARRAY_TEXT },
                { .json = "[null]", .want = TOOL_PACKAGES_NOT_ARRAY_TEXT },
                { .json = "[\"--index-url=http://evil/\"]",
                  .want = "'--index-url=http://evil/' is not a package spec: expected NAME, NAME==VERSION, "
                          "NAME[extra]>=V,<W (a project name, optional extras and version clauses; no URLs, "
                          "options, markers or spaces)" },
                /* An echo is printable and cut. */
                { .json = "[\"a\\n\\u001b[31m b\"]", .want = "is not a package spec", .part = true },
                { .json = "[\"a\",\"b\",\"a\",\"b\"]",
                  .want = "\"packages\" has 4 entries, more than this server's limit of 3 (MCP_EXEC_MAX_PACKAGES)" },
                /* The same project twice, however it is spelled. */
                { .json = "[\"b==2.0\",\"B>1\"]",
                  .want = "the package 'b' is asked for twice in \"packages\": give each package once, with all "
                          "its version clauses in one spec (NAME>=1,<2)" },
                { .json = "[\"foo\"]",
                  .want = "package 'foo' is not in this server's wheelhouse; it has: a (1.0), b (2.0, 2.1)" },
                { .json = "[\"a\",\"Foo_Bar==1\",\"c\"]",
                  .want = "packages 'foo-bar', 'c' are not in this server's wheelhouse; it has: a (1.0), "
                          "b (2.0, 2.1)" },
        };
        _cleanup_(tool_packages_freep) ToolPackages *p = NULL;

        write_manifest(TWO_PROJECTS);
        ASSERT_EQ_INT(tool_packages_new(dir, 3, &p), 0);
        tool_packages_refresh(p);
        ASSERT_TRUE(tool_packages_enabled(p));
        check_cases(p, cases, ELEMENTSOF(cases));
}

TEST(test_refresh) {
        _cleanup_(tool_packages_freep) ToolPackages *p = NULL;
        struct timespec times[2];
        struct stat st;
        char *error = NULL;

        write_manifest(HASH "  a-1.0-py3-none-any.whl\n");
        ASSERT_EQ_INT(tool_packages_new(dir, 16, &p), 0);
        /* Nothing is read before the first look. */
        ASSERT_FALSE(tool_packages_enabled(p));
        tool_packages_refresh(p);
        ASSERT_EQ_INT(check(p, "[\"a\"]", &error), 0);
        ASSERT_EQ_INT(check(p, "[\"c\"]", &error), -EINVAL);
        error = mfree(error);

        /* Rewritten in place, same size and times: not read again (one
         * stat() per look, a read only on a change). */
        ASSERT_EQ_INT(stat(manifest, &st), 0);
        {
                int fd = open(manifest, O_WRONLY | O_CLOEXEC);
                ASSERT_TRUE(fd >= 0);
                ASSERT_TRUE(pwrite(fd, "c", 1, strlen(HASH) + 2) == 1);
                ASSERT_EQ_INT(close(fd), 0);
        }
        times[0] = st.st_atim;
        times[1] = st.st_mtim;
        ASSERT_EQ_INT(utimensat(AT_FDCWD, manifest, times, 0), 0);
        tool_packages_refresh(p);
        ASSERT_EQ_INT(check(p, "[\"a\"]", &error), 0);

        /* Replaced (a new inode): read again. */
        write_manifest(HASH "  c-1.0-py3-none-any.whl\n");
        tool_packages_refresh(p);
        ASSERT_EQ_INT(check(p, "[\"c\"]", &error), 0);
        ASSERT_EQ_INT(check(p, "[\"a\"]", &error), -EINVAL);
        error = mfree(error);

        /* Gone: off. */
        ASSERT_EQ_INT(unlink(manifest), 0);
        tool_packages_refresh(p);
        ASSERT_FALSE(tool_packages_enabled(p));
}

TEST(test_definitions) {
        const McpRevision *rev = mcp_revision_find("2025-11-25");
        _cleanup_(tool_packages_freep) ToolPackages *p = NULL, *off = NULL;
        _cleanup_json_ json_object *exec_on = NULL, *exec_off = NULL, *create_on = NULL, *create_off = NULL;
        McpServerConfig c_on = config, c_off = config;
        json_object *s;
        const char *d;

        write_manifest(TWO_PROJECTS);
        ASSERT_EQ_INT(tool_packages_new(dir, 5, &p), 0);
        ASSERT_EQ_INT(tool_packages_new("", 5, &off), 0);
        tool_packages_refresh(p);
        c_on.packages = p;
        c_off.packages = off;
        exec_on = tool_exec_definition(&c_on, rev);
        exec_off = tool_exec_definition(&c_off, rev);
        create_on = tool_session_create_definition(&c_on, rev);
        create_off = tool_session_create_definition(&c_off, rev);
        ASSERT_TRUE(exec_on && exec_off && create_on && create_off);

        /* Off: the definitions are what they always were. */
        ASSERT_TRUE(!json_get(schema_props(exec_off), "packages"));
        ASSERT_TRUE(!json_get(schema_props(create_off), "packages"));
        ASSERT_TRUE(!strstr(json_get_string(exec_off, "description"), "wheelhouse"));
        ASSERT_CONTAINS(json_get_string(exec_off, "description"), "pip install and downloads fail");
        ASSERT_TRUE(!strstr(json_get_string(create_off, "description"), "packages"));

        s = json_get(schema_props(exec_on), "packages");
        ASSERT_STREQ(json_get_string(s, "type"), "array");
        ASSERT_EQ_INT(json_get_int64(s, "maxItems", -1), 5);
        ASSERT_STREQ(json_get_string(json_get(s, "items"), "type"), "string");
        ASSERT_EQ_INT(json_get_int64(json_get(s, "items"), "maxLength", -1), PACKAGE_SPEC_MAX);
        ASSERT_TRUE(json_get(schema_props(create_on), "packages"));
        d = json_get_string(exec_on, "description");
        ASSERT_CONTAINS(d, "- Packages you can ask for with `packages` (installed offline from this server's wheelhouse "
                           "before your code runs; `pip install NAME` in your code also works for these), at most 5 "
                           "per call: a (1.0), b (2.0, 2.1).");
        ASSERT_CONTAINS(d, "pip install works only for the wheelhouse's packages");
        d = json_get_string(create_on, "description");
        ASSERT_CONTAINS(d, "A session created with \"packages\" has them installed before its first call's code");
        ASSERT_CONTAINS(d, "a (1.0), b (2.0, 2.1).");
}

TEST(test_arguments) {
        _cleanup_json_ json_object *both = json_tokener_parse(
                "{\"code\":\"1\",\"session\":\"x.0\",\"packages\":[\"a\"]}"),
                                   *null = json_tokener_parse("{\"code\":\"1\",\"packages\":null}"),
                                   *odd = json_tokener_parse("{\"code\":\"1\",\"packages\":5}");
        char *error = NULL;
        ExecArgs a = {};

        /* Known always, taken as given (checked later), with "session" too. */
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, both, &a, &error), 0);
        ASSERT_TRUE(a.packages == json_object_object_get(both, "packages"));
        ASSERT_STREQ(a.session, "x.0");
        exec_args_done(&a);
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, null, &a, &error), 0);
        ASSERT_TRUE(!a.packages);
        exec_args_done(&a);
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, odd, &a, &error), 0);
        ASSERT_TRUE(a.packages);
        exec_args_done(&a);
        ASSERT_TRUE(!error);
}

int main(void) {
        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(manifest, sizeof manifest, "%s/%s", dir, WHEELHOUSE_MANIFEST);
        RUN(test_off);
        RUN(test_check);
        RUN(test_refresh);
        RUN(test_definitions);
        RUN(test_arguments);
        (void) unlink(manifest);
        (void) rmdir(dir);
        return 0;
}
