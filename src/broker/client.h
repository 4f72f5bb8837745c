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
#include "list.h"
#include "macro.h"
#include "run.h"
#include "sandbox-session.h"

typedef struct Manager Manager;
typedef struct Client Client;

struct Client {
        Manager *manager;
        LIST_FIELDS(Client, clients);
        int fd;
        sd_event_source *io, *timer;
        pid_t pid;
        uid_t uid;
        Run *run;
        bool gone;
        bool counted;                   /* holds one of max_concurrent */
        /* Waiting for a free slot, in arrival order (its pipes kept meanwhile). */
        LIST_FIELDS(Client, wait);
        bool waiting;
        /* The caller's stdin, stdout, stderr and maybe result channel, until
         * they are handed to the launcher. */
        int run_fds[BROKER_MAX_FDS];
        size_t n_run_fds;
        int control;                    /* ours of the launcher's control socket */
        bool handed_off, warm;
        bool detached;                  /* the caller has its result: the run ends on its own */
        bool info_pending;              /* answered once the sandbox is known */
        SandboxSession *session;        /* the session it creates, or calls in */
        bool session_creating, session_calling;
        uint64_t timeout_s;
        char tag[65];
};

/* A client for the connection fd, which it owns once this succeeds. */
int client_new(Manager *m, int fd, pid_t pid, uid_t uid);
Client *client_free(Client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Client *, client_free);

int client_send_error(Client *c, BrokerError error, const char *message);
/* A reply that could not be built: the caller hears why. */
int client_send_oom(Client *c);

/* Leaves the line for a slot, if it is in it. */
void client_unwait(Client *c);
/* A warm unit if one is ready, else a cold one. */
int client_start_run(Client *c);
/* The run goes to the launcher once the unit runs and the self-check passed. */
void client_try_handoff(Client *c);
/* Answers "info", or marks it pending until the sandbox is known. */
void client_handle_info(Client *c);

bool fd_is_stream(int fd);
