/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A run's links beside its unit (client.h): to mcp-exec-egressd for a run
 * with a network (its feed, fail closed), and to mcp-exec-toolsd for a run
 * with tools (code mode: its tools connection, never at the run's cost). */
#include "client.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "manager.h"
#include "run.h"
#include "tools-link.h"
#include "util.h"

/* The run's network cannot be had: the caller hears why, and the run
 * ends before its code ever came. */
void client_egress_failed(Client *c, const char *message) {
        assert(c);

        log_struct(LOG_WARNING, "MESSAGE=Run %s gets no network: %s", run_id(c->run), message,
                   "MCP_RUN_ID=%s", run_id(c->run),
                   "MCP_EGRESS_POLICY=%s", c->network ?: "");
        if (!client_is_gone(c)) {
                (void) client_send_error(c, BROKER_ERROR_EGRESS_UNAVAILABLE, message);
                /* Nothing more goes to the caller; its run ends as a hang-up's. */
                c->io = sd_event_source_disable_unref(c->io);
        }
        (void) run_cancel(c->run);
        client_release_slot(c);
}

/* Fail closed: an egress run's unit gets AF_INET, so its IP firewall
 * (IPAddressDeny=any, IPAddressAllow=localhost) must really be there. */
#define NO_FIREWALL_TEXT                                                                                     \
        "the sandbox's IP firewall (IPAddressDeny=) is not in effect on this host: systemd has no cgroup BPF "  \
        "here (it needs the unified cgroup hierarchy); runs with a network are refused"

/* An egress run goes to its launcher once egressd handed over the feed and
 * the unit's firewall is known to be in place. */
bool client_egress_ready(Client *c) {
        assert(c);

        if (!c->network)
                return true;
        if (!egress_link_is_ready(c->egress))
                return false;
        if (!run_ip_firewall_attached(c->run)) {
                client_egress_failed(c, NO_FIREWALL_TEXT);
                return false;
        }
        return true;
}

static void on_egress_ready(EgressLink *l, int error, const char *message, void *userdata) {
        Client *c = userdata;

        if (error < 0)
                client_egress_failed(c, message);
        else
                client_try_handoff(c);
}

/* The gateway asks to confirm a destructive tool: the run's client, which
 * said it can answer, gets the question; a client gone says no. */
static void on_tools_confirm(ToolsLink *l, const BrokerConfirmAsk *ask, void *userdata) {
        _cleanup_json_ json_object *j = NULL;
        BrokerConfirmAnswer no = { .id = ask->id, .reason = "the run's client is gone" };
        Client *c = userdata;

        if (!client_is_gone(c) && broker_confirm_ask_build("event", "confirm", ask, &j) >= 0 &&
            packet_send(c->fd, j, NULL, 0) >= 0)
                return;
        (void) tools_link_confirm_answer(l, &no);
}

/* The control connection for c's run: egressd hands over the feed soon, or
 * the run fails (on_egress_ready()). */
int client_start_egress(Client *c) {
        Manager *m = c->manager;
        EgressLinkRequest req = {
                .socket_path = m->egress_socket,
                .run_id = run_id(c->run),
                .policy = c->network,
                .max_connections = m->egress.max_connections,
                .max_bytes = m->egress.max_bytes,
                .timeout_usec = EGRESS_LINK_TIMEOUT_USEC,
                .totals = &m->egress_totals,
        };

        assert(c->network);

        return egress_link_start(m->event, &req, on_egress_ready, c, &c->egress);
}

static void on_tools_ready(ToolsLink *l, int error, const char *message, void *userdata) {
        Client *c = userdata;

        if (error < 0)
                log_struct(LOG_WARNING, "MESSAGE=Run %s gets no tools: %s", run_id(c->run), message,
                           "MCP_RUN_ID=%s", run_id(c->run));
        client_try_handoff(c);
}

/* Code mode: where servers.d has servers, the run is offered to the gateway
 * as it starts, beside its unit. A gateway that cannot be reached or does
 * not answer costs the run its tools, never the run: mcp_servers in the code
 * then says that this run has none, and the journal why. */
void client_start_tools(Client *c) {
        Manager *m = c->manager;
        char uid_caller[32];
        const char *caller = c->caller;
        int r;

        if (!tools_configured(m->tools_servers_dir))
                return;
        /* A client of the broker's own (root, the CLI) names no caller. */
        if (isempty(caller)) {
                (void) snprintf(uid_caller, sizeof uid_caller, "uid:%u", (unsigned) c->uid);
                caller = uid_caller;
        }
        r = tools_link_start(m->event, m->tools_socket, run_id(c->run), caller, TOOLS_LINK_TIMEOUT_USEC,
                             on_tools_ready, c, &c->tools);
        if (r < 0)
                log_struct(LOG_WARNING, "MESSAGE=Run %s gets no tools: cannot reach %s: %s", run_id(c->run),
                           m->tools_socket, strerror(-r), "MCP_RUN_ID=%s", run_id(c->run));
        else {
                tools_link_count_into(c->tools, &m->tools_totals);
                if (c->confirm)
                        tools_link_on_confirm(c->tools, on_tools_confirm, c);
        }
}

