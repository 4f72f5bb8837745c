/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One MCP client connection to an upstream server's socket: the stdio
 * transport (one JSON-RPC message a line) over a unix stream socket that
 * systemd hands to a fresh instance of the server (Accept=yes). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "build-config.h"
#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "revision.h"
#include "socket-util.h"
#include "tools-internal.h"
#include "tools-policy.h"
#include "util.h"

/* JSON-RPC: the method is not one a client serves. */
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define UPSTREAM_JSON_DEPTH 64U
#define UPSTREAM_MESSAGE_MAX 200U

static void upstream_update_timer(Upstream *u);
static void upstream_flush(Upstream *u);

static const ToolsServerConfig *config_of(Upstream *u) {
        return &u->manager->servers[u->server];
}

static const char *label(Upstream *u) {
        return config_of(u)->name;
}

/* Queues one message. -ENOBUFS: the upstream does not read. */
static int upstream_send(Upstream *u, json_object *j) {
        const char *s;
        size_t n;
        int k;

        s = json_serialize(j, &n);
        if (!s)
                return -ENOMEM;
        k = buffer_reserve(&u->out, n + 1);
        if (k < 0)
                return k;
        (void) buffer_append(&u->out, s, n);
        (void) buffer_append(&u->out, "\n", 1);
        upstream_flush(u);
        return 0;
}

static int send_request(Upstream *u, uint64_t id, const char *method, json_object *params) {
        _cleanup_json_ json_object *j = NULL;

        if (json_build(&j, JB_STR("jsonrpc", "2.0"), JB_INT("id", (int64_t) id), JB_STR("method", method),
                       JB_END) < 0 ||
            (params && json_add(j, "params", json_object_get(params)) < 0))
                return -ENOMEM;
        return upstream_send(u, j);
}

static int send_notification(Upstream *u, const char *method, json_object *params) {
        _cleanup_json_ json_object *j = NULL;

        if (json_build(&j, JB_STR("jsonrpc", "2.0"), JB_STR("method", method), JB_END) < 0 ||
            (params && json_add(j, "params", json_object_get(params)) < 0))
                return -ENOMEM;
        return upstream_send(u, j);
}

static int send_initialize(Upstream *u) {
        _cleanup_json_ json_object *params = NULL, *info = NULL;

        if (json_build(&info, JB_STR("name", "mcp-exec-toolsd"), JB_STR("version", PACKAGE_VERSION), JB_END) < 0 ||
            json_build(&params, JB_STR("protocolVersion", mcp_revision_latest_legacy()->version),
                       JB_OBJ("capabilities", json_object_new_object()), JB_OBJ("clientInfo", TAKE_PTR(info)),
                       JB_END) < 0)
                return -ENOMEM;
        u->init_id = u->next_rpc_id++;
        u->state = UPSTREAM_INITIALIZING;
        return send_request(u, u->init_id, "initialize", params);
}

static int send_list(Upstream *u, const char *cursor) {
        _cleanup_json_ json_object *params = NULL;

        if (cursor && json_build(&params, JB_STR("cursor", cursor), JB_END) < 0)
                return -ENOMEM;
        u->list_id = u->next_rpc_id++;
        u->state = UPSTREAM_LISTING;
        return send_request(u, u->list_id, "tools/list", params);
}

static int start_listing(Upstream *u) {
        json_object_put(u->listing);
        u->listing = json_object_new_array();
        u->pages = 0;
        u->listing_bytes = 0;
        u->relist = false;
        if (!u->listing)
                return -ENOMEM;
        u->state = UPSTREAM_LISTING;
        /* A fresh deadline for the list, not what the idle timer had left. */
        if (u->timer)
                (void) sd_event_source_set_enabled(u->timer, SD_EVENT_OFF);
        upstream_update_timer(u);
        return send_list(u, NULL);
}

/* A tool call of a ready upstream: checked against the list and the
 * policy (every entry of its name), then sent. */
static void dispatch(Upstream *u, Call *c) {
        _cleanup_json_ json_object *params = NULL;
        const char *why;
        int k;

        assert(!c->upstream);

        if (c->kind == CALL_LIST)
                return call_listed(c, u->tools);
        switch (tools_policy_verdict(config_of(u), u->tools, c->tool, &why)) {
        case TOOLS_VERDICT_REFUSED:
                return call_failed(c, TOOLS_ERROR_REFUSED, why);
        case TOOLS_VERDICT_ASK:
                /* Asked once: a list that changed while the user was asked
                 * still has the tool allowed, else it was refused above. */
                if (!c->user_confirmed)
                        return call_ask(c, why);
                c->confirmed = "user";
                break;
        case TOOLS_VERDICT_OPERATOR:
                c->confirmed = "operator";
                break;
        case TOOLS_VERDICT_ALLOWED:
                c->confirmed = NULL;
                break;
        }
        if (json_build(&params, JB_STR("name", c->tool), JB_OBJ("arguments", TAKE_PTR(c->arguments)), JB_END) < 0)
                return call_failed(c, TOOLS_ERROR_UPSTREAM, "out of memory");
        c->rpc_id = u->next_rpc_id++;
        k = send_request(u, c->rpc_id, "tools/call", params);
        if (k < 0)
                return call_failed(c, TOOLS_ERROR_UPSTREAM, k == -ENOBUFS ? "the upstream does not read its input"
                                                                          : "out of memory");
        c->upstream = u;
        LIST_APPEND(up_calls, u->sent, c);
        upstream_update_timer(u);
}

/* The list is there: what waited goes on, in order. */
static void run_waiting(Upstream *u) {
        while (u->waiting && u->state == UPSTREAM_READY) {
                Call *c = u->waiting;
                LIST_REMOVE(up_calls, u->waiting, c);
                c->upstream = NULL;
                dispatch(u, c);
        }
        upstream_update_timer(u);
}

void upstream_submit(Upstream *u, Call *c) {
        assert(u);
        assert(c);
        assert(!c->upstream);

        if (u->state == UPSTREAM_READY)
                return dispatch(u, c);
        c->upstream = u;
        LIST_APPEND(up_calls, u->waiting, c);
        upstream_update_timer(u);
}

void upstream_cancel(Upstream *u, Call *c, const char *reason) {
        _cleanup_json_ json_object *params = NULL;

        assert(u);
        assert(c->upstream == u);

        c->upstream = NULL;
        if (c->rpc_id == 0) {
                LIST_REMOVE(up_calls, u->waiting, c);
                return upstream_update_timer(u);
        }
        LIST_REMOVE(up_calls, u->sent, c);
        /* Courtesy: a server that cannot take it still gets no answer
         * through to the run (the id is forgotten). */
        if (json_build(&params, JB_INT("requestId", (int64_t) c->rpc_id), JB_STR("reason", reason), JB_END) >= 0)
                (void) send_notification(u, "notifications/cancelled", params);
        upstream_update_timer(u);
}

int64_t upstream_count_tools(Upstream *u) {
        int64_t n = 0;

        if (!u->tools)
                return -1;
        for (size_t i = 0; i < json_object_array_length(u->tools); i++)
                if (tools_policy_allows_tool(config_of(u), json_get_string(json_object_array_get_idx(u->tools, i),
                                                                            "name")))
                        n++;
        return n;
}

/* One page of tools/list. NULL: go on; else why the upstream failed. */
static const char *on_list_page(Upstream *u, json_object *result, size_t len) {
        json_object *tools = json_get(result, "tools");
        const char *cursor = json_get_string(result, "nextCursor");

        if (!tools || !json_object_is_type(tools, json_type_array))
                return "its tools/list answer has no tools array";
        u->listing_bytes += len;
        if (u->listing_bytes > TOOLS_LIST_BYTES_MAX)
                return "its tool list is too large";
        for (size_t i = 0; i < json_object_array_length(tools); i++) {
                json_object *t = json_object_array_get_idx(tools, i);
                /* Only tools a run can name: others are left out. */
                if (!json_object_is_type(t, json_type_object) || !tools_name_is_valid(json_get_string(t, "name")))
                        continue;
                if (json_object_array_length(u->listing) >= TOOLS_LIST_TOOLS_MAX)
                        return "it lists too many tools";
                if (json_append(u->listing, json_object_get(t)) < 0)
                        return "out of memory";
        }
        if (cursor && !isempty(cursor)) {
                if (++u->pages >= TOOLS_LIST_PAGES_MAX)
                        return "its tools/list has too many pages";
                return send_list(u, cursor) < 0 ? "cannot ask for the next page" : NULL;
        }
        if (u->relist)
                return start_listing(u) < 0 ? "cannot list its tools again" : NULL;
        json_object_put(u->tools);
        u->tools = TAKE_PTR(u->listing);
        u->state = UPSTREAM_READY;
        log_debug("Upstream %s: %zu tools listed.", label(u), json_object_array_length(u->tools));
        run_waiting(u);
        return NULL;
}

static const char *on_initialized(Upstream *u, json_object *result) {
        const char *version = json_get_string(result, "protocolVersion");
        const McpRevision *rev = mcp_revision_find(version);

        /* A session revision of ours: the stateless one has no initialize. */
        if (!rev || rev->stateless)
                return "it speaks no protocol revision the gateway knows";
        if (send_notification(u, "notifications/initialized", NULL) < 0)
                return "cannot send notifications/initialized";
        log_debug("Upstream %s: initialized, revision %s.", label(u), version);
        return start_listing(u) < 0 ? "cannot list its tools" : NULL;
}

static Call *find_sent(Upstream *u, uint64_t id) {
        LIST_FOREACH(up_calls, c, u->sent)
                if (c->rpc_id == id)
                        return c;
        return NULL;
}

static void error_text(json_object *error, char *buf, size_t size) {
        const char *m = json_get_string(error, "message");

        (void) snprintf(buf, size, "the upstream answered an error: %.*s", utf8_prefix_len(m ?: "(no message)",
                                                                                              UPSTREAM_MESSAGE_MAX),
                        m ?: "(no message)");
}

static const char *on_response(Upstream *u, json_object *msg, size_t len) {
        json_object *idv = json_get(msg, "id"), *result = json_get(msg, "result"), *error = json_get(msg, "error");
        uint64_t id;
        Call *c;

        if (!idv || !json_object_is_type(idv, json_type_int) || json_object_get_int64(idv) < 1)
                return NULL;    /* not an id of ours */
        id = (uint64_t) json_object_get_int64(idv);
        if (!!result == !!error || (result && !json_object_is_type(result, json_type_object)))
                return "it sent a response that is neither a result nor an error";
        if (id == u->init_id && u->state == UPSTREAM_INITIALIZING && error) {
                char text[UPSTREAM_MESSAGE_MAX + 64];

                /* Its reason for the operator (an HTTP server's bridge: its
                 * status, its connection's failure). */
                error_text(error, text, sizeof text);
                log_warning("Upstream %s: initialize refused: %s", label(u), text);
                return "it refused initialize";
        }
        if (id == u->init_id && u->state == UPSTREAM_INITIALIZING)
                return on_initialized(u, result);
        if (id == u->list_id && u->state == UPSTREAM_LISTING)
                return error ? "it refused tools/list" : on_list_page(u, result, len);
        c = find_sent(u, id);
        if (!c)
                return NULL;    /* cancelled or timed out already */
        LIST_REMOVE(up_calls, u->sent, c);
        c->upstream = NULL;
        if (error) {
                char text[UPSTREAM_MESSAGE_MAX + 64];
                error_text(error, text, sizeof text);
                call_failed(c, TOOLS_ERROR_UPSTREAM, text);
        } else
                call_answered(c, result, len);
        upstream_update_timer(u);
        return NULL;
}

/* A request of the server's (sampling, elicitation, roots, ping): a run
 * has no client to ask, so each is answered at once. */
static const char *on_server_request(Upstream *u, json_object *msg) {
        _cleanup_json_ json_object *j = NULL, *e = NULL;
        json_object *id = json_get(msg, "id");

        if (streq_ptr(json_get_string(msg, "method"), "ping")) {
                if (json_build(&j, JB_STR("jsonrpc", "2.0"), JB_OBJ("result", json_object_new_object()), JB_END) < 0)
                        return "out of memory";
        } else if (json_build(&e, JB_INT("code", JSONRPC_METHOD_NOT_FOUND),
                              JB_STR("message", "mcp-exec-toolsd serves no requests"), JB_END) < 0 ||
                   json_build(&j, JB_STR("jsonrpc", "2.0"), JB_OBJ("error", TAKE_PTR(e)), JB_END) < 0)
                return "out of memory";
        if (json_add(j, "id", json_object_get(id)) < 0)
                return "out of memory";
        return upstream_send(u, j) < 0 ? "it does not read its input" : NULL;
}

static const char *on_message(Upstream *u, json_object *msg, size_t len) {
        const char *method = json_get_string(msg, "method");
        json_object *id = json_get(msg, "id");

        if (!streq_ptr(json_get_string(msg, "jsonrpc"), "2.0"))
                return "it sent something that is not JSON-RPC 2.0";
        if (!method)
                return on_response(u, msg, len);
        if (id) {
                if (!json_object_is_type(id, json_type_int) && !json_object_is_type(id, json_type_string))
                        return "it sent a request with a bad id";
                return on_server_request(u, msg);
        }
        if (streq(method, "notifications/tools/list_changed")) {
                if (u->state == UPSTREAM_LISTING)
                        u->relist = true;
                else if (u->state == UPSTREAM_READY)
                        return start_listing(u) < 0 ? "cannot list its tools again" : NULL;
        }
        /* Progress, logging, resource updates: tolerated, dropped. */
        return NULL;
}

/* Every complete line buffered. NULL: go on; else why it failed. */
static const char *upstream_parse(Upstream *u) {
        size_t off = 0;
        const char *why = NULL;

        while (!why) {
                char *nl = memchr(u->in.data + off, '\n', u->in.size - off);
                _cleanup_json_ json_object *msg = NULL;
                const char *perr = NULL;
                size_t len, end;

                if (!nl)
                        break;
                len = (size_t) (nl - (u->in.data + off));
                if (strspn(u->in.data + off, " \t\r") == len)
                        ;       /* a blank line: tolerated */
                else if (json_parse_strict(u->in.data + off, len, UPSTREAM_JSON_DEPTH, JSON_TOKENER_VALIDATE_UTF8, &msg,
                                      &end, &perr) < 0 ||
                    !json_object_is_type(msg, json_type_object) || strspn(u->in.data + off + end, " \t\r") != len - end)
                        why = "it sent a line that is not one JSON object";
                else
                        why = on_message(u, msg, len);
                off += len + 1;
        }
        memmove(u->in.data, u->in.data + off, u->in.size - off);
        u->in.size -= off;
        if (!why && u->in.size >= u->in.limit)
                why = "it sent a message over the server's MAX_BYTES";
        return why;
}

static void upstream_update_events(Upstream *u) {
        uint32_t events = EPOLLIN;

        if (!u->io)
                return;
        if (u->state == UPSTREAM_CONNECTING || u->out_done < u->out.size)
                events |= EPOLLOUT;
        (void) sd_event_source_set_io_events(u->io, events);
}

static void upstream_flush(Upstream *u) {
        while (u->state != UPSTREAM_CONNECTING && u->out_done < u->out.size) {
                ssize_t n = send(u->fd, u->out.data + u->out_done, u->out.size - u->out_done,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n <= 0)
                        break;          /* EAGAIN: EPOLLOUT; an error: the handler sees HUP/ERR */
                u->out_done += (size_t) n;
        }
        if (u->out_done == u->out.size)
                u->out.size = u->out_done = 0;
        else if (u->out_done > u->out.size / 2) {
                memmove(u->out.data, u->out.data + u->out_done, u->out.size - u->out_done);
                u->out.size -= u->out_done;
                u->out_done = 0;
        }
        upstream_update_events(u);
}

static const char *upstream_read(Upstream *u) {
        ssize_t n;

        if (buffer_reserve(&u->in, 64 * 1024) < 0 && buffer_reserve(&u->in, 1) < 0)
                return "it sent a message over the server's MAX_BYTES";
        n = read(u->fd, u->in.data + u->in.size, MIN(u->in.allocated - u->in.size, (size_t) 64 * 1024));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return NULL;
        if (n <= 0 && u->state == UPSTREAM_INITIALIZING && config_of(u)->egress_policy)
                /* Most likely its network: egressd refused or is not there
                 * (mcp-exec-upstream-feed), and the instance did not start. */
                return "its instance ended before it answered (NETWORK=egress: no network for it? "
                       "journalctl -u 'mcp-exec-upstream-*@*' says why)";
        if (n < 0)
                return "its connection broke";
        if (n == 0)
                return "it closed the connection";
        u->in.size += (size_t) n;
        return upstream_parse(u);
}

static int on_upstream_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Upstream *u = userdata;
        const char *why = NULL;

        if (u->state == UPSTREAM_CONNECTING && (revents & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                int error = 0;
                socklen_t len = sizeof error;

                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0 || error != 0)
                        why = "cannot connect to it";
                else if (send_initialize(u) < 0)
                        why = "cannot send initialize";
        } else if (revents & EPOLLOUT)
                upstream_flush(u);
        if (!why && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                why = upstream_read(u);
        if (why)
                upstream_fail(u, why);
        return 0;
}

static int on_upstream_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        Upstream *u = userdata;

        if (u->state == UPSTREAM_READY) {
                log_debug("Upstream %s of %s: idle for IDLE_S, closed.", label(u), u->caller ?: "all callers");
                upstream_free(u);
                return 0;
        }
        upstream_fail(u, "it did not initialize or list its tools within CALL_TIMEOUT_S");
        return 0;
}

/* Before it is ready: a deadline for the handshake (set once per listing).
 * Ready: none while busy, else the idle one. */
static void upstream_update_timer(Upstream *u) {
        const ToolsServerConfig *s = config_of(u);
        uint64_t usec;
        int k;

        if (u->state != UPSTREAM_READY) {
                if (u->timer && sd_event_source_get_enabled(u->timer, NULL) > 0)
                        return;
                usec = s->call_timeout_s * USEC_PER_SEC;
        } else if (u->sent || u->waiting) {
                (void) sd_event_source_set_enabled(u->timer, SD_EVENT_OFF);
                return;
        } else
                usec = s->idle_s * USEC_PER_SEC;
        if (u->timer) {
                k = sd_event_source_set_time_relative(u->timer, usec);
                if (k >= 0)
                        k = sd_event_source_set_enabled(u->timer, SD_EVENT_ONESHOT);
        } else
                k = sd_event_add_time_relative(u->manager->event, &u->timer, CLOCK_MONOTONIC, usec, 0,
                                               on_upstream_timer, u);
        if (k < 0)
                log_warning_errno(k, "Upstream %s: cannot set its timer: %m", label(u));
}

static void fail_calls(Upstream *u, const char *message) {
        char text[256];

        (void) snprintf(text, sizeof text, "upstream %s: %s", label(u), message);
        while (u->waiting || u->sent) {
                Call *c = u->waiting ?: u->sent;
                if (c == u->waiting)
                        LIST_REMOVE(up_calls, u->waiting, c);
                else
                        LIST_REMOVE(up_calls, u->sent, c);
                c->upstream = NULL;
                call_failed(c, TOOLS_ERROR_UPSTREAM, text);
        }
}

Upstream *upstream_free(Upstream *u) {
        Manager *m;

        if (!u)
                return NULL;
        m = u->manager;
        /* Off the manager's list first: a call that fails below and lets a
         * queued one start must get a new connection, not this one. */
        LIST_REMOVE(upstreams, m->upstreams, u);
        m->n_upstreams--;
        fail_calls(u, "the gateway closed the connection");
        sd_event_source_disable_unref(u->io);
        sd_event_source_disable_unref(u->timer);
        safe_close(u->fd);
        buffer_free(&u->in);
        buffer_free(&u->out);
        json_object_put(u->tools);
        json_object_put(u->listing);
        free(u->caller);
        free(u);
        manager_update_idle(m);
        return NULL;
}

void upstream_fail(Upstream *u, const char *message) {
        assert(u);
        assert(message);

        log_warning("Upstream %s of %s failed: %s; its calls fail, the next call connects again.", label(u),
                    u->caller ?: "all callers", message);
        fail_calls(u, message);
        upstream_free(u);
}

static int upstream_connect(Upstream *u) {
        union sockaddr_union sa = {};
        int len, fd, k;

        len = sockaddr_un_set_path(&sa.un, config_of(u)->socket_path);
        if (len < 0)
                return len;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        u->fd = fd;
        k = sd_event_add_io(u->manager->event, &u->io, fd, EPOLLIN, on_upstream_io, u);
        if (k < 0)
                return k;
        if (connect(fd, &sa.sa, (socklen_t) len) < 0) {
                /* EAGAIN: the upstream's socket has a full backlog; a unix
                 * socket does not go on connecting then, so it is a failure
                 * of this call, and the next one tries again. */
                if (errno != EINPROGRESS)
                        return -errno;
                u->state = UPSTREAM_CONNECTING;
                return 0;
        }
        return send_initialize(u);
}

int upstream_new(Manager *m, size_t server, const char *caller, Upstream **ret) {
        const ToolsServerConfig *s = &m->servers[server];
        Upstream *u;
        int k;

        u = new0(Upstream, 1);
        if (!u)
                return -ENOMEM;
        u->manager = m;
        u->server = server;
        u->fd = -EBADF;
        u->next_rpc_id = 1;
        u->state = UPSTREAM_CONNECTING;
        u->in = BUFFER_INIT(MAX(s->max_bytes + TOOLS_UPSTREAM_LINE_SLACK, (uint64_t) TOOLS_UPSTREAM_LINE_MIN));
        u->out = BUFFER_INIT(TOOLS_UPSTREAM_OUT_MAX);
        LIST_PREPEND(upstreams, m->upstreams, u);
        m->n_upstreams++;
        if (caller && !(u->caller = strdup(caller))) {
                upstream_free(u);
                return -ENOMEM;
        }
        k = upstream_connect(u);
        if (k >= 0) {
                upstream_update_events(u);
                upstream_update_timer(u);
        }
        if (k < 0) {
                log_warning_errno(k, "Upstream %s: cannot connect to %s: %m", s->name, s->socket_path);
                upstream_free(u);
                return k;
        }
        *ret = u;
        return 0;
}
