/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-properties.h"

#include <assert.h>

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
