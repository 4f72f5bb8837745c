/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "discover.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "launch-frame.h"
#include "log.h"
#include "macro.h"
#include "run-capture.h"

#define DISCOVERY_OUTPUT_MAX (256U * 1024U)

static const char discovery_code[] =
        "import json, pkgutil, platform, sys\n"
        "std = set(sys.stdlib_module_names) | {'test', 'sitecustomize', 'usercustomize', 'xxlimited', 'xxlimited_35', 'xxsubtype'}\n"
        "mods = sorted({m.name for m in pkgutil.iter_modules()\n"
        "               if m.name.isidentifier() and not m.name.startswith('_') and m.name not in std})\n"
        "print(json.dumps({'python': platform.python_version(), 'modules': mods}))\n";

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
