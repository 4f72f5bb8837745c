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
 * it.
 *
 * Each language's pool (issue 42) is kept the same way, under names of its
 * own (pool_store_names(); Python's are those of the first brokers that kept
 * units, so their stores still restore) and with a state and key of its own:
 * a unit comes back only into the pool of the language its name, its state
 * and its Description= all say, never into another's (a JavaScript unit, its
 * W^X filter off for the JIT, must never serve a Python or bash run). Units of
 * a language that is now off or not installed are stopped. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "language.h"
#include "pool.h"
#include "tmpfs-client.h"

/* Another language's names: "warm-" + its name + "-" + the run id, and
 * "warm-" + its name + "-state". Under Python's prefix, so that an older
 * broker closes them (no run id) rather than take one for its socket. */
#define POOL_STORE_LANGUAGE_STATE "state"

typedef struct PoolStoreUnit {
        char id[33];
        Language language;              /* of its name: the only pool it may go back to */
        int fd;
} PoolStoreUnit;

typedef struct PoolStore {
        int state_fd[_LANGUAGE_MAX];    /* each language's state pipe, or -EBADF */
        PoolStoreUnit *units;           /* the warm units' sockets */
        size_t n_units;
        sd_bus *bus;                    /* set by the caller once connected (a reference) */
        TmpfsClient *tmpfs;             /* likewise (borrowed): to remove a dropped unit's /tmp */
        /* While units are being checked (pool_store_restore()): */
        Pool *pools[_LANGUAGE_MAX];
        sd_bus_slot **slots;
        unsigned pending;
        unsigned adopted[_LANGUAGE_MAX];
        uint64_t idle_usec;
        json_object *state_units[_LANGUAGE_MAX];        /* each state's "units", matched by id */
        void (*done)(const unsigned *adopted, void *userdata);
        void *userdata;
} PoolStore;

_Static_assert(_LANGUAGE_MAX == 3, "POOL_STORE_INIT sets every language's state_fd");
#define POOL_STORE_INIT { .state_fd = { -EBADF, -EBADF, -EBADF } }

enum {
        POOL_STORE_NAME_UNIT = 1,
        POOL_STORE_NAME_STATE = 2,
};

/* The names language l's pool is kept under: its units' prefix (+ the run
 * id) and its state's, each shorter than POOL_STORE_NAME_MAX. */
int pool_store_names(Language l, char *ret_prefix, char *ret_state);
/* What an fd store name is: a unit's (POOL_STORE_NAME_UNIT; *ret_id points
 * at the run id in name) or a state's (POOL_STORE_NAME_STATE), of
 * *ret_language; 0: none of ours (the listening socket's); -EINVAL: under
 * our prefix, but of no language we know or with no run id. */
int pool_store_parse_name(const char *name, Language *ret_language, const char **ret_id);

/* From the fds systemd passed us (sd_listen_fds_with_names(), which it unsets):
 * the stored ones into s, each also removed from the store at once. The one
 * other fd, the listening socket, in *ret_listen_fd (1), or none (0); more
 * than one other is -EINVAL. */
int pool_store_take(PoolStore *s, int *ret_listen_fd);

bool pool_store_empty(const PoolStore *s);
/* Whether a unit of l was stored. */
bool pool_store_has_language(const PoolStore *s, Language l);
/* Whether unit is one of the stored warm units (left to pool_store_restore()
 * by the start's sweep). */
bool pool_store_has_unit(const char *unit, void *userdata);

/* Checks each stored unit of language l against keys[l] (NULL: none may be
 * used) and l's state, adopts into pools[l] (NULL: none) those that check
 * out and drops the others; then done(how many were adopted, by language),
 * from the event loop or at once. pools and keys may be NULL: none. */
void pool_store_restore(PoolStore *s, Pool *const *pools, char *const *keys, uint64_t idle_usec,
                        void (*done)(const unsigned *adopted, void *userdata), void *userdata);

/* Drops what is left: every unit stopped, every fd closed. */
void pool_store_done(PoolStore *s);
