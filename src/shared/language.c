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
