/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/tools/tools-policy.[ch] and tools-config.[ch]: the
 * gateway's checks of callers and tools, and its reading of servers.d. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "strv.h"
#include "test-helpers.h"
#include "tools-config.h"
#include "tools-policy.h"

static void parse_ok(const char *text, ToolsServerConfig *c) {
        char *error = NULL;

        ASSERT_EQ_INT(tools_server_config_parse("srv", text, "/up", c, &error), 0);
        ASSERT_TRUE(!error);
}

static void parse_bad(const char *text, const char *needle) {
        ToolsServerConfig c = {};
        char *error = NULL;

        ASSERT_EQ_INT(tools_server_config_parse("srv", text, "/up", &c, &error), -EINVAL);
        ASSERT_CONTAINS(error, needle);
        ASSERT_TRUE(!c.name);
        free(error);
}

TEST(test_config_defaults) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {};

        parse_ok("# a comment\n\nCOMMAND=/usr/bin/srv\n", &c);
        ASSERT_STREQ(c.name, "srv");
        ASSERT_STREQ(c.description, "");
        ASSERT_STREQ(c.socket_path, "/up/srv.sock");
        ASSERT_TRUE(!c.callers);
        ASSERT_EQ_U64(strv_length(c.tools), 1);
        ASSERT_STREQ(c.tools[0], "*");
        ASSERT_TRUE(!c.confirmed);
        ASSERT_FALSE(c.shared);
        ASSERT_EQ_U64(c.max_calls, 200);
        ASSERT_EQ_U64(c.max_bytes, 8 * 1024 * 1024);
        ASSERT_EQ_U64(c.max_concurrent, 4);
        ASSERT_EQ_U64(c.call_timeout_s, 30);
        ASSERT_EQ_U64(c.idle_s, 300);
}

TEST(test_config_values) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {};

        parse_ok("COMMAND=/usr/bin/srv\nDESCRIPTION=\"one line\"\nCALLERS=\"uid:1000 http:token:alice\"\nTOOLS=\"read_* list_*\"\n"
                 "CONFIRMED=write_file\nINSTANCE=shared\nMAX_CALLS=5\nMAX_BYTES=1M\nMAX_CONCURRENT=2\n"
                 "CALL_TIMEOUT_S=3\nIDLE_S=9\nMEMORY_MAX=256M\nNETWORK=none\n", &c);
        ASSERT_STREQ(c.description, "one line");
        ASSERT_EQ_U64(strv_length(c.callers), 2);
        ASSERT_EQ_U64(strv_length(c.tools), 2);
        ASSERT_STREQ(c.confirmed[0], "write_file");
        ASSERT_TRUE(c.shared);
        ASSERT_EQ_U64(c.max_calls, 5);
        ASSERT_EQ_U64(c.max_bytes, 1024 * 1024);
        ASSERT_EQ_U64(c.max_concurrent, 2);
        ASSERT_EQ_U64(c.call_timeout_s, 3);
        ASSERT_EQ_U64(c.idle_s, 9);
}

/* The shared parser (server-config.c, its own tests) decides; the gateway
 * passes its refusal on, naming the file and line, and keeps nothing. */
TEST(test_config_invalid) {
        ToolsServerConfig c = {};
        char *error = NULL;

        parse_bad("COMMAND=/x\nNO_SUCH_KEY=1\n", "srv.conf:2: unknown key");
        parse_bad("COMMAND=/x\nMAX_CALLS=1\nMAX_CALLS=2\n", "srv.conf:3:");
        parse_bad("COMMAND=/x\nMAX_BYTES=1G\n", "srv.conf:2:");
        parse_bad("COMMAND=/x\nINSTANCE=sometimes\n", "srv.conf:2:");
        parse_bad("MAX_CALLS=1\n", "srv.conf");        /* neither COMMAND nor URL */
        ASSERT_EQ_INT(tools_server_config_parse("Bad-Name", "", "/up", &c, &error), -EINVAL);
        ASSERT_TRUE(error);
        free(error);
}

TEST(test_server_names) {
        ASSERT_TRUE(tools_server_name_is_valid("everything"));
        ASSERT_TRUE(tools_server_name_is_valid("a1_b"));
        ASSERT_FALSE(tools_server_name_is_valid("1a"));
        ASSERT_FALSE(tools_server_name_is_valid("a-b"));
        ASSERT_FALSE(tools_server_name_is_valid("A"));
        ASSERT_FALSE(tools_server_name_is_valid(""));
        ASSERT_FALSE(tools_server_name_is_valid("abcdefghijabcdefghijabcdefghijabc"));     /* 33 */
}

TEST(test_callers) {
        _cleanup_(tools_server_config_done) ToolsServerConfig all = {}, some = {}, none = {};

        parse_ok("COMMAND=/usr/bin/srv\n", &all);
        parse_ok("COMMAND=/usr/bin/srv\nCALLERS=\"uid:1000 http:token:alice\"\n", &some);
        parse_ok("COMMAND=/usr/bin/srv\nCALLERS=\"\"\n", &none);
        ASSERT_TRUE(tools_policy_allows_caller(&all, "uid:0"));
        ASSERT_TRUE(tools_policy_allows_caller(&some, "uid:1000"));
        ASSERT_TRUE(tools_policy_allows_caller(&some, "http:token:alice"));
        ASSERT_FALSE(tools_policy_allows_caller(&some, "uid:10000"));
        ASSERT_FALSE(tools_policy_allows_caller(&some, "http:token:alic"));
        ASSERT_FALSE(tools_policy_allows_caller(&some, NULL));
        /* Set but empty: nobody (fail closed), not everybody. */
        ASSERT_FALSE(tools_policy_allows_caller(&none, "uid:1000"));
}

static json_object *tool(const char *json) {
        json_object *t = json_tokener_parse(json);

        ASSERT_TRUE(t);
        return t;
}

TEST(test_tools_and_destructive) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {};
        _cleanup_json_ json_object *read = tool("{\"name\":\"read_file\",\"annotations\":{\"readOnlyHint\":true}}");
        _cleanup_json_ json_object *write = tool("{\"name\":\"write_file\",\"annotations\":"
                                                 "{\"destructiveHint\":true}}");
        _cleanup_json_ json_object *edit = tool("{\"name\":\"edit_file\"}");
        _cleanup_json_ json_object *move = tool("{\"name\":\"move_file\",\"annotations\":"
                                                "{\"destructiveHint\":false}}");
        _cleanup_json_ json_object *odd = tool("{\"name\":\"list_x\",\"annotations\":"
                                               "{\"readOnlyHint\":\"yes\",\"destructiveHint\":1}}");
        _cleanup_json_ json_object *both = tool("{\"name\":\"list_y\",\"annotations\":"
                                                "{\"readOnlyHint\":true,\"destructiveHint\":true}}");
        _cleanup_json_ json_object *other = tool("{\"name\":\"delete_all\",\"annotations\":"
                                                 "{\"readOnlyHint\":true}}");

        parse_ok("COMMAND=/usr/bin/srv\nTOOLS=\"read_* list_* write_file edit_file move_file\"\nCONFIRMED=\"write_*\"\n", &c);
        ASSERT_TRUE(tools_policy_allows_tool(&c, "read_file"));
        ASSERT_TRUE(tools_policy_allows_tool(&c, "list_"));
        ASSERT_FALSE(tools_policy_allows_tool(&c, "delete_all"));
        ASSERT_FALSE(tools_policy_allows_tool(&c, "xread_file"));
        ASSERT_FALSE(tools_policy_allows_tool(&c, NULL));

        ASSERT_FALSE(tools_policy_is_destructive(read));
        ASSERT_TRUE(tools_policy_is_destructive(write));
        /* The spec's defaults: destructiveHint true, readOnlyHint false. */
        ASSERT_TRUE(tools_policy_is_destructive(edit));
        ASSERT_FALSE(tools_policy_is_destructive(move));
        /* Mistyped hints are absent ones: destructive. */
        ASSERT_TRUE(tools_policy_is_destructive(odd));
        ASSERT_FALSE(tools_policy_is_destructive(both));

        ASSERT_TRUE(!tools_policy_check_call(&c, read));
        ASSERT_TRUE(!tools_policy_check_call(&c, write));       /* CONFIRMED */
        ASSERT_CONTAINS(tools_policy_check_call(&c, edit), "CONFIRMED");
        ASSERT_TRUE(!tools_policy_check_call(&c, move));
        ASSERT_CONTAINS(tools_policy_check_call(&c, odd), "destructive");
        ASSERT_CONTAINS(tools_policy_check_call(&c, other), "TOOLS");
}

/* The whole list: a name listed twice is refused if either entry is. */
TEST(test_named) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {};
        _cleanup_json_ json_object *tools = tool(
                "[{\"name\":\"twin\",\"annotations\":{\"readOnlyHint\":true}},"
                "{\"name\":\"read\",\"annotations\":{\"readOnlyHint\":true}},"
                "{\"name\":\"twin\",\"annotations\":{\"destructiveHint\":true}},"
                "{\"name\":\"write\",\"annotations\":{\"destructiveHint\":true}},"
                "{\"name\":\"write\",\"annotations\":{\"readOnlyHint\":true}},"
                "{\"name\":\"hidden\",\"annotations\":{\"readOnlyHint\":true}}]");

        parse_ok("COMMAND=/usr/bin/srv\nTOOLS=\"twin read write\"\nCONFIRMED=\"write\"\n", &c);
        ASSERT_TRUE(!tools_policy_check_named(&c, tools, "read"));
        ASSERT_CONTAINS(tools_policy_check_named(&c, tools, "twin"), "destructive");
        ASSERT_TRUE(!tools_policy_check_named(&c, tools, "write"));     /* CONFIRMED */
        ASSERT_CONTAINS(tools_policy_check_named(&c, tools, "hidden"), "TOOLS");
        ASSERT_CONTAINS(tools_policy_check_named(&c, tools, "nothing"), "no such tool");
        ASSERT_CONTAINS(tools_policy_check_named(&c, tools, NULL), "no such tool");
}

/* NETWORK=egress:POLICY: the callers an instance serves must be the
 * policy's (per caller: both lists; shared: all of its callers, else off). */
static void egress_parse(EgressConfig *e) {
        char *env[] = {
                (char *) "MCP_EXEC_EGRESS_POLICY_OPEN=a.test",
                (char *) "MCP_EXEC_EGRESS_POLICY_WEB=a.test",
                (char *) "MCP_EXEC_EGRESS_CALLERS_WEB=uid:1000 http:token:alice",
                NULL,
        };
        char *error = NULL;

        ASSERT_EQ_INT(egress_config_parse(env, e, &error), 0);
}

static void apply(const char *text, const EgressConfig *e, int want_r, const char *want_callers) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {};
        _cleanup_free_ char *joined = NULL;
        const char *why = "unset";
        size_t n = 0;

        parse_ok(text, &c);
        ASSERT_EQ_INT(tools_policy_apply_egress(&c, e, &why), want_r);
        ASSERT_TRUE(want_r == 1 ? why != NULL : why == NULL);
        if (!want_callers) {
                ASSERT_TRUE(!c.callers);
                return;
        }
        ASSERT_TRUE(c.callers);
        joined = calloc(1, 4096);
        STRV_FOREACH(x, c.callers)
                n += (size_t) snprintf(joined + n, 4096 - n, "%s%s", n ? " " : "", *x);
        ASSERT_STREQ(joined, want_callers);
}

TEST(test_egress_callers) {
        EgressConfig e = {};

        egress_parse(&e);
        /* No egress: untouched, whatever the configuration. */
        apply("COMMAND=/x\n", &e, 0, NULL);
        apply("COMMAND=/x\nCALLERS=uid:5\n", NULL, 0, "uid:5");
        /* A policy for every caller: the server's own CALLERS. */
        apply("COMMAND=/x\nNETWORK=egress:open\n", &e, 0, NULL);
        apply("COMMAND=/x\nNETWORK=egress:open\nINSTANCE=shared\n", &e, 0, NULL);
        /* Per caller: the callers both admit. */
        apply("COMMAND=/x\nNETWORK=egress:web\n", &e, 0, "uid:1000 http:token:alice");
        apply("COMMAND=/x\nNETWORK=egress:web\nCALLERS=\"uid:1001 http:token:alice\"\n", &e, 0, "http:token:alice");
        apply("COMMAND=/x\nNETWORK=egress:web\nCALLERS=uid:1001\n", &e, 0, "");
        /* Shared: all of its callers the policy's, else off. */
        apply("COMMAND=/x\nNETWORK=egress:web\nINSTANCE=shared\nCALLERS=uid:1000\n", &e, 0, "uid:1000");
        apply("COMMAND=/x\nNETWORK=egress:web\nINSTANCE=shared\nCALLERS=\"uid:1000 uid:1001\"\n", &e, 1, "");
        apply("COMMAND=/x\nNETWORK=egress:web\nINSTANCE=shared\n", &e, 1, "");
        /* A policy egressd does not have, or a bad configuration: off. */
        apply("COMMAND=/x\nNETWORK=egress:nope\n", &e, 1, "");
        apply("COMMAND=/x\nNETWORK=egress:open\n", NULL, 1, "");
        egress_config_done(&e);
}

/* The verdicts the gateway acts on: a destructive tool the operator did not
 * confirm is the one case where the user may be asked. */
TEST(test_verdict) {
        _cleanup_(tools_server_config_done) ToolsServerConfig c = {};
        _cleanup_json_ json_object *tools = tool(
                "[{\"name\":\"twin\",\"annotations\":{\"readOnlyHint\":true}},"
                "{\"name\":\"read\",\"annotations\":{\"readOnlyHint\":true}},"
                "{\"name\":\"twin\",\"annotations\":{\"destructiveHint\":true}},"
                "{\"name\":\"write\",\"annotations\":{\"destructiveHint\":true}},"
                "{\"name\":\"edit\"},"
                "{\"name\":\"hidden\",\"annotations\":{\"destructiveHint\":true}}]");
        const char *why = "x";

        parse_ok("COMMAND=/usr/bin/srv\nTOOLS=\"twin read write edit\"\nCONFIRMED=\"write\"\n", &c);
        ASSERT_EQ_INT(tools_policy_verdict(&c, tools, "read", &why), TOOLS_VERDICT_ALLOWED);
        ASSERT_TRUE(!why);
        ASSERT_EQ_INT(tools_policy_verdict(&c, tools, "write", &why), TOOLS_VERDICT_OPERATOR);
        ASSERT_TRUE(!why);
        ASSERT_EQ_INT(tools_policy_verdict(&c, tools, "edit", &why), TOOLS_VERDICT_ASK);
        ASSERT_CONTAINS(why, "CONFIRMED");
        /* Listed twice, one entry destructive: asked, never allowed outright. */
        ASSERT_EQ_INT(tools_policy_verdict(&c, tools, "twin", &why), TOOLS_VERDICT_ASK);
        /* Not in TOOLS: refused, destructive or not; no user can allow it. */
        ASSERT_EQ_INT(tools_policy_verdict(&c, tools, "hidden", &why), TOOLS_VERDICT_REFUSED);
        ASSERT_CONTAINS(why, "TOOLS");
        ASSERT_EQ_INT(tools_policy_verdict(&c, tools, "nothing", &why), TOOLS_VERDICT_REFUSED);
        ASSERT_CONTAINS(why, "no such tool");
        ASSERT_EQ_INT(tools_policy_verdict(&c, tools, NULL, &why), TOOLS_VERDICT_REFUSED);
}

int main(void) {
        RUN(test_config_defaults);
        RUN(test_config_values);
        RUN(test_config_invalid);
        RUN(test_server_names);
        RUN(test_callers);
        RUN(test_tools_and_destructive);
        RUN(test_named);
        RUN(test_egress_callers);
        RUN(test_verdict);
        return 0;
}
