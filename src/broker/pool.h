/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The warm pool: run units started before anyone asks, each exactly like a
 * cold run's (the same fixed property set, its own DynamicUser= and
 * namespaces), whose interpreter has already imported the preload set and
 * waits for the code. Each serves one run and is gone; a replacement starts
 * in the background, unless the broker is saturated or short runs come far
 * faster than replacements import: then the pool drains and calls take the
 * cold path.
 *
 * A warm unit's own time is bounded twice: the pool replaces it after
 * idle_usec, and its RuntimeMaxSec= (idle_usec plus the longest timeout)
 * stops it whatever happens to us. Its memory limit is raised by what the
 * preload took once it is ready, so the code keeps all of MemoryMax=. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include <json-c/json.h>

#include "macro.h"
#include "run.h"
#include "sandbox-properties.h"

typedef struct Pool Pool;

typedef struct PoolConfig {
        unsigned size;                  /* warm units to keep */
        uint64_t idle_usec;             /* replaced after this long unused */
        uint64_t memory_max;            /* what the code may use (MCP_EXEC_MEMORY_MAX) */
        uint64_t cpu_quota_percent;     /* a run's CPUQuota= (MCP_EXEC_CPU_QUOTA) */
        /* Description= of a ready unit (static); NULL: Python's,
         * SANDBOX_DESCRIPTION_WARM_READY, which pool-store.c adopts. */
        const char *ready_description;
} PoolConfig;

/* Fills the spec of a new warm unit (the caller's fixed property set); with
 * spare, that of the spare (pool_start_spare()). */
typedef void (*pool_spec_t)(void *userdata, bool spare, SandboxSpec *ret);
/* A warm unit became ready: callers waiting for a sandbox may take one. */
typedef void (*pool_ready_t)(void *userdata);

int pool_new(sd_event *e, sd_bus *bus, const PoolConfig *config, pool_spec_t spec, pool_ready_t ready,
             void *userdata, Pool **ret);
/* Stops every warm unit. */
Pool *pool_free(Pool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pool *, pool_free);

/* The oldest ready warm unit: its run (whose callbacks the caller sets with
 * run_set_callbacks()) and the broker's end of its control socket, both the
 * caller's now. -EAGAIN when none is ready. A replacement is started when
 * the run ends, or 100 ms after the take if it runs longer: not beside a
 * short call, which a unit start in PID 1 and an import on the other core
 * slowed by a third. The first fill of a new pool waits a second, for the
 * call that started the broker. */
int pool_take(Pool *p, Run **ret_run, int *ret_control);

/* While busy (every slot taken, runs waiting, a run's unit starting), no
 * replacements start: they would only delay the runs. Warm units import
 * their preload at the lowest CPUWeight= and get a run's once ready. */
void pool_set_busy(Pool *p, bool busy);

/* The spare: one unit with a cold run's properties (no preload, a run's
 * weight and MemoryMax=), asked for at once, as the broker starts after an
 * idle exit: what starts it is, in practice, a call on its way, whose
 * front end systemd is still setting up. pool_take_spare() gives it to the
 * first run that finds no warm unit ready, even while it is still
 * starting, so that the run's unit starts beside the daemons' own set-up
 * instead of after it. The run is a cold one (its interpreter has imported
 * nothing of the run's). Stopped unused once a warm unit is ready, or after
 * idle_usec. */
int pool_start_spare(Pool *p);
/* As pool_take(), for the spare: -EAGAIN when there is none. */
int pool_take_spare(Pool *p, Run **ret_run, int *ret_control);

/* How many runs are in flight. Once runs outpace the pool (one found warm
 * units only still importing, and runs are short next to an import), no
 * replacement starts, and those importing are held to a few percent of a
 * CPU, until no run was in flight for a moment: back to back, short calls
 * take the cold path at its own speed instead of sharing systemd and the
 * cores with refills; beside long ones the pool keeps refilling. */
void pool_set_runs(Pool *p, unsigned n_runs);
/* How long the last run on a cold unit took, from its hand-off; a long one
 * ends being outpaced. */
void pool_note_cold_run(Pool *p, uint64_t usec);
/* The run on a unit taken from the pool ended: its replacement starts now,
 * if the take's short delay has not started it yet (pool_take()). */
void pool_warm_run_ended(Pool *p);

/* Stops every warm unit and starts new ones (after a package change, a
 * daemon-reload). */
void pool_recycle(Pool *p);

unsigned pool_n_ready(const Pool *p);
uint64_t pool_n_hits(const Pool *p);
/* The modules the last ready unit imported, and those that failed (JSON
 * arrays, borrowed; NULL before the first). */
json_object *pool_preloaded(const Pool *p);
json_object *pool_failed(const Pool *p);
/* Warm units asked for and not ready yet. */
unsigned pool_n_starting(const Pool *p);

/* Description= of its ready units (PoolConfig's ready_description, or
 * Python's): what a unit kept across the idle exit must say to come back
 * into this pool (pool-store.h). */
const char *pool_ready_description(const Pool *p);

/* Across the broker's idle exit (systemd >= 254, FileDescriptorStorePreserve=,
 * pool-store.h). The fd store names of Python's pool: */
#define POOL_STORE_WARM_PREFIX "warm-"           /* + the run id: a warm unit's control socket */
#define POOL_STORE_STATE_NAME "pool-state"       /* a pipe holding what pool_keep() wrote */
#define POOL_STORE_STATE_MAX ((size_t) 48 << 10) /* under a pipe's buffer */
/* (Another language's: pool-store.h's.) Every name is shorter than this. */
#define POOL_STORE_NAME_MAX 64
/* Hands up to max of the ready warm units that are PartOf= the broker's
 * unit to its fd store, each named prefix + its run id, with a state named
 * state_name naming them, the time each was made and key (what they were
 * made from), and lets go of them without stopping them. Returns how many;
 * the others stop with the pool as ever. */
int pool_keep(Pool *p, const char *prefix, const char *state_name, const char *key, unsigned max);
/* Takes the warm unit of run id back into the pool (ready): control is the
 * broker's end of its control socket (now the pool's). The caller checked
 * that it is still what it was (pool-store.h). */
int pool_adopt(Pool *p, const char *id, int control, uint64_t created, json_object *preloaded,
               json_object *failed);

/* Set when warm units keep failing: the pool has given up (cold path only). */
bool pool_broken(const Pool *p);
