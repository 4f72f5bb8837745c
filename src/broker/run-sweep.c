/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The broker's start: run and session units an earlier broker left behind
 * are stopped (run.h), but for those it is told to keep. */
#include "run.h"

#include <assert.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "log.h"
#include "macro.h"
#include "unit-names.h"
#include "util.h"

#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define MANAGER_IFACE "org.freedesktop.systemd1.Manager"

int run_sweep_stale(sd_bus *bus, bool (*keep)(const char *unit, void *userdata), void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *name, *active;
        unsigned n = 0;
        int r;

        assert(bus);

        r = sd_bus_call_method(bus, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE, "ListUnitsByPatterns",
                               &error, &reply, "asas", 0, 2, UNIT_PREFIX_RUN "*.service",
                               UNIT_PREFIX_SESSION "*.service");
        if (r < 0)
                return log_error_errno(r, "Failed to list leftover runs: %s", error.message ?: strerror(-r));

        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, &active, NULL, NULL, NULL,
                                        NULL, NULL, NULL)) > 0) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;

                if (keep && keep(name, userdata))
                        continue;
                if (!streq(active, "inactive"))
                        (void) sd_bus_call_method(bus, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE, "StopUnit",
                                                  &e, NULL, "ss", name, "replace");
                sd_bus_error_free(&e);
                (void) sd_bus_call_method(bus, SYSTEMD_SERVICE, SYSTEMD_PATH, MANAGER_IFACE, "ResetFailedUnit",
                                          &e, NULL, "s", name);
                log_struct(LOG_NOTICE, "MESSAGE=Stopped leftover unit %s (%s)", name, active,
                           "MCP_UNIT=%s", name);
                n++;
        }
        if (r < 0)
                return r;
        return (int) n;
}
