/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-change.h"

#include <assert.h>

#include "macro.h"

bool unit_change_needs_getall(const UnitChange *change, const UnitSeen *seen) {
        assert(change);
        assert(seen);

        /* Before it runs, every change counts (its start job, its main
         * process). */
        if (!seen->running)
                return true;
        /* The type's signal comes right before the Unit interface's, which
         * says what changed for us. */
        if (!change->unit_interface)
                return false;
        /* A job, queued or just gone, is a stop or our own start ending. The
         * last GetAll may have shown a job whose removal is this signal: a
         * failed unit with a stop job queued, then the same state without
         * it, must be asked again or its end is never seen. */
        if (change->job || seen->has_job)
                return true;
        /* Only "active" to "active" is nothing new: a final state is read
         * whole (its result, its main process's status). */
        return !(streq_ptr(change->active_state, "active") && streq_ptr(seen->active_state, "active"));
}
