/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pump: libmicrohttpd driven by our sd-event loop, and the word to the
 * daemon that connections or sessions came or went. Below the request,
 * connection and session files, which call it when MHD must run again or
 * the daemon's idle exit must hear of them; it calls none of them. */
#include <assert.h>
#include <errno.h>
#include <sys/epoll.h>

#include "http-internal.h"
#include "log.h"
#include "macro.h"

/*
 * What libmicrohttpd 0.9.75 needs from an external loop in epoll mode
 * (MHD_USE_EPOLL without a thread; we watch MHD's epoll fd and call MHD_run()):
 *
 * - MHD_run() whenever MHD's epoll fd is readable, and again within the time
 *   MHD_get_timeout() gives (relative milliseconds; "none" when no connection
 *   has a timeout pending).
 * - MHD_run() after every MHD_resume_connection(): a resumed connection is
 *   only picked up at the start of a run, and nothing wakes the epoll fd.
 * - MHD_run() after a connection closed while MHD was at its connection limit
 *   (or at a process fd limit, "at_limit"): at the limit MHD takes its
 *   listening socket out of its epoll set, and puts it back only at the start
 *   of a later run, once below the limit. Connections are freed at the end of
 *   a run, after which MHD_get_timeout() may well say "none" (no connection
 *   left), and the epoll fd, without the listening socket, stays quiet while
 *   the backlog fills: nothing would ever run MHD again. This is what wedged
 *   the front end under a connection flood: fds of timed-out connections were
 *   gone, the backlog held thousands, and only the idle timer still fired.
 * - Never MHD_run() from inside one of MHD's callbacks: a zero-delay timer
 *   runs it from the loop (http_pump_run_soon()).
 * - MHD_quiesce_daemon() before MHD_stop_daemon(), with MHD_USE_ITC, so that
 *   MHD never shutdown()s the listening socket systemd shares with us; every
 *   suspended connection must be resumed before MHD_stop_daemon().
 *
 * While MHD sits at its limit, http-conn.c accepts from the listening socket
 * itself and answers 503, so that nobody waits in the backlog for a slot.
 */
void http_pump_run_soon(HttpServer *h) {
        assert(h);

        if (!h->mhd_timer)
                return;
        h->run_again = true;
        (void) sd_event_source_set_time_relative(h->mhd_timer, 0);
        (void) sd_event_source_set_enabled(h->mhd_timer, SD_EVENT_ONESHOT);
}

static void run_mhd(HttpServer *h) {
        MHD_UNSIGNED_LONG_LONG ms;

        assert(h);

        h->run_again = false;
        if (MHD_run(h->mhd) == MHD_NO)
                log_debug("MHD_run() failed.");
        /* A resume from inside that run asked for another one. */
        if (h->run_again)
                return;
        /* Relative milliseconds, not an absolute time. */
        if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) {
                (void) sd_event_source_set_time_relative(h->mhd_timer, (uint64_t) ms * USEC_PER_MSEC);
                (void) sd_event_source_set_enabled(h->mhd_timer, SD_EVENT_ONESHOT);
        } else
                (void) sd_event_source_set_enabled(h->mhd_timer, SD_EVENT_OFF);
}

static int on_mhd_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        assert(s);
        assert(userdata);

        run_mhd(userdata);
        return 0;
}

static int on_mhd_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        assert(s);
        assert(userdata);

        run_mhd(userdata);
        return 0;
}

void http_pump_activity(HttpServer *h) {
        assert(h);

        if (!h->stopping && h->on_activity)
                h->on_activity(h, h->userdata);
}

int http_pump_init(HttpServer *h) {
        const union MHD_DaemonInfo *info;
        int r;

        assert(h);
        assert(h->mhd);

        info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return -EIO;
        r = sd_event_add_io(h->event, &h->mhd_io, info->epoll_fd, EPOLLIN, on_mhd_io, h);
        if (r < 0)
                return r;
        /* Accuracy 1 µs: 0 would mean sd-event's default of 250 ms, and
         * every run MHD asks for "now" would wait that long. */
        return sd_event_add_time_relative(h->event, &h->mhd_timer, CLOCK_MONOTONIC, 0, 1, on_mhd_timer, h);
}

void http_pump_done(HttpServer *h) {
        assert(h);

        h->mhd_io = sd_event_source_disable_unref(h->mhd_io);
        h->mhd_timer = sd_event_source_disable_unref(h->mhd_timer);
}
