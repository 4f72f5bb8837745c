/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/server-config.[ch]: servers.d/NAME.conf, good
 * files and every kind of bad one (the message names file and line), and
 * the directory loader (bad files only turn their own server off). */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "server-config.h"
#include "strv.h"
#include "test-helpers.h"

#define MiB (UINT64_C(1) << 20)

static ServerConfig *parse_ok(const char *name, const char *text) {
        ServerConfig *c = NULL;
        char *error = NULL;
        int r = server_config_parse(name, "/x/servers.d/t.conf", text, strlen(text), &c, &error);

        if (r < 0)
                fprintf(stderr, "unexpected error %d: %s\n", r, error ?: "(none)");
        ASSERT_EQ_INT(r, 0);
        ASSERT_TRUE(c && !error);
        return c;
}

/* Expects -EINVAL, a one-line message that starts with "PATH:LINE: " (or
 * "PATH: " for line 0) and contains needle; ret untouched. */
static void expect_bad_n(const char *name, const char *text, size_t len, unsigned line, const char *needle) {
        ServerConfig *c = (ServerConfig *) 0x1;
        char *error = NULL, prefix[64];

        ASSERT_EQ_INT(server_config_parse(name, "/x/servers.d/t.conf", text, len, &c, &error), -EINVAL);
        ASSERT_TRUE(c == (ServerConfig *) 0x1);
        ASSERT_TRUE(error);
        if (line > 0)
                snprintf(prefix, sizeof prefix, "/x/servers.d/t.conf:%u: ", line);
        else
                snprintf(prefix, sizeof prefix, "/x/servers.d/t.conf: ");
        if (!strneq(error, prefix, strlen(prefix)) || !strstr(error, needle))
                ASSERT_FAIL_("expected '%s...%s', got '%s'", prefix, needle, error);
        ASSERT_TRUE(!strchr(error, '\n'));
        free(error);
        /* Without ret_error too. */
        ASSERT_EQ_INT(server_config_parse(name, "t", text, len, &c, NULL), -EINVAL);
}

static void expect_bad(const char *text, unsigned line, const char *needle) {
        expect_bad_n("srv", text, strlen(text), line, needle);
}

static void test_full(void) {
        ServerConfig *c = parse_ok("github_2",
                                   "# a comment\n"
                                   "\n"
                                   "   # indented comment\n"
                                   "DESCRIPTION=\"GitHub: issues and \\\"pull requests\\\" \\\\ more\"\n"
                                   "COMMAND=\"/usr/bin/node \\\"/opt/my srv/index.js\\\" stdio %n $HOME ;\"\n"
                                   "ENVIRONMENT=\"LOG=debug \\\"MODE=a b\\\"\"\n"
                                   "CREDENTIALS=\"token:/etc/credstore/gh.token other.id:/run/x/y-z_1\"\n"
                                   "CREDENTIAL_ENV=GITHUB_TOKEN=token\n"
                                   "CALLERS=\"uid:1000 http:token:alice\"\n"
                                   "TOOLS=\"read_* list_* get-?\"\n"
                                   "CONFIRMED=write_file\n"
                                   "INSTANCE=shared\n"
                                   "NETWORK=host   \n"
                                   "MAX_CALLS=1000\n"
                                   "MAX_BYTES=16M\n"
                                   "MAX_CONCURRENT=8\n"
                                   "CALL_TIMEOUT_S=60\n"
                                   "MEMORY_MAX=1G\n"
                                   "TASKS_MAX=128\n"
                                   "IDLE_S=10");

        ASSERT_STREQ(c->name, "github_2");
        ASSERT_STREQ(c->description, "GitHub: issues and \"pull requests\" \\ more");
        ASSERT_EQ_INT(strv_length(c->argv), 6);
        ASSERT_STREQ(c->argv[0], "/usr/bin/node");
        ASSERT_STREQ(c->argv[1], "/opt/my srv/index.js");
        ASSERT_STREQ(c->argv[2], "stdio");
        ASSERT_STREQ(c->argv[3], "%n");
        ASSERT_STREQ(c->argv[4], "$HOME");
        ASSERT_STREQ(c->argv[5], ";");
        ASSERT_TRUE(!c->url);
        ASSERT_EQ_INT(strv_length(c->environment), 2);
        ASSERT_STREQ(c->environment[0], "LOG=debug");
        ASSERT_STREQ(c->environment[1], "MODE=a b");
        ASSERT_EQ_INT(c->n_credentials, 2);
        ASSERT_STREQ(c->credentials[0].id, "token");
        ASSERT_STREQ(c->credentials[0].path, "/etc/credstore/gh.token");
        ASSERT_STREQ(c->credentials[1].id, "other.id");
        ASSERT_STREQ(c->credentials[1].path, "/run/x/y-z_1");
        ASSERT_EQ_INT(c->n_credential_env, 1);
        ASSERT_STREQ(c->credential_env[0].env, "GITHUB_TOKEN");
        ASSERT_STREQ(c->credential_env[0].id, "token");
        ASSERT_EQ_INT(c->instance, SERVER_INSTANCE_SHARED);
        ASSERT_STREQ(server_instance_to_string(c->instance), "shared");
        ASSERT_EQ_INT(c->network, SERVER_NETWORK_HOST);
        ASSERT_EQ_U64(c->max_calls, 1000);
        ASSERT_EQ_U64(c->max_bytes, 16 * MiB);
        ASSERT_EQ_U64(c->max_concurrent, 8);
        ASSERT_EQ_U64(c->call_timeout_s, 60);
        ASSERT_EQ_U64(c->memory_max, 1024 * MiB);
        ASSERT_EQ_U64(c->tasks_max, 128);
        ASSERT_EQ_U64(c->idle_s, 10);

        ASSERT_TRUE(server_config_allows_caller(c, "uid:1000"));
        ASSERT_TRUE(server_config_allows_caller(c, "http:token:alice"));
        ASSERT_FALSE(server_config_allows_caller(c, "uid:1001"));
        ASSERT_FALSE(server_config_allows_caller(c, "uid:100"));
        ASSERT_FALSE(server_config_allows_caller(c, "http:token:alic"));
        ASSERT_FALSE(server_config_allows_caller(c, NULL));
        ASSERT_TRUE(server_config_allows_tool(c, "read_file"));
        ASSERT_TRUE(server_config_allows_tool(c, "list_"));
        ASSERT_TRUE(server_config_allows_tool(c, "get-x"));
        ASSERT_FALSE(server_config_allows_tool(c, "get-xy"));
        ASSERT_FALSE(server_config_allows_tool(c, "write_file"));
        ASSERT_FALSE(server_config_allows_tool(c, "xread_file"));
        ASSERT_FALSE(server_config_allows_tool(c, NULL));
        ASSERT_TRUE(server_config_tool_confirmed(c, "write_file"));
        ASSERT_FALSE(server_config_tool_confirmed(c, "write_files"));
        server_config_free(c);
}

/* NETWORK=egress:POLICY: the policy's name kept; whether it exists is
 * egressd's configuration, not this file's. */
static void test_network_egress(void) {
        ServerConfig *c = parse_ok("a", "COMMAND=/usr/bin/srv\nNETWORK=egress:web_2\n");

        ASSERT_EQ_INT(c->network, SERVER_NETWORK_EGRESS);
        ASSERT_STREQ(c->egress_policy, "web_2");
        server_config_free(c);
        c = parse_ok("a", "COMMAND=/usr/bin/srv\nNETWORK=host\n");
        ASSERT_TRUE(!c->egress_policy);
        server_config_free(c);
        expect_bad("COMMAND=/bin/x\nNETWORK=egress:web\nNETWORK=egress:web\n", 3, "NETWORK");
        expect_bad("COMMAND=/bin/x\nNETWORK=egress:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 2, "expects a policy name");
        expect_bad("URL=http://h/\nNETWORK=egress:web\n", 2, "NETWORK: only for a stdio server");
}

static void test_defaults(void) {
        ServerConfig *c = parse_ok("a", "COMMAND=/usr/bin/srv\n");

        ASSERT_STREQ(c->description, "");
        ASSERT_EQ_INT(strv_length(c->argv), 1);
        ASSERT_TRUE(!c->environment && c->n_credentials == 0 && c->n_credential_env == 0 && !c->callers);
        ASSERT_EQ_INT(strv_length(c->tools), 1);
        ASSERT_STREQ(c->tools[0], "*");
        ASSERT_TRUE(!c->confirmed);
        ASSERT_EQ_INT(c->instance, SERVER_INSTANCE_PER_CALLER);
        ASSERT_EQ_INT(c->network, SERVER_NETWORK_NONE);
        ASSERT_EQ_U64(c->max_calls, 200);
        ASSERT_EQ_U64(c->max_bytes, 8 * MiB);
        ASSERT_EQ_U64(c->max_concurrent, 4);
        ASSERT_EQ_U64(c->call_timeout_s, 30);
        ASSERT_EQ_U64(c->memory_max, 256 * MiB);
        ASSERT_EQ_U64(c->tasks_max, 64);
        ASSERT_EQ_U64(c->idle_s, 300);
        /* Every caller, every tool, nothing confirmed. */
        ASSERT_TRUE(server_config_allows_caller(c, "uid:0"));
        ASSERT_TRUE(server_config_allows_caller(c, "http:loopback"));
        ASSERT_TRUE(server_config_allows_tool(c, "anything-at.all"));
        ASSERT_FALSE(server_config_tool_confirmed(c, "write_file"));
        server_config_free(c);

        /* CALLERS="" and TOOLS="": nobody, nothing. */
        c = parse_ok("a", "COMMAND=/usr/bin/srv\nCALLERS=\"\"\nTOOLS=\"\"\n");
        ASSERT_FALSE(server_config_allows_caller(c, "uid:0"));
        ASSERT_FALSE(server_config_allows_tool(c, "x"));
        server_config_free(c);

        /* A Streamable HTTP server; CRLF-free file without a final newline. */
        c = parse_ok("web", "URL=\"https://mcp.example.com:8443/mcp?x=1\"\nCALLERS=http:loopback");
        ASSERT_STREQ(c->url, "https://mcp.example.com:8443/mcp?x=1");
        ASSERT_TRUE(!c->argv);
        ASSERT_TRUE(!c->headers);
        ASSERT_EQ_U64(c->n_credential_headers, 0);
        server_config_free(c);

        /* Its headers, plain and from credentials; its bridge's caps. */
        c = parse_ok("web", "URL=http://127.0.0.1:3001/mcp\n"
                     "HEADERS=\"X-Team=data \\\"X-Note=two words\\\"\"\n"
                     "CREDENTIALS=\"tok:/etc/credstore/web.token key:/etc/credstore/web.key\"\n"
                     "CREDENTIAL_HEADERS=\"Authorization=tok X-Api-Key=key\"\n"
                     "MEMORY_MAX=64M\nTASKS_MAX=8\n");
        ASSERT_EQ_U64(strv_length(c->headers), 2);
        ASSERT_STREQ(c->headers[0], "X-Team=data");
        ASSERT_STREQ(c->headers[1], "X-Note=two words");
        ASSERT_EQ_U64(c->n_credentials, 2);
        ASSERT_EQ_U64(c->n_credential_headers, 2);
        ASSERT_STREQ(c->credential_headers[0].env, "Authorization");
        ASSERT_STREQ(c->credential_headers[0].id, "tok");
        ASSERT_STREQ(c->credential_headers[1].env, "X-Api-Key");
        ASSERT_STREQ(c->credential_headers[1].id, "key");
        ASSERT_EQ_U64(c->memory_max, 64 << 20);
        ASSERT_EQ_U64(c->tasks_max, 8);
        server_config_free(c);
}

static void test_headers(void) {
        static const char *const reserved[] = { "Accept", "content-type", "MCP-SESSION-ID", "Mcp-Protocol-Version",
                                                "Host", "Content-Length", "Transfer-Encoding", "Last-Event-ID",
                                                "Accept-Encoding", "Connection" };

        ASSERT_TRUE(server_header_name_is_valid("Authorization", 13));
        ASSERT_TRUE(server_header_name_is_valid("X-Api-Key", 9));
        ASSERT_FALSE(server_header_name_is_valid("", 0));
        ASSERT_FALSE(server_header_name_is_valid("X Key", 5));
        ASSERT_FALSE(server_header_name_is_valid("X:Key", 5));
        ASSERT_FALSE(server_header_name_is_valid("X\xc3\xa9", 3));
        for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
                ASSERT_FALSE(server_header_name_is_valid(reserved[i], strlen(reserved[i])));
        ASSERT_TRUE(server_header_value_is_valid("Bearer x y", 10));
        ASSERT_FALSE(server_header_value_is_valid(" x", 2));
        ASSERT_FALSE(server_header_value_is_valid("x ", 2));
        ASSERT_FALSE(server_header_value_is_valid("a\tb", 3));
        ASSERT_FALSE(server_header_value_is_valid("a\r\nX-Evil: 1", 12));
        ASSERT_FALSE(server_header_value_is_valid("\xc3\xa9", 2));

        expect_bad("URL=http://h/\nHEADERS=Accept=text/html\n", 2, "HEADERS: 'Accept=text/html' is not Name=value");
        expect_bad("URL=http://h/\nHEADERS=Mcp-Session-Id=x\n", 2, "is not Name=value");
        expect_bad("URL=http://h/\nHEADERS=X-A\n", 2, "'X-A' is not Name=value");
        expect_bad("URL=http://h/\nHEADERS=\"X-A=a X-a=b\"\n", 2, "the header X-a is set twice");
        expect_bad("URL=http://h/\nHEADERS=\"\\\"X-A= a\\\"\"\n", 2, "is not Name=value");
        expect_bad("URL=http://h/\nCREDENTIAL_HEADERS=Authorization=tok\n", 2,
                   "CREDENTIAL_HEADERS: tok is not one of CREDENTIALS");
        expect_bad("URL=http://h/\nCREDENTIAL_HEADERS=Authorization=a/b\n", 2, "is not Name=ID");
        expect_bad("URL=http://h/\nCREDENTIAL_HEADERS=Host=tok\n", 2, "is not Name=ID");
        expect_bad("URL=http://h/\nCREDENTIALS=tok:/etc/t\nCREDENTIAL_HEADERS=\"X-K=tok x-k=tok\"\n", 3,
                   "the header x-k is set twice");
        expect_bad("URL=http://h/\nCREDENTIALS=tok:/etc/t\nHEADERS=x-key=1\nCREDENTIAL_HEADERS=X-Key=tok\n", 4,
                   "CREDENTIAL_HEADERS: X-Key is also in HEADERS");
        expect_bad("COMMAND=/bin/x\nHEADERS=X-A=1\n", 2, "HEADERS: only for a Streamable HTTP server");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=t:/etc/t\nCREDENTIAL_HEADERS=X-A=t\n", 3,
                   "CREDENTIAL_HEADERS: only for a Streamable HTTP server");
        expect_bad("URL=http://h/\nCREDENTIALS=t:/etc/t\nCREDENTIAL_ENV=A=t\n", 3,
                   "CREDENTIAL_ENV: only for a stdio server");
}

static void test_names(void) {
        static const char *const bad[] = { "", "1abc", "Abc", "a-b", "a.b", "_a", "a b", "é",
                                           "abcdefghijklmnopqrstuvwxyz0123456" /* 33 */ };
        ServerConfig *c;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ASSERT_FALSE(server_name_is_valid(bad[i]));
                expect_bad_n(bad[i], "COMMAND=/bin/x\n", 15, 0, "is not a server name");
        }
        ASSERT_FALSE(server_name_is_valid(NULL));
        ASSERT_TRUE(server_name_is_valid("a"));
        ASSERT_TRUE(server_name_is_valid("memory_2"));
        ASSERT_TRUE(server_name_is_valid("abcdefghijklmnopqrstuvwxyz012345"));
        c = parse_ok("abcdefghijklmnopqrstuvwxyz012345", "COMMAND=/bin/x\n");
        server_config_free(c);
}

static void test_bad_lines(void) {
        char big[SERVER_LINE_MAX + 64];

        expect_bad("COMMAND=/bin/x\nFOO=1\n", 2, "unknown key 'FOO'");
        expect_bad("COMMAND=/bin/x\ncommand=/bin/y\n", 2, "unknown key 'command'");
        expect_bad("COMMAND =/bin/x\n", 1, "unknown key 'COMMAND '");
        expect_bad("COMMAND=/bin/x\njust words\n", 2, "expected KEY=VALUE");
        expect_bad("COMMAND=/bin/x\n\n# c\nTOOLS=a\nTOOLS=b\n", 5, "TOOLS is set twice (first on line 4)");
        expect_bad("COMMAND=/bin/x\nCOMMAND=/bin/x\n", 2, "COMMAND is set twice (first on line 1)");
        expect_bad("COMMAND=/bin/x\r\n", 1, "control character (0x0d)");
        expect_bad("COMMAND=\"/bin/x\x1b[31m\"\n", 1, "control character (0x1b)");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=a\x7f\n", 2, "control character (0x7f)");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=\"\xff\xfe\"\n", 2, "not UTF-8");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=\"\xc0\xaf\"\n", 2, "not UTF-8");       /* overlong '/' */
        expect_bad_n("srv", "COMMAND=/bin/x\nDESCRIPTION=a\0b\n", 29, 2, "not UTF-8");
        expect_bad("COMMAND=\"/bin/x\n", 1, "COMMAND: the value lacks its closing quote");
        expect_bad("COMMAND=/bin/x stdio\n", 1, "text after the value");
        expect_bad("COMMAND=\"/bin/x\" stdio\n", 1, "text after the value");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=a\\b\n", 2, "backslash in an unquoted value");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=a\"b\n", 2, "quote or backslash");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=\"a\\nb\"\n", 2, "only \\\" and \\\\ may follow a backslash");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=\"a\\\"\n", 2, "closing quote");

        memset(big, 'a', sizeof big);
        memcpy(big, "COMMAND=/bin/x\nDESCRIPTION=", 27);
        big[15 + SERVER_LINE_MAX + 1] = '\n';
        expect_bad_n("srv", big, 15 + SERVER_LINE_MAX + 2, 2, "longer than 4096 bytes");
        /* Exactly the limit is a line, then the value's own limit speaks. */
        big[15 + SERVER_LINE_MAX] = '\n';
        expect_bad_n("srv", big, 15 + SERVER_LINE_MAX + 1, 2, "DESCRIPTION: longer than 200 bytes");
}

static void test_bad_values(void) {
        /* COMMAND and URL. */
        expect_bad("DESCRIPTION=x\n", 0, "neither COMMAND (a stdio server) nor URL");
        expect_bad("", 0, "neither COMMAND");
        expect_bad("COMMAND=/bin/x\nDESCRIPTION=x\nURL=http://127.0.0.1:1/mcp\n", 3, "both COMMAND and URL");
        expect_bad("URL=http://127.0.0.1:1/mcp\nCOMMAND=/bin/x\n", 2, "both COMMAND and URL");
        expect_bad("COMMAND=node\n", 1, "COMMAND: 'node' is not an absolute, normalized path");
        expect_bad("COMMAND=\"./srv stdio\"\n", 1, "not an absolute");
        expect_bad("COMMAND=/usr/../bin/x\n", 1, "not an absolute");
        expect_bad("COMMAND=/usr/./bin/x\n", 1, "not an absolute");
        expect_bad("COMMAND=/usr//bin/x\n", 1, "not an absolute");
        expect_bad("COMMAND=/usr/bin/\n", 1, "not an absolute");
        expect_bad("COMMAND=/\n", 1, "not an absolute");
        expect_bad("COMMAND=\"\"\n", 1, "COMMAND: empty");
        expect_bad("COMMAND=\"  \"\n", 1, "COMMAND: empty");
        expect_bad("COMMAND=\"/bin/x \\\"a b\"\n", 1, "lacks its closing quote");
        expect_bad("COMMAND=\"/bin/x \\\"a b\\\"c\"\n", 1, "must be followed by a blank");
        expect_bad("COMMAND=\"/bin/x a\\\"b\"\n", 1, "a quote inside the word 'a'");
        expect_bad("URL=ftp://x/\n", 1, "URL: expected http://");
        expect_bad("URL=http:///mcp\n", 1, "URL: no host");
        expect_bad("URL=https://user:secret@host/mcp\n", 1, "put secrets in CREDENTIALS");
        expect_bad("URL=\"http://host/a b\"\n", 1, "without blanks");
        expect_bad("URL=http://h/\nENVIRONMENT=A=1\n", 2, "ENVIRONMENT: only for a stdio server");
        expect_bad("URL=http://h/\nNETWORK=host\n", 2, "NETWORK: only for a stdio server");

        /* ENVIRONMENT, CREDENTIALS, CREDENTIAL_ENV. */
        expect_bad("COMMAND=/bin/x\nENVIRONMENT=NOEQUALS\n", 2, "ENVIRONMENT: 'NOEQUALS' is not KEY=value");
        expect_bad("COMMAND=/bin/x\nENVIRONMENT=1A=x\n", 2, "is not KEY=value");
        expect_bad("COMMAND=/bin/x\nENVIRONMENT=A-B=x\n", 2, "is not KEY=value");
        expect_bad("COMMAND=/bin/x\nENVIRONMENT=\"A=1 A=2\"\n", 2, "A is set twice");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=token\n", 2, "CREDENTIALS: 'token' is not ID:PATH");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=token:relative\n", 2, "is not ID:PATH");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=token:/etc/%n\n", 2, "is not ID:PATH");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=\"token:/etc/a b\"\n", 2, "is not ID:PATH");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=token:/etc/../x\n", 2, "is not ID:PATH");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=.hidden:/etc/x\n", 2, "is not ID:PATH");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=a/b:/etc/x\n", 2, "is not ID:PATH");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=\"t:/a t:/b\"\n", 2, "the credential t is named twice");
        expect_bad("COMMAND=/bin/x\nCREDENTIAL_ENV=KEY=nope\n", 2, "CREDENTIAL_ENV: nope is not one of CREDENTIALS");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=t:/a\nCREDENTIAL_ENV=KEY\n", 3, "is not ENV=ID");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=t:/a\nCREDENTIAL_ENV=\"K=t K=t\"\n", 3, "K is set twice");
        expect_bad("COMMAND=/bin/x\nCREDENTIALS=t:/a\nCREDENTIAL_ENV=K=t\nENVIRONMENT=K=v\n", 3,
                   "CREDENTIAL_ENV: K is also in ENVIRONMENT");

        /* CALLERS, TOOLS, CONFIRMED, INSTANCE, NETWORK. */
        expect_bad("COMMAND=/bin/x\nCALLERS=\"uid:1000 gid:5\"\n", 2, "CALLERS: invalid caller 'gid:5'");
        expect_bad("COMMAND=/bin/x\nCALLERS=uid:-1\n", 2, "invalid caller");
        expect_bad("COMMAND=/bin/x\nCALLERS=http:token:Alice\n", 2, "invalid caller");
        expect_bad("COMMAND=/bin/x\nINSTANCE=each\n", 2, "INSTANCE: expected per-caller or shared");
        expect_bad("COMMAND=/bin/x\nNETWORK=yes\n", 2, "NETWORK: expected none, host or egress:POLICY");
        expect_bad("COMMAND=/bin/x\nNETWORK=egress:\n", 2, "expects a policy name");
        expect_bad("COMMAND=/bin/x\nNETWORK=egress:PyPI\n", 2, "expects a policy name");

        /* Numbers. */
        expect_bad("COMMAND=/bin/x\nMAX_CALLS=0\n", 2, "MAX_CALLS: '0' is not a number from 1 to 100000");
        expect_bad("COMMAND=/bin/x\nMAX_CALLS=100001\n", 2, "not a number");
        expect_bad("COMMAND=/bin/x\nMAX_CALLS=-1\n", 2, "not a number");
        expect_bad("COMMAND=/bin/x\nMAX_CALLS=1e3\n", 2, "not a number");
        expect_bad("COMMAND=/bin/x\nMAX_CALLS=\"\"\n", 2, "not a number");
        expect_bad("COMMAND=/bin/x\nMAX_CALLS=99999999999999999999999\n", 2, "not a number");
        expect_bad("COMMAND=/bin/x\nMAX_BYTES=1K\n", 2, "MAX_BYTES: '1K' is not a size from 4K to 64M");
        expect_bad("COMMAND=/bin/x\nMAX_BYTES=2G\n", 2, "not a size");
        expect_bad("COMMAND=/bin/x\nMEMORY_MAX=1M\n", 2, "MEMORY_MAX: '1M' is not a size");
        expect_bad("COMMAND=/bin/x\nTASKS_MAX=3\n", 2, "TASKS_MAX: '3' is not a number from 4");
        expect_bad("COMMAND=/bin/x\nMAX_CONCURRENT=65\n", 2, "MAX_CONCURRENT");
        expect_bad("COMMAND=/bin/x\nCALL_TIMEOUT_S=0\n", 2, "CALL_TIMEOUT_S");
        expect_bad("COMMAND=/bin/x\nIDLE_S=86401\n", 2, "IDLE_S");
}

/* Appends to the NUL-terminated text in buf (big enough by construction). */
static void appendf(char *buf, const char *fmt, ...) _printf_(2, 3);
static void appendf(char *buf, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        ASSERT_TRUE(vsprintf(buf + strlen(buf), fmt, ap) >= 0);
        va_end(ap);
}

static void append_n(char *buf, char ch, size_t n) {
        size_t l = strlen(buf);

        memset(buf + l, ch, n);
        buf[l + n] = 0;
}

/* Lists over their counts or lengths. */
static void test_limits(void) {
        static char text[SERVER_FILE_MAX + 16];
        ServerConfig *c;

        text[0] = 0;
        appendf(text, "COMMAND=\"/bin/x");
        for (int i = 1; i < SERVER_ARGV_MAX; i++)
                appendf(text, " a");
        appendf(text, "\"\n");
        c = parse_ok("a", text);
        ASSERT_EQ_INT(strv_length(c->argv), SERVER_ARGV_MAX);
        server_config_free(c);
        text[strlen(text) - 2] = 0;
        appendf(text, " a\"\n");
        expect_bad(text, 1, "COMMAND: more than 64 words");

        text[0] = 0;
        appendf(text, "COMMAND=/bin/x\nENVIRONMENT=\"");
        for (int i = 0; i <= SERVER_ENV_MAX; i++)
                appendf(text, "K%d=v ", i);
        appendf(text, "\"\n");
        expect_bad(text, 2, "ENVIRONMENT: more than 32 entries");

        text[0] = 0;
        appendf(text, "COMMAND=/bin/x\nTOOLS=\"");
        for (int i = 0; i <= SERVER_GLOBS_MAX; i++)
                appendf(text, "t%d ", i);
        appendf(text, "\"\n");
        expect_bad(text, 2, "TOOLS: more than 64 patterns");

        text[0] = 0;
        appendf(text, "COMMAND=/bin/x\nCONFIRMED=");
        append_n(text, 'w', SERVER_GLOB_MAX + 1);
        appendf(text, "\n");
        expect_bad(text, 2, "CONFIRMED: 'wwww");

        text[0] = 0;
        appendf(text, "URL=http://h/");
        append_n(text, 'u', SERVER_URL_MAX);
        appendf(text, "\n");
        expect_bad(text, 1, "URL: longer than 1024 bytes");

        text[0] = 0;
        appendf(text, "COMMAND=/");
        append_n(text, 'p', SERVER_PATH_MAX);
        appendf(text, "\n");
        expect_bad(text, 1, "not an absolute, normalized path (at most 1024 bytes)");

        text[0] = 0;
        appendf(text, "COMMAND=/bin/x\nCREDENTIALS=\"");
        for (int i = 0; i <= SERVER_CREDENTIALS_MAX; i++)
                appendf(text, "c%d:/c ", i);
        appendf(text, "\"\n");
        expect_bad(text, 2, "CREDENTIALS: more than 16 credentials");

        /* The file as a whole. */
        memset(text, '\n', sizeof text);
        memcpy(text, "COMMAND=/bin/x", 14);
        c = NULL;
        expect_bad_n("srv", text, SERVER_FILE_MAX + 1, 0, "larger than 65536 bytes");
        ASSERT_EQ_INT(server_config_parse("srv", "t", text, SERVER_FILE_MAX, &c, NULL), 0);
        server_config_free(c);
}

static void write_file(int dir_fd, const char *name, const char *text, mode_t mode) {
        int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(write(fd, text, strlen(text)), (int) strlen(text));
        ASSERT_EQ_INT(fchmod(fd, mode), 0);
        close(fd);
}

static bool has_error(const ServerConfigs *s, const char *needle) {
        STRV_FOREACH(e, s->errors)
                if (strstr(*e, needle))
                        return true;
        return false;
}

static void test_directory(void) {
        char dir[] = "/tmp/test-server-config.XXXXXX", big[SERVER_FILE_MAX + 2];
        ServerConfigs s = {};
        ServerConfig *c = NULL;
        char *error = NULL;
        int dir_fd;

        ASSERT_TRUE(mkdtemp(dir));
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dir_fd >= 0);

        /* Missing: no servers, no error. */
        ASSERT_EQ_INT(server_configs_load("/nonexistent/servers.d", &s), 0);
        ASSERT_TRUE(s.n_servers == 0 && !s.errors);

        write_file(dir_fd, "memory.conf", "COMMAND=/usr/bin/node\n", 0644);
        write_file(dir_fd, "everything.conf", "DESCRIPTION=all\nCOMMAND=/usr/bin/node\n", 0600);
        write_file(dir_fd, "broken.conf", "COMMAND=/usr/bin/node\nNETWORK=wide\n", 0644);
        write_file(dir_fd, "Bad-Name.conf", "COMMAND=/usr/bin/node\n", 0644);
        write_file(dir_fd, "writable.conf", "COMMAND=/usr/bin/node\n", 0666);
        write_file(dir_fd, "notes.txt", "anything\n", 0644);
        write_file(dir_fd, "memory.conf~", "anything\n", 0644);
        write_file(dir_fd, ".hidden.conf", "anything\n", 0644);
        memset(big, '#', sizeof big);
        big[sizeof big - 1] = 0;
        write_file(dir_fd, "huge.conf", big, 0644);
        ASSERT_EQ_INT(symlinkat("memory.conf", dir_fd, "link.conf"), 0);
        ASSERT_EQ_INT(mkdirat(dir_fd, "sub.conf", 0755), 0);

        ASSERT_EQ_INT(server_configs_load(dir, &s), 0);
        ASSERT_EQ_INT(s.n_servers, 2);
        ASSERT_STREQ(s.servers[0]->name, "everything");        /* name order */
        ASSERT_STREQ(s.servers[0]->description, "all");
        ASSERT_STREQ(s.servers[1]->name, "memory");
        ASSERT_TRUE(server_configs_find(&s, "memory") == s.servers[1]);
        ASSERT_TRUE(!server_configs_find(&s, "broken"));
        ASSERT_TRUE(!server_configs_find(&s, NULL));
        ASSERT_EQ_INT(strv_length(s.errors), 6);
        ASSERT_TRUE(has_error(&s, "/broken.conf:2: NETWORK: expected none"));
        ASSERT_TRUE(has_error(&s, "/Bad-Name.conf: 'Bad-Name' is not a server name"));
        ASSERT_TRUE(has_error(&s, "/writable.conf: group or others may write it"));
        ASSERT_TRUE(has_error(&s, "/huge.conf: is larger than 64 KiB"));
        ASSERT_TRUE(has_error(&s, "/link.conf: is a symbolic link"));
        ASSERT_TRUE(has_error(&s, "/sub.conf: is no regular file"));
        ASSERT_FALSE(has_error(&s, "hidden"));
        ASSERT_FALSE(has_error(&s, "notes"));
        server_configs_done(&s);
        server_configs_done(&s);        /* idempotent */

        /* One file. */
        ASSERT_EQ_INT(server_config_load(dir, "memory", &c, &error), 0);
        ASSERT_STREQ(c->argv[0], "/usr/bin/node");
        c = server_config_free(c);
        ASSERT_EQ_INT(server_config_load(dir, "broken", &c, &error), -EINVAL);
        ASSERT_CONTAINS(error, "broken.conf:2: NETWORK");
        free(error);
        ASSERT_EQ_INT(server_config_load(dir, "absent", &c, &error), -ENOENT);
        ASSERT_CONTAINS(error, "absent.conf: cannot be read");
        free(error);

        /* More than SERVERS_MAX: the first in name order are read. */
        for (int i = 0; i < SERVERS_MAX; i++) {
                char name[32];
                snprintf(name, sizeof name, "s%03d.conf", i);
                write_file(dir_fd, name, "COMMAND=/bin/x\n", 0644);
        }
        ASSERT_EQ_INT(server_configs_load(dir, &s), 0);
        /* Bad-Name broken everything huge link memory s000..s057: 60 valid. */
        ASSERT_EQ_INT(s.n_servers, 60);
        ASSERT_TRUE(has_error(&s, "more than 64 servers: s058.conf and those after it are not read"));
        ASSERT_TRUE(server_configs_find(&s, "s057") && !server_configs_find(&s, "s058"));
        server_configs_done(&s);

        {
                char cmd[sizeof dir + 16];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                ASSERT_EQ_INT(system(cmd), 0);
        }
        close(dir_fd);
}

int main(void) {
        test_full();
        test_defaults();
        test_network_egress();
        test_names();
        test_bad_lines();
        test_bad_values();
        test_headers();
        test_limits();
        test_directory();
        return 0;
}
