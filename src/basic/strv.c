/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "strv.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

char **strv_free(char **l) {
        for (char **p = l; p && *p; p++)
                free(*p);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

char **strv_copy_n(const char *const *l, size_t max) {
        _cleanup_strv_free_ char **c = NULL;
        size_t n = 0;

        while (l && l[n] && n < max)
                n++;
        c = calloc(n + 1, sizeof *c);
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return NULL;
        }
        return TAKE_PTR(c);
}

int strv_extend_n(char ***l, const char *s, size_t n) {
        char *c, **nl;
        size_t k;

        assert(l);
        assert(s || n == 0);

        k = strv_length(*l);
        c = strndup(s, n);
        if (!c)
                return -ENOMEM;
        nl = realloc(*l, (k + 2) * sizeof *nl);
        if (!nl) {
                free(c);
                return -ENOMEM;
        }
        nl[k] = c;
        nl[k + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_split_list(const char *list, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        assert(ret);

        for (const char *p = list ?: ""; *p;) {
                size_t len = strcspn(p, ",");
                const char *s = p, *e = p + len;

                while (s < e && (*s == ' ' || *s == '\t'))
                        s++;
                while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
                        e--;
                if (e > s && strv_extend_n(&l, s, (size_t) (e - s)) < 0)
                        return -ENOMEM;
                p += len + (p[len] == ',');
        }
        *ret = TAKE_PTR(l);
        return 0;
}
