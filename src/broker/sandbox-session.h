/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One sandbox session (an interpreter kept from call to call): a transient
 * unit named UNIT_PREFIX_SESSION… with the runs' fixed property set, running
 * the launcher in session mode (launch-session.h), the broker's end of its
 * control socket, who owns it, and the timers that end it. Knows systemd through Run; not the client
 * protocol: client-sessions.c maps calls and ends onto that.
 *
 * Every way a session ends goes through one place (sandbox_session_end()): the
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

#include "broker-proto.h"
#include "language.h"
#include "egress-link.h"
#include "tools-link.h"
#include "list.h"
#include "macro.h"
#include "sandbox-properties.h"

#define SANDBOX_SESSION_ID_LEN 32               /* hex digits, 128 random bits */
#define SANDBOX_SESSION_OWNER_MAX 256U          /* bytes of a caller or scope string */
/* Past a call's timeout: the launcher's grace for KeyboardInterrupt, then our
 * slack; if the call has not ended by then, the session is killed. */
#define SANDBOX_SESSION_CALL_SLACK_USEC (10 * USEC_PER_SEC)

typedef enum SandboxSessionEnd {
        SANDBOX_SESSION_END_CLOSED,             /* session_close by its owner */
        SANDBOX_SESSION_END_SCOPE,              /* its MCP session ended (DELETE, expiry) */
        SANDBOX_SESSION_END_IDLE,               /* no call for idle_usec */
        SANDBOX_SESSION_END_LIFETIME,           /* max_usec after it was created */
        SANDBOX_SESSION_END_LOST,               /* the interpreter died: a crash, os._exit(), the OOM killer,
                                                 * a kill after a timeout */
        SANDBOX_SESSION_END_FRONTEND,           /* the front end that made it exited */
        SANDBOX_SESSION_END_STOPPED,            /* its unit was stopped by someone else */
        SANDBOX_SESSION_END_START_FAILED,       /* it never became ready */
        SANDBOX_SESSION_END_SHUTDOWN,           /* the broker stops */
        _SANDBOX_SESSION_END_MAX,
} SandboxSessionEnd;

/* "closed", "idle", …: for the journal and the client ("reason"). */
const char *sandbox_session_end_to_string(SandboxSessionEnd e);

typedef struct SandboxSession SandboxSession;
typedef struct Run Run;
typedef struct Client Client;

typedef struct SandboxSessionCallResult {
        int exit_code;                  /* -1 when a signal ended it */
        int signal;                     /* 0 when it exited */
        bool timed_out, interrupted;
        bool lost;                      /* the call ended the session */
        bool oom_killed;
        uint64_t duration_usec;
        /* Code mode: the tool calls made during the call, as a run's result
         * has them (borrowed); NULL when not known. */
        json_object *tool_calls;
} SandboxSessionCallResult;

typedef struct SandboxSessionCallbacks {
        /* The interpreter is up and waits for calls; or (ready == false) it
         * never will be, and gone follows. */
        void (*ready)(SandboxSession *s, bool ready, void *userdata);
        /* The call that sandbox_session_call() started is over. */
        void (*call_done)(SandboxSession *s, const SandboxSessionCallResult *result, void *userdata);
        /* The session is over; the callee frees it (sandbox_session_free()). */
        void (*gone)(SandboxSession *s, SandboxSessionEnd why, void *userdata);
} SandboxSessionCallbacks;


struct SandboxSession {
        /* The broker's, to keep its sessions in a list. */
        LIST_FIELDS(SandboxSession, sessions);
        /* The broker's: the connection waiting on it (creating it, or calling
         * in it), or NULL. */
        Client *client;

        sd_event *event;
        Run *run;
        int control;                    /* the broker's end of the launcher's control socket */
        int pidfd;                      /* the front end that made it, or -EBADF */
        sd_event_source *control_io, *pidfd_io, *idle_timer, *life_timer, *call_timer, *defer_end;
        char id[SANDBOX_SESSION_ID_LEN + 1];
        char *caller, *scope;
        pid_t frontend_pid;
        uint64_t idle_usec, created_usec, n_calls;
        bool ready, busy, ending, gone_sent;
        /* Egress (issue 22): a session with a network is ready only once
         * its launcher is, its unit's IP firewall is known to be in place
         * and egressd's feed went to the launcher ({"op":"egress"} + the
         * feed); the control connection lives as long as the session. */
        bool launcher_ready;
        EgressLink *egress;
        char *network;
        char egress_failure[256];       /* why it got no network: "" if it did, or has none */
        /* Code mode: the gateway's link, for the session's life; its run
         * end goes to the launcher ({"op":"tools"} + 1 fd) before the
         * session is ready. A gateway that refuses or does not answer costs
         * the session its tools, never the session. */
        ToolsLink *tools;
        /* A call is over and its result waits for the gateway's counts of
         * it (bounded: TOOLS_LINK_QUERY_TIMEOUT_USEC); still busy. */
        bool counting;
        SandboxSessionCallResult counted;
        /* Packages on demand (issue 23): the specs it was created with
         * (packages.h), NULL for none; every call sends them. */
        json_object *packages;
        Language language;              /* its spec's, fixed at creation (issue 42) */
        SandboxSessionEnd end;
        SandboxSessionCallbacks cb;
        void *userdata;
};

/* owner: its caller ("uid:1000", "http:token:NAME"…, counted for the
 * per-caller cap) and scope ("" or the MCP session it was made in: checked,
 * not counted); frontend_pid > 0: the session ends when that process does. */
/* egress: NULL, or the request for egressd (its run_id is filled in here,
 * the unit's): the session's unit is an egress unit then (spec->egress). */
int sandbox_session_new(sd_event *e, sd_bus *bus, const SandboxSpec *spec, const SandboxOwner *owner,
                        pid_t frontend_pid, uint64_t idle_usec, uint64_t max_usec, const EgressLinkRequest *egress,
                        const SandboxSessionCallbacks *cb, void *userdata, SandboxSession **ret);
/* Offers the session to the code-mode gateway at socket_path for caller:
 * right after sandbox_session_new(), before the loop runs again. A failure
 * is logged; the session goes on without tools. */
void sandbox_session_offer_tools(SandboxSession *s, const char *socket_path, const char *caller,
                                 ToolStats *totals);

/* Stops its unit if it still runs; no callback fires. */
SandboxSession *sandbox_session_free(SandboxSession *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(SandboxSession *, sandbox_session_free);

/* Ends it: the unit is stopped, gone(why) fires once (from the event loop). */
void sandbox_session_end(SandboxSession *s, SandboxSessionEnd why);

/* The specs a call with its own (borrowed, NULL for none) installs: the
 * session's, then the call's that the session does not have (packages.h). */
int sandbox_session_packages(const SandboxSession *s, json_object *own, json_object **ret);

/* One call: stdin, stdout, stderr and maybe the result channel (fds, which
 * stay the caller's), with the result limits and the call's packages
 * (sandbox_session_packages(), with at most packages_max_bytes installed),
 * both borrowed. -EBUSY while a call is running or before it is ready;
 * -ESHUTDOWN once it is ending. */
int sandbox_session_call(SandboxSession *s, json_object *limits, json_object *packages, uint64_t packages_max_bytes,
                         uint64_t timeout_usec, const int *fds, size_t n_fds);

/* The caller of the running call went away: the launcher interrupts it
 * (KeyboardInterrupt), the session stays. */
void sandbox_session_interrupt(SandboxSession *s);

/* The owner presents (caller, scope) from pid: the same owner? */
bool sandbox_session_owned_by(const SandboxSession *s, const char *caller, const char *scope, pid_t pid);
bool sandbox_session_has_caller(const SandboxSession *s, const char *caller);
bool sandbox_session_in_scope(const SandboxSession *s, const char *caller, const char *scope);

const char *sandbox_session_unit(const SandboxSession *s);
