/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A stand-in for mcp-exec-brokerd in the unit tests: it listens on a
 * SOCK_SEQPACKET socket in a temporary directory, speaks the real broker
 * protocol (broker-proto.h) and the launch frame (launch-frame.h) from the
 * same sd-event loop as the code under test, and plays a script written into
 * the code itself, one directive per line:
 *
 *   #out TEXT     write TEXT and a newline to stdout
 *   #err TEXT     the same on stderr
 *   #echo         copy the program's stdin to stdout
 *   #exit N       exit status N (default 0)
 *   #sleep MS     exit only after MS milliseconds
 *   #hang         never exit: only the client closing the connection ends it
 *   #timeout      report timed_out (exit -1, SIGKILL)
 *   #oom          report oom_killed (exit -1, SIGKILL)
 *   #confirm S T  code mode asks to confirm tool T of server S ("confirm"
 *                 event, id 7) if the run said "confirm": true, and exits
 *                 once the answer came, with "confirm: accept=B reason=R"
 *                 on stdout (without "confirm": true: "confirm: not asked")
 *
 * With a result channel (broker->result_channel: the info reply says so and
 * a run takes a fourth fd, as the real broker will), the run's frames go out
 * on it before the exit event: STATUS with the exit status (the launcher's
 * view), what the script asks for, then END. Input files of a version-2
 * launch frame are parsed into files[]. Directives:
 *   #figure            an IMAGE frame: a 3x2 PNG figure
 *   #image PATH        an IMAGE frame of a file; a real image by PATH's extension
 *                      (png, jpg, gif, webp), else a few bytes that are none
 *   #notimage PATH     an IMAGE frame of a file that is no image whatever its name
 *   #file PATH TEXT    a FILE frame with TEXT
 *   #blob PATH         a FILE frame with 4 bytes that are not UTF-8
 *   #skip PATH REASON  a SKIPPED frame
 *   #returnfiles       every input file back as a FILE frame under /tmp/outputs/
 *   #status-exit N     STATUS says exit N (the broker still reports #exit)
 *   #status-signal N   STATUS says signal N
 *   #nostatus          no STATUS frame
 *   #noend             the channel ends without END (the launcher died)
 *   #raw HEX           raw bytes on the channel, at that point
 *   #flood N           N SKIPPED frames
 *   #huge              a FILE frame claiming a terabyte of data, then nothing
 *   #exitfirst         the exit event goes out before the channel is written
 *   #exitlate MS       the exit event goes out MS ms after the channel ended
 *   #packages JSON     a PACKAGES frame before STATUS: meta JSON, data FAKE_PIP_LOG
 *
 * A run request with "network" gets an "egress" object in its exit event
 * (with a verdict nobody knows and a member nobody asked for).
 *
 * "session_exec" is served as a "run"; "session_create" is answered with
 * the session FAKE_SESSION_ID, its request kept in session_create.
 */

#define FAKE_PIP_LOG "Processing /var/lib/mcp-exec/wheels/a-1.0-py3-none-any.whl\nInstalled a-1.0\n"
#define FAKE_SESSION_ID "0123456789abcdef0123456789abcdef"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "launch-frame.h"
#include "test-frames.h"

typedef struct FakeBroker FakeBroker;

typedef struct FakeInputFile {
        const char *name, *data;        /* into the run's input */
        size_t name_len, size;
} FakeInputFile;

typedef struct FakeRun {
        FakeBroker *broker;
        unsigned index;
        int sock, in_fd, out_fd, err_fd, res_fd;
        sd_event_source *sock_io, *in_io, *res_io, *timer;
        json_object *request;           /* the {"op":"run",…} packet */
        char *input;                    /* everything read from the sandbox's stdin */
        size_t input_len, input_alloc;
        const char *code, *stdin_data;  /* into input, once it is complete */
        size_t code_len, stdin_len;
        bool input_done;                /* stdin reached EOF and the frame parsed */
        uint32_t version;               /* of the launch frame */
        FakeInputFile files[LAUNCH_FILES_MAX];
        size_t n_files;
        FrameBuf channel;               /* what goes out on the result channel */
        size_t channel_written;
        bool channel_done;              /* all written (or the reader is gone), and closed */
        bool client_closed;             /* the client hung up before the run ended: a cancel */
        bool finished;                  /* exit (or error) sent */
        bool errored;

        /* The script. */
        int exit_code;
        unsigned delay_ms;
        bool hang, timed_out, oom, echo;
        char out[256], err[256];
        bool no_status, no_end, exit_first;
        unsigned exit_late_ms;
        int status_exit, status_signal;
        unsigned figures;
        char confirm[300];              /* "SERVER TOOL" of #confirm; "" for none */
        json_object *confirm_answers;   /* every "confirm_answer" the client sent */
} FakeRun;

struct FakeBroker {
        sd_event *event;
        char dir[64], path[128];
        int listen_fd;
        sd_event_source *listen_io;
        FakeRun *runs[256];
        unsigned n_runs;
        /* When set, the next run request gets {"event":"error"} with these. */
        const char *fail_code, *fail_message;
        /* A broker with the result channel (see above). */
        bool result_channel;
        /* Runs with code mode's tools: "tools" in started, "tool_calls" in exit. */
        bool tools;
        json_object *session_create;    /* the last session_create request */
};

int fake_broker_new(sd_event *e, FakeBroker **ret);
FakeBroker *fake_broker_free(FakeBroker *b);

/* Runs whose input arrived completely (the code is known). */
unsigned fake_broker_n_started(const FakeBroker *b);
/* Runs the client hung up on before they ended. */
unsigned fake_broker_n_cancelled(const FakeBroker *b);
