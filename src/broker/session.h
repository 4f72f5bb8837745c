/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One stateful session: a transient unit named UNIT_PREFIX_SESSION… with the
 * runs' fixed property set, running the launcher in session mode
 * (launch-session.h), the broker's end of its control socket, who owns it,
 * and the timers that end it. Knows systemd through Run; not the client
 * protocol: the broker's main file maps calls and ends onto that.
 *
 * Every way a session ends goes through one place (session_end()): the
 * unit is stopped (never left behind), and the owner hears it once.
 *
 * The id is the handle's secret part: it is never a unit name (those are
 * public: `systemctl list-units`) nor logged; the journal names the unit. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include <json-c/json.h>

#include "list.h"
#include "macro.h"
#include "sandbox-properties.h"

#define SESSION_ID_LEN 32               /* hex digits, 128 random bits */
#define SESSION_OWNER_MAX 256U          /* bytes of a caller or scope string */
/* Past a call's timeout: the launcher's grace for KeyboardInterrupt, then our
 * slack; if the call has not ended by then, the session is killed. */
#define SESSION_CALL_SLACK_USEC (10 * USEC_PER_SEC)

typedef enum SessionEnd {
        SESSION_END_CLOSED,             /* session_close by its owner */
        SESSION_END_SCOPE,              /* its MCP session ended (DELETE, expiry) */
        SESSION_END_IDLE,               /* no call for idle_usec */
        SESSION_END_LIFETIME,           /* max_usec after it was created */
        SESSION_END_LOST,               /* the interpreter died: a crash, os._exit(), the OOM killer, a kill after a timeout */
        SESSION_END_FRONTEND,           /* the front end that made it exited */
        SESSION_END_STOPPED,            /* its unit was stopped by someone else */
        SESSION_END_START_FAILED,       /* it never became ready */
        SESSION_END_SHUTDOWN,           /* the broker stops */
        _SESSION_END_MAX,
} SessionEnd;

/* "closed", "idle", …: for the journal and the client ("reason"). */
const char *session_end_to_string(SessionEnd e);

typedef struct Session Session;
typedef struct Run Run;

typedef struct SessionCallResult {
        int exit_code;                  /* -1 when a signal ended it */
        int signal;                     /* 0 when it exited */
        bool timed_out, interrupted;
        bool lost;                      /* the call ended the session */
        bool oom_killed;
        uint64_t duration_usec;
} SessionCallResult;

typedef struct SessionCallbacks {
        /* The interpreter is up and waits for calls; or (ready == false) it
         * never will be, and gone follows. */
        void (*ready)(Session *s, bool ready, void *userdata);
        /* The call that session_call() started is over. */
        void (*call_done)(Session *s, const SessionCallResult *result, void *userdata);
        /* The session is over; the callee frees it (session_free()). */
        void (*gone)(Session *s, SessionEnd why, void *userdata);
} SessionCallbacks;

typedef struct SessionOwner {
        const char *caller;             /* "uid:1000", "http:token"…: counted for the per-caller cap */
        const char *scope;              /* "" or the MCP session it was made in: checked, not counted */
        pid_t frontend_pid;             /* > 0: the session ends when this process does */
} SessionOwner;

struct Session {
        /* The broker's, to keep its sessions in a list. */
        LIST_FIELDS(Session, sessions);

        sd_event *event;
        Run *run;
        int control;                    /* the broker's end of the launcher's control socket */
        int pidfd;                      /* the front end that made it, or -EBADF */
        sd_event_source *control_io, *pidfd_io, *idle_timer, *life_timer, *call_timer, *defer_end;
        char id[SESSION_ID_LEN + 1];
        char *caller, *scope;
        pid_t frontend_pid;
        uint64_t idle_usec, created_usec, n_calls;
        bool ready, busy, ending, gone_sent;
        SessionEnd end;
        SessionCallbacks cb;
        void *userdata;
};

int session_new(sd_event *e, sd_bus *bus, const SandboxSpec *spec, const SessionOwner *owner, uint64_t idle_usec,
                uint64_t max_usec, const SessionCallbacks *cb, void *userdata, Session **ret);
/* Stops its unit if it still runs; no callback fires. */
Session *session_free(Session *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Session *, session_free);

/* Ends it: the unit is stopped, gone(why) fires once (from the event loop). */
void session_end(Session *s, SessionEnd why);

/* One call: stdin, stdout, stderr and maybe the result channel (fds, which
 * stay the caller's), with the result limits (borrowed). -EBUSY while a call
 * is running or before it is ready; -ESHUTDOWN once it is ending. */
int session_call(Session *s, json_object *limits, uint64_t timeout_usec, const int *fds, size_t n_fds);

/* The caller of the running call went away: the launcher interrupts it
 * (KeyboardInterrupt), the session stays. */
void session_interrupt(Session *s);

/* The owner presents (caller, scope) from pid: the same owner? */
bool session_owned_by(const Session *s, const char *caller, const char *scope, pid_t pid);
bool session_has_caller(const Session *s, const char *caller);
bool session_in_scope(const Session *s, const char *caller, const char *scope);

const char *session_unit(const Session *s);
