/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-properties.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bus_read_properties(sd_bus_message *m, bus_property_handler_t handle, void *userdata) {
        int r;

        assert(m);
        assert(handle);

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;
                r = handle(m, name, userdata);
                if (r == 0)
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int bus_read_variant_string(sd_bus_message *m, char **ret) {
        assert(m);
        assert(ret);

        const char *s;
        int r = sd_bus_message_read(m, "v", "s", &s);
        if (r < 0)
                return r;
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        free(*ret);
        *ret = c;
        return 0;
}

/* The unit's "Job" property, (uo): its object path, or NULL if no job (id 0). */
int bus_read_variant_job(sd_bus_message *m, const char **ret_job) {
        const char *p;
        uint32_t id;
        int r;

        assert(m);
        assert(ret_job);

        r = sd_bus_message_read(m, "v", "(uo)", &id, &p);
        if (r < 0)
                return r;
        *ret_job = id != 0 ? p : NULL;
        return 0;
}
