/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker-proto.h"
#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "packet.h"
#include "tools-internal.h"
#include "tools-policy.h"
#include "util.h"

static void run_update_events(Run *r);
static void call_start(Call *c);

bool run_allows_server(Run *r, size_t server) {
        assert(r);

        return manager_serves(r->manager, server, r->caller);
}

static void run_flush(Run *r) {
        while (r->fd >= 0 && r->out_done < r->out.size) {
                ssize_t n = write(r->fd, r->out.data + r->out_done, r->out.size - r->out_done);
                if (n <= 0)
                        break;          /* EAGAIN: EPOLLOUT; an error: the handler sees HUP/ERR */
                r->out_done += (size_t) n;
        }
        if (r->out_done == r->out.size)
                r->out.size = r->out_done = 0;
        else if (r->out_done > r->out.size / 2) {
                memmove(r->out.data, r->out.data + r->out_done, r->out.size - r->out_done);
                r->out.size -= r->out_done;
                r->out_done = 0;
        }
        run_update_events(r);
}

/* Queues one frame to the run. -EMSGSIZE over max; -ENOBUFS when the run
 * has not read what it was sent (its limit: what its calls may be owed). */
static int run_send(Run *r, json_object *j, size_t max) {
        int k;

        if (r->fd < 0)
                return 0;
        k = tools_frame_append(&r->out, j, max);
        if (k < 0)
                return k;
        run_flush(r);
        return 0;
}

static void run_send_error(Run *r, uint64_t id, ToolsErrorKind kind, const char *message) {
        _cleanup_json_ json_object *j = tools_error_new(id, kind, message);

        if (!j || run_send(r, j, TOOLS_RUN_FRAME_MAX) < 0)
                log_warning("Run %s: cannot queue an error answer; the run is closed.", r->id);
}

static void call_free(Call *c) {
        Run *r = c->run;

        assert(!c->upstream);
        if (c->confirming)
                r->n_confirming--;
        if (c->queued) {
                LIST_REMOVE(run_calls, r->queued, c);
                r->n_queued--;
        } else
                LIST_REMOVE(run_calls, r->calls, c);
        sd_event_source_disable_unref(c->timer);
        json_object_put(c->arguments);
        free(c->tool);
        free(c);
}

static void start_queued(Run *r, size_t server) {
        LIST_FOREACH(run_calls, q, r->queued)
                if (q->server == server) {
                        LIST_REMOVE(run_calls, r->queued, q);
                        r->n_queued--;
                        q->queued = false;
                        LIST_APPEND(run_calls, r->calls, q);
                        call_start(q);
                        return;
                }
}

/* One journal entry per call: metadata only, never arguments or results.
 * The names may be the run's own (an unknown server): printable only. */
static void journal_call(Run *r, const char *server, const char *tool, uint64_t ms, uint64_t bytes,
                         const char *outcome, const char *confirmed) {
        char srv[TOOLS_NAME_MAX + 1], t[TOOLS_NAME_MAX + 1];

        str_printable(server, srv, sizeof srv);
        str_printable(tool, t, sizeof t);
        log_struct(LOG_INFO,
                   "MESSAGE=tools call %s.%s: %s", srv, t, outcome,
                   "MCP_RUN=%s", r->id,
                   "MCP_CALLER=%s", r->caller,
                   "TOOLS_SERVER=%s", srv,
                   "TOOLS_TOOL=%s", t,
                   "TOOLS_DURATION_MS=%" PRIu64, ms,
                   "TOOLS_BYTES=%" PRIu64, bytes,
                   "TOOLS_OUTCOME=%s", outcome,
                   /* How a destructive tool was let through, or that it was not. */
                   confirmed ? "TOOLS_CONFIRMED=%s" : NULL, confirmed);
}

/* The call's entry in the journal, its time counted, its slot given to the
 * next waiting call of that server. */
static void call_done(Call *c, const char *outcome, uint64_t bytes) {
        Run *r = c->run;
        size_t server = c->server;
        bool slot = c->holds_slot;
        uint64_t ms = (now_usec() - c->start_usec) / USEC_PER_MSEC;

        if (c->kind == CALL_TOOL) {
                r->counts[server].ms += ms;
                journal_call(r, r->manager->servers[server].name, c->tool, ms, bytes, outcome, c->confirmed);
        }
        if (slot)
                r->counts[server].running--;
        call_free(c);
        if (slot && r->fd >= 0)
                start_queued(r, server);
}

static void req_slot_done(ServersReq *q) {
        Run *r = q->run;
        _cleanup_json_ json_object *j = NULL;
        int k;

        assert(q->n_pending > 0);
        if (--q->n_pending > 0)
                return;
        if (json_build(&j, JB_INT("id", (int64_t) q->id), JB_OBJ("servers", json_object_get(q->servers)), JB_END) < 0)
                k = -ENOMEM;
        else
                k = run_send(r, j, TOOLS_SERVERS_ANSWER_MAX);
        if (k < 0)
                run_send_error(r, q->id, k == -EMSGSIZE ? TOOLS_ERROR_LIMIT : TOOLS_ERROR_UPSTREAM,
                               k == -EMSGSIZE ? "the tool lists are too large together" : "cannot answer");
        LIST_REMOVE(reqs, r->reqs, q);
        r->n_reqs--;
        json_object_put(q->servers);
        free(q);
}

void call_listed(Call *c, json_object *tools) {
        const ToolsServerConfig *s = &c->run->manager->servers[c->server];
        json_object *entry = json_object_array_get_idx(c->req->servers, c->slot);
        json_object *allowed = json_object_new_array();
        ServersReq *q = c->req;

        assert(c->kind == CALL_LIST);
        assert(!c->upstream);

        for (size_t i = 0; allowed && i < json_object_array_length(tools); i++) {
                json_object *t = json_object_array_get_idx(tools, i);
                if (tools_policy_allows_tool(s, json_get_string(t, "name")) &&
                    json_append(allowed, json_object_get(t)) < 0)
                        allowed = NULL;         /* json_append released it */
        }
        if (!allowed || json_add(entry, "tools", allowed) < 0)
                (void) json_add_string(entry, "error", "out of memory");
        call_done(c, "listed", 0);
        req_slot_done(q);
}

static bool is_tool_error(json_object *result) {
        return json_get_bool(result, "isError");
}

void call_answered(Call *c, json_object *result, size_t bytes) {
        Run *r = c->run;
        RunCounts *rc = &r->counts[c->server];
        const ToolsServerConfig *s = &r->manager->servers[c->server];
        _cleanup_json_ json_object *j = NULL;
        int k;

        assert(c->kind == CALL_TOOL);
        assert(!c->upstream);

        if (rc->bytes + bytes > s->max_bytes)
                return call_failed(c, TOOLS_ERROR_LIMIT, "the results of this run's calls passed MAX_BYTES");
        if (json_build(&j, JB_INT("id", (int64_t) c->id), JB_OBJ("result", json_object_get(result)), JB_END) < 0)
                return call_failed(c, TOOLS_ERROR_UPSTREAM, "out of memory");
        k = run_send(r, j, s->max_bytes);
        if (k == -EMSGSIZE)
                return call_failed(c, TOOLS_ERROR_LIMIT, "the result is larger than MAX_BYTES");
        if (k < 0)
                return call_failed(c, TOOLS_ERROR_LIMIT, "the run does not read its answers");
        rc->bytes += bytes;
        if (is_tool_error(result))
                rc->errors++;
        call_done(c, is_tool_error(result) ? "tool-error" : "ok", bytes);
}

void call_failed(Call *c, ToolsErrorKind kind, const char *message) {
        Run *r = c->run;

        assert(!c->upstream);

        if (c->confirming)
                c->confirmed = "refused";       /* timed out, cancelled or the run ended while asked */

        if (c->kind == CALL_LIST) {
                ServersReq *q = c->req;
                json_object *entry = json_object_array_get_idx(q->servers, c->slot);
                (void) json_add(entry, "tools", json_object_new_array());
                (void) json_add_string(entry, "error", message);
                call_done(c, "list-failed", 0);
                req_slot_done(q);
                return;
        }
        if (kind == TOOLS_ERROR_REFUSED || kind == TOOLS_ERROR_LIMIT)
                r->counts[c->server].refused++;
        else
                r->counts[c->server].errors++;
        run_send_error(r, c->id, kind, message);
        call_done(c, tools_error_kind_to_string(kind), 0);
}

static void call_submit(Call *c) {
        Run *r = c->run;
        Upstream *u = NULL;
        int k;

        k = manager_get_upstream(r->manager, c->server, r->caller, &u);
        if (k < 0)
                return call_failed(c, TOOLS_ERROR_UPSTREAM,
                                   k == -EMFILE ? "too many upstream connections in the gateway"
                                                : "cannot connect to the upstream server");
        upstream_submit(u, c);
}

static void call_start(Call *c) {
        Run *r = c->run;

        if (c->kind == CALL_TOOL) {
                c->holds_slot = true;
                r->counts[c->server].running++;
        }
        call_submit(c);
}

/* Refused for want of a confirmation: why (the policy's text) and what
 * became of the question. */
static void call_unconfirmed(Call *c, const char *why, const char *reason) {
        char text[512];

        (void) snprintf(text, sizeof text, "%s, and the user did not confirm it: %s", why, reason);
        c->confirmed = "refused";
        call_failed(c, TOOLS_ERROR_REFUSED, text);
}

void call_ask(Call *c, const char *why) {
        _cleanup_json_ json_object *j = NULL;
        BrokerConfirmAsk a = {};
        Run *r = c->run;
        int k;

        assert(c->kind == CALL_TOOL);
        assert(!c->upstream);
        assert(!c->confirming);

        if (r->fd < 0 || !r->control || r->control->fd < 0)
                return call_unconfirmed(c, why, "the run is ending");
        if (r->n_confirming >= BROKER_CONFIRM_PENDING_MAX)
                return call_unconfirmed(c, why, "too many of this run's calls wait for a confirmation");
        if (r->n_asked >= TOOLS_RUN_ASKS_MAX)
                return call_unconfirmed(c, why, "this run asked for too many confirmations");
        if (strlen(r->manager->servers[c->server].name) >= sizeof a.server || !tools_name_is_valid(c->tool))
                return call_unconfirmed(c, why, "the names cannot be shown to the user");
        a.id = ++r->last_confirm_id;
        strcpy(a.server, r->manager->servers[c->server].name);
        strcpy(a.tool, c->tool);
        k = broker_confirm_ask_build("op", "confirm", &a, &j);
        if (k >= 0)
                k = packet_send(r->control->fd, j, NULL, 0);
        if (k < 0)
                return call_unconfirmed(c, why, "the broker cannot be asked");
        c->confirm_id = a.id;
        c->confirming = true;
        r->n_confirming++;
        r->n_asked++;
        log_debug("Run %s: asked to confirm %s.%s (%" PRIu64 ").", r->id, a.server, a.tool, a.id);
}

void run_confirmed(Run *r, json_object *msg) {
        BrokerConfirmAnswer a;

        assert(r);

        if (broker_confirm_answer_parse(msg, &a) < 0) {
                log_warning("Run %s: a malformed confirmation from the broker; ignored.", r->id);
                return;
        }
        /* Only a question of ours that is still open: an answer to any
         * other id (late, repeated, made up) lets nothing through. */
        LIST_FOREACH(run_calls, c, r->calls)
                if (c->confirming && c->confirm_id == a.id) {
                        c->confirming = false;
                        r->n_confirming--;
                        if (!a.accept)
                                return call_unconfirmed(
                                        c, "this tool is destructive and the operator has not confirmed it (CONFIRMED)",
                                        a.reason[0] ? a.reason : "no reason given");
                        c->user_confirmed = true;
                        return call_submit(c);
                }
        log_debug("Run %s: a confirmation for no open question (%" PRIu64 "); ignored.", r->id, a.id);
}

static int on_call_timeout(sd_event_source *es, uint64_t usec, void *userdata) {
        Call *c = userdata;

        if (c->upstream)
                upstream_cancel(c->upstream, c, "timeout");
        call_failed(c, TOOLS_ERROR_TIMEOUT, c->kind == CALL_LIST ? "the upstream did not list its tools in time"
                                                                 : "the call passed CALL_TIMEOUT_S");
        return 0;
}

static int call_new(Run *r, CallKind kind, size_t server, uint64_t id, Call **ret) {
        const ToolsServerConfig *s = &r->manager->servers[server];
        Call *c;
        int k;

        c = new0(Call, 1);
        if (!c)
                return -ENOMEM;
        c->run = r;
        c->kind = kind;
        c->server = server;
        c->id = id;
        c->start_usec = now_usec();
        LIST_APPEND(run_calls, r->calls, c);
        k = sd_event_add_time_relative(r->manager->event, &c->timer, CLOCK_MONOTONIC,
                                       s->call_timeout_s * USEC_PER_SEC, 0, on_call_timeout, c);
        if (k < 0) {
                call_free(c);
                return k;
        }
        *ret = c;
        return 0;
}

static bool id_in_flight(Run *r, uint64_t id) {
        LIST_FOREACH(run_calls, c, r->calls)
                if (c->kind == CALL_TOOL && c->id == id)
                        return true;
        LIST_FOREACH(run_calls, c, r->queued)
                if (c->id == id)
                        return true;
        LIST_FOREACH(reqs, q, r->reqs)
                if (q->id == id)
                        return true;
        return false;
}

static int find_server(Run *r, const char *name, size_t *ret) {
        for (size_t i = 0; i < r->manager->n_servers; i++)
                if (streq(r->manager->servers[i].name, name) && run_allows_server(r, i)) {
                        *ret = i;
                        return 0;
                }
        return -ENOENT;
}

/* A call answered before it is made: refused or over a cap. */
static void refuse_call(Run *r, const ToolsRequest *q, RunCounts *rc, ToolsErrorKind kind, const char *why) {
        if (rc)
                rc->refused++;
        journal_call(r, q->server, q->tool, 0, 0, tools_error_kind_to_string(kind), NULL);
        run_send_error(r, q->id, kind, why);
}

static void handle_call(Run *r, const ToolsRequest *q) {
        const ToolsServerConfig *s;
        RunCounts *rc;
        Call *c;
        size_t server;

        if (find_server(r, q->server, &server) < 0)
                return refuse_call(r, q, NULL, TOOLS_ERROR_REFUSED, "no such server for this caller");
        s = &r->manager->servers[server];
        rc = &r->counts[server];
        rc->calls++;
        if (rc->calls > s->max_calls)
                return refuse_call(r, q, rc, TOOLS_ERROR_LIMIT, "this run made MAX_CALLS calls to this server");
        if (rc->bytes >= s->max_bytes)
                return refuse_call(r, q, rc, TOOLS_ERROR_LIMIT, "the results of this run's calls passed MAX_BYTES");
        if (rc->running >= s->max_concurrent && r->n_queued >= TOOLS_RUN_QUEUE_MAX)
                return refuse_call(r, q, rc, TOOLS_ERROR_LIMIT, "too many calls of this run wait for a slot");
        if (call_new(r, CALL_TOOL, server, q->id, &c) < 0) {
                rc->errors++;
                return run_send_error(r, q->id, TOOLS_ERROR_UPSTREAM, "out of memory");
        }
        c->tool = strdup(q->tool);
        if (!c->tool) {
                call_free(c);
                rc->errors++;
                return run_send_error(r, q->id, TOOLS_ERROR_UPSTREAM, "out of memory");
        }
        c->arguments = q->arguments ? json_object_get(q->arguments) : json_object_new_object();
        if (rc->running < s->max_concurrent)
                return call_start(c);
        /* MAX_CONCURRENT reached: it waits for a slot, its timer running. */
        LIST_REMOVE(run_calls, r->calls, c);
        LIST_APPEND(run_calls, r->queued, c);
        c->queued = true;
        r->n_queued++;
}

static int servers_req_new(Run *r, uint64_t id, ServersReq **ret) {
        ServersReq *q = new0(ServersReq, 1);

        *ret = q;
        if (!q)
                return -ENOMEM;
        q->run = r;
        q->id = id;
        q->n_pending = 1;       /* held while the calls are made: answered once, at the end */
        q->servers = json_object_new_array();
        LIST_APPEND(reqs, r->reqs, q);
        r->n_reqs++;
        return q->servers ? 0 : -ENOMEM;
}

static void handle_servers(Run *r, uint64_t id) {
        Manager *m = r->manager;
        ServersReq *q;

        if (r->n_reqs >= TOOLS_RUN_LISTS_MAX)
                return run_send_error(r, id, TOOLS_ERROR_LIMIT, "too many \"servers\" requests in flight");
        if (servers_req_new(r, id, &q) < 0) {
                if (!q)
                        return run_send_error(r, id, TOOLS_ERROR_UPSTREAM, "out of memory");
                return req_slot_done(q);        /* answers the error */
        }
        for (size_t i = 0; i < m->n_servers; i++) {
                json_object *entry = NULL;
                Call *c;

                if (!run_allows_server(r, i))
                        continue;
                if (json_build(&entry, JB_STR("name", m->servers[i].name),
                               JB_STR("description", m->servers[i].description), JB_END) < 0 ||
                    json_append(q->servers, entry) < 0 || call_new(r, CALL_LIST, i, id, &c) < 0)
                        break;
                c->req = q;
                c->slot = json_object_array_length(q->servers) - 1;
                q->n_pending++;
                call_start(c);
        }
        req_slot_done(q);
}

static void handle_cancel(Run *r, uint64_t target) {
        LIST_FOREACH(run_calls, c, r->calls)
                if (c->kind == CALL_TOOL && c->id == target) {
                        if (c->upstream)
                                upstream_cancel(c->upstream, c, "cancelled by the run");
                        return call_failed(c, TOOLS_ERROR_CANCELLED, "cancelled");
                }
        LIST_FOREACH(run_calls, c, r->queued)
                if (c->id == target)
                        return call_failed(c, TOOLS_ERROR_CANCELLED, "cancelled");
}

/* 0: handled; < 0: the run broke the protocol and is closed. */
static int handle_frame(Run *r, json_object *o) {
        const char *why = NULL;
        ToolsRequest q;
        uint64_t id = 0;
        int k;

        k = tools_request_parse(o, &q, &id, &why);
        if (k == -EBADMSG) {
                log_warning("Run %s: %s; its tools connection is closed.", r->id, why);
                return -EPROTO;
        }
        if (k < 0)
                return run_send_error(r, id, TOOLS_ERROR_BAD_REQUEST, why), 0;
        if (q.op != TOOLS_OP_CANCEL && id_in_flight(r, id))
                return run_send_error(r, id, TOOLS_ERROR_BAD_REQUEST, "this id is in flight already"), 0;
        switch (q.op) {
        case TOOLS_OP_SERVERS:
                handle_servers(r, id);
                break;
        case TOOLS_OP_CALL:
                handle_call(r, &q);
                break;
        case TOOLS_OP_CANCEL:
                handle_cancel(r, q.target);
                break;
        }
        return 0;
}

static void run_update_events(Run *r) {
        uint32_t events = 0;

        if (!r->io)
                return;
        /* A run that does not read its answers sends no more requests. */
        if (r->out.size - r->out_done < TOOLS_RUN_OUT_HIGH)
                events |= EPOLLIN;
        if (r->out_done < r->out.size)
                events |= EPOLLOUT;
        (void) sd_event_source_set_io_events(r->io, events);
}

/* Takes every frame buffered (at most one read's worth more than a frame:
 * bounded work). 0: go on; < 0: close the run's connection. */
static int run_parse(Run *r) {
        size_t off = 0;
        int k = 0;

        while (r->fd >= 0) {
                _cleanup_json_ json_object *o = NULL;
                size_t used = 0;

                k = tools_frame_parse(r->in.data + off, r->in.size - off, TOOLS_RUN_FRAME_MAX, &o, &used);
                if (k <= 0)
                        break;
                off += used;
                k = handle_frame(r, o);
                if (k < 0)
                        break;
        }
        if (r->fd < 0)
                return 0;
        memmove(r->in.data, r->in.data + off, r->in.size - off);
        r->in.size -= off;
        if (k == -EMSGSIZE)
                log_warning("Run %s: a frame over %u bytes; its tools connection is closed.", r->id,
                            TOOLS_RUN_FRAME_MAX);
        else if (k == -EBADMSG)
                log_warning("Run %s: a frame that is not one JSON object; its tools connection is closed.", r->id);
        return k < 0 ? k : 0;
}

static int on_run_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Run *r = userdata;

        if (revents & EPOLLOUT)
                run_flush(r);
        if (r->fd >= 0 && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                ssize_t n;

                if (buffer_reserve(&r->in, 64 * 1024) < 0 && buffer_reserve(&r->in, 1) < 0) {
                        run_stop(r, "the run's connection broke");
                        return 0;
                }
                n = read(r->fd, r->in.data + r->in.size, MIN(r->in.allocated - r->in.size, (size_t) 64 * 1024));
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n <= 0) {
                        run_stop(r, "the run closed its tools connection");
                        return 0;
                }
                r->in.size += (size_t) n;
                if (run_parse(r) < 0)
                        run_stop(r, "the run broke the tools protocol");
        }
        return 0;
}

void run_stop(Run *r, const char *reason) {
        assert(r);

        if (r->fd < 0)
                return;
        /* Closed first: nothing below answers the run any more. */
        r->io = sd_event_source_disable_unref(r->io);
        r->fd = safe_close(r->fd);
        while (r->queued)
                call_failed(r->queued, TOOLS_ERROR_CANCELLED, reason);
        while (r->calls) {
                Call *c = r->calls;
                if (c->upstream)
                        upstream_cancel(c->upstream, c, reason);
                call_failed(c, TOOLS_ERROR_CANCELLED, reason);
        }
        buffer_free(&r->in);
        buffer_free(&r->out);
        r->out_done = 0;
}

Run *run_free(Run *r) {
        if (!r)
                return NULL;
        run_stop(r, "the run ended");
        assert(!r->reqs);
        if (r->control)
                r->control->run = NULL;
        free(r->counts);
        free(r);
        return NULL;
}

/* What the run may be owed at once: every server's concurrent results at
 * their MAX_BYTES, the "servers" answers, and the small frames. */
static size_t run_out_limit(const Manager *m) {
        uint64_t sum = TOOLS_RUN_OUT_HIGH + (uint64_t) TOOLS_RUN_LISTS_MAX * TOOLS_SERVERS_ANSWER_MAX;

        for (size_t i = 0; i < m->n_servers; i++)
                sum += m->servers[i].max_concurrent * (m->servers[i].max_bytes + TOOLS_FRAME_HEADER);
        return (size_t) MIN(sum, (uint64_t) SIZE_MAX / 2);
}

int run_new(Control *c, const char *id, const char *caller, int fd, Run **ret) {
        _cleanup_close_ int rfd = fd;
        Manager *m = c->manager;
        Run *r;
        int k;

        assert(strlen(id) <= TOOLS_RUN_ID_MAX);
        assert(strlen(caller) <= TOOLS_CALLER_MAX);

        r = new0(Run, 1);
        if (!r)
                return -ENOMEM;
        r->manager = m;
        r->control = c;
        r->fd = -EBADF;
        strcpy(r->id, id);
        strcpy(r->caller, caller);
        r->in = BUFFER_INIT(TOOLS_RUN_FRAME_MAX + TOOLS_FRAME_HEADER + 64 * 1024);
        r->out = BUFFER_INIT(run_out_limit(m));
        r->counts = new0(RunCounts, MAX(m->n_servers, (size_t) 1));
        if (!r->counts) {
                free(r);
                return -ENOMEM;
        }
        k = sd_event_add_io(m->event, &r->io, rfd, EPOLLIN, on_run_io, r);
        if (k < 0) {
                free(r->counts);
                free(r);
                return k;
        }
        r->fd = TAKE_FD(rfd);
        *ret = r;
        return 0;
}

json_object *run_counts_json(Run *r) {
        _cleanup_json_ json_object *servers = json_object_new_object();
        json_object *j = NULL;

        if (!servers)
                return NULL;
        for (size_t i = 0; i < r->manager->n_servers; i++) {
                const RunCounts *rc = &r->counts[i];
                json_object *o = NULL;

                if (rc->calls == 0)
                        continue;
                if (json_build(&o, JB_INT("calls", (int64_t) rc->calls), JB_INT("errors", (int64_t) rc->errors),
                               JB_INT("refused", (int64_t) rc->refused), JB_INT("ms", (int64_t) rc->ms),
                               JB_END) < 0 ||
                    json_add(servers, r->manager->servers[i].name, o) < 0)
                        return NULL;
        }
        if (json_build(&j, JB_OBJ("servers", TAKE_PTR(servers)), JB_END) < 0)
                return NULL;
        return j;
}
