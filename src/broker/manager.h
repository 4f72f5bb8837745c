/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker as one object, as resolved's Manager: the listening socket and
 * who may connect, the system bus, the run slots and the line waiting for
 * them, the idle exit, and the glue to the sandbox's self-check (probe.h),
 * its discovery (discover.h) and the warm pool (pool.h). One connection is a
 * Client (client.h); the sandbox sessions are client-sessions.h's. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include <json-c/json.h>

#include "config.h"
#include "client-sessions.h"
#include "discover.h"
#include "egress-link.h"
#include "egress-policy.h"
#include "list.h"
#include "macro.h"
#include "language.h"
#include "pool.h"
#include "pool-store.h"
#include "probe-cache.h"
#include "probe.h"
#include "run-stats.h"
#include "sandbox-properties.h"
#include "sandbox-session.h"
#include "tmpfs-client.h"

typedef struct Client Client;

/* What the command line says (mcp-exec-brokerd.c). */
typedef struct ManagerArgs {
        const char *listen;             /* our own socket instead of systemd's, or NULL */
        uint64_t idle_exit_sec;         /* 0: never */
        const char *launcher, *bootstrap;
} ManagerArgs;

typedef struct Manager Manager;

/* A language beside Python (issue 42, manager-lang.c): its interpreter and
 * bootstrap once found, and its warm pool, made at its first run. */
typedef struct ManagerLanguage {
        Manager *manager;
        Language language;
        const char *interpreter;        /* language.c's, static */
        char *bootstrap;
        Pool *pool;
        bool restored;                  /* made for units kept across our idle exit, being checked */
} ManagerLanguage;

typedef struct Manager {
        ManagerArgs args;
        sd_event *event;
        sd_bus *bus;
        Config config;
        char *python;
        char *own_unit;
        int listen_fd;
        bool socket_activated;
        sd_event_source *listen_io, *idle_timer;
        uid_t frontend_uid;
        bool have_frontend_uid;
        LIST_HEAD(Client, clients);
        unsigned n_clients, n_runs;
        unsigned n_long;                /* of n_runs, the long holds (manager_run_has_room()) */
        LIST_HEAD(Client, wait_list);   /* runs waiting for a slot, oldest first (manager_next_waiter()) */
        sd_event_source *dispatch;      /* starts waiting runs once slots are free */
        Probe *probe;
        Discovery *discovery;
        json_object *sandbox_info;      /* python version and modules, once discovered */
        bool discovering;
        SelfCheckState probe_state;     /* the sandbox self-check's (probe.h) */
        char *probe_failure;
        char *probe_key;                /* the self-check's cache key (probe-cache.h), or NULL */
        sd_bus_slot *slot_probe_key;    /* PID 1's properties for it, asked at start */
        unsigned systemd_version;       /* PID 1's major version, 0: unknown (the self-check refuses) */
        uint64_t idle_usec;
        Pool *pool;
        ManagerLanguage languages[_LANGUAGE_MAX];       /* [LANGUAGE_PYTHON] unused */
        PoolStore store;                /* warm units kept across the idle exit (pool-store.h) */
        /* Our unit's FileDescriptorStoreMax= when systemd keeps the store
         * across our exit (FileDescriptorStorePreserve=yes, systemd >= 254),
         * else 0: asked of systemd at start, never assumed. */
        unsigned fdstore_max;
        bool restoring;                 /* the stored ones are being checked: runs wait */
        sd_bus_slot *slot_fdstore;
        ProbeCacheSystemd sd;           /* PID 1's word for the pool's key (sd.version: sd_version) */
        char *sd_version;
        char *preload;                  /* what warm units import: MCP_EXEC_PRELOAD, or the default, installed */
        char *mpl_cache;                /* the matplotlib font cache discovery made, or NULL */
        char *stamp;                    /* what the discovery depended on (discovery_stamp()) */
        sd_event_source *reload_timer;  /* looks for daemon-reload while there is a pool */
        sd_bus_slot *slot_reload;
        uint64_t units_loaded;          /* the manager's UnitsLoadTimestampMonotonic */
        SandboxSessions sessions;
        RunStats stats;                 /* {"op":"stats"} */
        TmpfsClient *tmpfs;             /* mounts each run's /tmp (mcp-exec-tmpfsd) */
        /* Egress (issue 22): the operator's policies, the same file as the
         * front end's and egressd's; what egressd reported of all runs. */
        EgressConfig egress;
        EgressCounts egress_totals;
        const char *egress_socket;      /* EGRESS_SOCKET_PATH */
        const char *tools_socket;       /* TOOLS_SOCKET_PATH */
        ToolStats tools_totals;         /* what the gateway counted of all runs' and sessions' tool calls */
        const char *tools_servers_dir;  /* TOOLS_SERVERS_DIR */
} Manager;

/* The configuration, who the front end is and our own unit. */
int manager_new(const ManagerArgs *args, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Listens, connects to the bus, sweeps what an earlier broker left, and
 * starts the sandbox's self-check; serving is m->event's loop. */
int manager_start(Manager *m);

/* The fixed sandbox of a run with that timeout. */
void manager_fill_spec(Manager *m, uint64_t timeout_s, SandboxSpec *ret);
/* The configured limits of what comes back and goes in, for the launcher. */
int manager_result_limits(Manager *m, json_object **ret);

/* Arms or stops the idle exit after a connection or session came or went. */
void manager_update_idle(Manager *m);
/* manager-lang.c (issue 42). The languages on (MCP_EXEC_LANGUAGES) whose
 * interpreter and bootstrap are installed, as LANGUAGE_BIT()s, Python always. */
uint32_t manager_languages(Manager *m);
/* 0 if l is one of them; else -EOPNOTSUPP with why in message. */
int manager_language_check(Manager *m, Language l, char *message, size_t size);
/* Makes spec (manager_fill_spec()'s) one of l's; l must be available. */
void manager_spec_language(Manager *m, Language l, SandboxSpec *spec);
/* l's warm pool (Python's: m->pool); with create, made now if there is
 * none and there may be one. NULL: none. */
Pool *manager_language_pool(Manager *m, Language l, bool create);
/* A warm unit of l's pool (its pool_spec_t, with l's interpreter). */
void manager_fill_language_pool_spec(Manager *m, Language l, bool spare, SandboxSpec *ret);
/* l's pool for units of l kept across our idle exit: made now if l is on
 * and installed, even before the self-check's verdict; NULL: none. Once
 * they were checked, a pool so made that took none back is dropped. */
Pool *manager_language_pool_restore(Manager *m, Language l);
void manager_language_pools_restored(Manager *m, const unsigned *adopted);
/* Warm units asked for and not ready yet, of every pool. */
unsigned manager_pools_starting(Manager *m);
void manager_language_pools_update(Manager *m, bool busy);
void manager_language_pools_recycle(Manager *m);
void manager_languages_done(Manager *m);

/* Tells the pool how busy the runs keep systemd and the CPU. */
void manager_update_pool(Manager *m);
/* A run let go of its slot: the next in line may start. */
void manager_slot_freed(Manager *m);

/* Fair shares of the run slots (issue 37), as the front end's queue
 * (src/mcp/call-queue.h): runs cannot be preempted, so the choice is made
 * when a slot frees. A run may start if a slot is free and, for a long hold
 * (timeout past MCP_EXEC_MAX_TIMEOUT_S: a task's), fewer than
 * max_concurrent - 1 long holds run (one slot always turns over within the
 * call maximum). Of the waiters that may start, the next is the one whose
 * connection's uid holds the fewest slots, then whose owner (uid and the
 * caller it names) holds the fewest, then the oldest. The uid comes first
 * because the caller is only the front end's word: a front end (unprivileged,
 * maybe compromised) may name as many callers as it likes, and then still
 * never gets a slot before another uid (root) holding fewer, nor more than
 * max_concurrent slots, nor more than max_concurrent - 1 long ones, nor
 * more than its connections (2 × max_concurrent + 16 for everyone). */
bool manager_run_has_room(const Manager *m, const Client *c);
/* The waiter to start next, or NULL if none may start now. */
Client *manager_next_waiter(const Manager *m);
/* A warm unit's spec (pool_spec_t): the preload, room for it, a cap on its
 * life; with spare, the spare's. */
void manager_fill_pool_spec(void *userdata, bool spare, SandboxSpec *ret);

/* Warm units across the idle exit (manager-fdstore.c, pool-store.h): asks
 * our unit whether systemd keeps our fd store across an exit (sets
 * fdstore_max, without blocking); the key of what l's warm units are made
 * from now; at the idle exit, hands the ready ones of every pool to the
 * store; at start, checks those it kept (pool_store_restore()'s done). */
void manager_ask_fdstore(Manager *m);
int manager_pool_key(Manager *m, Language l, char **ret);
void manager_keep_pool(Manager *m);
void manager_restore_pools(Manager *m, void (*done)(const unsigned *adopted, void *userdata));

/* Before each run: replaces the warm units if Python's packages changed. */
void manager_check_packages(Manager *m);
