/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's wire protocol, on a SOCK_SEQPACKET unix socket: one JSON object
 * per packet, file descriptors alongside as SCM_RIGHTS (packet.h). One connection is one
 * run; closing it cancels the run.
 *
 *   client → broker  {"op":"run","timeout_s":N,"tag":"…","caller":"…"}  + fds [stdin, stdout, stderr(, results)]
 *   broker → client  {"event":"started","run_id":"…","unit":"…"}  (+ "tools":true: the run has code
 *                    mode's tools connection, and its exit event has its "tool_calls")
 *   broker → client  {"event":"exit", …result fields…}
 *   broker → client  {"event":"error","code":"…","message":"…"}   (code: BrokerError)
 *   client → broker  {"op":"detach"}  after "started": the caller has its result (the launcher's
 *                    report); closing the connection then does not cancel the run
 *   client → broker  {"op":"info"}  →  {"event":"info", …limits…}
 *   client → broker  {"op":"stats"} →  {"event":"stats", …counters…}   (run-stats.h)
 *
 * A run's "caller" (optional, "uid:1000", "http:token:NAME", …, at most 256
 * bytes) is whom the front end runs it for: the broker's key for its fair
 * share of the run slots (issue 37), trusted for nothing more.
 *
 * Sessions (one interpreter for many calls; the broker mints the id, the
 * front end says who owns it: caller and scope are checked on every use):
 *
 *   {"op":"session_create","caller":"…","scope":"…"}
 *        →  {"event":"session","session":"<32 hex>","idle_timeout_s":N,"max_lifetime_s":N,"memory_max_bytes":N}
 *   {"op":"session_exec","session":"…","caller":"…","scope":"…","timeout_s":N}  + fds as a run
 *        →  "started", then "exit" as a run, with "session_lost" and "session_end"
 *   {"op":"session_close","session":"…","caller":"…","scope":"…"}  →  {"event":"closed","count":1}
 *   {"op":"session_close_scope","caller":"…","scope":"…"}  →  {"event":"closed","count":N}
 *
 * stdin carries the launcher frame (launch-frame.h) followed by the program's
 * stdin; stdout and stderr are the program's, straight from the sandbox. A
 * broker whose info says "result_channel": true also takes a fourth fd, the
 * write end of the result channel (result-frame.h), for the launcher's
 * trusted parent alone; and then launch frames of version 2 (input files).
 * Clients send it only to such a broker.
 *
 * Network by policy (issue 22): a "run" and a "session_create" may carry
 * "network":"<policy>" (egress-policy.h), which the broker refuses as
 * bad-request unless it knows the policy. Such a run takes a cold unit (never
 * a warm one) that may reach mcp-exec-egressd's proxy in its namespace, and
 * its "exit" (a session's call's too) carries "egress": {"policy": "…",
 * "connections": {"<verdict>": N, …}, "bytes_up": N, "bytes_down": N}
 * (verdicts of egress-proto.h; a session's call: what its connections did
 * while the call ran). If egressd cannot be had the run does not start:
 * error "egress-unavailable". Such a run is never detached: its caller waits
 * for the "exit" with the counts.
 *
 * Packages on demand (issue 23, package-spec.h): a "run", a "session_create"
 * and a "session_exec" may carry "packages":["spec",…] (each
 * package_spec_valid(), at most MCP_EXEC_MAX_PACKAGES, no duplicates), which
 * the broker refuses as bad-request otherwise. A session keeps the specs it
 * was created with and sends them, with each call's own, to its launcher.
 * The broker → launcher "run" message (launch-run.h) then carries
 * "packages":[…] and "packages_max_bytes":N; every unit's launcher has
 * --wheelhouse=PATH in its argv when the wheelhouse is configured. What the
 * installer did comes back on the result channel (RESULT_FRAME_PACKAGES), not
 * in "exit".
 *
 * Languages (issue 42, language.h): a "run" and a "session_create" may carry
 * "language": "python" (the default), "bash" or "javascript", one the
 * broker's "info" lists in "languages" ("python,bash"), never with
 * "packages"; a "session_exec" may name its session's own (another is
 * bad-request). The broker → launcher "run" message then carries it too
 * (not for Python), and the unit's launcher runs that language's interpreter
 * (launch-lang.h). */

#include <json-c/json.h>

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json-util.h"
#include "packet.h"

#define BROKER_SOCKET_PATH "/run/mcp-exec/broker.sock"

/* Who a sandbox session belongs to, as the front end says and the broker
 * checks on every use: the caller ("uid:1000", "http:token:NAME", …) and the
 * MCP session it was made in (scope; "" for none). Borrowed strings. */
typedef struct SandboxOwner {
        const char *caller;
        const char *scope;
} SandboxOwner;

/* Why a run did not happen as asked. The broker sends the first ten as the
 * "code" of an error event; the client side concludes the others itself.
 * Each has one wire name (broker_error_to_string()). */
typedef enum BrokerError {
        BROKER_ERROR_NONE,                      /* the run happened; never on the wire */
        BROKER_ERROR_ACCESS_DENIED,             /* "access-denied": not root nor the front end */
        BROKER_ERROR_BAD_REQUEST,               /* "bad-request" */
        BROKER_ERROR_BUSY,                      /* "busy": too many connections */
        BROKER_ERROR_REQUEST_TIMEOUT,           /* "timeout": no request in time */
        BROKER_ERROR_SANDBOX_UNAVAILABLE,       /* "sandbox-unavailable": the self-check failed */
        BROKER_ERROR_START_FAILED,              /* "start-failed": systemd did not start the unit */
        BROKER_ERROR_SESSION_NOT_FOUND,         /* "session-not-found": unknown, ended, or not the caller's */
        BROKER_ERROR_SESSION_BUSY,              /* "session-busy": a call of the session is running */
        BROKER_ERROR_SESSION_LIMIT,             /* "session-limit": MCP_EXEC_MAX_SESSIONS[_PER_CALLER] reached */
        BROKER_ERROR_EGRESS_UNAVAILABLE,        /* "egress-unavailable": the run's network could not be set up */
        BROKER_ERROR_UNAVAILABLE,               /* "broker-unavailable": it closed the connection */
        BROKER_ERROR_LOST,                      /* "broker-timeout": the end of the run never came */
        BROKER_ERROR_UNKNOWN,                   /* "broker-error": an error event without a known code */
        BROKER_ERROR_INTERNAL,                  /* "internal": on this side, e.g. out of memory */
        _BROKER_ERROR_MAX,
        _BROKER_ERROR_INVALID = -EINVAL,
} BrokerError;

/* The wire name; NULL for BROKER_ERROR_NONE and out-of-range values. */
const char *broker_error_to_string(BrokerError e);
/* The error a wire name stands for; _BROKER_ERROR_INVALID for any other. */
BrokerError broker_error_from_string(const char *s);


/* The events the broker sends, built here so that
 * both sides of the protocol are one file. Each returns -ENOMEM with nothing
 * built, or 0 with *ret set; never a message with a member silently null. */

/* {"event":"error","code":…,"message":…}; error must have a wire name. */
int broker_event_error(BrokerError error, const char *message, json_object **ret);
/* Builds and sends that error; for connections the broker will not serve too. */
int broker_send_error(int fd, BrokerError error, const char *message);

/* {"event":"started","run_id":…,"unit":…}: a run adds "warm", a session's
 * call "session": true. */
int broker_event_started(const char *run_id, const char *unit, json_object **ret);

/* What the "exit" of a run and of a session's call have in common; a run adds
 * its accounting ("cpu_ms", "memory_peak_bytes", "result", "warm"), a call
 * "session_lost". */
typedef struct BrokerExit {
        const char *run_id;             /* a session's call: its unit */
        int exit_code;                  /* -1 when a signal ended it */
        const char *signal;             /* "SIGKILL"…, or NULL: null */
        bool timed_out, oom_killed, cancelled;
        uint64_t duration_usec;         /* sent in ms */
} BrokerExit;
int broker_event_exit(const BrokerExit *x, json_object **ret);

/* The answer to session_create: the handle's id and the session's limits. */
int broker_event_session(const char *id, const char *unit, uint64_t idle_timeout_s, uint64_t max_lifetime_s,
                         uint64_t memory_max_bytes, json_object **ret);

/* The answer to session_close and session_close_scope. */
int broker_event_closed(unsigned count, json_object **ret);

/* The answer to {"op":"info"}: the version, the sandbox's state and every
 * limit a front end needs to know. The json_object members are borrowed
 * (a reference is taken); NULL ones and a NULL sandbox_failure are left out. */
typedef struct BrokerInfoReply {
        const char *version;
        const char *python;             /* the interpreter's path */
        const char *sandbox;            /* "ok", "failed" or "probing" */
        const char *sandbox_failure;
        uint64_t default_timeout_s, max_timeout_s, task_max_timeout_s, max_code_bytes;
        uint64_t memory_max_bytes, tasks_max, cpu_quota_percent;
        uint64_t file_size_max_bytes, tmp_size_max_bytes, max_concurrent;
        json_object *python_version, *modules;  /* what the discovery found */
        uint64_t pool_size, pool_ready, pool_hits;
        json_object *preloaded;                 /* an array of module names */
        uint64_t max_sessions, max_sessions_per_caller, max_sessions_per_scope, session_idle_s, session_max_s;
        uint64_t sessions;              /* live ones */
        uint32_t languages;             /* LANGUAGE_BIT()s of those runs may use (issue 42) */
} BrokerInfoReply;
int broker_event_info(const BrokerInfoReply *info, json_object **ret);

/* ---- The "info" reply, read back ----
 * What a front end reads of broker_event_info()'s reply, parsed once here
 * beside the builder so that both ends of "info" are one file. A member the
 * reply lacks (an older broker, or no reply at all) is BROKER_INFO_UNSET for
 * a number (a negative one counts as lacking), NULL for a string or a list. */
#define BROKER_INFO_UNSET UINT64_MAX
typedef struct BrokerSandboxInfo {
        char *sandbox;                  /* "ok", "failed" or "probing" */
        char *sandbox_failure;
        char *python_version;           /* "3.11.2" */
        uint64_t max_timeout_s, task_max_timeout_s, max_code_bytes;
        uint64_t memory_max_bytes, tasks_max, cpu_quota_percent;
        uint64_t max_sessions, max_sessions_per_caller, session_idle_s, session_max_s;
        bool result_channel;            /* runs take a fourth fd, the result channel */
        char **modules, **preloaded;    /* the members of each array that have a string form */
        /* LANGUAGE_BIT()s of "languages" ("python,bash"); Python alone when
         * the broker does not say (an older one) or says nonsense. */
        uint32_t languages;
} BrokerSandboxInfo;

/* Fills *ret from reply (NULL: everything unset). -ENOMEM with *ret left
 * untouched, or 0; free with broker_sandbox_info_done(). */
int broker_sandbox_info_parse(json_object *reply, BrokerSandboxInfo *ret);
void broker_sandbox_info_done(BrokerSandboxInfo *info);

/* ---- Confirmation of a destructive upstream tool (code mode, issue 40) ----
 * A run calls a tool whose annotations say it may destroy and the server's
 * CONFIRMED does not name it: the gateway asks the broker on the run's
 * control connection, the broker asks the front end on the run's client
 * connection, and the front end asks the MCP client (elicitation/create, form mode):
 *
 *   gateway → broker → front end   {"op":"confirm","id":N,"server":S,"tool":T}
 *                                  (the broker sends it as "event":"confirm", to the client of
 *                                  the run, or of the session's call running, whose "run" or
 *                                  "session_exec" said "confirm": true)
 *   front end → broker → gateway   {"op":"confirmed","id":N,"accept":B,"reason":R}
 *                                  (the front end sends it as "op":"confirm_answer")
 *
 * N is the gateway's, per run, never the run's: the run has no way onto
 * either connection, so no answer it could make reaches the gateway. Each
 * side keeps the ids it asked and not yet heard (at most
 * BROKER_CONFIRM_PENDING_MAX), and an answer to any other id is dropped.
 * Arguments never travel: only the server's and the tool's names. */
#define BROKER_CONFIRM_PENDING_MAX 4U
#define BROKER_CONFIRM_REASON_MAX 200U
/* An id: 1 ..  2^53 (exact in any JSON reader). */
#define BROKER_CONFIRM_ID_MAX (UINT64_C(1) << 53)

typedef struct BrokerConfirmAsk {
        uint64_t id;
        char server[32 + 1];            /* server_name_is_valid() */
        char tool[128 + 1];             /* tools_name_is_valid() */
} BrokerConfirmAsk;

typedef struct BrokerConfirmAnswer {
        uint64_t id;
        bool accept;
        char reason[BROKER_CONFIRM_REASON_MAX + 1];     /* printable; "" for none */
} BrokerConfirmAnswer;

/* The ask's members, checked: -EBADMSG if any is missing or malformed. */
int broker_confirm_ask_parse(json_object *msg, BrokerConfirmAsk *ret);
/* The answer's: id and accept required; reason optional, made printable
 * and cut to BROKER_CONFIRM_REASON_MAX. -EBADMSG otherwise. */
int broker_confirm_answer_parse(json_object *msg, BrokerConfirmAnswer *ret);
/* {KEY:VALUE,"id":…,"server":…,"tool":…} and {KEY:VALUE,"id":…,"accept":…,"reason":…}. */
int broker_confirm_ask_build(const char *key, const char *value, const BrokerConfirmAsk *a, json_object **ret);
int broker_confirm_answer_build(const char *key, const char *value, const BrokerConfirmAnswer *a, json_object **ret);
