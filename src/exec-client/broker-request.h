/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One request to the broker that is answered with one message, without
 * blocking: session_create, session_close, session_close_scope. The reply
 * is an event object; a broker error event comes back as its BrokerError
 * and message, so callers map errors in one place (broker-proto.h). */

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "broker-proto.h"
#include "macro.h"

typedef struct BrokerRequest BrokerRequest;

/* reply: the broker's answer (not an error event), or NULL with error set
 * (BROKER_ERROR_UNAVAILABLE when the broker went away, BROKER_ERROR_LOST
 * when it did not answer in time) and message its words, if any. */
typedef void (*broker_request_done_t)(BrokerRequest *r, json_object *reply, BrokerError error, const char *message,
                                      void *userdata);

/* Sends msg (borrowed); done fires once, from the event loop, unless the
 * request is freed first. */
int broker_request_start(sd_event *e, const char *socket_path, json_object *msg, uint64_t timeout_usec,
                         broker_request_done_t done, void *userdata, BrokerRequest **ret);
BrokerRequest *broker_request_free(BrokerRequest *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(BrokerRequest *, broker_request_free);
