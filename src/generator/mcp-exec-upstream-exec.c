/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mcp-exec-upstream-exec [ENV=ID ...] -- PROGRAM [ARG ...]
 *
 * The first process of an upstream server's unit when its servers.d file
 * has CREDENTIAL_ENV=: sets each environment variable ENV to the content of
 * the credential ID ($CREDENTIALS_DIRECTORY/ID, from the unit's
 * LoadCredential=; one final newline dropped), then executes PROGRAM (an
 * absolute path) with its arguments. The secret is never on a command line
 * nor in a unit property; only in the server's own environment. Messages
 * name the credential, never its content. Fails (status 1, 127 if PROGRAM
 * cannot be executed) rather than starting the server without it. */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "main-func.h"

#define CREDENTIAL_MAX (64 * 1024)

static int fail(const char *fmt, ...) _printf_(1, 2);
static int fail(const char *fmt, ...) {
        va_list ap;

        fputs("mcp-exec-upstream-exec: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_FAILURE;
}

static bool env_name_ok(const char *s, size_t n) {
        if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '_'))
                        return false;
        return true;
}

/* Reads credential id (a plain file name in dir_fd) into ret. */
static int read_credential(int dir_fd, const char *id, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;

        if (!*id || strchr(id, '/') || id[0] == '.')
                return fail("invalid credential name '%s'", id);
        fd = openat(dir_fd, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0)
                return fail("cannot open the credential %s: %s", id, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return fail("the credential %s is no regular file", id);
        buf = malloc(CREDENTIAL_MAX + 1);
        if (!buf)
                return fail("out of memory");
        for (;;) {
                ssize_t k = read(fd, buf + n, CREDENTIAL_MAX + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return fail("cannot read the credential %s: %s", id, strerror(errno));
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > CREDENTIAL_MAX)
                        return fail("the credential %s is larger than 64 KiB", id);
        }
        if (n > 0 && buf[n - 1] == '\n')
                n--;
        if (n > 0 && buf[n - 1] == '\r')
                n--;
        if (memchr(buf, 0, n)) {
                explicit_bzero(buf, n);
                return fail("the credential %s holds a NUL byte, which no environment variable can", id);
        }
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int set_one(int dir_fd, const char *pair) {
        _cleanup_free_ char *env = NULL, *value = NULL;
        const char *eq = strchr(pair, '=');
        int r;

        if (!eq || !env_name_ok(pair, (size_t) (eq - pair)))
                return fail("'%s' is not ENV=ID", pair);
        env = strndup(pair, (size_t) (eq - pair));
        if (!env)
                return fail("out of memory");
        r = read_credential(dir_fd, eq + 1, &value);
        if (r != 0)
                return r;
        r = setenv(env, value, 1) < 0 ? fail("cannot set %s: %s", env, strerror(errno)) : 0;
        explicit_bzero(value, strlen(value));
        return r;
}

static int run(int argc, char *argv[]) {
        _cleanup_close_ int dir_fd = -EBADF;
        const char *dir = getenv("CREDENTIALS_DIRECTORY");
        int i, r;

        for (i = 1; i < argc && !streq(argv[i], "--"); i++)
                ;
        if (i + 1 >= argc || argv[i + 1][0] != '/')
                return fail("usage: mcp-exec-upstream-exec [ENV=ID ...] -- /PROGRAM [ARG ...]");
        if (i > 1) {
                if (!dir)
                        return fail("no $CREDENTIALS_DIRECTORY: the unit loads no credentials");
                dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dir_fd < 0)
                        return fail("cannot open $CREDENTIALS_DIRECTORY: %s", strerror(errno));
        }
        for (int j = 1; j < i; j++) {
                r = set_one(dir_fd, argv[j]);
                if (r != 0)
                        return r;
        }
        dir_fd = safe_close(dir_fd);
        execv(argv[i + 1], argv + i + 1);
        fail("cannot execute %s: %s", argv[i + 1], strerror(errno));
        return 127;
}

DEFINE_MAIN_FUNCTION(run);
