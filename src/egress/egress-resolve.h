/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Name lookups off the loop: getaddrinfo() blocks, and one slow resolver
 * must not stall every other run's connections. Each lookup is a detached
 * thread; its answer comes back through a pipe the loop watches. Only names
 * a policy allowed are ever looked up (egress-conn.c decides before). */

#include <netdb.h>
#include <systemd/sd-event.h>

#define EGRESS_LOOKUPS_MAX 16U          /* threads at once */

typedef struct EgressResolver EgressResolver;
typedef struct EgressLookup EgressLookup;

/* error: 0 with ai (owned by the lookup, valid during the call), or an
 * EAI_* code with ai NULL. The lookup is freed after the callback returns. */
typedef void (*egress_lookup_done_t)(int error, const struct addrinfo *ai, void *userdata);

int egress_resolver_new(sd_event *e, EgressResolver **ret);
EgressResolver *egress_resolver_free(EgressResolver *r);

/* -EBUSY when EGRESS_LOOKUPS_MAX are running. */
int egress_resolve(EgressResolver *r, const char *host, egress_lookup_done_t done, void *userdata,
                   EgressLookup **ret);

/* The callback will not be called; the lookup is freed when its thread is
 * done. NULL is fine. */
void egress_lookup_cancel(EgressLookup *l);
