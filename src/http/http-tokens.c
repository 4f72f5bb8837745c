/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "http-tokens.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http-auth.h"
#include "http-util.h"
#include "macro.h"
#include "util.h"

void http_tokens_done(HttpTokens *t) {
        if (!t)
                return;
        for (size_t i = 0; i < t->n; i++) {
                /* Tokens are secrets: gone from memory with their set. */
                if (t->entries[i].token)
                        explicit_bzero(t->entries[i].token, strlen(t->entries[i].token));
                free(t->entries[i].token);
        }
        free(t->entries);
        *t = (HttpTokens) {};
}

bool http_token_name_is_valid(const char *name) {
        size_t l = name ? strlen(name) : 0;

        if (l == 0 || l > HTTP_TOKEN_NAME_MAX)
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
                        return false;
        /* "default" is the single token's caller; "loopback" the callers without one. */
        return !streq(name, HTTP_TOKEN_DEFAULT_NAME) && !streq(name, "loopback");
}

static int line_error(char *buf, size_t bufsize, const char **ret_error, unsigned line, const char *why) {
        assert(buf);
        assert(ret_error);
        assert(why);

        (void) snprintf(buf, bufsize, "line %u: %s", line, why);
        *ret_error = buf;
        return -EINVAL;
}

/* One line, comments and blanks gone: "NAME TOKEN", or nothing. */
static int parse_line(char *l, unsigned line, HttpTokens *t, char *buf, size_t bufsize, const char **ret_error) {
        char *name, *token, *rest;
        HttpToken *e;

        assert(l);
        assert(t);
        assert(buf);
        assert(ret_error);

        l[strcspn(l, "#")] = 0;
        name = l + strspn(l, " \t\r");
        if (!*name)
                return 0;
        token = name + strcspn(name, " \t\r");
        if (*token)
                *token++ = 0;
        token += strspn(token, " \t\r");
        rest = token + strcspn(token, " \t\r");
        if (*rest)
                *rest++ = 0;
        rest += strspn(rest, " \t\r");
        if (!*token || *rest)
                return line_error(buf, bufsize, ret_error, line, "expected NAME TOKEN");
        if (!http_token_name_is_valid(name))
                return line_error(buf, bufsize, ret_error, line,
                                  "the name must be 1 to 32 of a-z, 0-9, _ and - (not default or loopback)");
        if (strlen(token) > HTTP_AUTH_TOKEN_MAX || !str_is_visible_ascii(token))
                return line_error(buf, bufsize, ret_error, line,
                                  "the token must be at most 4096 bytes of visible ASCII");
        for (size_t i = 0; i < t->n; i++) {
                if (streq(t->entries[i].name, name))
                        return line_error(buf, bufsize, ret_error, line, "the name is given twice");
                /* One token, one caller. */
                if (streq(t->entries[i].token, token))
                        return line_error(buf, bufsize, ret_error, line, "the token is another name's too");
        }
        if (t->n >= HTTP_TOKENS_MAX)
                return line_error(buf, bufsize, ret_error, line, "more than 1024 tokens");
        e = reallocarray(t->entries, t->n + 1, sizeof *e);
        if (!e)
                return -ENOMEM;
        t->entries = e;
        e += t->n;
        *e = (HttpToken) {};
        (void) snprintf(e->name, sizeof e->name, "%s", name);
        e->token = strdup(token);
        if (!e->token)
                return -ENOMEM;
        t->n++;
        return 0;
}

int http_tokens_parse(const char *text, size_t len, HttpTokens *ret, char *buf, size_t bufsize,
                      const char **ret_error) {
        _cleanup_(http_tokens_done) HttpTokens t = {};
        _cleanup_free_ char *copy = NULL;
        unsigned line = 0;
        char *p, *nl;
        int r;

        assert(text);
        assert(ret);
        assert(buf);
        assert(ret_error);

        *ret_error = NULL;
        if (memchr(text, 0, len)) {
                *ret_error = "the file contains a NUL byte";
                return -EINVAL;
        }
        copy = strndup(text, len);
        if (!copy)
                return -ENOMEM;
        for (p = copy; p; p = nl) {
                nl = strchr(p, '\n');
                if (nl)
                        *nl++ = 0;
                line++;
                r = parse_line(p, line, &t, buf, bufsize, ret_error);
                if (r < 0) {
                        explicit_bzero(copy, len);
                        return r;
                }
        }
        explicit_bzero(copy, len);
        *ret = t;
        t = (HttpTokens) {};
        return 0;
}

int http_tokens_load(const char *path, HttpTokens *ret, char *buf, size_t bufsize, const char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        struct stat st;
        int r;

        assert(path);
        assert(ret);
        assert(buf);
        assert(ret_error);

        *ret_error = NULL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT) {
                *ret = (HttpTokens) {};
                return 0;
        }
        if (fd < 0 || fstat(fd, &st) < 0) {
                *ret_error = "cannot be read";
                return negative_errno();
        }
        if (!S_ISREG(st.st_mode)) {
                *ret_error = "is no regular file";
                return -EINVAL;
        }
        if (st.st_mode & (S_IROTH | S_IWOTH)) {
                *ret_error = "others may read or write it (chown root:mcp-exec and chmod 0640)";
                return -EPERM;
        }
        if ((uint64_t) st.st_size > HTTP_TOKENS_FILE_MAX) {
                *ret_error = "is larger than 1 MiB";
                return -EFBIG;
        }
        text = malloc(HTTP_TOKENS_FILE_MAX + 1);
        if (!text)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, text + n, HTTP_TOKENS_FILE_MAX + 1 - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        *ret_error = "cannot be read";
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > HTTP_TOKENS_FILE_MAX) {
                        *ret_error = "is larger than 1 MiB";
                        return -EFBIG;
                }
        }
        r = http_tokens_parse(text, n, ret, buf, bufsize, ret_error);
        explicit_bzero(text, n);
        return r;
}
