/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Asks the broker to run one piece of code and collects the result. Pipes go
 * to the sandbox directly: this side writes the framed code, the input files
 * and stdin, and reads stdout and stderr under the shared output limit and,
 * where the broker has one, the result channel (result-reader.h). Knows the
 * broker's protocol and sd-event; nothing of MCP or JSON-RPC.
 *
 * A run is over for its caller once the launcher reported a normal exit and
 * the program's output ended: the unit's teardown is not waited for (the
 * broker is told to let it finish on its own, "detach"). Anything else (a
 * signal, no report, a timeout, a session's call) waits for the broker's
 * word, which alone knows of timeouts, OOM kills and cancels. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "broker-proto.h"
#include "macro.h"
#include "mem-budget.h"
#include "result-reader.h"

/* A file written into the run's working directory (/tmp) before it starts. */
typedef struct ExecInputFile {
        const char *name;               /* a plain file name: launch_file_name_valid() */
        size_t name_len;
        const uint8_t *data;
        size_t size;
} ExecInputFile;

/* Strings and files are borrowed: they must outlive the client. */
typedef struct ExecClient ExecClient;
/* Code mode asks to confirm a destructive tool of server (broker-proto.h):
 * answer with exec_client_confirm_answer(), now or later, or never (the
 * gateway's call then times out). ask is borrowed for the call. */
typedef void (*exec_confirm_t)(ExecClient *c, const BrokerConfirmAsk *ask, void *userdata);

typedef struct ExecRequest {
        const char *code;
        size_t code_len;
        const char *stdin_data;
        size_t stdin_len;
        uint64_t timeout_s;             /* 0: the broker's default */
        uint64_t max_output_bytes;      /* stdout+stderr together */
        const char *tag;                /* journal metadata, e.g. the request id */
        /* The broker takes a fourth fd, the result channel (its "info"
         * says "result_channel": true): the program's own exit status,
         * figures and files come back, and input files can go in. */
        bool result_channel;
        ResultLimits result_limits;
        const ExecInputFile *files;     /* needs result_channel; NULL/0: none (launch frame version 1) */
        size_t n_files;
        /* A call in a session (the broker's id), by its owner, as the
         * session was created with. NULL: a run of its own. */
        const char *session;
        /* A run with a network (issue 22): the egress policy's name, sent
         * as the run's "network"; NULL: none. A session's calls have the
         * session's and send none. Such a run waits for the broker's exit
         * event (never "detach"): it carries the run's egress counts. */
        const char *network;
        /* Packages on demand (issue 23): a JSON array of valid specs
         * (package-spec.h), sent as "packages" of the run or the session's
         * call; NULL: none. Borrowed. */
        json_object *packages;
        /* Issue 42: "python", "bash", "javascript", sent as the run's or the
         * session call's "language"; NULL: none (Python, or the session's). */
        const char *language;
        SandboxOwner owner;
        /* A run or a session's call whose caller can be asked to confirm a
         * destructive tool: the request says "confirm": true, and each
         * question goes here (with confirm_userdata). NULL: the broker says
         * no itself. */
        exec_confirm_t confirm;
        void *confirm_userdata;
        /* Optional: what the client collects (output, figures and files)
         * is charged here while the client lives; what the budget cannot
         * take is left out as past the limits. */
        MemCharge *charge;
} ExecRequest;

typedef struct ExecResult {
        /* Set when no result could be had: the run did not happen as asked. */
        BrokerError error;
        char *error_message;

        char *stdout_text, *stderr_text;        /* valid UTF-8, NUL-terminated */
        size_t stdout_len, stderr_len;
        int exit_code;
        char *signal;                   /* "SIGKILL", or NULL */
        bool timed_out, truncated, oom_killed, cancelled;
        uint64_t duration_ms;
        int64_t cpu_ms;                 /* -1: unknown */
        int64_t memory_peak_bytes;      /* -1: not exposed by this systemd */
        char *run_id;

        /* From the result channel, when there was one. exit_code and signal
         * are the launcher's when it reported them (have_status). */
        bool result_channel, have_status;
        ResultItem *outputs;            /* figures and files, returned or left out, as they came */
        size_t n_outputs;
        uint64_t outputs_unlisted;      /* left out in the sandbox and not named */
        bool outputs_unlisted_more;     /* and an unknown number more */
        char *outputs_unlisted_reason;
        bool outputs_lost;              /* the channel ended without END: the launcher died or was killed */
        char *outputs_error;            /* the channel broke its protocol: what, and reading stopped there */

        bool in_session;                /* a call in a session: */
        bool session_lost;              /* it ended the session, whose state is gone */

        /* The broker's "egress" of the exit event, when the run had a
         * network: {"policy", "connections": {verdict: n}, "bytes_up",
         * "bytes_down"}, only those members and types kept. NULL: none. */
        json_object *egress;

        /* The broker's "tool_calls" of the exit event, when the run had
         * tools (code mode): {server: {"calls","errors","refused","ms"}},
         * only those members, names and types kept. NULL: none. */
        json_object *tool_calls;

        /* The installer's report (RESULT_FRAME_PACKAGES), when the call
         * asked for packages: its meta, only the members and types
         * result-frame.h names, strings valid UTF-8, and "log" (pip's
         * output, invalid UTF-8 replaced) or "log_left_out" (why not).
         * "ok": false means the code did not run. NULL: none came. */
        json_object *packages;
} ExecResult;

typedef void (*exec_done_t)(ExecClient *c, const ExecResult *result, void *userdata);

int exec_client_start(sd_event *e, const char *socket_path, const ExecRequest *req, exec_done_t done,
                      void *userdata, ExecClient **ret);

/* Closes the connection: the broker stops the whole unit. done still fires,
 * with cancelled set. */
void exec_client_cancel(ExecClient *c);

/* The answer to a question of confirm: to the broker, which passes it on
 * only if it answers an open question of this run's. */
int exec_client_confirm_answer(ExecClient *c, const BrokerConfirmAnswer *a);

ExecClient *exec_client_free(ExecClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExecClient *, exec_client_free);

/* Progress: output bytes seen so far and microseconds since the start. */
uint64_t exec_client_output_bytes(const ExecClient *c);
uint64_t exec_client_elapsed_usec(const ExecClient *c);

/* The broker's "egress" object as a result may show it: "policy" (a
 * string), "connections" (verdict names of egress-proto.h to non-negative
 * integers), "bytes_up", "bytes_down"; anything else is dropped. NULL if v
 * is not an object (or on out of memory). */
json_object *exec_result_egress_from_json(json_object *v);

/* The broker's "tool_calls" object as a result may show it: at most 64
 * server names as servers.d allows them ([a-z][a-z0-9_]{0,31}), each with
 * non-negative integers "calls", "errors", "refused", "ms"; anything else
 * is dropped. NULL if v is not an object (or on out of memory). */
json_object *exec_result_tool_calls_from_json(json_object *v);

/* The tool result object: stdout, stderr, exit_code, duration_ms, truncated,
 * timed_out, oom_killed, signal, cpu_ms, memory_peak_bytes; "egress" when
 * the run had a network, "tool_calls" when it called tools, "packages" when the installer reported. */
json_object *exec_result_to_json(const ExecResult *r);
