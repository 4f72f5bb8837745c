/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/mcp/tool-servers.[ch]: what the exec tool tells each
 * caller of code mode's servers (only those its CALLERS allow, one line
 * each, the operator's words), reading servers.d again when it changed,
 * and the description left alone where a caller has none. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "test-helpers.h"
#include "tool-servers.h"

static char dir[] = "/tmp/test-tool-servers-XXXXXX";

static void put(const char *name, const char *text) {
        char path[256];
        int fd;

        (void) snprintf(path, sizeof path, "%s/%s", dir, name);
        (void) unlink(path);
        fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT((int) write(fd, text, strlen(text)), (int) strlen(text));
        close(fd);
}

static void gone(const char *name) {
        char path[256];

        (void) snprintf(path, sizeof path, "%s/%s", dir, name);
        (void) unlink(path);
}

static char *described(const ToolServers *s, const char *caller) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        ASSERT_TRUE(f);
        tool_servers_describe(f, s, caller);
        ASSERT_EQ_INT(fclose(f), 0);
        return text;
}

TEST(test_describe) {
        _cleanup_(tool_servers_freep) ToolServers *s = NULL;
        _cleanup_free_ char *all = NULL, *alice = NULL, *bob = NULL;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_EQ_INT(tool_servers_new(dir, &s), 0);

        /* Nothing there: off, nothing said. */
        tool_servers_refresh(s);
        ASSERT_FALSE(tool_servers_enabled(s));
        all = described(s, "uid:0");
        ASSERT_STREQ(all, "");
        free(TAKE_PTR(all));

        put("everything.conf", "DESCRIPTION=\"The reference server\"\nCOMMAND=\"/usr/bin/node /srv/e.js stdio\"\n");
        put("memory.conf", "COMMAND=/usr/bin/node\nCALLERS=\"http:token:alice uid:1000\"\n");
        put("broken.conf", "COMMAND=relative/path\n");
        put("notes.txt", "not a server\n");
        tool_servers_refresh(s);
        ASSERT_TRUE(tool_servers_enabled(s));
        ASSERT_TRUE(tool_servers_per_caller(s));

        alice = described(s, "http:token:alice");
        ASSERT_CONTAINS(alice, "import mcp_servers");
        ASSERT_CONTAINS(alice, "  - everything: The reference server\n");
        ASSERT_CONTAINS(alice, "  - memory\n");
        ASSERT_TRUE(!strstr(alice, "broken"));

        /* bob is not in memory's CALLERS: he does not see it. */
        bob = described(s, "http:token:bob");
        ASSERT_CONTAINS(bob, "  - everything: The reference server\n");
        ASSERT_TRUE(!strstr(bob, "memory"));

        /* A change is read again: memory for everyone now, everything gone. */
        put("memory.conf", "COMMAND=/usr/bin/node\nDESCRIPTION=\"Knowledge graph\"\n");
        gone("everything.conf");
        tool_servers_refresh(s);
        ASSERT_FALSE(tool_servers_per_caller(s));
        free(TAKE_PTR(bob));
        bob = described(s, "http:token:bob");
        ASSERT_CONTAINS(bob, "  - memory: Knowledge graph\n");
        ASSERT_TRUE(!strstr(bob, "everything"));
}

TEST(test_annotate) {
        _cleanup_(tool_servers_freep) ToolServers *s = NULL;
        _cleanup_json_ json_object *def = json_tokener_parse("{\"name\":\"exec\",\"description\":\"Runs code.\"}");

        ASSERT_TRUE(def);
        ASSERT_EQ_INT(tool_servers_new(dir, &s), 0);
        put("memory.conf", "COMMAND=/usr/bin/node\nCALLERS=uid:1000\n");
        tool_servers_refresh(s);

        /* Nothing for this caller: the definition is as it was. */
        ASSERT_EQ_INT(tool_servers_annotate(def, s, "uid:1001"), 0);
        ASSERT_STREQ(json_get_string(def, "description"), "Runs code.");
        ASSERT_EQ_INT(tool_servers_annotate(def, NULL, "uid:1000"), 0);
        ASSERT_STREQ(json_get_string(def, "description"), "Runs code.");

        ASSERT_EQ_INT(tool_servers_annotate(def, s, "uid:1000"), 0);
        ASSERT_TRUE(strncmp(json_get_string(def, "description"), "Runs code.\n- Tools of other MCP servers", 38) == 0);
        ASSERT_CONTAINS(json_get_string(def, "description"), "  - memory\n");
}

/* NETWORK=egress:POLICY: described as the gateway serves it, to callers
 * its policy's CALLERS admit too; a policy egressd lacks, to nobody. */
TEST(test_egress) {
        _cleanup_(tool_servers_freep) ToolServers *s = NULL;
        _cleanup_free_ char *error = NULL, *a = NULL, *b = NULL;
        char *env[] = { (char *) "MCP_EXEC_EGRESS_POLICY_WEB=allowed.test :80",
                        (char *) "MCP_EXEC_EGRESS_POLICY_NARROW=allowed.test :80",
                        (char *) "MCP_EXEC_EGRESS_CALLERS_NARROW=uid:4242", NULL };
        EgressConfig egress = {};

        ASSERT_EQ_INT(egress_config_parse(env, &egress, &error), 0);
        ASSERT_EQ_INT(tool_servers_new(dir, &s), 0);
        tool_servers_set_egress(s, &egress);
        put("memory.conf", "COMMAND=/usr/bin/node\nNETWORK=egress:narrow\n");
        put("web.conf", "COMMAND=/usr/bin/node\nNETWORK=egress:web\n");       /* every caller */
        put("ghost.conf", "COMMAND=/usr/bin/node\nNETWORK=egress:nope\n");
        put("shared.conf", "COMMAND=/usr/bin/node\nNETWORK=egress:narrow\nINSTANCE=shared\n"
                           "CALLERS=\"uid:4242 uid:1000\"\n");
        tool_servers_refresh(s);

        a = described(s, "uid:1000");
        ASSERT_CONTAINS(a, "  - web\n");
        ASSERT_TRUE(!strstr(a, "memory") && !strstr(a, "ghost") && !strstr(a, "shared"));
        b = described(s, "uid:4242");
        ASSERT_CONTAINS(b, "  - web\n");
        ASSERT_CONTAINS(b, "  - memory\n");
        /* Its one instance would act for uid:1000 too, whom the policy does not admit: off. */
        ASSERT_TRUE(!strstr(b, "ghost") && !strstr(b, "shared"));
        gone("ghost.conf");
        gone("shared.conf");
        gone("web.conf");
        /* No server lists CALLERS, but memory's policy does: not for a shared cache. */
        tool_servers_refresh(s);
        ASSERT_TRUE(tool_servers_per_caller(s));
        egress_config_done(&egress);
}

int main(void) {
        RUN(test_describe);
        RUN(test_annotate);
        RUN(test_egress);
        /* Clean up what the tests left. */
        gone("memory.conf");
        gone("broken.conf");
        gone("notes.txt");
        (void) rmdir(dir);
        return 0;
}
