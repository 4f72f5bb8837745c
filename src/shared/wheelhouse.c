/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "wheelhouse.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "package-spec.h"
#include "util.h"

#define SHA256_HEX_LEN 64
/* A wheel's file name in the manifest: no path, bounded. */
#define WHEEL_NAME_MAX 255

/* One listed wheel: its project (normalized) and version. */
typedef struct Wheel {
        char *name;
        char *version;
} Wheel;

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_alnum(char c) {
        return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Versions in a natural order: runs of digits by value, the rest by byte,
 * so that 1.10 comes after 1.9. */
static int version_compare(const char *a, const char *b) {
        while (*a && *b) {
                if (is_digit(*a) && is_digit(*b)) {
                        size_t la, lb;
                        int c;

                        while (*a == '0' && is_digit(a[1]))
                                a++;
                        while (*b == '0' && is_digit(b[1]))
                                b++;
                        for (la = 0; is_digit(a[la]); la++)
                                ;
                        for (lb = 0; is_digit(b[lb]); lb++)
                                ;
                        if (la != lb)
                                return la < lb ? -1 : 1;
                        c = strncmp(a, b, la);
                        if (c != 0)
                                return c;
                        a += la;
                        b += lb;
                        continue;
                }
                if (*a != *b)
                        return (unsigned char) *a < (unsigned char) *b ? -1 : 1;
                a++;
                b++;
        }
        return *a ? 1 : *b ? -1 : 0;
}

static int wheel_compare(const void *x, const void *y) {
        const Wheel *a = x, *b = y;
        int c = strcmp(a->name, b->name);

        return c != 0 ? c : version_compare(a->version, b->version);
}

/* A field of a wheel file name: one or more of the characters the wheel
 * spec lets through its escaping ([A-Za-z0-9_.], "+" and "!" in versions). */
static bool field_valid(const char *s, size_t n, const char *extra) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '.' && !(extra && strchr(extra, s[i])))
                        return false;
        return true;
}

/* "name-version(-build)?-pytag-abitag-plattag.whl" into its project's
 * normalized name and its version. -EBADMSG for anything else. */
static int wheel_parse(const char *file, size_t len, Wheel *ret) {
        const char *part[6];
        size_t plen[6], n = 0, stem;
        _cleanup_free_ char *name = NULL, *version = NULL;
        const char *p, *end;
        int r;

        if (len <= 4 || len > WHEEL_NAME_MAX || memcmp(file + len - 4, ".whl", 4) != 0)
                return -EBADMSG;
        stem = len - 4;
        for (p = file, end = file + stem; p <= end && n < 6;) {
                const char *dash = memchr(p, '-', (size_t) (end - p));
                const char *stop = dash ?: end;

                part[n] = p;
                plen[n++] = (size_t) (stop - p);
                if (!dash)
                        break;
                p = dash + 1;
        }
        if (p + plen[n - 1] != end || (n != 5 && n != 6))
                return -EBADMSG;
        if (!field_valid(part[0], plen[0], NULL) || !is_alnum(part[0][0]) || !field_valid(part[1], plen[1], "+!") ||
            (n == 6 && (!field_valid(part[2], plen[2], NULL) || !is_digit(part[2][0]))))
                return -EBADMSG;
        for (size_t i = n - 3; i < n; i++)
                if (!field_valid(part[i], plen[i], NULL))
                        return -EBADMSG;

        version = strndup(part[1], plen[1]);
        name = strndup(part[0], plen[0]);
        if (!version || !name)
                return -ENOMEM;
        /* The name as a spec would give it: PEP 503 normalized. */
        r = package_spec_name(name, &ret->name);
        if (r == -EINVAL)
                return -EBADMSG;
        if (r < 0)
                return r;
        ret->version = TAKE_PTR(version);
        return 0;
}

/* One manifest line, without its newline. */
static int line_parse(const char *s, size_t n, Wheel *ret) {
        if (n < SHA256_HEX_LEN + 2 || s[SHA256_HEX_LEN] != ' ' || s[SHA256_HEX_LEN + 1] != ' ')
                return -EBADMSG;
        for (size_t i = 0; i < SHA256_HEX_LEN; i++)
                if (!is_digit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
                        return -EBADMSG;
        s += SHA256_HEX_LEN + 2;
        n -= SHA256_HEX_LEN + 2;
        if (memchr(s, '/', n) || memchr(s, 0, n))
                return -EBADMSG;
        return wheel_parse(s, n, ret);
}

static void wheels_free(Wheel *w, size_t n) {
        for (size_t i = 0; w && i < n; i++) {
                free(w[i].name);
                free(w[i].version);
        }
        free(w);
}

/* The manifest's text, at most WHEELHOUSE_MANIFEST_MAX bytes. */
static int read_manifest(const char *dir, char **ret, size_t *ret_len) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t have = 0;
        struct stat st;

        if (asprintf(&path, "%s/%s", dir, WHEELHOUSE_MANIFEST) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        if ((uint64_t) st.st_size > WHEELHOUSE_MANIFEST_MAX)
                return -EFBIG;
        buf = malloc(WHEELHOUSE_MANIFEST_MAX + 1);
        if (!buf)
                return -ENOMEM;
        /* Read to the end, not to st_size: it may grow under us. */
        for (;;) {
                ssize_t k = read(fd, buf + have, WHEELHOUSE_MANIFEST_MAX + 1 - have);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                have += (size_t) k;
                if (have > WHEELHOUSE_MANIFEST_MAX)
                        return -EFBIG;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = have;
        return 0;
}

static int parse_lines(const char *text, size_t len, Wheel **ret, size_t *ret_n) {
        Wheel *w = NULL;
        size_t n = 0, cap = 0;
        int r = 0;

        for (size_t at = 0; at < len;) {
                const char *nl = memchr(text + at, '\n', len - at);
                size_t l = nl ? (size_t) (nl - (text + at)) : len - at;

                if (n == cap) {
                        Wheel *p = reallocarray(w, cap = MAX(cap * 2, (size_t) 64), sizeof *w);
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        w = p;
                }
                r = line_parse(text + at, l, w + n);
                if (r < 0)
                        break;
                n++;
                at += l + 1;
        }
        if (r < 0) {
                wheels_free(w, n);
                return r;
        }
        *ret = w;
        *ret_n = n;
        return 0;
}

/* Groups the sorted wheels into projects, each version once. */
static int group(Wheel *w, size_t n, Wheelhouse *h) {
        for (size_t i = 0; i < n;) {
                _cleanup_free_ char *versions = NULL;
                size_t size = 0, j;
                FILE *f;

                if (h->n_projects >= WHEELHOUSE_PROJECTS_MAX)
                        return -EFBIG;
                f = open_memstream(&versions, &size);
                if (!f)
                        return -ENOMEM;
                for (j = i; j < n && streq(w[j].name, w[i].name); j++)
                        if (j == i || !streq(w[j].version, w[j - 1].version))
                                fprintf(f, "%s%s", j == i ? "" : ", ", w[j].version);
                if (fclose(f) != 0)
                        return -ENOMEM;
                h->projects[h->n_projects++] = (WheelhouseProject) {
                        .name = TAKE_PTR(w[i].name),
                        .versions = TAKE_PTR(versions),
                };
                i = j;
        }
        return 0;
}

int wheelhouse_load(const char *dir, Wheelhouse **ret) {
        _cleanup_(wheelhouse_freep) Wheelhouse *h = NULL;
        _cleanup_free_ char *text = NULL;
        Wheel *w = NULL;
        size_t len = 0, n = 0;
        int r;

        assert(dir);
        assert(ret);

        r = read_manifest(dir, &text, &len);
        if (r < 0)
                return r;
        r = parse_lines(text, len, &w, &n);
        if (r < 0)
                return r;
        if (n > 0)      /* an empty manifest: no array at all */
                qsort(w, n, sizeof *w, wheel_compare);
        h = new0(Wheelhouse, 1);
        if (h)
                h->projects = new0(WheelhouseProject, MAX(MIN(n, (size_t) WHEELHOUSE_PROJECTS_MAX), (size_t) 1));
        r = h && h->projects ? group(w, n, h) : -ENOMEM;
        wheels_free(w, n);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(h);
        return 0;
}

Wheelhouse *wheelhouse_free(Wheelhouse *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_projects; i++) {
                free(w->projects[i].name);
                free(w->projects[i].versions);
        }
        free(w->projects);
        free(w);
        return NULL;
}

static int project_compare(const void *key, const void *p) {
        return strcmp(key, ((const WheelhouseProject *) p)->name);
}

const WheelhouseProject *wheelhouse_find(const Wheelhouse *w, const char *name) {
        assert(name);

        if (!w || w->n_projects == 0)
                return NULL;
        return bsearch(name, w->projects, w->n_projects, sizeof *w->projects, project_compare);
}

int wheelhouse_describe(const Wheelhouse *w, size_t max, char **ret) {
        static const char more[] = "…";
        _cleanup_free_ char *s = NULL;
        size_t len = 0, i;

        assert(ret);

        s = malloc(max + 1);
        if (!s)
                return -ENOMEM;
        s[0] = 0;
        for (i = 0; w && i < w->n_projects; i++) {
                const WheelhouseProject *p = w->projects + i;
                size_t need = (i > 0 ? 2 : 0) + strlen(p->name) + 2 + strlen(p->versions) + 1;
                /* Room for ", …" if this is not the last one. */
                size_t tail = i + 1 < w->n_projects ? 2 + strlen(more) : 0;

                if (len + need + tail > max)
                        break;
                len += (size_t) sprintf(s + len, "%s%s (%s)", i > 0 ? ", " : "", p->name, p->versions);
        }
        if (w && i < w->n_projects && len + (i > 0 ? 2 : 0) + strlen(more) <= max)
                len += (size_t) sprintf(s + len, "%s%s", i > 0 ? ", " : "", more);
        *ret = TAKE_PTR(s);
        return 0;
}
