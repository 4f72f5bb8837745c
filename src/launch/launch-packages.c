/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A run's packages (launch-packages.h): what to install, and the frame. */
#include "launch-packages.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "package-spec.h"
#include "strv.h"
#include "util.h"

void launch_install_done(LaunchInstall *i) {
        if (!i)
                return;
        free(i->error);
        json_object_put(i->requested);
        json_object_put(i->installed);
        json_object_put(i->already);
        json_object_put(i->replaced);
        json_object_put(i->modules);
        free(i->log);
        *i = (LaunchInstall) {};
}

bool launch_packages_wanted(json_object *run) {
        json_object *p = json_get(run, "packages");
        return p && (!json_object_is_type(p, json_type_array) || json_object_array_length(p) > 0);
}

bool launch_packages_store(const LaunchArgs *a) {
        _cleanup_free_ char *p = NULL;

        assert(a);
        if (!a->wheelhouse || asprintf(&p, "%s/" LAUNCH_STORE_INDEX, a->wheelhouse) < 0)
                return false;
        return access(p, F_OK) >= 0;
}

/* Whether the comma-separated list has name. */
static bool list_has(const char *list, const char *name) {
        size_t n = strlen(name);

        for (const char *s = list; s && *s; s += strcspn(s, ","), s += !!*s)
                if (strncmp(s, name, n) == 0 && (s[n] == ',' || s[n] == 0))
                        return true;
        return false;
}

bool launch_packages_stale(const LaunchInstall *i, const char *preloaded) {
        assert(i);

        if (!i->ok || !i->modules)
                return false;
        if (i->pth)
                return true;
        for (size_t k = 0; k < json_object_array_length(i->modules); k++) {
                const char *m = json_object_get_string(json_object_array_get_idx(i->modules, k));

                /* Not known what the preload imported, or not what the
                 * packages bring: either may shadow anything. */
                if (!preloaded || streq(m, "*") || list_has(preloaded, m))
                        return true;
        }
        return false;
}

static bool strv_contains(char **l, const char *s) {
        for (size_t k = 0; l && l[k]; k++)
                if (streq(l[k], s))
                        return true;
        return false;
}

#define ERROR_MAX 2048               /* bytes of an error, so that the meta fits */

static int fail(LaunchInstall *i, const char *error) {
        i->ok = false;
        i->error = strndup(error, (size_t) utf8_prefix_len(error, ERROR_MAX));
        return i->error ? 0 : -ENOMEM;
}

/* An array of strings of the answer's key (anything else: empty). */
static json_object *answer_list(json_object *ans, const char *key, json_type type) {
        json_object *l = json_get(ans, key), *out = json_object_new_array();

        for (size_t k = 0; out && l && json_object_is_type(l, json_type_array) && k < json_object_array_length(l);
             k++) {
                json_object *e = json_object_array_get_idx(l, k);
                if (json_object_is_type(e, type) &&
                    (type != json_type_object || (json_get_string(e, "name") && json_get_string(e, "version"))))
                        (void) json_append(out, json_object_get(e));
        }
        return out;
}

/* Splits the specs into i->requested, i->already and the new ones (*ret_new). */
static int sort_specs(json_object *run, char **session, LaunchInstall *i, json_object **ret_new) {
        json_object *p = json_get(run, "packages");
        _cleanup_json_ json_object *fresh = json_object_new_array();

        i->requested = json_object_new_array();
        i->already = json_object_new_array();
        if (!fresh || !i->requested || !i->already)
                return -ENOMEM;
        if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) > PACKAGES_MAX)
                return fail(i, "malformed \"packages\" from the broker");
        for (size_t k = 0; k < json_object_array_length(p); k++) {
                json_object *e = json_object_array_get_idx(p, k);
                const char *s = json_object_get_string(e);

                if (!json_object_is_type(e, json_type_string) || !package_spec_valid(s, strlen(s)))
                        return fail(i, "malformed \"packages\" from the broker: not a valid spec");
                if (json_append(i->requested, json_object_get(e)) < 0 ||
                    json_append(strv_contains(session, s) ? i->already : fresh, json_object_get(e)) < 0)
                        return -ENOMEM;
        }
        *ret_new = TAKE_PTR(fresh);
        return 0;
}

/* Sorts, then installs what is new with the installer: the steps of
 * launch_packages_install(), each failure returned as it happens. */
static int install(const LaunchArgs *a, json_object *run, char ***session, bool allow_replace, uint64_t deadline,
                   LaunchInstall *i) {
        _cleanup_json_ json_object *fresh = NULL, *req = NULL, *ans = NULL;
        const char *why = NULL;
        int r;

        assert(a);
        assert(run);
        assert(i);

        r = sort_specs(run, session ? *session : NULL, i, &fresh);
        if (r < 0 || i->error)
                return r;
        if (!a->wheelhouse)
                return fail(i, "packages are not enabled on this server");
        i->ok = true;
        if (json_object_array_length(fresh) == 0)
                return 0;
        r = json_build(&req,
                       JB_STR("wheelhouse", a->wheelhouse),
                       JB_STR("prefix", SANDBOX_PACKAGES_PREFIX),
                       JB_OBJ("specs", json_object_get(fresh)),
                       JB_INT("max_bytes", MAX(json_get_int64(run, "packages_max_bytes", 0), (int64_t) 0)),
                       JB_BOOL("allow_replace", allow_replace),
                       JB_STR("python", a->python),
                       JB_END);
        if (r < 0)
                return r;
        ans = launch_installer_run(a, req, deadline, i, &why);
        if (!ans)
                return fail(i, why);
        i->ok = json_get_bool(ans, "ok");
        if (!i->ok)
                return fail(i, json_get_string(ans, "error") ?: "the installer failed");
        i->installed = answer_list(ans, "installed", json_type_object);
        i->replaced = answer_list(ans, "replaced", json_type_string);
        i->modules = answer_list(ans, "modules", json_type_string);
        i->pth = json_get_bool(ans, "pth");
        if (!i->installed || !i->replaced || !i->modules)
                return -ENOMEM;
        for (size_t k = 0; session && k < json_object_array_length(fresh); k++) {
                const char *s = json_object_get_string(json_object_array_get_idx(fresh, k));

                r = strv_extend_n(session, s, strlen(s));
                if (r < 0)
                        return r;
        }
        return 0;
}

int launch_packages_install(const LaunchArgs *a, json_object *run, char ***session, bool allow_replace,
                            uint64_t deadline, LaunchInstall *ret) {
        uint64_t t0 = now_usec();
        int r;

        assert(a);
        assert(run);
        assert(ret);

        *ret = (LaunchInstall) {};
        r = install(a, run, session, allow_replace, deadline, ret);
        ret->duration_usec = now_usec() - t0;
        return r < 0 ? r : 0;
}

/* The first n elements of l (all if it is shorter); NULL l: an empty one. */
static json_object *cut(json_object *l, size_t n) {
        json_object *out = json_object_new_array();

        for (size_t k = 0; out && l && k < MIN(n, json_object_array_length(l)); k++)
                (void) json_append(out, json_object_get(json_object_array_get_idx(l, k)));
        return out;
}

void launch_packages_send(const LaunchInstall *i, bool fresh_interpreter, ResultWriter *w) {
        assert(i);
        assert(w);

        /* Lists of up to PACKAGES_MAX specs of 128 bytes do not fit in
         * RESULT_FRAME_META_MAX: cut them until the meta does. */
        for (size_t n = PACKAGES_MAX; ; n /= 2) {
                _cleanup_json_ json_object *m = NULL;
                size_t len = 0;
                int r;

                r = json_build(&m,
                               JB_BOOL("ok", i->ok),
                               JB_OBJ("requested", cut(i->requested, n)),
                               JB_OBJ("installed", cut(i->installed, n)),
                               JB_OBJ("already", cut(i->already, n)),
                               JB_OBJ("replaced", cut(i->replaced, n)),
                               JB_BOOL("fresh_interpreter", fresh_interpreter),
                               JB_INT("duration_us", i->duration_usec),
                               JB_END);
                if (r >= 0 && !i->ok)
                        /* Even cut to ERROR_MAX, a text of control bytes
                         * grows sixfold in JSON: then it is left out. */
                        r = json_build_into(
                                m,
                                JB_STR("error", n > 0 ? i->error ?: "failed"
                                                      : "the installer failed (its error text is too long to report)"),
                                JB_END);
                if (r < 0 || !json_serialize(m, &len))
                        return;
                if (len <= RESULT_FRAME_META_MAX || n == 0) {
                        (void) result_send(w, RESULT_FRAME_PACKAGES, TAKE_PTR(m), i->log, i->log_len);
                        return;
                }
        }
}
