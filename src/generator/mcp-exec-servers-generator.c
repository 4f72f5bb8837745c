/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mcp-exec-servers-generator NORMAL-DIR [EARLY-DIR LATE-DIR]: a systemd
 * generator (systemd.generator(7)), run at boot and at each daemon-reload.
 * For every valid stdio server of /etc/mcp-exec/servers.d it writes the
 * socket and the template service of upstream-units.h into NORMAL-DIR, and
 * a want of the socket by sockets.target. It must never fail boot: a bad
 * file (named with its line, in the journal) and a server that cannot be written are skipped,
 * the others are written, and the exit status is 0. A Streamable HTTP
 * server (URL=) gets the same two units, running its bridge
 * (mcp-exec-upstream-http), if this build has one (libcurl); else it is
 * off, as the gateway has it.
 *
 * MCP_EXEC_SERVERS_DIR replaces /etc/mcp-exec/servers.d (tests only; PID 1's
 * environment is root's). */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "build-config.h"
#include "macro.h"
#include "main-func.h"
#include "server-config.h"
#include "strv.h"
#include "upstream-units.h"

#define WRAPPER LIBEXECDIR "/mcp-exec-upstream-exec"

/* Where messages go besides stderr: systemd 252 runs generators with
 * stderr on /dev/null (newer ones connect it to the journal, a socket). So
 * when systemd runs us (it sets $SYSTEMD_SCOPE) and stderr is not a socket,
 * each message also goes to the journal if it runs (daemon-reload), else to
 * the kernel log, which journald reads at boot. By hand: stderr only. */
static bool also_journal, also_kmsg;

static void log_setup(void) {
        struct stat st;

        if (!getenv("SYSTEMD_SCOPE") || (fstat(STDERR_FILENO, &st) >= 0 && S_ISSOCK(st.st_mode)))
                return;
        if (access("/run/systemd/journal/socket", W_OK) >= 0)
                also_journal = true;
        else
                also_kmsg = access("/dev/kmsg", W_OK) >= 0;
}

static void say(int level, const char *fmt, ...) _printf_(2, 3);
static void say(int level, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        fprintf(stderr, "mcp-exec-servers-generator: %s\n", msg);
        if (also_journal)
                (void) sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", level,
                                       "SYSLOG_IDENTIFIER=mcp-exec-servers-generator", NULL);
        else if (also_kmsg) {
                _cleanup_close_ int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                _cleanup_free_ char *line = NULL;

                /* One write() is one kernel log record. */
                if (fd >= 0 && asprintf(&line, "<%d>mcp-exec-servers-generator: %s\n", level, msg) >= 0)
                        (void) write(fd, line, strlen(line));
        }
}

/* Does this build write units for c? */
static bool has_units(const ServerConfig *c) {
        return c->argv || (c->url && HAVE_HTTP_UPSTREAM);
}

/* Does a server with units before servers[i] have the same user tag? */
static bool tag_taken(const ServerConfigs *s, size_t i) {
        uint32_t tag = upstream_user_tag(s->servers[i]->name);

        for (size_t j = 0; j < i; j++)
                if (has_units(s->servers[j]) && upstream_user_tag(s->servers[j]->name) == tag)
                        return true;
        return false;
}

static int run(int argc, char *argv[]) {
        _cleanup_(server_configs_done) ServerConfigs s = {};
        _cleanup_close_ int dir_fd = -EBADF;
        const char *dir = getenv("MCP_EXEC_SERVERS_DIR") ?: SERVERS_DIR;
        size_t written = 0;
        int r;

        log_setup();
        if (argc != 2 && argc != 4) {
                say(LOG_ERR, "usage: %s NORMAL-DIR [EARLY-DIR LATE-DIR] (a systemd generator)", argv[0]);
                return EXIT_FAILURE;
        }
        dir_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) {
                say(LOG_ERR, "cannot open %s: %s; no upstream server units", argv[1], strerror(errno));
                return 0;
        }
        r = server_configs_load(dir, &s);
        if (r < 0) {
                say(LOG_ERR, "cannot read %s: %s; no upstream server units", dir, strerror(-r));
                return 0;
        }
        STRV_FOREACH(e, s.errors)
                say(LOG_ERR, "%s; that server is off", *e);
        for (size_t i = 0; i < s.n_servers; i++) {
                const ServerConfig *c = s.servers[i];

                if (!has_units(c)) {
                        say(LOG_WARNING, "%s/%s.conf: URL= (Streamable HTTP) needs a build with libcurl "
                            "(mcp-exec-upstream-http), which this one is not; that server is off", dir, c->name);
                        continue;
                }
                if (tag_taken(&s, i)) {
                        say(LOG_ERR, "%s/%s.conf: its user tag %06" PRIx32 " is another server's; rename one of "
                            "them; that server is off", dir, c->name, upstream_user_tag(c->name));
                        continue;
                }
                r = upstream_units_write(dir_fd, argv[1], c, dir, WRAPPER);
                if (r < 0)
                        say(LOG_ERR, "%s/%s.conf: cannot write its units: %s; that server is off", dir, c->name,
                            strerror(-r));
                else
                        written++;
        }
        if (s.n_servers > 0 || s.errors)
                say(LOG_INFO, "%zu upstream server(s) with units, %zu refused", written, strv_length(s.errors));
        return 0;
}

DEFINE_MAIN_FUNCTION(run);
