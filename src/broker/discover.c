/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "discover.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "launch-frame.h"
#include "log.h"
#include "macro.h"
#include "run-capture.h"
#include "util.h"

/* The font cache matplotlib builds comes along (a few hundred KiB at most). */
#define DISCOVERY_OUTPUT_MAX (8U * 1024U * 1024U)
#define FONTLIST_MAX (4U * 1024U * 1024U)

static const char discovery_code[] =
        "import glob, json, os, pkgutil, platform, sys\n"
        "std = set(sys.stdlib_module_names) | {'test', 'sitecustomize', 'usercustomize', "
        "'xxlimited', 'xxlimited_35', 'xxsubtype'}\n"
        "mods = sorted({m.name for m in pkgutil.iter_modules()\n"
        "               if m.name.isidentifier() and not m.name.startswith('_') and m.name not in std})\n"
        "out = {'python': platform.python_version(), 'modules': mods, 'path': [p for p in sys.path if p],\n"
        "       'stdlib': sorted(n for n in sys.stdlib_module_names if not n.startswith('_'))}\n"
        "if 'matplotlib' in mods:\n"
        "    try:\n"
        "        import matplotlib.font_manager\n"
        "        c = sorted(glob.glob(os.path.join(os.environ.get('MPLCONFIGDIR', '/nonexistent'), "
        "'fontlist-*.json')))\n"
        "        if c:\n"
        "            with open(c[-1]) as f:\n"
        "                out['mpl_fontlist'] = {'name': os.path.basename(c[-1]), 'data': f.read()}\n"
        "    except Exception:\n"
        "        pass\n"
        "print(json.dumps(out))\n";

struct Discovery {
        RunCapture *capture;
        discovery_done_t done;
        void *userdata;
};

static void on_capture_done(const char *output, const RunResult *res, void *userdata) {
        Discovery *d = userdata;
        json_object *j = NULL, *m;

        if (!res->error && res->exit_code == 0) {
                j = json_tokener_parse(output);
                if (j && (!json_object_object_get_ex(j, "modules", &m) || !json_object_is_type(m, json_type_array))) {
                        json_object_put(j);
                        j = NULL;
                }
        }
        if (!j)
                log_warning("Discovering the sandbox's Python modules failed, continuing without the list.");
        d->done(j, d->userdata);
        json_object_put(j);
}

int discovery_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, discovery_done_t done, void *userdata,
                    Discovery **ret) {
        uint8_t input[LAUNCH_FRAME_HEADER_SIZE + sizeof discovery_code];
        _cleanup_(discovery_freep) Discovery *d = NULL;
        SandboxSpec own = *spec;
        int r;

        assert(done);
        assert(ret);

        d = new0(Discovery, 1);
        if (!d)
                return -ENOMEM;
        d->done = done;
        d->userdata = userdata;

        launch_frame_header(sizeof discovery_code - 1, input);
        memcpy(input + LAUNCH_FRAME_HEADER_SIZE, discovery_code, sizeof discovery_code - 1);
        own.description = SANDBOX_DESCRIPTION_DISCOVERY;
        r = run_capture_start(e, bus, &own, input, LAUNCH_FRAME_HEADER_SIZE + sizeof discovery_code - 1,
                              DISCOVERY_OUTPUT_MAX, on_capture_done, d, &d->capture);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}

Discovery *discovery_free(Discovery *d) {
        if (!d)
                return NULL;
        run_capture_free(d->capture);
        free(d);
        return NULL;
}

/* What the discovery depends on: the interpreter, and every directory on its
 * path (a package installed or removed changes its directory). */
char *discovery_stamp(const char *python, json_object *paths) {
        _cleanup_free_ char *stamp = NULL;
        struct stat st;

        if (stat(python, &st) < 0 ||
            asprintf(&stamp, "%s:%llu:%llu:%lld.%09ld", python, (unsigned long long) st.st_ino,
                     (unsigned long long) st.st_size, (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec) < 0)
                return NULL;
        for (size_t i = 0; json_object_is_type(paths, json_type_array) && i < json_object_array_length(paths); i++) {
                const char *p = json_object_get_string(json_object_array_get_idx(paths, i));
                char *next;

                if (!p)
                        continue;
                if (stat(p, &st) < 0)
                        st = (struct stat) {};
                if (asprintf(&next, "%s|%s:%lld.%09ld", stamp, p, (long long) st.st_mtim.tv_sec,
                             st.st_mtim.tv_nsec) < 0)
                        return NULL;
                free(stamp);
                stamp = next;
        }
        return TAKE_PTR(stamp);
}

json_object *discovery_cache_load(const char *dir, const char *python) {
        _cleanup_free_ char *path = NULL, *stamp = NULL;
        _cleanup_json_ json_object *j = NULL;
        json_object *info;

        assert(dir);
        assert(python);
        if (asprintf(&path, "%s/discovery.json", dir) < 0)
                return NULL;
        j = json_object_from_file(path);
        info = json_get(j, "info");
        if (!json_object_is_type(info, json_type_object) ||
            !json_object_is_type(json_get(info, "modules"), json_type_array))
                return NULL;
        stamp = discovery_stamp(python, json_get(info, "path"));
        if (!stamp || !streq_ptr(stamp, json_get_string(j, "stamp")))
                return NULL;
        return json_object_get(info);
}

static int write_atomic(const char *dir, const char *name, const char *data, size_t len) {
        _cleanup_free_ char *tmp = NULL, *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (asprintf(&tmp, "%s/.%s.tmp", dir, name) < 0 || asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return negative_errno();
        /* Readable for runs (the font cache) despite our UMask=0077. */
        if (fchmod(fd, 0644) < 0)
                return negative_errno();
        r = loop_write(fd, data, len);
        if (r < 0 || rename(tmp, path) < 0) {
                (void) unlink(tmp);
                return r < 0 ? r : negative_errno();
        }
        return 0;
}

int discovery_cache_store(const char *dir, const char *python, json_object *info) {
        _cleanup_free_ char *stamp = NULL;
        _cleanup_json_ json_object *j = NULL;
        json_object *f;
        const char *name, *data, *text;
        size_t len;
        int r;

        assert(dir);
        assert(python);
        assert(info);

        /* The font cache goes into a file of its own, for the launchers. */
        f = json_get(info, "mpl_fontlist");
        name = json_get_string(f, "name");
        data = json_get_string(f, "data");
        if (name && data && strlen(name) < 64 &&
            strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") == strlen(name) && name[0] != '.' &&
            strlen(data) <= FONTLIST_MAX) {
                r = write_atomic(dir, name, data, strlen(data));
                if (r < 0)
                        log_warning_errno(r, "Cannot keep matplotlib's font cache in %s, ignoring: %m", dir);
                else {
                        r = json_add_string(info, "mpl_fontlist", name);
                        if (r < 0)
                                return r;
                }
        } else
                json_object_object_del(info, "mpl_fontlist");

        stamp = discovery_stamp(python, json_get(info, "path"));
        if (!stamp)
                return -ENOMEM;
        r = json_build(&j, JB_STR("stamp", stamp), JB_OBJ("info", json_object_get(info)), JB_END);
        if (r < 0)
                return r;
        text = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &len);
        return write_atomic(dir, "discovery.json", text, len);
}
