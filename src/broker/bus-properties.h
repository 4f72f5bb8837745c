/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reading the a{sv} of a GetAll reply or a PropertiesChanged signal. */

#include <systemd/sd-bus.h>

/* handle() reads the value ("v") of each property it knows and returns 1,
 * or returns 0 to have it skipped, or -errno to stop. */
typedef int (*bus_property_handler_t)(sd_bus_message *m, const char *name, void *userdata);

/* Reads the a{sv} at m's position. */
int bus_read_properties(sd_bus_message *m, bus_property_handler_t handle, void *userdata);
