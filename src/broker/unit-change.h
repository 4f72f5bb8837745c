/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which PropertiesChanged signals of a run's unit are worth a GetAll. Apart
 * from the bus, so that a unit test can walk the sequences systemd sends.
 *
 * Each GetAll reads every property of the unit and costs PID 1 and
 * dbus-daemon about a millisecond of a core each, on the machine the run is
 * on. A warm unit's take changes only its Description, which systemd
 * signals twice (the Service interface, then the Unit interface, always in
 * that order): asking for all of it then takes a core from the run. Every
 * other change still asks. */

#include <stdbool.h>

typedef struct UnitChange {
        bool unit_interface;            /* org.freedesktop.systemd1.Unit's signal; false: the type's (Service) */
        const char *job;                /* the job it shows on the unit; NULL: none, or not shown */
        const char *active_state;       /* NULL: not shown */
} UnitChange;

typedef struct UnitSeen {
        bool running;                   /* the start job is done and the main process started */
        const char *active_state;       /* by the last GetAll; NULL: none yet */
        bool has_job;                   /* the last GetAll showed a job on the unit */
} UnitSeen;

/* False only for a change that leaves a running unit as the last GetAll saw
 * it: active before and after, no job then or now. */
bool unit_change_needs_getall(const UnitChange *change, const UnitSeen *seen);
