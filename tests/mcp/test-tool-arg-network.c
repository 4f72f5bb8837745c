/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-arg-network.[ch] and the `network` argument of
 * exec and session_create (issue 22): the isError texts the model reads,
 * the schemas and descriptions with and without egress policies. */

#include <errno.h>
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

TEST(test_check) {
        char *error = NULL;

        /* No network asked: nothing to check, with or without policies. */
        ASSERT_EQ_INT(tool_network_check(NULL, NULL, "uid:0", &error), 0);
        ASSERT_EQ_INT(tool_network_check(&egress, NULL, "uid:0", &error), 0);

        ASSERT_EQ_INT(tool_network_check(NULL, "pypi", "uid:0", &error), -EINVAL);
        ASSERT_STREQ(error, "network access is not enabled on this server (no egress policy configured); runs have "
                            "no network");
        error = mfree(error);
        ASSERT_EQ_INT(tool_network_check(&egress_off, "pypi", "uid:0", &error), -EINVAL);
        ASSERT_STREQ(error, TOOL_NETWORK_OFF_TEXT);
        error = mfree(error);

        ASSERT_EQ_INT(tool_network_check(&egress, "pypi", "uid:0", &error), 0);
        ASSERT_TRUE(error == NULL);

        ASSERT_EQ_INT(tool_network_check(&egress, "github", "uid:0", &error), -EINVAL);
        ASSERT_STREQ(error, "unknown network \"github\": this server's egress policies are \"pypi\", \"api\"");
        error = mfree(error);
        /* A name echoed back is cut and printable. */
        ASSERT_EQ_INT(tool_network_check(&egress, "a\nb\x1b", "uid:0", &error), -EINVAL);
        ASSERT_TRUE(!strchr(error, '\n') && !strchr(error, '\x1b'));
        error = mfree(error);

        /* CALLERS: listed callers only. */
        ASSERT_EQ_INT(tool_network_check(&egress, "api", "uid:1000", &error), 0);
        ASSERT_EQ_INT(tool_network_check(&egress, "api", "http:token:alice", &error), 0);
        ASSERT_EQ_INT(tool_network_check(&egress, "api", "uid:1001", &error), -EINVAL);
        ASSERT_CONTAINS(error, "the network \"api\" is not available to you");
        ASSERT_CONTAINS(error, "you are uid:1001");
        error = mfree(error);
        ASSERT_EQ_INT(tool_network_check(&egress, "api", "http:token:bob", &error), -EINVAL);
        error = mfree(error);
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
