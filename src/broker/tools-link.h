/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's control connection to mcp-exec-toolsd (the code-mode gateway,
 * docs/code-mode.md) for one run: hands it one end of a stream socket pair
 * with the run's id and caller, and keeps the other end for the run's
 * launcher (MCP_EXEC_TOOLS_FD in the run). The gateway checks every call
 * against that caller's policy; the run only ever holds its end of the pair,
 * never a path it could reach again. Freeing the link is the run's end for
 * the gateway: it cancels what the run still has in flight. */

#include <json-c/json.h>
#include <stdbool.h>
#include <systemd/sd-event.h>

#include "broker-proto.h"
#include "macro.h"
#include "run-stats.h"
#include "tools-proto.h"          /* TOOLS_SOCKET_PATH, TOOLS_SERVERS_DIR */

/* How long the gateway (socket-activated: it may have to start) has to
 * accept a run; the run is handed to its launcher without tools after. */
#define TOOLS_LINK_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* How long a run's result waits for the gateway's counts at its end. */
#define TOOLS_LINK_END_TIMEOUT_USEC (2 * USEC_PER_SEC)
/* How long a session call's result waits for the counts so far; it goes
 * without them after. */
#define TOOLS_LINK_QUERY_TIMEOUT_USEC (1 * USEC_PER_SEC)

typedef struct ToolsLink ToolsLink;

/* Called once: 0 when the gateway took the run (tools_link_take_run_fd()),
 * else -errno and a message (valid during the call). The link stays the
 * caller's to free either way. */
typedef void (*tools_link_ready_t)(ToolsLink *l, int error, const char *message, void *userdata);

/* True if dir holds at least one regular "*.conf" file: code mode is set up. */
bool tools_configured(const char *dir);

int tools_link_start(sd_event *e, const char *socket_path, const char *run_id, const char *caller,
                     uint64_t timeout_usec, tools_link_ready_t ready, void *userdata, ToolsLink **ret);

/* Settled: accepted or refused (or timed out). */
bool tools_link_is_settled(const ToolsLink *l);
/* The run's end of the pair, once (the caller owns it); -EBADF if the
 * gateway did not take the run. */
int tools_link_take_run_fd(ToolsLink *l);

/* The run's unit is gone: asks the gateway to cancel the run's calls and for
 * its counts. 1 when done will be called (from the loop, once, within
 * timeout_usec; the link stays the caller's); 0 when there is nothing to
 * wait for. */
typedef void (*tools_link_ended_t)(ToolsLink *l, void *userdata);
int tools_link_end(ToolsLink *l, uint64_t timeout_usec, tools_link_ended_t done, void *userdata);

/* The gateway's counts ({"NAME": {"calls","errors","refused","ms"}}), a new
 * reference; NULL if none came. */
json_object *tools_link_counts(const ToolsLink *l);

/* A session's call ended, its run goes on: asks the gateway for the counts
 * so far. 1 when done will be called (from the loop, once, within
 * timeout_usec; it must not free the link) with the counts since the
 * previous answer (borrowed during the call; NULL if none came in time);
 * 0 when there is nothing to ask; -EBUSY while a question is pending. A
 * late answer still moves the mark, so that the next call counts its own. */
typedef void (*tools_link_counted_t)(ToolsLink *l, json_object *since, void *userdata);
int tools_link_query(ToolsLink *l, uint64_t timeout_usec, tools_link_counted_t done, void *userdata);

/* Every count the gateway reports on this link (the run's final ones, or a
 * session's so far) is added here too, once. */
void tools_link_count_into(ToolsLink *l, ToolStats *totals);

/* Code mode's confirmation of a destructive tool (broker-proto.h): the
 * gateway's questions for this run go to ask (the run's client, which said
 * it can answer), and tools_link_confirm_answer() takes the answer back. A
 * link without ask, or with BROKER_CONFIRM_PENDING_MAX questions open, says
 * no at once. ask must not free the link. */
typedef void (*tools_link_confirm_t)(ToolsLink *l, const BrokerConfirmAsk *ask, void *userdata);
void tools_link_on_confirm(ToolsLink *l, tools_link_confirm_t ask, void *userdata);
/* The answer to an open question of this link's: sent to the gateway, the
 * question closed. -ENOENT for any other id (nothing is sent). */
int tools_link_confirm_answer(ToolsLink *l, const BrokerConfirmAnswer *a);
/* No to every open question (a session's call ended: whom it asked can no
 * longer answer for the session's next one). */
void tools_link_confirm_close_all(ToolsLink *l, const char *reason);

ToolsLink *tools_link_free(ToolsLink *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(ToolsLink *, tools_link_free);
