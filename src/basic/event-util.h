/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

/* The daemon's one loop: the thread's default sd-event, which exits on
 * SIGTERM and SIGINT (blocked here so that sd-event can take them) and pings
 * the service watchdog when the unit has one. */
int event_new_daemon(sd_event **ret);
