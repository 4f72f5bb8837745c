/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Warm units across the broker's idle exit (issue 38). Where systemd keeps a
 * service's fd store across its exit (FileDescriptorStorePreserve=yes, systemd
 * 254 and later; the broker asks its own unit, never assumes), the broker that
 * exits idle hands its ready warm units' control sockets to the store with a
 * state (pool_keep()) and leaves the units waiting: they are PartOf= its unit,
 * not bound to it (an explicit stop or restart of the broker still stops
 * them, its own exit does not), and their RuntimeMaxSec= still ends them if
 * no broker comes back. The next
 * start takes everything out of the store at once (so a crash never leaves a
 * socket there), leaves those units to the start's sweep, and, once it knows
 * its key, takes back each unit that checks out: the state's key is the
 * current one (the same binaries, limits, preload, packages, systemd and its
 * loaded configuration), the unit is younger than the pool's idle limit,
 * running, with no job, and says it is a ready warm unit, and its socket is a
 * live SOCK_SEQPACKET one with nothing unread. Anything else fails closed: its
 * unit is stopped, its /tmp removed, its socket closed, never used. On a
 * systemd without the preserve (252) the store is empty after an exit and
 * the pool behaves as before: its units are bound to the broker and stop with
 * it. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "pool.h"
#include "tmpfs-client.h"

typedef struct PoolStoreUnit {
        char id[33];
        int fd;
} PoolStoreUnit;

typedef struct PoolStore {
        int state_fd;                   /* POOL_STORE_STATE_NAME's pipe, or -EBADF */
        PoolStoreUnit *units;           /* POOL_STORE_WARM_PREFIX's sockets */
        size_t n_units;
        sd_bus *bus;                    /* set by the caller once connected (a reference) */
        TmpfsClient *tmpfs;             /* likewise (borrowed): to remove a dropped unit's /tmp */
        /* While units are being checked (pool_store_restore()): */
        Pool *pool;
        sd_bus_slot **slots;
        unsigned pending, adopted;
        uint64_t idle_usec;
        json_object *state_units;       /* the state's "units", matched by id */
        void (*done)(unsigned adopted, void *userdata);
        void *userdata;
} PoolStore;

#define POOL_STORE_INIT { .state_fd = -EBADF }

/* From the fds systemd passed us (sd_listen_fds_with_names(), which it unsets):
 * the stored ones into s, each also removed from the store at once. The one
 * other fd, the listening socket, in *ret_listen_fd (1), or none (0); more
 * than one other is -EINVAL. */
int pool_store_take(PoolStore *s, int *ret_listen_fd);

bool pool_store_empty(const PoolStore *s);
/* Whether unit is one of the stored warm units (left to pool_store_restore()
 * by the start's sweep). */
bool pool_store_has_unit(const char *unit, void *userdata);

/* Checks each stored unit against key (NULL: none may be used) and the state,
 * adopts into pool (may be NULL: none) those that check out and drops the
 * others; then done(how many were adopted), from the event loop or at once. */
void pool_store_restore(PoolStore *s, Pool *pool, const char *key, uint64_t idle_usec,
                        void (*done)(unsigned adopted, void *userdata), void *userdata);

/* Drops what is left: every unit stopped, every fd closed. */
void pool_store_done(PoolStore *s);
