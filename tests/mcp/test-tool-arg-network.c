/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-arg-network.[ch] and the `network` argument of
 * exec and session_create (issue 22): the isError texts the model reads,
 * the schemas and descriptions with and without egress policies. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "revision.h"
#include "test-helpers.h"
#include "tool-arg-network.h"
#include "tool-config.h"
#include "tool-exec.h"
#include "tool-session.h"

static char *pypi_hosts[] = { (char *) "pypi.org", (char *) "files.pythonhosted.org", NULL };
static char *api_hosts[] = { (char *) "*.example.com", NULL };
static char *api_callers[] = { (char *) "uid:1000", (char *) "http:token:alice", NULL };

static EgressPolicy policies[] = {
        { .name = (char *) "pypi", .hosts = pypi_hosts, .ports = { 443 }, .n_ports = 1 },
        { .name = (char *) "api", .hosts = api_hosts, .ports = { 443, 80 }, .n_ports = 2, .callers = api_callers },
};

static const EgressConfig egress = {
        .policies = policies,
        .n_policies = ELEMENTSOF(policies),
        .max_connections = 8,
        .max_bytes = 1 << 20,
};
static const EgressConfig egress_off = {};

static McpServerConfig config = {
        TOOL_CONFIG,
        .max_sessions = 4,
        .max_sessions_per_caller = 2,
        .session_idle_s = 600,
        .session_max_s = 3600,
};

/* One check of the network argument and what it must give: want NULL for
 * allowed, else the isError text (all of it, or parts of it with part set),
 * which is always printable. */
typedef struct NetworkCase {
        const EgressConfig *egress;
        const char *network, *caller;
        const char *want, *want_also;
        bool part;
} NetworkCase;

static void check_cases(const NetworkCase *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const NetworkCase *c = &cases[i];
                char *error = NULL;

                fprintf(stderr, "case %zu: %s for %s\n", i, c->network ?: "(none)", c->caller);
                if (!c->want) {
                        ASSERT_EQ_INT(tool_network_check(c->egress, c->network, c->caller, &error), 0);
                        ASSERT_TRUE(error == NULL);
                        continue;
                }
                ASSERT_EQ_INT(tool_network_check(c->egress, c->network, c->caller, &error), -EINVAL);
                ASSERT_TRUE(error && !strchr(error, '\n') && !strchr(error, '\x1b'));
                if (c->part)
                        ASSERT_CONTAINS(error, c->want);
                else
                        ASSERT_STREQ(error, c->want);
                if (c->want_also)
                        ASSERT_CONTAINS(error, c->want_also);
                free(error);
        }
}

TEST(test_check) {
        static const NetworkCase cases[] = {
                /* No network asked: nothing to check, with or without policies. */
                { .caller = "uid:0" },
                { .egress = &egress, .caller = "uid:0" },
                { .network = "pypi", .caller = "uid:0",
                  .want = "network access is not enabled on this server (no egress policy configured); runs have "
                          "no network" },
                { .egress = &egress_off, .network = "pypi", .caller = "uid:0", .want = TOOL_NETWORK_OFF_TEXT },
                { .egress = &egress, .network = "pypi", .caller = "uid:0" },
                { .egress = &egress, .network = "github", .caller = "uid:0",
                  .want = "unknown network \"github\": this server's egress policies are \"pypi\", \"api\"" },
                /* A name echoed back is cut and printable. */
                { .egress = &egress, .network = "a\nb\x1b", .caller = "uid:0", .want = "unknown network",
                  .part = true },
                /* CALLERS: listed callers only. */
                { .egress = &egress, .network = "api", .caller = "uid:1000" },
                { .egress = &egress, .network = "api", .caller = "http:token:alice" },
                { .egress = &egress, .network = "api", .caller = "uid:1001",
                  .want = "the network \"api\" is not available to you", .want_also = "you are uid:1001",
                  .part = true },
                { .egress = &egress, .network = "api", .caller = "http:token:bob",
                  .want = "the network \"api\" is not available to you", .part = true },
        };

        check_cases(cases, ELEMENTSOF(cases));
}

static json_object *schema_props(json_object *tool) {
        return json_get(json_get(tool, "inputSchema"), "properties");
}

TEST(test_definitions) {
        const McpRevision *rev = mcp_revision_find("2025-11-25");
        McpServerConfig on = config, off = config;
        _cleanup_json_ json_object *exec_on = NULL, *exec_off = NULL, *create_on = NULL, *create_off = NULL;
        json_object *n;
        const char *d;

        on.egress = &egress;
        off.egress = &egress_off;
        exec_on = tool_exec_definition(&on, rev);
        exec_off = tool_exec_definition(&off, rev);
        create_on = tool_session_create_definition(&on, rev);
        create_off = tool_session_create_definition(&off, rev);
        ASSERT_TRUE(exec_on && exec_off && create_on && create_off);

        /* Off: the definitions are what they always were. */
        ASSERT_TRUE(!json_get(schema_props(exec_off), "network"));
        ASSERT_TRUE(!json_get(schema_props(create_off), "network"));
        ASSERT_TRUE(!strstr(json_get_string(exec_off, "description"), "egress"));
        ASSERT_TRUE(!strstr(json_get_string(create_off, "description"), "egress"));

        n = json_get(schema_props(exec_on), "network");
        ASSERT_STREQ(json_get_string(n, "type"), "string");
        ASSERT_EQ_INT((int) json_object_array_length(json_get(n, "enum")), 2);
        ASSERT_TRUE(json_get(schema_props(create_on), "network"));
        d = json_get_string(exec_on, "description");
        ASSERT_CONTAINS(d, "\"pypi\" (pypi.org, files.pythonhosted.org; port 443)");
        ASSERT_CONTAINS(d, "\"api\" (*.example.com; ports 443, 80; some callers only)");
        ASSERT_CONTAINS(d, "no DNS");
        d = json_get_string(create_on, "description");
        ASSERT_CONTAINS(d, "keeps that network for all its calls");
        ASSERT_CONTAINS(d, "\"pypi\" (pypi.org");
}

TEST(test_exec_arguments) {
        _cleanup_json_ json_object *net = json_tokener_parse("{\"code\":\"1\",\"network\":\"pypi\"}"),
                                   *net_num = json_tokener_parse("{\"code\":\"1\",\"network\":[]}"),
                                   *net_null = json_tokener_parse("{\"code\":\"1\",\"network\":null}"),
                                   *in_session = json_tokener_parse(
                                           "{\"code\":\"1\",\"network\":\"pypi\",\"session\":\"x.0\"}");
        McpServerConfig off = config;
        char *error = NULL;
        ExecArgs a = {};

        /* Known even when egress is off, so that the check can say so
         * rather than "unknown argument". */
        off.egress = &egress_off;
        ASSERT_EQ_INT(tool_exec_parse_arguments(&off, net, &a, &error), 0);
        ASSERT_STREQ(a.network, "pypi");
        exec_args_done(&a);
        a = (ExecArgs) {};
        ASSERT_EQ_INT(tool_exec_parse_arguments(&off, net_null, &a, &error), 0);
        ASSERT_TRUE(a.network == NULL);
        exec_args_done(&a);
        a = (ExecArgs) {};
        ASSERT_EQ_INT(tool_exec_parse_arguments(&off, net_num, &a, &error), -EINVAL);
        ASSERT_CONTAINS(error, "\"network\" must be the name of an egress policy");
        error = mfree(error);
        /* A session has the network it was created with. */
        ASSERT_EQ_INT(tool_exec_parse_arguments(&config, in_session, &a, &error), -EINVAL);
        ASSERT_CONTAINS(error, "\"network\" cannot be given with \"session\"");
        error = mfree(error);
}

int main(void) {
        RUN(test_check);
        RUN(test_definitions);
        RUN(test_exec_arguments);
        return 0;
}
