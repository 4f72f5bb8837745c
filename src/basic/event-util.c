/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "event-util.h"

#include <assert.h>
#include <signal.h>
#include <stdbool.h>

#include "macro.h"

int event_new_daemon(sd_event **ret) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        sigset_t mask;
        int r;

        assert(ret);

        r = sd_event_default(&e);
        if (r < 0)
                return r;
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        /* No handler: sd-event exits the loop. */
        (void) sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
        (void) sd_event_set_watchdog(e, true);
        *ret = TAKE_PTR(e);
        return 0;
}
