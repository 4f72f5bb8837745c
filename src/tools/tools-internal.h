/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* mcp-exec-toolsd's objects (tools-proto.h is the wire):
 *
 *   Manager   the configuration, the listening socket, the control
 *             connections, the upstream connections (tools-manager.c)
 *   Control   one connection of the broker: at most one Run (tools-control.c)
 *   Run       one run's socket and its requests, counts per server (tools-run.c)
 *   Call      one request in flight: a tool call, or one server's part of a
 *             "servers" request (a ServersReq) (tools-run.c)
 *   Upstream  one MCP client connection to NAME.sock, per (server, caller)
 *             or shared (tools-upstream.c)
 *
 * A Call belongs to its Run; while it waits for an upstream or is sent to
 * one it is also on that Upstream's list. Either side ending ends the
 * Call's link: a run that goes cancels its calls upstream; an upstream that
 * fails answers its calls with kind "upstream" and is freed (the next call
 * makes a new connection). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "buffer.h"
#include "list.h"
#include "tools-config.h"
#include "tools-proto.h"

/* Control connections at once (runs and describes); more are closed. */
#define TOOLS_CONTROLS_MAX 1024U
/* Upstream connections at once, all servers and callers. */
#define TOOLS_UPSTREAMS_MAX 256U
/* Frames or lines taken in one wakeup, so that one peer cannot hold the loop. */
#define TOOLS_PER_WAKEUP 64U
/* A run's answers waiting to be written: past this, its requests wait. */
#define TOOLS_RUN_OUT_HIGH (1024U * 1024U)
/* Calls of a run waiting for a concurrency slot, all servers; more: limit. */
#define TOOLS_RUN_QUEUE_MAX 256U
/* "servers" requests of a run in flight at once; more: limit. */
#define TOOLS_RUN_LISTS_MAX 4U
/* Destructive calls of a run that wait for the user's confirmation at once
 * (BROKER_CONFIRM_PENDING_MAX), and that may ask at all: more are refused,
 * so that no run floods its user with questions. */
#define TOOLS_RUN_ASKS_MAX 16U
/* The "servers" answer, all servers together. */
#define TOOLS_SERVERS_ANSWER_MAX (16U * 1024U * 1024U)
/* What the gateway sends an upstream and has not been read yet. */
#define TOOLS_UPSTREAM_OUT_MAX (8U * 1024U * 1024U)
/* One line from an upstream: the server's MAX_BYTES and this much more
 * (the JSON-RPC envelope); a tools/list page too. */
#define TOOLS_UPSTREAM_LINE_SLACK (64U * 1024U)
#define TOOLS_UPSTREAM_LINE_MIN (1024U * 1024U)
/* A tool list: pages, tools, and the bytes of all its pages together. */
#define TOOLS_LIST_PAGES_MAX 64U
#define TOOLS_LIST_TOOLS_MAX 4096U
#define TOOLS_LIST_BYTES_MAX (16U * 1024U * 1024U)
/* A run's id and caller, as the broker sends them. */
#define TOOLS_RUN_ID_MAX 64U
#define TOOLS_CALLER_MAX 128U

typedef struct Manager Manager;
typedef struct Control Control;
typedef struct Run Run;
typedef struct Call Call;
typedef struct ServersReq ServersReq;
typedef struct Upstream Upstream;

struct Manager {
        sd_event *event;
        int listen_fd;
        bool socket_activated;
        uint64_t idle_usec;             /* 0: never exit */
        sd_event_source *listen_io, *idle_timer;
        ToolsServerConfig *servers;
        size_t n_servers;
        LIST_HEAD(Control, controls);
        unsigned n_controls;
        LIST_HEAD(Upstream, upstreams);
        unsigned n_upstreams;
};

/* Takes servers (cleared) and listen_fd (always). */
int manager_new(sd_event *e, ToolsServerConfig **servers, size_t *n_servers, int listen_fd, bool socket_activated,
                uint64_t idle_usec, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
void manager_update_idle(Manager *m);
/* Does the gateway serve the server to caller: allowed, and not off? */
bool manager_serves(Manager *m, size_t server, const char *caller);
/* The upstream connection for (server, caller): found, or made now. */
int manager_get_upstream(Manager *m, size_t server, const char *caller, Upstream **ret);

struct Control {
        Manager *manager;
        LIST_FIELDS(Control, controls);
        int fd;
        sd_event_source *io;
        Run *run;
};

int control_new(Manager *m, int fd);
Control *control_free(Control *c);

/* Per run and server. */
typedef struct RunCounts {
        uint64_t calls, errors, refused, ms;
        uint64_t bytes;                 /* results sent, against MAX_BYTES */
        uint64_t running;               /* against MAX_CONCURRENT */
} RunCounts;

typedef enum CallKind {
        CALL_TOOL,
        CALL_LIST,                      /* one server's tools for a ServersReq */
} CallKind;

struct Call {
        Run *run;
        LIST_FIELDS(Call, run_calls);   /* run->calls, or run->queued */
        Upstream *upstream;             /* NULL while queued for a slot */
        LIST_FIELDS(Call, up_calls);    /* upstream->waiting, or upstream->sent */
        CallKind kind;
        size_t server;                  /* index in manager->servers */
        uint64_t id;                    /* the run's */
        uint64_t rpc_id;                /* ours upstream; 0: not sent */
        char *tool;
        json_object *arguments;         /* until sent */
        sd_event_source *timer;
        uint64_t start_usec;
        bool holds_slot;                /* counted in RunCounts.running */
        bool queued;                    /* on run->queued, not run->calls */
        ServersReq *req;                /* CALL_LIST */
        size_t slot;                    /* CALL_LIST: its entry in req->answer */
        /* A destructive tool not in CONFIRMED: asked of the user through the
         * broker (confirm_id, ours, never the run's) while confirming; the
         * journal says how it was let through or why not. */
        uint64_t confirm_id;
        bool confirming, user_confirmed;
        const char *confirmed;          /* "operator", "user", "refused", or NULL: not destructive */
};

struct ServersReq {
        Run *run;
        LIST_FIELDS(ServersReq, reqs);
        uint64_t id;
        json_object *servers;           /* the answer's array, filled slot by slot */
        size_t n_pending;
};

struct Run {
        Manager *manager;
        Control *control;
        int fd;                         /* -EBADF once closed: the counts stay until "end" */
        sd_event_source *io;
        char id[TOOLS_RUN_ID_MAX + 1];
        char caller[TOOLS_CALLER_MAX + 1];
        Buffer in, out;
        size_t out_done;                /* bytes of out already written */
        RunCounts *counts;              /* one per server */
        LIST_HEAD(Call, calls);         /* running: waiting for or sent upstream */
        LIST_HEAD(Call, queued);        /* waiting for a slot */
        unsigned n_queued;
        LIST_HEAD(ServersReq, reqs);
        unsigned n_reqs;
        unsigned n_confirming, n_asked;
        uint64_t last_confirm_id;
};

/* A run handed over on control c: takes fd. */
int run_new(Control *c, const char *id, const char *caller, int fd, Run **ret);
/* Ends every call (each cancelled upstream) and closes the socket; the
 * counts stay. */
void run_stop(Run *r, const char *reason);
Run *run_free(Run *r);
/* {"servers":{NAME:{calls,errors,refused,ms}}}, or NULL on out of memory. */
json_object *run_counts_json(Run *r);
bool run_allows_server(Run *r, size_t server);

/* The upstream side of a call (tools-upstream.c calls these). */
void call_listed(Call *c, json_object *tools);
void call_answered(Call *c, json_object *result, size_t bytes);
void call_failed(Call *c, ToolsErrorKind kind, const char *message);
/* A destructive tool the operator did not confirm (why: the refusal's
 * text): asks the user through the broker, or refuses. */
void call_ask(Call *c, const char *why);
/* The broker's answer {"op":"confirmed",…} on the run's control connection. */
void run_confirmed(Run *r, json_object *msg);

struct Upstream {
        Manager *manager;
        LIST_FIELDS(Upstream, upstreams);
        size_t server;
        char *caller;                   /* NULL: shared */
        int fd;
        sd_event_source *io, *timer;    /* timer: the handshake's deadline, or the idle one */
        enum {
                UPSTREAM_CONNECTING,
                UPSTREAM_INITIALIZING,
                UPSTREAM_LISTING,
                UPSTREAM_READY,
        } state;
        Buffer in, out;
        size_t out_done;
        uint64_t next_rpc_id;
        uint64_t init_id, list_id;
        json_object *tools;             /* the last complete list; NULL before */
        json_object *listing;           /* pages so far */
        unsigned pages;
        size_t listing_bytes;
        bool relist;                    /* list_changed while listing */
        LIST_HEAD(Call, waiting);       /* until the list is there */
        LIST_HEAD(Call, sent);
};

int upstream_new(Manager *m, size_t server, const char *caller, Upstream **ret);
/* Answers every call on it with kind "upstream" (message) and frees it. */
void upstream_fail(Upstream *u, const char *message);
Upstream *upstream_free(Upstream *u);
/* Takes call c: listed or sent now, or when the list is there. */
void upstream_submit(Upstream *u, Call *c);
/* Forgets c; sends notifications/cancelled if it was sent. */
void upstream_cancel(Upstream *u, Call *c, const char *reason);
/* Number of allowed tools in the last list, -1 if none yet. */
int64_t upstream_count_tools(Upstream *u);
