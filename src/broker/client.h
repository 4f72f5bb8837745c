/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One connection to the broker (broker-proto.h): one run, one session's
 * creation or call, a session_close, or the questions "info" and "stats".
 * Closing the connection cancels what it asked for. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include <json-c/json.h>

#include "broker-proto.h"
#include "egress-link.h"
#include "tools-link.h"
#include "list.h"
#include "macro.h"
#include "run.h"
#include "sandbox-session.h"

typedef struct Manager Manager;
typedef struct Client Client;

/* Where a connection is. One request per connection, and then what it waits
 * for; "info" and "stats" may come at any time. The state says which ops are
 * valid (client.c's table). */
typedef enum ClientState {
        CLIENT_NEW,                     /* no request yet, or only questions ("info", "stats") */
        CLIENT_WAITING,                 /* a run waiting in line for a slot, its pipes kept meanwhile */
        CLIENT_STARTING,                /* its run's unit starts, or the self-check has not passed yet */
        CLIENT_RUNNING,                 /* handed to the launcher: the run's time counts */
        CLIENT_DETACHED,                /* the caller has its result: the run ends on its own */
        CLIENT_SESSION_CREATING,        /* waiting for its session's interpreter and the self-check */
        CLIENT_SESSION_CALLING,         /* a call of its session is running */
        _CLIENT_STATE_MAX,
} ClientState;

struct Client {
        Manager *manager;
        LIST_FIELDS(Client, clients);
        int fd;
        /* NULL once the caller hung up or sent garbage (client_is_gone()):
         * nothing is read or sent any more, while its run ends. */
        sd_event_source *io;
        sd_event_source *timer;         /* the request's deadline, then the run's */
        pid_t pid;
        uid_t uid;
        ClientState state;
        /* Waiting for a free slot, in arrival order (CLIENT_WAITING). */
        LIST_FIELDS(Client, wait);
        /* CLIENT_STARTING, _RUNNING and _DETACHED; and after a hang-up, until
         * its unit is gone. */
        Run *run;
        bool warm;                      /* its run took a unit of the pool */
        bool spare;                     /* its run took the pool's spare (cold, started ahead) */
        bool restarted;                 /* its run is on a second unit (client_restart_run()) */
        /* Holds one of max_concurrent: from its start until its unit is gone,
         * or until it was cancelled (its unit then dies with SIGKILL). */
        bool counted;
        /* A run's owner for the fair shares of the slots (manager.h): the
         * caller its front end names ("" for none) under the connection's
         * uid; and whether it may run past MCP_EXEC_MAX_TIMEOUT_S (a task's). */
        char *caller;
        bool long_hold;
        /* Its "run" said "confirm": true: code mode's questions to confirm
         * a destructive tool go to it as "confirm" events (broker-proto.h). */
        bool confirm;
        /* Owes an "info" answer until the sandbox is known: a reply, not a
         * state, as it may be asked for on any connection. */
        bool info_pending;
        /* The caller's stdin, stdout, stderr and maybe result channel, until
         * they are handed to the launcher. */
        int run_fds[PACKET_MAX_FDS];
        size_t n_run_fds;
        int control;                    /* ours of the launcher's control socket */
        SandboxSession *session;        /* CLIENT_SESSION_*: the session it creates, or calls in */
        uint64_t timeout_s;
        char tag[65];
        /* A run with a network (issue 22): the policy's name (one the
         * broker knows), and the control connection to egressd, held for
         * the run's life; its feed goes to the launcher as a fifth fd. */
        char *network;
        EgressLink *egress;
        /* Code mode (docs/code-mode.md): the control connection to the
         * gateway, where servers.d has servers; the run's end of its tools
         * connection goes to the launcher as the last fd. */
        ToolsLink *tools;
        /* The run's "exit", held until egressd's and the gateway's final
         * counts are in (ends_pending of them), so that they count what was
         * cut at its end. */
        json_object *exit_event;
        unsigned ends_pending;
        /* Packages on demand (issue 23): the request's specs (packages.h),
         * NULL for none; a session_create's become its session's. */
        json_object *packages;
        /* Issue 42: the run's or new session's language, one this broker
         * has (manager_language_check()); Python by default. */
        Language language;
};

/* A client for the connection fd, which it owns once this succeeds. */
int client_new(Manager *m, int fd, pid_t pid, uid_t uid);
Client *client_free(Client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Client *, client_free);

static inline bool client_is_gone(const Client *c) {
        return !c->io;
}

int client_send_error(Client *c, BrokerError error, const char *message);
/* A reply that could not be built: the caller hears why. */
int client_send_oom(Client *c);

/* Parsing a request (client-request.c). A run's or a session call's fds
 * (what: "run" or "call"): three or four pipes or sockets, taken into
 * c->run_fds. The timeout_s of either: the
 * default, or clamped to [1, max]. Both answer a bad request themselves and
 * then return -EINVAL. */
int client_take_fds(Client *c, const char *what, int fds[], size_t n_fds);
void client_close_run_fds(Client *c);
int client_parse_timeout(Client *c, json_object *req, uint64_t *ret);

/* The request's "network", if any, into c->network: a policy we know, else a
 * bad request answered here (-EINVAL). */
int client_parse_network(Client *c, json_object *req);

/* The request's "packages", if any, into c->packages (packages_parse()),
 * else a bad request answered here (-EINVAL). */
int client_parse_packages(Client *c, json_object *req);

/* The request's "language", if any (Python if none), into c->language: one
 * this broker has, and not with packages (Python's), else a bad request
 * answered here (-EINVAL). */
int client_parse_language(Client *c, json_object *req);

/* The request's "caller", if any ("" if none), into c->caller: a key for the
 * fair shares, else a bad request answered here (-EINVAL). */
int client_parse_caller(Client *c, json_object *req);

/* What goes to the launcher of c's run: {"op":"run"} with the result
 * limits, "egress" for a run with a network, and its packages. */
int client_run_message(Client *c, json_object **ret);

/* Gives its slot back, once (manager.h's fair shares). */
void client_release_slot(Client *c);

/* client-links.c: the run's links beside its unit. */
/* The run's network cannot be had: the caller hears why, and the run ends
 * before its code ever came. */
void client_egress_failed(Client *c, const char *message);
/* An egress run may go to its launcher: the feed is there and the unit's
 * IP firewall is attached (else the run fails, closed). True for others. */
bool client_egress_ready(Client *c);
/* The control connection to egressd for c's run (c->network). */
int client_start_egress(Client *c);
/* Where servers.d has servers, offers c's run to the code-mode gateway. */
void client_start_tools(Client *c);

/* Leaves the line for a slot, if it is in it. */
void client_unwait(Client *c);
/* A warm unit if one is ready, else the pool's spare, else a cold one. */
int client_start_run(Client *c);
/* The run goes to the launcher once the unit runs and the self-check passed. */
void client_try_handoff(Client *c);
/* Answers "info", or keeps it pending until the sandbox is known. */
void client_answer_info(Client *c);
