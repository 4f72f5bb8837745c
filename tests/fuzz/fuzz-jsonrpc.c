/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the input is one JSON-RPC message (object or batch) for
 * a fresh MCP session. Built several ways: with FUZZ_SPLIT_LINES the input is split
 * at newlines into several messages for one session (negotiation state). The
 * broker socket does not exist, so tools/call fails fast. With
 * FUZZ_FAKE_BROKER (and FUZZ_SPLIT_LINES) runs go to tests/mcp/fake-broker.c
 * on the same event loop, whose script is the code itself ("#out x",
 * "#exit 3", "#sleep 5", "#hang", "#timeout", "#oom"): queueing, progress,
 * cancellation and results, with the session freed while runs are in flight.
 * FUZZ_FREE_IN_SEND: the first input byte picks the reply (1..8) from inside
 * whose send() the peer frees its session. */

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <systemd/sd-event.h>

#include "jsonrpc.h"
#include "log.h"
#include "mcp-server.h"
#ifdef FUZZ_FAKE_BROKER
#include "fake-broker.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const modules[] = { "numpy", NULL };

typedef struct Peer {
        McpSession *session;
        size_t n_sent;
        size_t free_after;      /* FUZZ_FREE_IN_SEND: free the session from inside send() */
        uint64_t last_origin;   /* of the last message handed over */
} Peer;

static int discard_send(McpSession *s, const McpMessage *m, void *userdata) {
        Peer *p = userdata;
        /* Touch every byte so ASan sees reads past the end. */
        volatile char c = 0;
        for (size_t i = 0; m->json && i < m->len; i++)
                c ^= m->json[i];
        (void) c;
        /* The routing facts: what a transport trusts must hold for any input. */
        if (m->origin == 0 || m->origin > p->last_origin || (m->kind == MCP_MESSAGE_UNANSWERED) != !m->json ||
            (m->id && !jsonrpc_id_is_valid(m->id)) || (m->kind == MCP_MESSAGE_UNANSWERED && !m->id) ||
            (m->kind != MCP_MESSAGE_RESPONSE && m->error_code != 0))
                abort();
        p->n_sent++;
#ifdef FUZZ_FREE_IN_SEND
        if (p->n_sent == p->free_after && p->session) {
                if (s != p->session)
                        abort();
                p->session = mcp_session_free(p->session);
        }
#endif
        return 0;
}

static const McpTransport transport = { .send = discard_send };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static bool initialized = false;
        sd_event *e = NULL;
        McpServer *server = NULL;
        Peer peer_state = {};

        if (size > 64 * 1024)
                return 0;
        if (!initialized) {
                log_set_max_level(getenv("FUZZ_DEBUG") ? LOG_DEBUG : LOG_CRIT);
                /* As mcp-execd does (a peer or run that went away must not
                 * kill us): without it SIGPIPE ends the fuzzer silently. */
                (void) signal(SIGPIPE, SIG_IGN);
                initialized = true;
        }

        McpServerConfig config = {
                .broker_socket = "/nonexistent/mcp-exec-fuzz/broker.sock",
                .default_timeout_s = 5,
                .max_timeout_s = 10,
                .max_output_bytes = 4096,
                .max_stdin_bytes = 4096,
                .max_code_bytes = 4096,
                .max_concurrent = 2,
                .max_queue = 2,
                .memory_max_bytes = 256ULL << 20,
                .tasks_max = 64,
                .python_version = "3.11.2",
                .modules = modules,
        };
        McpPeer peer = { .transport = "stdio", .uid = 1000, .pid = 42 };

        if (sd_event_new(&e) < 0)
                abort();
#ifdef FUZZ_FAKE_BROKER
        FakeBroker *broker = NULL;
        if (fake_broker_new(e, &broker) < 0)
                abort();
        config.broker_socket = broker->path;
#endif
        if (mcp_server_new(e, &config, &server) < 0)
                abort();
#ifdef FUZZ_FREE_IN_SEND
        /* The first byte says after which reply the peer goes away. */
        if (size < 1)
                goto finish;
        peer_state.free_after = 1 + data[0] % 8;
        data++;
        size--;
#endif
        if (mcp_session_new(server, &transport, &peer_state, &peer, &peer_state.session) < 0)
                abort();

#ifdef FUZZ_SPLIT_LINES
        const uint8_t *p = data, *end = data + size;
        while (p < end) {
                const uint8_t *nl = memchr(p, '\n', end - p);
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                /* A private copy of exactly n bytes, so ASan catches overreads. */
                char *m = malloc(n ? n : 1);
                if (!m)
                        abort();
                memcpy(m, p, n);
                if (peer_state.session)
                        (void) mcp_session_handle(peer_state.session, m, n, ++peer_state.last_origin);
                free(m);
                for (int i = 0; i < 3; i++)
                        (void) sd_event_run(e, 0);
                p += n + 1;
        }
#else
        char *m = malloc(size ? size : 1);
        if (!m)
                abort();
        memcpy(m, data, size);
        (void) mcp_session_handle(peer_state.session, m, size, ++peer_state.last_origin);
        free(m);
#endif

        for (int i = 0; i < 5; i++)
                (void) sd_event_run(e, 0);
#ifdef FUZZ_FAKE_BROKER
        /* Let quick runs finish; slow or hanging ones are cancelled below. */
        for (int i = 0; i < 50 && mcp_server_in_flight(server) > 0; i++)
                (void) sd_event_run(e, 0);
#endif

        peer_state.session = mcp_session_free(peer_state.session);
#ifdef FUZZ_FREE_IN_SEND
finish:
#endif
        for (int i = 0; i < 5; i++)
                (void) sd_event_run(e, 0);
        server = mcp_server_free(server);
        for (int i = 0; i < 3; i++)
                (void) sd_event_run(e, 0);
#ifdef FUZZ_FAKE_BROKER
        broker = fake_broker_free(broker);
#endif
        e = sd_event_unref(e);
        return 0;
}
