/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tool-arg-packages.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json-util.h"
#include "log.h"
#include "package-spec.h"
#include "util.h"
#include "wheelhouse.h"

/* The description goes into every model's context, and an error into its
 * reply: past this many bytes the wheelhouse's list is cut short. */
#define WHEELHOUSE_DESCRIBE_MAX 2048U
/* A spec echoed in an error message is cut to this. */
#define SPEC_MAX_ECHO 64

struct ToolPackages {
        char *dir;                      /* NULL: off */
        uint64_t max_packages;
        Wheelhouse *wheelhouse;         /* as last read; NULL: none (or unreadable) */
        int load_error;                 /* of the last read: 0, -ENOENT, … */
        bool seen;                      /* stat() was done at least once */
        struct stat st;                 /* the manifest as last read (st_ino 0: absent) */
};

int tool_packages_new(const char *wheelhouse, uint64_t max_packages, ToolPackages **ret) {
        _cleanup_(tool_packages_freep) ToolPackages *p = NULL;

        assert(ret);

        p = new0(ToolPackages, 1);
        if (!p)
                return -ENOMEM;
        p->max_packages = MIN(max_packages, (uint64_t) PACKAGES_MAX);
        p->load_error = -ENOENT;
        if (!isempty(wheelhouse) && max_packages > 0) {
                p->dir = strdup(wheelhouse);
                if (!p->dir)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

ToolPackages *tool_packages_free(ToolPackages *p) {
        if (!p)
                return NULL;
        wheelhouse_free(p->wheelhouse);
        free(p->dir);
        free(p);
        return NULL;
}

static bool same_file(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

void tool_packages_refresh(ToolPackages *p) {
        _cleanup_free_ char *path = NULL;
        Wheelhouse *w = NULL;
        struct stat st = {};
        int r;

        if (!p || !p->dir)
                return;
        if (asprintf(&path, "%s/%s", p->dir, WHEELHOUSE_MANIFEST) < 0) {
                (void) log_oom();
                return;
        }
        /* `mcp-exec wheels` replaces the manifest by rename: a new inode. */
        if (stat(path, &st) < 0)
                st = (struct stat) {};
        if (p->seen && same_file(&st, &p->st))
                return;
        r = st.st_ino != 0 ? wheelhouse_load(p->dir, &w) : -ENOENT;
        if (r == -ENOMEM) {
                (void) log_oom();
                return;         /* keep what we had; try again next time */
        }
        if (r < 0 && r != -ENOENT)
                log_warning("The wheelhouse manifest %s cannot be read (%s): packages are off until it is fixed.",
                            path, strerror(-r));
        else if (r >= 0)
                log_info("Wheelhouse %s: %zu projects.", p->dir, w->n_projects);
        wheelhouse_free(p->wheelhouse);
        p->wheelhouse = w;
        p->load_error = r < 0 ? r : 0;
        p->st = st;
        p->seen = true;
}

bool tool_packages_enabled(const ToolPackages *p) {
        return p && p->dir && p->max_packages > 0 && p->wheelhouse && p->wheelhouse->n_projects > 0;
}

void tool_packages_describe(FILE *f, const ToolPackages *p) {
        _cleanup_free_ char *list = NULL;

        assert(f);

        if (!tool_packages_enabled(p) || wheelhouse_describe(p->wheelhouse, WHEELHOUSE_DESCRIBE_MAX, &list) < 0)
                return;
        fprintf(f, "- Packages you can ask for with `packages` (installed offline from this server's wheelhouse "
                   "before your code runs; `pip install NAME` in your code also works for these), at most %" PRIu64
                   " per call: %s.\n",
                p->max_packages, list);
}

int tool_packages_schema(const ToolPackages *p, json_object **ret) {
        _cleanup_json_ json_object *o = NULL, *items = NULL;

        assert(ret);

        *ret = NULL;
        if (!tool_packages_enabled(p))
                return 0;
        if (json_build(&items, JB_STR("type", "string"), JB_INT("minLength", 1), JB_INT("maxLength", PACKAGE_SPEC_MAX),
                       JB_END) < 0 ||
            json_build(&o,
                       JB_STR("type", "array"),
                       JB_OBJ("items", TAKE_PTR(items)),
                       JB_INT("maxItems", p->max_packages),
                       JB_STR("description",
                              "Packages from this server's wheelhouse (see the tool description) to install before "
                              "the code runs, as pip specs: \"polars\", \"scikit-learn==1.5.*\", "
                              "\"requests[socks]>=2.31,<3\". What got installed, and pip's log, come back in "
                              "structuredContent.packages; a failed install is an error and the code does not run."),
                       JB_END) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

bool tool_packages_requested(json_object *packages) {
        return json_object_is_type(packages, json_type_array) && json_object_array_length(packages) > 0;
}

static int error_text(char **ret_error, int r) {
        if (r < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

static int off_text(const ToolPackages *p, char **ret_error) {
        if (!p || !p->dir)
                return error_text(ret_error,
                                  asprintf(ret_error, "packages are not enabled on this server: the operator has not "
                                                      "configured a wheelhouse (MCP_EXEC_WHEELHOUSE, "
                                                      "MCP_EXEC_MAX_PACKAGES); runs have only the preinstalled "
                                                      "modules"));
        if (p->load_error != 0 && p->load_error != -ENOENT)
                return error_text(ret_error,
                                  asprintf(ret_error, "packages are not available on this server now: the manifest "
                                                      "of its wheelhouse %s cannot be read (%s); the operator "
                                                      "rebuilds it with `mcp-exec wheels sync`",
                                           p->dir, strerror(-p->load_error)));
        return error_text(ret_error,
                          asprintf(ret_error, "packages are not enabled on this server: its wheelhouse %s is empty or "
                                              "missing; the operator fills it with `mcp-exec wheels add NAME`",
                                   p->dir));
}

/* The specs' names are in the wheelhouse, or the text says which are not. */
static int check_present(const ToolPackages *p, char **names, size_t n, char **ret_error) {
        _cleanup_free_ char *missing = NULL, *have = NULL;
        size_t size = 0, n_missing = 0;
        FILE *f;

        f = open_memstream(&missing, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!wheelhouse_find(p->wheelhouse, names[i]))
                        fprintf(f, "%s'%s'", n_missing++ > 0 ? ", " : "", names[i]);
        if (fclose(f) != 0)
                return -ENOMEM;
        if (n_missing == 0)
                return 0;
        if (wheelhouse_describe(p->wheelhouse, WHEELHOUSE_DESCRIBE_MAX, &have) < 0)
                return -ENOMEM;
        return error_text(ret_error, asprintf(ret_error, "%s %s %s not in this server's wheelhouse; it has: %s",
                                              n_missing == 1 ? "package" : "packages", missing,
                                              n_missing == 1 ? "is" : "are", have));
}

static void names_free(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* Every entry a valid spec, each project once; *ret_names their names. */
static int check_specs(json_object *packages, size_t n, char ***ret_names, char **ret_error) {
        char **names, echo[SPEC_MAX_ECHO + 1];
        int r = 0;

        names = new0(char *, MAX(n, (size_t) 1));
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < n && r == 0; i++) {
                json_object *v = json_object_array_get_idx(packages, i);
                const char *s = json_object_get_string(v);

                str_printable(s, echo, sizeof echo);
                if (!package_spec_valid(s, (size_t) json_object_get_string_len(v)))
                        r = error_text(ret_error, asprintf(ret_error, "'%s' is not a package spec: %s", echo,
                                                           TOOL_PACKAGES_SPEC_HINT));
                else if (package_spec_name(s, &names[i]) < 0)
                        r = -ENOMEM;
                for (size_t k = 0; k < i && r == 0; k++)
                        if (streq(names[k], names[i]))
                                r = error_text(ret_error,
                                               asprintf(ret_error, "the package '%s' is asked for twice in "
                                                                   "\"packages\": give each package once, with all "
                                                                   "its version clauses in one spec (NAME>=1,<2)",
                                                        names[i]));
        }
        if (r < 0) {
                names_free(names, n);
                return r;
        }
        *ret_names = names;
        return 0;
}

int tool_packages_check(const ToolPackages *p, json_object *packages, char **ret_error) {
        char **names = NULL;
        size_t n;
        int r;

        assert(ret_error);

        *ret_error = NULL;
        if (!packages || json_object_is_type(packages, json_type_null))
                return 0;
        if (!json_object_is_type(packages, json_type_array))
                return error_text(ret_error, (*ret_error = strdup(TOOL_PACKAGES_NOT_ARRAY_TEXT)) ? 0 : -ENOMEM);
        n = json_object_array_length(packages);
        for (size_t i = 0; i < n; i++)
                if (!json_object_is_type(json_object_array_get_idx(packages, i), json_type_string))
                        return error_text(ret_error, (*ret_error = strdup(TOOL_PACKAGES_NOT_ARRAY_TEXT)) ? 0 : -ENOMEM);
        if (n == 0)
                return 0;
        if (!tool_packages_enabled(p))
                return off_text(p, ret_error);
        if (n > p->max_packages)
                return error_text(ret_error,
                                  asprintf(ret_error, "\"packages\" has %zu entries, more than this server's limit "
                                                      "of %" PRIu64 " (MCP_EXEC_MAX_PACKAGES)",
                                           n, p->max_packages));
        r = check_specs(packages, n, &names, ret_error);
        if (r < 0)
                return r;
        r = check_present(p, names, n, ret_error);
        names_free(names, n);
        return r;
}
