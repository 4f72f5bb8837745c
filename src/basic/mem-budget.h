/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The front end's one memory budget: what clients make it hold, over all
 * connections and sessions. Each request or line is bounded on its own (the
 * size limits), and so is each call, but a few hundred clients sending large
 * messages, queueing large calls or leaving large replies unread would
 * together pass the daemon's MemoryMax= and take every session down with it.
 * So everything a client can make live draws on one budget, and past it the
 * client is told the server is busy:
 *
 * - input being received (HTTP bodies, stdio lines): what fits in
 *   MEM_BUDGET_FREE bytes is not counted, so small messages always get
 *   through; larger ones draw on the budget while they come in;
 * - a call, from admission (before it queues) until its reply is sent: its
 *   arguments, decoded input files, collected output and results, and the
 *   serialized reply. These are charged to the caller (McpSession's caller),
 *   who may hold at most 1/MEM_BUDGET_CALLER_SHARE of the budget, so that one
 *   client cannot starve the others.
 *
 * Every charge can be refused: there is no way to charge by force. Whatever
 * a client's request makes us hold (a result, a copy of it for a reader, a
 * progress notification, a stream's unread bytes) is charged before it is
 * built, and what does not fit is answered with a small error, skipped or
 * its stream ended (issue 37: each forced charge "for something small" was
 * one a client found a way to make large). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"

#define MEM_BUDGET_FREE ((size_t) 64 * 1024)
/* One caller may hold at most this part (1/N) of the budget. */
#define MEM_BUDGET_CALLER_SHARE 2U
/* The last 1/N of the budget is kept for callers that hold little (at most
 * 1/MEM_BUDGET_SMALL_PART of the budget, new charge included): however many
 * callers fill the rest with large calls and unread results, one that asks
 * for a small call is still served. Input being received (before its
 * caller is known) never takes it. To spend the reserve an adversary needs
 * MEM_BUDGET_SMALL_PART / MEM_BUDGET_RESERVE_PART callers (named tokens or
 * uids), each holding its whole small part at once. */
#define MEM_BUDGET_RESERVE_PART 8U
#define MEM_BUDGET_SMALL_PART 64U

typedef struct MemCaller MemCaller;

typedef struct MemBudget {
        uint64_t used, max;
        LIST_HEAD(MemCaller, callers);  /* those holding a charge */
} MemBudget;

/* Input being received. Moves a holding from have to want bytes; false if
 * the budget cannot give that much (nothing changes then). Shrinking always
 * works. NULL budget: unlimited. */
bool mem_budget_grow_input(MemBudget *b, size_t have, size_t want);
/* Gives back what an input holding of have bytes took. */
void mem_budget_release_input(MemBudget *b, size_t have);

/* One holding of a caller. Zero-initialized: charges nothing; a charge with
 * no budget is unlimited. */
typedef struct MemCharge {
        MemBudget *budget;
        MemCaller *caller;
        uint64_t bytes;
} MemCharge;

/* Ties an empty charge to budget (NULL: unlimited) and caller. -ENOMEM. */
int mem_charge_init(MemCharge *c, MemBudget *budget, const char *caller);
/* The charge becomes bytes: -EBUSY (nothing changes) if that would take the
 * budget or the caller's share past its limit. Shrinking always works. */
int mem_charge_set(MemCharge *c, uint64_t bytes);
/* By delta bytes more (-EBUSY as mem_charge_set()), or less (never
 * below 0). NULL: nothing to charge, always works. */
int mem_charge_grow(MemCharge *c, uint64_t delta);
void mem_charge_shrink(MemCharge *c, uint64_t delta);
/* How many bytes more the charge could take now; UINT64_MAX unbounded. */
uint64_t mem_charge_room(const MemCharge *c);
/* Moves from's holding onto to (same budget and caller, or to empty and
 * unbound: it takes from's place); from is empty and unbound after. */
void mem_charge_move(MemCharge *to, MemCharge *from);
/* Gives everything back and unbinds; the charge is zero after. */
void mem_charge_done(MemCharge *c);

/* What a caller holds now (0 for one holding nothing), for tests and
 * metrics. */
uint64_t mem_budget_caller_used(const MemBudget *b, const char *caller);
uint64_t mem_budget_caller_max(const MemBudget *b);
/* The part of the budget kept for callers holding little (see
 * MEM_BUDGET_RESERVE_PART), and what counts as little. */
uint64_t mem_budget_reserve(const MemBudget *b);
uint64_t mem_budget_small(const MemBudget *b);
