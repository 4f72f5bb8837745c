/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/generator/upstream-units.[ch]: the units of a stdio
 * upstream server, the quoting of hostile values for unit-file syntax, and
 * what is (not) left in the generator directory. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "server-config.h"
#include "test-helpers.h"
#include "upstream-units.h"

#define WRAPPER "/usr/libexec/mcp-exec/mcp-exec-upstream-exec"

static ServerConfig *parse(const char *text) {
        ServerConfig *c = NULL;
        char *error = NULL;

        if (server_config_parse("srv", "t.conf", text, strlen(text), &c, &error) < 0)
                ASSERT_FAIL_("%s", error);
        return c;
}

static void test_quote(void) {
        static const struct {
                const char *in, *exec, *env;
        } cases[] = {
                { "plain", "\"plain\"", "\"plain\"" },
                { "", "\"\"", "\"\"" },
                { "%n%%", "\"%%n%%%%\"", "\"%%n%%%%\"" },
                { "$HOME ${X}", "\"$$HOME $${X}\"", "\"$HOME ${X}\"" },
                { "a\\b\\", "\"a\\\\b\\\\\"", "\"a\\\\b\\\\\"" },
                { "say \"hi\"", "\"say \\\"hi\\\"\"", "\"say \\\"hi\\\"\"" },
                { ";", "\";\"", "\";\"" },
                { "'single' é", "\"'single' é\"", "\"'single' é\"" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *e = unit_quote_exec_word(cases[i].in), *v = unit_quote_environment(cases[i].in);

                ASSERT_STREQ(e, cases[i].exec);
                ASSERT_STREQ(v, cases[i].env);
                free(e);
                free(v);
        }
}

static void test_service(void) {
        ServerConfig *c = parse("COMMAND=\"/usr/bin/node \\\"/opt/my srv/%n.js\\\" stdio $HOME ; a\\\\b\"\n"
                                "ENVIRONMENT=\"\\\"MEMORY_FILE_PATH=/tmp/m %h.json\\\" A=$B\"\n"
                                "CREDENTIALS=\"tok:/etc/credstore/srv.token two:/run/two\"\n"
                                "CREDENTIAL_ENV=API_KEY=tok\n"
                                "MEMORY_MAX=128M\nTASKS_MAX=16\n");
        char *text = NULL;

        ASSERT_EQ_INT(upstream_service_unit(c, "/etc/mcp-exec/servers.d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nExecStart=\"" WRAPPER "\" \"API_KEY=tok\" \"--\" \"/usr/bin/node\" "
                              "\"/opt/my srv/%%n.js\" \"stdio\" \"$$HOME\" \";\" \"a\\\\b\"\n");
        ASSERT_CONTAINS(text, "\nEnvironment=\"MEMORY_FILE_PATH=/tmp/m %%h.json\"\nEnvironment=\"A=$B\"\n");
        ASSERT_CONTAINS(text, "\nLoadCredential=tok:/etc/credstore/srv.token\nLoadCredential=two:/run/two\n");
        ASSERT_CONTAINS(text, "\nSourcePath=/etc/mcp-exec/servers.d/srv.conf\n");
        ASSERT_CONTAINS(text, "\nStandardInput=socket\nStandardOutput=socket\nStandardError=journal\n");
        ASSERT_CONTAINS(text, "\nDynamicUser=yes\nUser=mu");
        {
                /* A user of its own per instance: the server's tag, then the instance. */
                char user[64];
                snprintf(user, sizeof user, "\nUser=mu%06x-%%i\n", (unsigned) upstream_user_tag("srv"));
                ASSERT_CONTAINS(text, user);
        }
        ASSERT_CONTAINS(text, "\nCapabilityBoundingSet=\n");
        ASSERT_CONTAINS(text, "\nNoNewPrivileges=yes\n");
        ASSERT_CONTAINS(text, "\nProtectSystem=strict\n");
        ASSERT_CONTAINS(text, "\nProtectHome=yes\n");
        ASSERT_CONTAINS(text, "\nSystemCallFilter=@system-service\n");
        ASSERT_CONTAINS(text, "\nPrivateNetwork=yes\n");
        ASSERT_CONTAINS(text, "\nRestrictAddressFamilies=AF_UNIX\n");
        ASSERT_CONTAINS(text, "\nMemoryMax=134217728\nTasksMax=16\n");
        ASSERT_TRUE(!strstr(text, "AF_INET"));
        free(text);
        server_config_free(c);

        /* No CREDENTIAL_ENV: no wrapper; NETWORK=host: inet, no PrivateNetwork. */
        c = parse("COMMAND=/usr/bin/srv\nNETWORK=host\n");
        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nExecStart=\"/usr/bin/srv\"\n");
        ASSERT_CONTAINS(text, "\nRestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n");
        ASSERT_TRUE(!strstr(text, "PrivateNetwork") && !strstr(text, WRAPPER) && !strstr(text, "LoadCredential"));
        ASSERT_TRUE(!strstr(text, "TemporaryFileSystem"));      /* the host's network: its /run too */
        ASSERT_CONTAINS(text, "\nMemoryMax=268435456\nTasksMax=64\n");
        free(text);

        ASSERT_EQ_INT(upstream_socket_unit(c, "/d", &text), 0);
        ASSERT_CONTAINS(text, "\nListenStream=/run/mcp-exec/upstream/srv.sock\n");
        ASSERT_CONTAINS(text, "\nAccept=yes\n");
        ASSERT_CONTAINS(text, "\nSocketUser=root\nSocketGroup=mcp-exec-tools\nSocketMode=0660\n");
        free(text);
        server_config_free(c);
}

/* Every line of a unit is "[Section]", "#...", "", or "Key=..." without a
 * trailing backslash (a continuation would swallow the next line). */
static void check_lines(const char *text) {
        const char *l = text;

        while (*l) {
                size_t n = strcspn(l, "\n");

                if (n > 0 && l[0] != '#' && l[0] != '[') {
                        const char *eq = memchr(l, '=', n);
                        ASSERT_TRUE(eq);
                        for (const char *k = l; k < eq; k++)
                                ASSERT_TRUE((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z'));
                        ASSERT_TRUE(l[n - 1] != '\\');
                }
                l += n + (l[n] == '\n');
        }
}

#define RUN_EMPTY \
        "\nTemporaryFileSystem=/run:ro,mode=0755,nosuid,nodev,noexec\nBindReadOnlyPaths=-/run/systemd/userdb\n"

/* NETWORK=egress:POLICY: the root ExecStartPre=+ that asks egressd for the
 * instance's feed, the fd store it leaves it in, the wrapper as the trusted
 * parent (with the credentials too), only lo and AF_INET, egressd's socket
 * before it. */
static void test_egress_service(void) {
        ServerConfig *c = parse("COMMAND=/usr/bin/srv\nNETWORK=egress:web\n");
        char *text = NULL;

        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nRequires=mcp-exec-egress.socket\nAfter=mcp-exec-egress.socket\n");
        ASSERT_CONTAINS(text, "\nExecStartPre=+" UPSTREAM_FEED_HELPER " web srv %i\n");
        ASSERT_CONTAINS(text, "\nExecStart=\"" WRAPPER "\" \"--egress\" \"--\" \"/usr/bin/srv\"\n");
        ASSERT_CONTAINS(text, "\nFileDescriptorStoreMax=2\nNotifyAccess=exec\n");
        /* The connection as a descriptor: systemd passes none to a socket stdio. */
        ASSERT_CONTAINS(text, "\nStandardInput=null\nStandardOutput=journal\n");
        ASSERT_TRUE(!strstr(text, "=socket"));
        ASSERT_CONTAINS(text, "\nPrivateNetwork=yes\nIPAddressDeny=any\nIPAddressAllow=localhost\n"
                              "RestrictAddressFamilies=AF_UNIX AF_INET\n");
        ASSERT_TRUE(!strstr(text, "AF_INET6") && !strstr(text, "NETWORK=none"));
        /* io_uring's ring would bind() and listen() past the wrapper's filter. */
        ASSERT_CONTAINS(text, "\nSystemCallFilter=~io_uring_setup io_uring_enter io_uring_register\n");
        /* No way out through /run's IPC endpoints (the system bus, a resolver). */
        ASSERT_CONTAINS(text, RUN_EMPTY);
        /* ... but for what ExecStartPre=+, whose namespace it is too, needs. */
        ASSERT_CONTAINS(text, "\nBindReadOnlyPaths=-/run/mcp-exec/egress.sock -/run/systemd/notify\n");
        ASSERT_TRUE(strstr(text, "[Unit]") < strstr(text, "Requires=") &&
                    strstr(text, "Requires=") < strstr(text, "[Service]"));
        check_lines(text);
        free(text);
        server_config_free(c);

        c = parse("COMMAND=/usr/bin/srv\nNETWORK=egress:web\nCREDENTIALS=t:/a\nCREDENTIAL_ENV=K=t\n");
        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nExecStart=\"" WRAPPER "\" \"--egress\" \"K=t\" \"--\" \"/usr/bin/srv\"\n");
        free(text);
        server_config_free(c);

        /* ENVIRONMENT: the wrapper's to set for the server, never Environment=, which would be the
         * root ExecStartPre='s environment too. */
        c = parse("COMMAND=/usr/bin/srv\nNETWORK=egress:web\nENVIRONMENT=\"LD_PRELOAD=/x%.so \\\"A=b c\\\"\"\n"
                  "CREDENTIALS=t:/a\nCREDENTIAL_ENV=K=t\n");
        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nExecStart=\"" WRAPPER "\" \"--egress\" \"--setenv=LD_PRELOAD=/x%%.so\" "
                              "\"--setenv=A=b c\" \"K=t\" \"--\" \"/usr/bin/srv\"\n");
        ASSERT_TRUE(!strstr(text, "Environment="));
        check_lines(text);
        free(text);
        server_config_free(c);

        /* Without it, none of this. */
        c = parse("COMMAND=/usr/bin/srv\n");
        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_TRUE(!strstr(text, "ExecStartPre") && !strstr(text, "FileDescriptorStore") &&
                    !strstr(text, "--egress") && !strstr(text, "Requires="));
        ASSERT_CONTAINS(text, RUN_EMPTY);       /* NETWORK=none: nor there */
        free(text);
        server_config_free(c);
}

static void test_hostile_lines(void) {
        ServerConfig *c = parse("COMMAND=\"/usr/bin/x a\\\\ \\\\ \\\"\\\\\\\" \\\"[Service]\\\"\"\n"
                                "ENVIRONMENT=\"X=\\\\ \\\"Y=a b\\\\\\\"\"\n");
        char *text = NULL;

        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        check_lines(text);
        ASSERT_CONTAINS(text, "\nExecStart=\"/usr/bin/x\" \"a\\\\\" \"\\\\\" \"\\\\\" \"[Service]\"\n");
        ASSERT_CONTAINS(text, "\nEnvironment=\"X=\\\\\"\nEnvironment=\"Y=a b\\\\\"\n");
        free(text);
        server_config_free(c);
}

/* A Streamable HTTP server: its bridge with caps, headers and the URL as
 * words, its credentials loaded by id (a header's value never in the unit),
 * the network only it gets, confined to the URL's address where it is one. */
static void test_http_service(void) {
        ServerConfig *c = parse("URL=\"http://127.0.0.1:3001/mcp?a=%20$x\"\n"
                                "HEADERS=\"X-Team=data \\\"X-Note=two %n words\\\"\"\n"
                                "CREDENTIALS=tok:/etc/credstore/web.token\n"
                                "CREDENTIAL_HEADERS=Authorization=tok\n"
                                "MAX_BYTES=1M\nCALL_TIMEOUT_S=7\nMEMORY_MAX=64M\n");
        char *text = NULL, host[64];

        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        check_lines(text);
        ASSERT_CONTAINS(text, "\nExecStart=\"" UPSTREAM_HTTP_BRIDGE "\" \"--max-bytes=1048576\" \"--timeout=7\" "
                              "\"--header=X-Team=data\" \"--header=X-Note=two %%n words\" "
                              "\"--credential-header=Authorization=tok\" \"--\" "
                              "\"http://127.0.0.1:3001/mcp?a=%%20$$x\"\n");
        ASSERT_CONTAINS(text, "\nLoadCredential=tok:/etc/credstore/web.token\n");
        ASSERT_CONTAINS(text, "\nStandardInput=socket\nStandardOutput=socket\n");
        ASSERT_CONTAINS(text, "\nDynamicUser=yes\n");
        ASSERT_CONTAINS(text, "\nMemoryDenyWriteExecute=yes\n");
        ASSERT_CONTAINS(text, "\nRestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n");
        ASSERT_CONTAINS(text, "\nIPAddressDeny=any\nIPAddressAllow=127.0.0.1\n");
        ASSERT_CONTAINS(text, "\nMemoryMax=67108864\nTasksMax=64\n");
        ASSERT_TRUE(!strstr(text, "PrivateNetwork") && !strstr(text, WRAPPER) && !strstr(text, "Environment="));
        free(text);
        ASSERT_EQ_INT(upstream_socket_unit(c, "/d", &text), 0);
        ASSERT_CONTAINS(text, "\nListenStream=/run/mcp-exec/upstream/srv.sock\n");
        free(text);
        server_config_free(c);

        c = parse("URL=http://[::1]:8080/mcp\n");
        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nIPAddressDeny=any\nIPAddressAllow=::1\n");
        free(text);
        server_config_free(c);
        c = parse("URL=http://LocalHost:8080/mcp\n");
        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nIPAddressDeny=any\nIPAddressAllow=localhost\n");
        free(text);
        server_config_free(c);
        /* A name: any address but link-local (cloud metadata) and multicast. */
        c = parse("URL=https://mcp.example.com/mcp\n");
        ASSERT_EQ_INT(upstream_service_unit(c, "/d", WRAPPER, &text), 0);
        ASSERT_CONTAINS(text, "\nIPAddressDeny=link-local multicast\n");
        ASSERT_TRUE(!strstr(text, "\nIPAddressAllow=") && !strstr(text, "\nIPAddressDeny=any\n"));
        free(text);
        server_config_free(c);

        ASSERT_EQ_INT(upstream_url_host("http://h.example:80/x", host, sizeof host), 0);
        ASSERT_STREQ(host, "h.example");
        ASSERT_EQ_INT(upstream_url_host("https://10.0.0.1?x", host, sizeof host), 0);
        ASSERT_STREQ(host, "10.0.0.1");
        ASSERT_EQ_INT(upstream_url_host("http://[fe80::1]/", host, sizeof host), 0);
        ASSERT_STREQ(host, "fe80::1");
        ASSERT_EQ_INT(upstream_url_host("http://[::1/", host, sizeof host), -EINVAL);
        ASSERT_EQ_INT(upstream_url_host("http://:80/", host, sizeof host), -EINVAL);
        ASSERT_EQ_INT(upstream_url_host("nothing", host, sizeof host), -EINVAL);
        ASSERT_EQ_INT(upstream_url_host("http://a-very-long-host/", host, 4), -EINVAL);
}

static void test_user_tag(void) {
        /* 24 bits, fixed (names of running instances outlive a reload), distinct for most names. */
        ASSERT_EQ_U64(upstream_user_tag("srv"), upstream_user_tag("srv"));
        ASSERT_TRUE(upstream_user_tag("memory") != upstream_user_tag("everything"));
        ASSERT_TRUE(upstream_user_tag("a") != upstream_user_tag("b"));
        /* Two names that share one: the generator refuses the second. */
        ASSERT_EQ_U64(upstream_user_tag("sa1x"), upstream_user_tag("smbe"));
        ASSERT_EQ_U64(upstream_user_tag("sa1x"), 0x8d6bf0);
        /* "mu" + 6 + "-" leaves 22 of a user name's 31 characters for the
         * instance "N-PID-UID": N < 10^8 with a 7-digit pid and a 5-digit uid. */
        ASSERT_TRUE(strlen("mu123456-") + strlen("99999999-4194304-65519") <= 31);
        for (const char *n = "abcdefghijklmnopqrstuvwxyz0123456789"; *n; n++) {
                char name[2] = { *n, 0 };
                ASSERT_TRUE(upstream_user_tag(name) <= 0xffffff);
        }
}

static void test_write(void) {
        char dir[] = "/tmp/test-upstream-units.XXXXXX", path[256], link[256], cmd[300];
        ServerConfig *c = parse("COMMAND=/usr/bin/srv\n");
        struct stat st;
        ssize_t n;
        int fd;

        ASSERT_TRUE(mkdtemp(dir));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(upstream_units_write(fd, dir, c, "/d", WRAPPER), 0);
        ASSERT_EQ_INT(fstatat(fd, "mcp-exec-upstream-srv.socket", &st, 0), 0);
        ASSERT_EQ_INT(st.st_mode & 07777, 0644);
        ASSERT_EQ_INT(fstatat(fd, "mcp-exec-upstream-srv@.service", &st, 0), 0);
        n = readlinkat(fd, "sockets.target.wants/mcp-exec-upstream-srv.socket", link, sizeof link - 1);
        ASSERT_TRUE(n > 0);
        link[n] = 0;
        snprintf(path, sizeof path, "%s/mcp-exec-upstream-srv.socket", dir);
        ASSERT_STREQ(link, path);

        /* Again: the files are there, nothing is overwritten, and what this
         * attempt made is gone. */
        ASSERT_EQ_INT(unlinkat(fd, "mcp-exec-upstream-srv@.service", 0), 0);
        ASSERT_EQ_INT(upstream_units_write(fd, dir, c, "/d", WRAPPER), -EEXIST);
        ASSERT_TRUE(fstatat(fd, "mcp-exec-upstream-srv@.service", &st, 0) < 0 && errno == ENOENT);
        ASSERT_EQ_INT(fstatat(fd, "mcp-exec-upstream-srv.socket", &st, 0), 0);

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        ASSERT_EQ_INT(system(cmd), 0);
        close(fd);
        server_config_free(c);
}

int main(void) {
        test_quote();
        test_service();
        test_hostile_lines();
        test_egress_service();
        test_http_service();
        test_user_tag();
        test_write();
        return 0;
}
