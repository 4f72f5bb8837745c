/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "client-sessions.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "broker-proto.h"
#include "client.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "packages.h"
#include "util.h"

void sandbox_sessions_done(SandboxSessions *r) {
        assert(r);

        while (r->list) {
                SandboxSession *se = r->list;

                LIST_REMOVE(sessions, r->list, se);
                sandbox_session_free(se);
        }
        r->n = 0;
}

/* Owner strings from the front end: short, printable, for comparison only. */
static int parse_owner(json_object *req, const char **ret_caller, const char **ret_scope) {
        const char *caller = json_get_string(req, "caller"), *scope = json_get_string(req, "scope") ?: "";

        assert(ret_caller);
        assert(ret_scope);

        if (!caller || isempty(caller) || strlen(caller) > SANDBOX_SESSION_OWNER_MAX ||
            strlen(scope) > SANDBOX_SESSION_OWNER_MAX)
                return -EINVAL;
        for (const char *p = caller; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return -EINVAL;
        for (const char *p = scope; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return -EINVAL;
        *ret_caller = caller;
        *ret_scope = scope;
        return 0;
}

/* Root's sessions are root's; the front end's die with its process. */
static pid_t client_frontend_pid(const Client *c) {
        assert(c);

        return c->uid == 0 ? 0 : c->pid;
}

/* The id is the handle's secret: compared in constant time. */
static bool id_equal(const char *a, const char *b) {
        unsigned char d = 0;

        assert(a);
        assert(b);

        if (strlen(a) != SANDBOX_SESSION_ID_LEN || strlen(b) != SANDBOX_SESSION_ID_LEN)
                return false;
        for (size_t i = 0; i < SANDBOX_SESSION_ID_LEN; i++)
                d |= (unsigned char) (a[i] ^ b[i]);
        return d == 0;
}

/* The caller's live session of that id; NULL for any other, so that a guessed
 * or another caller's handle looks exactly like one that never was. */
static SandboxSession *client_find_session(Client *c, json_object *req) {
        const char *id = json_get_string(req, "session"), *caller, *scope;
        SandboxSession *found = NULL;

        assert(c);
        assert(req);

        if (!id || parse_owner(req, &caller, &scope) < 0)
                return NULL;
        LIST_FOREACH(sessions, se, c->manager->sessions.list)
                if (id_equal(se->id, id) && !se->ending &&
                    sandbox_session_owned_by(se, caller, scope, client_frontend_pid(c)))
                        found = se;
        return found;
}

/* Code mode asks to confirm a destructive tool during a session's call:
 * the calling client, if its call said it can answer; else no. */
static void on_session_confirm(ToolsLink *l, const BrokerConfirmAsk *ask, void *userdata) {
        _cleanup_json_ json_object *j = NULL;
        BrokerConfirmAnswer no = { .id = ask->id, .reason = "nobody can be asked for this call of the session" };
        SandboxSession *se = userdata;
        Client *c = se->client;

        if (c && c->state == CLIENT_SESSION_CALLING && c->confirm && !client_is_gone(c) &&
            broker_confirm_ask_build("event", "confirm", ask, &j) >= 0 && packet_send(c->fd, j, NULL, 0) >= 0)
                return;
        (void) tools_link_confirm_answer(l, &no);
}

/* The client waits on its session no more (and is freed next). */
static void client_detach_session(Client *c) {
        assert(c);
        assert(c->session && c->session->client == c);

        /* What its call asked is for it alone to answer. */
        if (c->session->tools)
                tools_link_confirm_close_all(c->session->tools, "the session's call ended");
        c->session->client = NULL;
        c->session = NULL;
        c->state = CLIENT_NEW;
}

/* From now on the session tells c when it is ready, its call is done, or it
 * is gone: one client at a time, as a session runs one call at a time. */
static void client_attach_session(Client *c, SandboxSession *se, ClientState state) {
        assert(c);
        assert(se);
        assert(!se->client);
        assert(state == CLIENT_SESSION_CREATING || state == CLIENT_SESSION_CALLING);

        se->client = c;
        c->session = se;
        c->state = state;
        c->timer = sd_event_source_disable_unref(c->timer);
}

/* The creator learns its handle once the interpreter is up and the sandbox
 * self-check has passed. */
void client_answer_session(Client *c) {
        _cleanup_json_ json_object *j = NULL;
        SandboxSession *se;
        Manager *m;

        assert(c);
        assert(c->state == CLIENT_SESSION_CREATING);

        m = c->manager;
        se = c->session;
        if (!se->ready || m->probe_state != SELF_CHECK_PASSED)
                return;
        if (broker_event_session(se->id, sandbox_session_unit(se), m->config.session_idle_s, m->config.session_max_s,
                                 m->config.memory_max, &j) < 0) {
                (void) client_send_error(c, BROKER_ERROR_INTERNAL, "out of memory");
                client_free(c);         /* ends the session: nobody has its handle */
                return;
        }
        log_struct(LOG_INFO, "MESSAGE=Session %s created", sandbox_session_unit(se),
                   "MCP_UNIT=%s", sandbox_session_unit(se),
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_SESSIONS=%u", m->sessions.n,
                   "MCP_PACKAGES=%zu", packages_count(se->packages));
        if (packet_send(c->fd, j, NULL, 0) < 0) {
                client_free(c);
                return;
        }
        m->stats.sessions_created++;
        client_detach_session(c);
        client_free(c);
}

static void on_session_ready(SandboxSession *se, bool ready, void *userdata) {
        Client *c;

        assert(se);

        c = se->client;
        if (!c || c->state != CLIENT_SESSION_CREATING)
                return;
        if (ready) {
                client_answer_session(c);
                return;
        }
        if (se->egress_failure[0])
                (void) client_send_error(c, BROKER_ERROR_EGRESS_UNAVAILABLE, se->egress_failure);
        else
                (void) client_send_error(c, BROKER_ERROR_START_FAILED, "the session's interpreter did not start");
        client_detach_session(c);
        client_free(c);
}

static void on_session_call_done(SandboxSession *se, const SandboxSessionCallResult *r, void *userdata) {
        const char *sig = r->signal > 0 ? signal_to_name(r->signal) : NULL;
        _cleanup_json_ json_object *j = NULL;
        Client *c = se->client;
        Manager *m = userdata;
        BrokerExit x = {
                .run_id = sandbox_session_unit(se),
                .exit_code = r->exit_code,
                .signal = sig,
                .timed_out = r->timed_out,
                .oom_killed = r->oom_killed,
                .cancelled = r->interrupted,
                .duration_usec = r->duration_usec,
        };

        log_struct(r->lost ? LOG_WARNING : LOG_INFO,
                   "MESSAGE=Call in session %s finished%s", sandbox_session_unit(se),
                   r->lost ? "; the session is lost" : "",
                   "MCP_UNIT=%s", sandbox_session_unit(se),
                   "MCP_EXIT_CODE=%i", r->exit_code,
                   "MCP_SIGNAL=%s", sig ?: "",
                   "MCP_TIMED_OUT=%i", r->timed_out,
                   "MCP_OOM_KILLED=%i", r->oom_killed,
                   "MCP_SESSION_LOST=%i", r->lost,
                   "MCP_DURATION_MS=%" PRIu64, r->duration_usec / 1000);
        m->stats.session_calls++;

        if (!c || c->state != CLIENT_SESSION_CALLING)
                return;
        client_detach_session(c);
        if (!client_is_gone(c)) {
                json_object *e = NULL;
                /* A call's egress: what the session's connections did
                 * while it ran (egressd reports a connection when it ends). */
                if (broker_event_exit(&x, &j) < 0 || json_add_bool(j, "session_lost", r->lost) < 0 ||
                    (se->egress && (egress_link_stats(se->egress, true, &e) < 0 || json_add(j, "egress", e) < 0)) ||
                    (r->tool_calls && json_add(j, "tool_calls", json_object_get(r->tool_calls)) < 0))
                        (void) client_send_oom(c);
                else
                        (void) packet_send(c->fd, j, NULL, 0);
        }
        client_free(c);
}

static void on_session_gone(SandboxSession *se, SandboxSessionEnd why, void *userdata) {
        Manager *m = userdata;
        Client *c;

        assert(se);
        assert(m);

        c = se->client;
        /* Whoever still waits on it hears why. */
        if (c) {
                bool creating = c->state == CLIENT_SESSION_CREATING;

                client_detach_session(c);
                if (creating && se->egress_failure[0])
                        (void) client_send_error(c, BROKER_ERROR_EGRESS_UNAVAILABLE, se->egress_failure);
                else
                        (void) client_send_error(c,
                                                 creating ? BROKER_ERROR_START_FAILED : BROKER_ERROR_SESSION_NOT_FOUND,
                                                 creating ? "the session's unit did not start" : "the session ended");
                client_free(c);
        }
        if (why == SANDBOX_SESSION_END_LOST)
                m->stats.sessions_lost++;
        LIST_REMOVE(sessions, m->sessions.list, se);
        assert(m->sessions.n > 0);
        m->sessions.n--;
        sandbox_session_free(se);
        manager_update_idle(m);
}

static const SandboxSessionCallbacks session_callbacks = {
        .ready = on_session_ready,
        .call_done = on_session_call_done,
        .gone = on_session_gone,
};

int client_op_session_create(Client *c, json_object *req, int fds[], size_t n_fds) {
        EgressLinkRequest egress;
        const char *caller, *scope;
        SandboxOwner owner;
        SandboxSpec spec;
        unsigned mine = 0, in_scope = 0;
        SandboxSession *se;
        Manager *m;
        int r;

        assert(c);
        assert(req);

        m = c->manager;
        if (parse_owner(req, &caller, &scope) < 0)
                return client_send_error(
                        c, BROKER_ERROR_BAD_REQUEST,
                        "a session needs a caller (and may have a scope): printable, at most 256 bytes");
        /* A policy we do not know is a bad request (fail closed). */
        r = client_parse_network(c, req);
        if (r < 0)
                return r;
        r = client_parse_packages(c, req);
        if (r < 0)
                return r;
        r = client_parse_language(c, req);
        if (r < 0)
                return r;
        if (m->probe_state == SELF_CHECK_FAILED)
                return client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE,
                                         m->probe_failure ?: "the sandbox self-check failed");
        if (m->config.max_sessions == 0)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT,
                                         "sessions are turned off (MCP_EXEC_MAX_SESSIONS=0)");
        if (m->sessions.n >= m->config.max_sessions)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT,
                                         "the server holds as many sessions as it may (MCP_EXEC_MAX_SESSIONS); "
                                         "close one or wait for one to expire");
        LIST_FOREACH(sessions, x, m->sessions.list)
                if (sandbox_session_has_caller(x, caller)) {
                        mine++;
                        in_scope += !isempty(scope) && sandbox_session_in_scope(x, caller, scope);
                }
        if (mine >= m->config.max_sessions_per_caller)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT,
                                         "this caller holds as many sessions as it may "
                                         "(MCP_EXEC_MAX_SESSIONS_PER_CALLER); close one first");
        /* One MCP session of a caller (one HTTP client of a shared token)
         * gets only its share, so that it cannot shut the caller's other
         * clients out. The unscoped (stdio: the uid's own) have no share. */
        if (in_scope >= m->config.max_sessions_per_scope)
                return client_send_error(c, BROKER_ERROR_SESSION_LIMIT,
                                         "this MCP session holds as many sessions as one may "
                                         "(MCP_EXEC_MAX_SESSIONS_PER_SCOPE); close one first");

        owner = (SandboxOwner) { .caller = caller, .scope = scope };
        manager_fill_spec(m, 0, &spec);
        manager_spec_language(m, c->language, &spec);
        if (c->network)
                egress = (EgressLinkRequest) {
                        .socket_path = m->egress_socket,
                        .policy = c->network,
                        .max_connections = m->egress.max_connections,
                        .max_bytes = m->egress.max_bytes,
                        .timeout_usec = EGRESS_LINK_TIMEOUT_USEC,
                        .totals = &m->egress_totals,
                };
        r = sandbox_session_new(m->event, m->bus, &spec, &owner, client_frontend_pid(c),
                                m->config.session_idle_s * USEC_PER_SEC, m->config.session_max_s * USEC_PER_SEC,
                                c->network ? &egress : NULL, &session_callbacks, m, &se);
        if (r < 0) {
                log_error_errno(r, "Failed to start a session: %m");
                return client_send_error(c, BROKER_ERROR_START_FAILED, "could not ask systemd for a session unit");
        }
        if (tools_configured(m->tools_servers_dir) && c->language == LANGUAGE_PYTHON)
                sandbox_session_offer_tools(se, m->tools_socket, caller, &m->tools_totals);
        if (se->tools)
                tools_link_on_confirm(se->tools, on_session_confirm, se);
        /* Its calls install them (sandbox_session_packages()). */
        se->packages = TAKE_PTR(c->packages);
        LIST_PREPEND(sessions, m->sessions.list, se);
        m->sessions.n++;
        client_attach_session(c, se, CLIENT_SESSION_CREATING);
        manager_update_idle(m);
        return 0;
}

int client_op_session_exec(Client *c, json_object *req, int fds[], size_t n_fds) {
        _cleanup_json_ json_object *started = NULL, *limits = NULL, *packages = NULL;
        char message[256];
        uint64_t timeout_s;
        SandboxSession *se;
        Manager *m;
        int r;

        assert(c);
        assert(req);

        m = c->manager;
        r = client_take_fds(c, "call", fds, n_fds);
        if (r < 0)
                return r;
        r = client_parse_timeout(c, req, &timeout_s);
        if (r < 0)
                return r;
        r = client_parse_packages(c, req);
        if (r < 0)
                return r;
        c->confirm = json_get_bool(req, "confirm");
        se = client_find_session(c, req);
        if (!se)
                return client_send_error(c, BROKER_ERROR_SESSION_NOT_FOUND,
                                         "no such session: it ended (closed, expired, or lost), or it is not yours");
        /* A session's language is the one it was made with. */
        if (json_get(req, "language") &&
            !streq_ptr(json_get_string(req, "language"), language_to_string(se->language))) {
                (void) snprintf(message, sizeof message,
                                "language: this session runs %s, fixed when it was made; make a new session for "
                                "another language", language_to_string(se->language));
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST, message);
        }
        if (se->language != LANGUAGE_PYTHON && c->packages)
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST, "packages: only for Python");
        if (sandbox_session_packages(se, c->packages, &packages) < 0)
                return client_send_oom(c);
        /* The limit holds for what one call installs, the session's own
         * included (its launcher gets them all again). */
        if (packages_count(packages) > m->config.max_packages) {
                (void) snprintf(message, sizeof message,
                                "packages: the session's %zu and this call's %zu make %zu, at most %" PRIu64
                                " (MCP_EXEC_MAX_PACKAGES)",
                                packages_count(se->packages), packages_count(c->packages), packages_count(packages),
                                m->config.max_packages);
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST, message);
        }
        r = manager_result_limits(m, &limits);
        if (r >= 0)
                r = broker_event_started(sandbox_session_unit(se), sandbox_session_unit(se), &started);
        if (r >= 0)
                r = json_build_into(started, JB_BOOL("session", true), JB_END);
        if (r < 0)
                return client_send_oom(c);
        /* A session has one client at a time; one waiting on it already
         * means a call is running (or its creator has not heard back). */
        r = se->client ? -EBUSY
                       : sandbox_session_call(se, limits, packages, m->config.max_install_bytes,
                                              timeout_s * USEC_PER_SEC, c->run_fds, c->n_run_fds);
        /* The launcher has its own copies now: ours would keep the caller's
         * pipes open after the call. */
        client_close_run_fds(c);
        if (r == -EBUSY)
                return client_send_error(c, BROKER_ERROR_SESSION_BUSY,
                                         "another call of this session is running; a session runs one call at a time");
        if (r < 0)
                return client_send_error(c, BROKER_ERROR_SESSION_NOT_FOUND, "the session is ending");
        client_attach_session(c, se, CLIENT_SESSION_CALLING);
        c->timeout_s = timeout_s;
        log_struct(LOG_INFO, "MESSAGE=Call in session %s started", sandbox_session_unit(se),
                   "MCP_UNIT=%s", sandbox_session_unit(se),
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_TIMEOUT_S=%" PRIu64, timeout_s,
                   "MCP_PACKAGES=%zu", packages_count(packages));
        (void) packet_send(c->fd, started, NULL, 0);
        return 0;
}

static int client_send_closed(Client *c, unsigned count) {
        _cleanup_json_ json_object *j = NULL;

        assert(c);

        if (broker_event_closed(count, &j) < 0)
                return client_send_oom(c);
        return packet_send(c->fd, j, NULL, 0);
}

int client_op_session_close(Client *c, json_object *req, int fds[], size_t n_fds) {
        SandboxSession *se;

        assert(c);
        assert(req);

        se = client_find_session(c, req);
        if (!se)
                return client_send_error(c, BROKER_ERROR_SESSION_NOT_FOUND,
                                         "no such session: it ended (closed, expired, or lost), or it is not yours");
        sandbox_session_end(se, SANDBOX_SESSION_END_CLOSED);
        return client_send_closed(c, 1);
}

/* The MCP session the front end gave as scope ended: so do the sessions
 * made in it. */
int client_op_session_close_scope(Client *c, json_object *req, int fds[], size_t n_fds) {
        const char *caller, *scope;
        unsigned n = 0;

        assert(c);
        assert(req);

        if (parse_owner(req, &caller, &scope) < 0 || isempty(scope))
                return client_send_error(c, BROKER_ERROR_BAD_REQUEST, "closing a scope needs a caller and a scope");
        LIST_FOREACH(sessions, se, c->manager->sessions.list)
                if (!se->ending && sandbox_session_owned_by(se, caller, scope, client_frontend_pid(c))) {
                        sandbox_session_end(se, SANDBOX_SESSION_END_SCOPE);
                        n++;
                }
        return client_send_closed(c, n);
}
