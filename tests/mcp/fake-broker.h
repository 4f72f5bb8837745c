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
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

typedef struct FakeBroker FakeBroker;

typedef struct FakeRun {
        FakeBroker *broker;
        unsigned index;
        int sock, in_fd, out_fd, err_fd;
        sd_event_source *sock_io, *in_io, *timer;
        json_object *request;           /* the {"op":"run",…} packet */
        char *input;                    /* everything read from the sandbox's stdin */
        size_t input_len, input_alloc;
        const char *code, *stdin_data;  /* into input, once it is complete */
        size_t code_len, stdin_len;
        bool input_done;                /* stdin reached EOF and the frame parsed */
        bool client_closed;             /* the client hung up before the run ended: a cancel */
        bool finished;                  /* exit (or error) sent */
        bool errored;

        /* The script. */
        int exit_code;
        unsigned delay_ms;
        bool hang, timed_out, oom, echo;
        char out[256], err[256];
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
};

int fake_broker_new(sd_event *e, FakeBroker **ret);
FakeBroker *fake_broker_free(FakeBroker *b);

/* Runs whose input arrived completely (the code is known). */
unsigned fake_broker_n_started(const FakeBroker *b);
/* Runs the client hung up on before they ended. */
unsigned fake_broker_n_cancelled(const FakeBroker *b);
