/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One client connection of a run, from its request head to its end:
 * the decision on the name before any lookup, the lookup, the check of every
 * address, the connect to a checked one, the SNI check of CONNECT, and the
 * relay under the run's byte cap. */

#include "list.h"

typedef struct EgressRun EgressRun;
typedef struct EgressConn EgressConn;

/* fd (taken, always): a connected TCP socket the launcher passed. */
int egress_conn_new(EgressRun *run, int fd);
/* Ends c now: logged and reported with its verdict so far, then freed. */
void egress_conn_end(EgressConn *c);
