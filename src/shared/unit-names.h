/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The names of the units the broker asks systemd for, in one place: the
 * broker makes them (src/broker/run.c), sweeps leftovers by them, and the
 * mount daemon knows a run's tmpfs belongs to a live unit by them. A run's
 * is the prefix, 32 hex digits (its id) and ".service". */

#define UNIT_PREFIX_RUN "mcp-exec-run-"
#define UNIT_PREFIX_SESSION "mcp-exec-session-"
