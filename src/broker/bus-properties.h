/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reading the a{sv} of a GetAll reply or a PropertiesChanged signal. */

#include <systemd/sd-bus.h>

/* handle() reads the value ("v") of each property it knows and returns 1,
 * or returns 0 to have it skipped, or -errno to stop. */
typedef int (*bus_property_handler_t)(sd_bus_message *m, const char *name, void *userdata);

/* Reads the a{sv} at m's position. */
int bus_read_properties(sd_bus_message *m, bus_property_handler_t handle, void *userdata);

/* A "v" of "s" at m's position, copied into *ret (the old value freed). */
int bus_read_variant_string(sd_bus_message *m, char **ret);
/* A unit's "Job" property, "v" of (uo): its object path, or NULL if no job
 * (id 0); valid while m is. */
int bus_read_variant_job(sd_bus_message *m, const char **ret_job);
