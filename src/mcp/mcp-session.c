/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mcp-session.h"

#include <assert.h>
#include <errno.h>
#include <json-c/printbuf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "build-config.h"
#include "json-util.h"
#include "jsonrpc.h"
#include "log.h"
#include "macro.h"
#include "mcp-confirm.h"
#include "mcp-internal.h"
#include "util.h"

/* An MCP session: its peer, and the way out for what the core says to it
 * (the sink: its transport, or a task for a task's own session). Calls,
 * tasks and the methods hand their messages to it; what hangs on a session
 * above this floor ends through McpServer.session_gone. */

#define SERVER_NAME "mcp-exec"
#define SERVER_TITLE "mcp-exec: Python in a sandbox"

/* A shared part in a message: the json value's userdata. */
typedef struct SharedPart {
        const char *data;
        size_t len;
        void *owner;
        void (*ref)(void *owner);
        void (*unref)(void *owner);
} SharedPart;

/* Set while mcp_shared_serialize() runs: where the part is described
 * instead of written. One event loop, no threads. */
static McpShared *capture;

static int shared_part_serialize(json_object *jso, struct printbuf *pb, int level, int flags) {
        SharedPart *p = json_object_get_userdata(jso);

        assert(p);

        if (capture && !capture->data) {
                *capture = (McpShared) {
                        .data = p->data,
                        .len = p->len,
                        .at = (size_t) pb->bpos,
                        .owner = p->owner,
                        .ref = p->ref,
                        .unref = p->unref,
                };
                return 0;
        }
        return printbuf_memappend(pb, p->data, (int) p->len) < 0 ? -1 : 0;
}

static void shared_part_free(json_object *jso, void *userdata) {
        SharedPart *p = userdata;

        p->unref(p->owner);
        free(p);
}

json_object *mcp_shared_json(const char *data, size_t len, void *owner, void (*ref)(void *owner),
                             void (*unref)(void *owner)) {
        SharedPart *p;
        json_object *j;

        assert(data);
        assert(len < INT_MAX);
        assert(ref);
        assert(unref);

        p = new0(SharedPart, 1);
        if (!p)
                return NULL;
        j = json_object_new_object();
        if (!j)
                return mfree(p);
        *p = (SharedPart) { .data = data, .len = len, .owner = owner, .ref = ref, .unref = unref };
        ref(owner);
        json_object_set_serializer(j, shared_part_serialize, p, shared_part_free);
        return j;
}

const char *mcp_shared_serialize(json_object *msg, size_t *ret_len, McpShared *ret_shared) {
        const char *text;

        assert(msg);
        assert(ret_shared);
        assert(!capture);

        *ret_shared = (McpShared) {};
        capture = ret_shared;
        text = json_serialize(msg, ret_len);
        capture = NULL;
        return text;
}

int mcp_session_new_sink(McpServer *server, const McpSink *sink, void *userdata, const McpPeer *peer,
                         McpSession **ret) {
        _cleanup_(mcp_session_freep) McpSession *s = NULL;
        int r;

        assert(server);
        assert(sink);
        assert(ret);

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->sink = sink;
        s->userdata = userdata;
        s->log_level = LOG_INFO;
        s->peer_uid = peer ? peer->uid : (uid_t) -1;
        s->peer_pid = peer ? peer->pid : 0;
        s->peer_transport = strdup(peer && peer->transport ? peer->transport : "unknown");
        if (!s->peer_transport)
                return -ENOMEM;
        if (peer && peer->caller)
                r = (s->caller = strdup(peer->caller)) ? 0 : -1;
        else if (s->peer_uid != (uid_t) -1)
                r = asprintf(&s->caller, "uid:%u", (unsigned) s->peer_uid);
        else
                r = asprintf(&s->caller, "peer:%s", s->peer_transport);
        if (r < 0) {
                s->caller = NULL;
                return -ENOMEM;
        }
        r = random_hex128(s->id);
        if (r < 0)
                return r;
        if (peer && peer->scoped) {
                r = random_hex128(s->scope);
                if (r < 0)
                        return r;
        }
        s->server = server;
        LIST_PREPEND(sessions, server->sessions, s);

        log_debug("Session %s opened (%s, uid %i).", s->id, s->peer_transport, (int) s->peer_uid);
        *ret = TAKE_PTR(s);
        return 0;
}

/* Also for a session that never got going: no server, no calls, no id. */
McpSession *mcp_session_free_now(McpSession *s) {
        assert(s);

        s->freeing = true;
        s->defer_free = sd_event_source_disable_unref(s->defer_free);
        if (s->server) {
                /* What hangs on it above this floor: its calls, what
                 * waits on tasks (mcp-server.c). */
                if (s->server->session_gone)
                        s->server->session_gone(s);
                LIST_REMOVE(sessions, s->server->sessions, s);
                /* Its sandbox sessions end with it (DELETE, expiry, the end of
                 * its SSE stream). */
                if (s->caller && s->scope[0]) {
                        SandboxOwner owner = mcp_session_owner(s);
                        sandbox_session_table_close_scope(s->server->sandbox_sessions, &owner);
                }
        }
        mcp_confirm_drop_all(s);
        if (s->id[0])
                log_debug("Session %s closed.", s->id);
        free(s->peer_transport);
        free(s->caller);
        return mfree(s);
}

static int on_defer_free(sd_event_source *src, void *userdata) {
        mcp_session_free_now(userdata);
        return 0;
}

McpSession *mcp_session_free(McpSession *s) {
        if (!s)
                return NULL;
        if (s->in_callout > 0 && s->server) {
                /* Freed by the transport from inside its own send callback:
                 * our callers still hold s and its calls. Go quiet now and
                 * finish from the event loop. */
                s->dead = true;
                if (s->defer_free)
                        return NULL;
                if (sd_event_add_defer(s->server->event, &s->defer_free, on_defer_free, s) < 0) {
                        log_error("Cannot schedule the end of session %s; it stays until the server goes.", s->id);
                        return NULL;
                }
                (void) sd_event_source_set_priority(s->defer_free, SD_EVENT_PRIORITY_IMPORTANT);
                return NULL;
        }
        return mcp_session_free_now(s);
}

unsigned mcp_session_in_flight(const McpSession *s) {
        assert(s);

        return s->n_calls;
}

void mcp_session_set_idle_callback(McpSession *s, mcp_session_idle_t callback) {
        assert(s);

        s->idle_callback = callback;
}

void mcp_session_notify_idle(McpSession *s) {
        assert(s);

        if (!s->idle_callback || s->freeing || s->defer_free)
                return;
        s->in_callout++;
        s->idle_callback(s, s->userdata);
        s->in_callout--;
}

const char *mcp_session_caller(const McpSession *s) {
        assert(s);
        return s->caller;
}

const char *mcp_session_protocol_version(const McpSession *s) {
        assert(s);

        if (s->revision)
                return s->revision->version;
        /* Stateless: no negotiation, but what the peer speaks is known. */
        return s->stateless_seen ? mcp_revision_stateless()->version : NULL;
}

/* Hands the message (serialized here; NULL for none) with its facts to the
 * transport. */
static int session_send(McpSession *s, McpMessage *m, json_object *msg) {
        McpShared shared = {};
        int r;

        assert(s);
        assert(m);

        if (s->dead || s->freeing || !s->transport.send)
                return m->kind == MCP_MESSAGE_REQUEST ? -ENOTCONN : 0;
        if (msg) {
                m->json = s->transport.shared_parts ? mcp_shared_serialize(msg, &m->len, &shared) :
                                                      json_serialize(msg, &m->len);
                if (!m->json)
                        return log_oom();
                m->shared = shared.data ? &shared : NULL;
        }
        s->in_callout++;
        r = s->transport.send(s, m, s->userdata);
        s->in_callout--;
        if (m->kind == MCP_MESSAGE_REQUEST && r == -ENOTCONN)
                return r;               /* no route for it: the session goes on */
        if (r < 0 && !s->dead) {
                /* Nobody to talk to; runs end when the transport frees us. */
                log_debug("Session %s: the peer is gone.", s->id);
                s->dead = true;
        }
        return 0;
}

char *mcp_message_flatten(const McpMessage *m, size_t *ret_len) {
        size_t n = m->len + (m->shared ? m->shared->len : 0);
        char *t;

        assert(m->json);
        assert(ret_len);

        t = malloc(n + 1);
        if (!t)
                return NULL;
        if (m->shared) {
                assert(m->shared->at <= m->len);
                memcpy(t, m->json, m->shared->at);
                memcpy(t + m->shared->at, m->shared->data, m->shared->len);
                memcpy(t + m->shared->at + m->shared->len, m->json + m->shared->at, m->len - m->shared->at);
        } else
                memcpy(t, m->json, m->len);
        t[n] = 0;
        *ret_len = n;
        return t;
}

/* With charge (NULL: none), which the transport may take over. */
static int send_reply(McpSession *s, uint64_t origin, json_object *m, MemCharge *charge) {
        _cleanup_json_ json_object *msg = m;
        json_object *id;

        assert(s);

        if (!msg)
                return log_oom();
        /* A batch's array has neither. */
        id = json_get(msg, "id");
        return session_send(s,
                            &(McpMessage) {
                                    .kind = MCP_MESSAGE_RESPONSE,
                                    .origin = origin,
                                    .id = jsonrpc_id_is_valid(id) ? id : NULL,
                                    .error_code = json_object_get_int(json_get(json_get(msg, "error"), "code")),
                                    .charge = charge,
                            },
                            msg);
}

int mcp_session_send_reply(McpSession *s, uint64_t origin, json_object *m) {
        return send_reply(s, origin, m, NULL);
}

int mcp_session_send_notification_charged(McpSession *s, uint64_t origin, json_object *id, json_object *m,
                                          MemCharge *charge) {
        _cleanup_json_ json_object *msg = m;

        assert(s);

        if (!msg)
                return log_oom();
        return s->sink->notification(s, origin, id, TAKE_PTR(msg), charge);
}

int mcp_session_send_notification(McpSession *s, uint64_t origin, json_object *id, json_object *m) {
        return mcp_session_send_notification_charged(s, origin, id, m, NULL);
}

int mcp_session_send_unanswered(McpSession *s, uint64_t origin, json_object *id) {
        assert(s);

        return s->sink->unanswered(s, origin, id);
}

void mcp_batch_release(McpBatch *b) {
        assert(b);

        if (--b->pending > 0)
                return;
        if (json_object_array_length(b->replies) > 0)
                (void) send_reply(b->session, b->origin, json_object_get(b->replies), &b->charge);
        json_object_put(b->replies);
        mem_charge_done(&b->charge);
        free(b);
}

void mcp_batch_add(McpBatch *b, json_object *reply) {
        assert(b);

        if (json_append(b->replies, reply) < 0)
                (void) log_oom();
}

int mcp_reply(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply) {
        assert(s);

        if (!b)
                return reply ? mcp_session_send_reply(s, origin, reply) : 0;
        if (reply)
                mcp_batch_add(b, reply);
        mcp_batch_release(b);
        return 0;
}

int mcp_reply_charged(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply, MemCharge *charge) {
        assert(s);
        assert(charge);

        return s->sink->reply(s, b, origin, reply, charge);
}

/* The transport's way (the default sink) for a call's reply. */
static int transport_reply(McpSession *s, McpBatch *b, uint64_t origin, json_object *reply, MemCharge *charge) {
        int r;

        assert(s);
        assert(charge);

        if (b) {
                if (reply)
                        /* The reply lives in the batch's array until that is sent. */
                        mem_charge_move(&b->charge, charge);
                r = mcp_reply(s, b, origin, reply);
        } else
                r = reply ? send_reply(s, origin, reply, charge) : 0;
        mem_charge_done(charge);
        return r;
}

json_object *mcp_server_info(const McpRevision *rev) {
        _cleanup_json_ json_object *i = json_object_new_object();

        if (!i || json_add_string(i, "name", SERVER_NAME) < 0 || json_add_string(i, "version", PACKAGE_VERSION) < 0 ||
            (rev->titles && json_add_string(i, "title", SERVER_TITLE) < 0))
                return NULL;
        return TAKE_PTR(i);
}

json_object *mcp_result_reply(const McpRequest *req, json_object *result) {
        _cleanup_json_ json_object *r = result, *meta = NULL;

        assert(req);

        if (!r)
                return NULL;
        if (req->rev->stateless) {
                meta = json_object_new_object();
                if (!meta || json_add(meta, MCP_META_SERVER_INFO, mcp_server_info(req->rev)) < 0 ||
                    json_add(r, "_meta", TAKE_PTR(meta)) < 0 || json_add_string(r, "resultType", "complete") < 0)
                        return NULL;
        }
        return jsonrpc_result_new(req->id, TAKE_PTR(r));
}

static int transport_notification(McpSession *s, uint64_t origin, json_object *id, json_object *m,
                                  MemCharge *charge) {
        _cleanup_json_ json_object *msg = m;

        assert(s);
        assert(msg);

        return session_send(
                s, &(McpMessage) { .kind = MCP_MESSAGE_NOTIFICATION, .origin = origin, .id = id, .charge = charge },
                msg);
}

int mcp_session_send_request(McpSession *s, uint64_t origin, json_object *id, json_object *m) {
        _cleanup_json_ json_object *msg = m;

        assert(s);

        if (!msg)
                return -ENOMEM;
        return session_send(s, &(McpMessage) { .kind = MCP_MESSAGE_REQUEST, .origin = origin, .id = id }, msg);
}

static int transport_unanswered(McpSession *s, uint64_t origin, json_object *id) {
        assert(s);

        return session_send(s, &(McpMessage) { .kind = MCP_MESSAGE_UNANSWERED, .origin = origin, .id = id }, NULL);
}

static const McpSink transport_sink = {
        .reply = transport_reply,
        .notification = transport_notification,
        .unanswered = transport_unanswered,
};

int mcp_session_new(McpServer *server, const McpTransport *transport, void *userdata, const McpPeer *peer,
                    McpSession **ret) {
        McpSession *s;
        int r;

        if (!server || !transport || !transport->send || !ret)
                return -EINVAL;
        r = mcp_session_new_sink(server, &transport_sink, userdata, peer, &s);
        if (r < 0)
                return r;
        s->transport = *transport;
        *ret = s;
        return 0;
}

void mcp_session_set_sink(McpSession *s, const McpSink *sink) {
        assert(s);

        s->sink = sink ?: &transport_sink;
}
