/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "language.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

typedef struct LanguageInfo {
        const char *name;
        const char *const *interpreters;
        const char *bootstrap;
        const char *const *flags;
} LanguageInfo;

static const LanguageInfo table[_LANGUAGE_MAX] = {
        [LANGUAGE_PYTHON] = {
                .name = "python",
                .interpreters = (const char *const[]) { NULL },
                .bootstrap = "mcp-exec-bootstrap.py",
                .flags = (const char *const[]) { NULL },
        },
        [LANGUAGE_BASH] = {
                .name = "bash",
                .interpreters = (const char *const[]) { "/usr/bin/bash", "/bin/bash", NULL },
                .bootstrap = "mcp-exec-bootstrap.sh",
                /* No startup files: the environment is the launcher's alone. */
                .flags = (const char *const[]) { "--norc", "--noprofile", NULL },
        },
        [LANGUAGE_JAVASCRIPT] = {
                .name = "javascript",
                .interpreters = (const char *const[]) { "/usr/bin/node", "/usr/bin/nodejs", NULL },
                .bootstrap = "mcp-exec-bootstrap.js",
                .flags = (const char *const[]) { NULL },
        },
};

const char *language_to_string(Language l) {
        if ((unsigned) l >= _LANGUAGE_MAX)
                return NULL;
        return table[l].name;
}

int language_from_string(const char *s, Language *ret) {
        assert(ret);

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < _LANGUAGE_MAX; i++)
                if (streq(table[i].name, s)) {
                        *ret = (Language) i;
                        return 0;
                }
        return -EINVAL;
}

const char *const *language_interpreters(Language l) {
        assert((unsigned) l < _LANGUAGE_MAX);
        return table[l].interpreters;
}

const char *language_bootstrap(Language l) {
        assert((unsigned) l < _LANGUAGE_MAX);
        return table[l].bootstrap;
}

const char *const *language_interpreter_flags(Language l) {
        assert((unsigned) l < _LANGUAGE_MAX);
        return table[l].flags;
}

int language_find_interpreter(Language l, const char **ret) {
        assert((unsigned) l < _LANGUAGE_MAX);
        assert(ret);

        for (const char *const *p = table[l].interpreters; *p; p++) {
                struct stat st;

                if (stat(*p, &st) >= 0 && S_ISREG(st.st_mode) && access(*p, X_OK) >= 0) {
                        *ret = *p;
                        return 0;
                }
        }
        return -ENOENT;
}

int language_set_parse(const char *s, uint32_t *ret) {
        uint32_t set = 0;

        assert(ret);

        if (!s)
                return -EINVAL;
        for (const char *p = s;;) {
                size_t n = strcspn(p, ",");
                char name[16];
                Language l;

                if (n == 0 || n >= sizeof name)
                        return -EINVAL;
                memcpy(name, p, n);
                name[n] = 0;
                if (language_from_string(name, &l) < 0 || (set & LANGUAGE_BIT(l)))
                        return -EINVAL;
                set |= LANGUAGE_BIT(l);
                if (!p[n])
                        break;
                p += n + 1;
        }
        /* Python is every call's default: it cannot be turned off. */
        if (!(set & LANGUAGE_BIT(LANGUAGE_PYTHON)))
                return -EINVAL;
        *ret = set;
        return 0;
}

const char *language_set_to_string(uint32_t set, char *buf, size_t size) {
        size_t used = 0;

        assert(buf);
        assert(size > 0);

        buf[0] = 0;
        for (size_t i = 0; i < _LANGUAGE_MAX; i++) {
                int k;

                if (!(set & LANGUAGE_BIT(i)))
                        continue;
                k = snprintf(buf + used, size - used, "%s%s", used > 0 ? "," : "", table[i].name);
                if (k < 0 || (size_t) k >= size - used)
                        break;
                used += (size_t) k;
        }
        return buf;
}

/* The word of line [p, end) at *p on, skipping blanks: its start and length. */
static size_t next_word(const char **p, const char *end) {
        const char *s;

        while (*p < end && (**p == ' ' || **p == '\t'))
                (*p)++;
        s = *p;
        while (*p < end && **p != ' ' && **p != '\t')
                (*p)++;
        return (size_t) (*p - s);
}

static bool word_is(const char *w, size_t n, const char *s) {
        return strlen(s) == n && memcmp(w, s, n) == 0;
}

static bool all_digits(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

int language_from_shebang(const char *code, size_t len, Language *ret) {
        const char *p, *end, *w, *base;
        size_t n;

        assert(code || len == 0);
        assert(ret);

        if (len < 2 || code[0] != '#' || code[1] != '!')
                return -ENOENT;
        p = code + 2;
        end = memchr(p, '\n', len - 2) ?: code + len;
        if (end > p && end[-1] == '\r')
                end--;
        w = p;
        n = next_word(&p, end);
        w = p - n;
        base = memrchr(w, '/', n);
        if (base) {
                n -= (size_t) (base + 1 - w);
                w = base + 1;
        }
        /* "#!/usr/bin/env [-S] [NAME=V...] prog": the program is the first
         * other word. */
        while (word_is(w, n, "env") || (n > 0 && (w[0] == '-' || memchr(w, '=', n)))) {
                n = next_word(&p, end);
                w = p - n;
        }
        if (word_is(w, n, "bash") || word_is(w, n, "sh"))
                *ret = LANGUAGE_BASH;
        else if (word_is(w, n, "node") || word_is(w, n, "nodejs"))
                *ret = LANGUAGE_JAVASCRIPT;
        else if (word_is(w, n, "python") || word_is(w, n, "python3") ||
                 (n > 8 && memcmp(w, "python3.", 8) == 0 && all_digits(w + 8, n - 8)))
                *ret = LANGUAGE_PYTHON;
        else
                return -EPROTONOSUPPORT;
        return 0;
}
