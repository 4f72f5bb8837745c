/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mcp-server.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
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
#include "mcp-task.h"
#include "broker-proto.h"
#include "strv.h"
#include "mcp-tool.h"
#include "util.h"

/* Longer batches are refused: each element may start a run. */
#define BATCH_MAX 64
/* The tool list changes only with the configuration, which takes a restart. */
#define LIST_TTL_MS (5 * 60 * 1000)
/* Client-supplied names echoed in errors and logs are cut to this. */
#define ECHO_MAX 64
/* More modules than this are not kept for the description. */
#define MODULES_MAX 4096

static const char instructions[] =
        "One tool, exec: it runs Python code in a fresh sandbox without network and returns stdout, stderr, "
        "the exit code and resource use. Nothing persists between calls, so each call must be a complete "
        "program; pass data in the code or through stdin. Read the tool description for the limits.";
/* The same where the sandbox returns figures and files and takes input files. */
static const char instructions_outputs[] =
        "One tool, exec: it runs Python code in a fresh sandbox without network and returns stdout, stderr, "
        "the exit code and resource use, matplotlib figures as images and the files the program writes under "
        "/tmp/outputs/. Nothing persists between calls, so each call must be a complete program; pass data in "
        "the code, through stdin or as input files (the files argument). Read the tool description for the limits.";

static const char *server_instructions(const McpServer *server) {
        return server->config.result_channel ? instructions_outputs : instructions;
}

/* Indexed by syslog level, as MCP's levels are RFC 5424's. */
static const char *const log_levels[] = {
        [LOG_EMERG] = "emergency", [LOG_ALERT] = "alert",   [LOG_CRIT] = "critical", [LOG_ERR] = "error",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info",     [LOG_DEBUG] = "debug",
};

static int log_level_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(log_levels); i++)
                if (streq(log_levels[i], s))
                        return (int) i;
        return -EINVAL;
}

/* What hangs on a session above its floor ends with it. */
static void session_gone(McpSession *s) {
        assert(s);
        assert(s->server);

        mcp_session_drop_calls(s);
        mcp_tasks_session_gone(s->server, s);
}

int mcp_server_new(sd_event *e, const McpServerConfig *config, McpServer **ret) {
        _cleanup_(mcp_server_freep) McpServer *s = NULL;
        int r;

        if (!e || !config || !ret)
                return -EINVAL;
        /* Nonsense here would only surface as odd tool results later. */
        if (config->default_timeout_s == 0 || config->max_timeout_s < config->default_timeout_s ||
            config->max_code_bytes == 0 || config->max_output_bytes == 0 || config->max_concurrent == 0)
                return -EINVAL;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        s->config = *config;
        s->progress_interval_usec = USEC_PER_SEC;
        s->session_gone = session_gone;
        s->broker_socket = strdup(config->broker_socket ?: BROKER_SOCKET_PATH);
        if (!s->broker_socket)
                return -ENOMEM;
        if (config->python_version) {
                s->python_version = strdup(config->python_version);
                if (!s->python_version)
                        return -ENOMEM;
        }
        if (config->modules) {
                s->modules = strv_copy_n(config->modules, MODULES_MAX);
                if (!s->modules)
                        return -ENOMEM;
        }
        if (config->preloaded) {
                s->preloaded = strv_copy_n(config->preloaded, MODULES_MAX);
                if (!s->preloaded)
                        return -ENOMEM;
        }
        s->config.broker_socket = s->broker_socket;
        s->config.python_version = s->python_version;
        s->config.modules = (const char *const *) s->modules;
        s->config.preloaded = (const char *const *) s->preloaded;
        r = sandbox_session_table_new(e, s->broker_socket, &s->sandbox_sessions);
        if (r < 0)
                return r;

        r = call_queue_new(config->max_concurrent, config->max_queue, &s->queue);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

McpServer *mcp_server_free(McpServer *s) {
        if (!s)
                return NULL;
        /* Sessions belong to their transports: they stay, inert. Queued
         * calls go first, so no run starts in the room freed by the others. */
        LIST_FOREACH_SAFE(sessions, i, next, s->sessions)
                if (i->dead && i->in_callout == 0 && i->defer_free)
                        mcp_session_free_now(i);
        /* Their runs stop: nobody could fetch what they return. */
        mcp_tasks_free_all(s);
        if (s->queue)
                call_queue_drop_waiting(s->queue);
        LIST_FOREACH(sessions, i, s->sessions) {
                i->freeing = true;
                mcp_session_drop_calls(i);
        }
        while (s->sessions) {
                McpSession *i = LIST_REMOVE(sessions, s->sessions, s->sessions);
                i->server = NULL;
                i->freeing = false;
                i->dead = true;
        }
        call_queue_free(s->queue);
        sandbox_session_table_free(s->sandbox_sessions);
        free(s->broker_socket);
        free(s->python_version);
        strv_free(s->modules);
        strv_free(s->preloaded);
        sd_event_unref(s->event);
        return mfree(s);
}

void mcp_server_set_progress_interval(McpServer *s, uint64_t usec) {
        assert(s);

        s->progress_interval_usec = MAX(usec, (uint64_t) 1000);
}

unsigned mcp_server_in_flight(const McpServer *s) {
        assert(s);

        return call_queue_running(s->queue) + call_queue_waiting(s->queue);
}

void mcp_server_queue_stats(const McpServer *s, McpQueueStats *ret) {
        assert(s);
        assert(ret);

        *ret = (McpQueueStats) {
                .running = call_queue_running(s->queue),
                .waiting = call_queue_waiting(s->queue),
                .max_running = call_queue_max_running(s->queue),
                .max_waiting = call_queue_max_waiting(s->queue),
        };
}

unsigned mcp_server_sandbox_sessions(const McpServer *s) {
        assert(s);

        return sandbox_session_table_alive(s->sandbox_sessions);
}

unsigned mcp_server_caller_sandbox_sessions(const McpServer *s, const char *caller) {
        assert(s);

        return sandbox_session_table_alive_of(s->sandbox_sessions, caller);
}

void mcp_server_end_caller(McpServer *s, const char *caller, McpCallerEnded *ret) {
        assert(s);
        assert(caller);
        assert(ret);

        *ret = (McpCallerEnded) {
                .tasks = mcp_tasks_end_caller(s, caller),
                .sandbox_sessions = sandbox_session_table_close_caller(s->sandbox_sessions, caller),
        };
}

unsigned mcp_session_sandbox_sessions(const McpSession *s) {
        assert(s);

        if (!s->server || s->freeing || !s->caller)
                return 0;
        SandboxOwner owner = mcp_session_owner(s);

        return sandbox_session_table_alive_in_scope(s->server->sandbox_sessions, &owner);
}

static json_object *capabilities(const McpSession *s, const McpRevision *rev) {
        _cleanup_json_ json_object *c = json_object_new_object(), *tools = json_object_new_object();
        bool tasks = s->server->config.max_tasks > 0;

        if (!c || !tools || json_add_bool(tools, "listChanged", false) < 0 ||
            json_add(c, "tools", TAKE_PTR(tools)) < 0 ||
            (rev->logging && json_add(c, "logging", json_object_new_object()) < 0))
                return NULL;
        if (tasks && rev->tasks && json_add(c, "tasks", mcp_task_capability(s)) < 0)
                return NULL;
        if (tasks && rev->stateless) {
                _cleanup_json_ json_object *ext = NULL;
                if (json_build(&ext, JB_OBJ(MCP_TASKS_EXTENSION, json_object_new_object()), JB_END) < 0 ||
                    json_add(c, "extensions", TAKE_PTR(ext)) < 0)
                        return NULL;
        }
        return TAKE_PTR(c);
}

static json_object *error_reply(const McpRequest *req, int code, const char *message) {
        return jsonrpc_error_new(req->id, code, message, NULL);
}

static int handle_initialize(McpRequest *req, json_object **ret) {
        McpSession *s = req->session;
        _cleanup_json_ json_object *result = NULL;
        json_object *client_info;
        const char *asked;
        char name[ECHO_MAX + 1], version[ECHO_MAX + 1], uid[16] = "";

        assert(req);
        assert(ret);

        if (s->revision) {
                *ret = error_reply(req, JSONRPC_INVALID_REQUEST, "Invalid Request: the session is already initialized");
                return 0;
        }
        asked = json_get_string(req->params, "protocolVersion");
        if (!asked) {
                *ret = error_reply(req, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: initialize needs a protocolVersion string");
                return 0;
        }
        /* An unknown version is no error: we answer with our newest and the
         * client decides. The stateless revision has no initialize. */
        req->rev = mcp_revision_find(asked);
        if (!req->rev || req->rev->stateless)
                req->rev = mcp_revision_latest_legacy();

        result = json_object_new_object();
        if (!result || json_add_string(result, "protocolVersion", req->rev->version) < 0 ||
            json_add(result, "capabilities", capabilities(s, req->rev)) < 0 ||
            json_add(result, "serverInfo", mcp_server_info(req->rev)) < 0 ||
            json_add_string(result, "instructions", server_instructions(req->session->server)) < 0)
                return -ENOMEM;
        *ret = mcp_result_reply(req, TAKE_PTR(result));
        if (!*ret)
                return -ENOMEM;
        s->revision = req->rev;
        s->client_elicit_form = mcp_confirm_capability_form(json_get(req->params, "capabilities"));

        client_info = json_get(req->params, "clientInfo");
        str_printable(json_get_string(client_info, "name") ?: "", name, sizeof name);
        str_printable(json_get_string(client_info, "version") ?: "", version, sizeof version);
        if (s->peer_uid != (uid_t) -1)
                (void) snprintf(uid, sizeof uid, "%u", (unsigned) s->peer_uid);
        log_struct(LOG_INFO,
                   "MESSAGE=Session %s initialized: protocol %s, client \"%s\" %s", s->id, s->revision->version, name,
                   version,
                   "MCP_SESSION=%s", s->id,
                   "MCP_TRANSPORT=%s", s->peer_transport,
                   "MCP_CLIENT_UID=%s", uid,
                   "MCP_PROTOCOL_VERSION=%s", s->revision->version,
                   "MCP_CLIENT_NAME=%s", name,
                   "MCP_CLIENT_VERSION=%s", version);
        return 0;
}

static int handle_ping(McpRequest *req, json_object **ret) {
        assert(req);
        assert(ret);

        *ret = mcp_result_reply(req, json_object_new_object());
        return *ret ? 0 : -ENOMEM;
}

static int handle_set_level(McpRequest *req, json_object **ret) {
        int level = log_level_from_string(json_get_string(req->params, "level"));

        assert(req);
        assert(ret);

        if (level < 0) {
                *ret = error_reply(req, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: level must be one of debug, info, notice, warning, error, "
                                   "critical, alert, emergency");
                return 0;
        }
        req->session->log_level = level;
        return handle_ping(req, ret);
}

void mcp_server_package_stats(const McpServer *s, McpPackageStats *ret) {
        assert(s);
        assert(ret);

        *ret = s->package_stats;
}

static int handle_tools_list(McpRequest *req, json_object **ret) {
        _cleanup_json_ json_object *result = json_object_new_object(), *tools = json_object_new_array();

        assert(req);
        assert(ret);

        /* We never hand out a cursor, so none can be valid. */
        if (json_object_object_get_ex(req->params, "cursor", NULL)) {
                *ret = error_reply(req, JSONRPC_INVALID_PARAMS, "Invalid params: unknown cursor");
                return 0;
        }
        const McpServerConfig *c = &req->session->server->config;

        if (!result || !tools)
                return -ENOMEM;
        /* What the wheelhouse holds goes into the descriptions: one stat()
         * here, and a new read only if the manifest changed. */
        tool_packages_refresh(c->packages);
        tool_servers_refresh(c->servers);
        for (const McpTool *const *t = mcp_tools; *t; t++) {
                _cleanup_json_ json_object *def = NULL;

                if (!mcp_tool_available(*t, c))
                        continue;
                def = (*t)->definition(c, req->rev);
                /* Code mode: the servers this caller's code may call. */
                if (!def || (*t == &tool_exec && tool_servers_annotate(def, c->servers, req->session->caller) < 0))
                        return -ENOMEM;
                if (json_append(tools, TAKE_PTR(def)) < 0)
                        return -ENOMEM;
        }
        if (json_add(result, "tools", TAKE_PTR(tools)) < 0)
                return -ENOMEM;
        /* Where servers are for some callers only, the list is not for a
         * shared cache. */
        if (req->rev->stateless &&
            (json_add_int(result, "ttlMs", LIST_TTL_MS) < 0 ||
             json_add_string(result, "cacheScope", tool_servers_per_caller(c->servers) ? "private" : "public") < 0))
                return -ENOMEM;
        *ret = mcp_result_reply(req, TAKE_PTR(result));
        return *ret ? 0 : -ENOMEM;
}

static int handle_discover(McpRequest *req, json_object **ret) {
        _cleanup_json_ json_object *result = json_object_new_object();

        assert(req);
        assert(ret);

        if (!result || json_add(result, "supportedVersions", mcp_revision_supported_json()) < 0 ||
            json_add(result, "capabilities", capabilities(req->session, req->rev)) < 0 ||
            json_add_string(result, "instructions", server_instructions(req->session->server)) < 0 ||
            json_add_int(result, "ttlMs", LIST_TTL_MS) < 0 ||
            json_add_string(result, "cacheScope", "public") < 0)
                return -ENOMEM;
        *ret = mcp_result_reply(req, TAKE_PTR(result));
        return *ret ? 0 : -ENOMEM;
}

/* The call runs in the task's own session, as a task's; the task says what
 * its asker hears now. */
static int call_as_task(McpRequest *req, json_object **ret) {
        _cleanup_json_ json_object *now = NULL;
        McpRequest inner;
        McpTask *t;
        int r;

        assert(req);
        assert(ret);

        r = mcp_task_begin(req, &t, ret);
        if (r == -EBUSY)
                return mcp_call_handle(req, ret);       /* no room for a task: the extension's is a call then */
        if (r <= 0)
                return r;
        inner = *req;
        inner.session = mcp_task_session(t);
        inner.batch = NULL;
        inner.origin = 0;
        inner.task_run = true;
        r = mcp_call_handle(&inner, &now);
        return mcp_task_started(t, req, r, TAKE_PTR(now), ret);
}

/* The one door of tools/call: a task or a plain call, chosen here once. */
static int handle_tools_call(McpRequest *req, json_object **ret) {
        const McpTool *tool;
        int r;

        assert(req);
        assert(ret);

        r = mcp_call_resolve(req, &tool, ret);
        if (r <= 0)
                return r;
        if (mcp_task_requested(req)) {
                if (tool->tasks && req->session->server->config.max_tasks > 0)
                        return call_as_task(req, ret);
                /* The core: a task for a tool that has none is no method;
                 * the extension leaves it to us, so this one is a call. */
                if (req->rev->tasks) {
                        *ret = error_reply(req, JSONRPC_METHOD_NOT_FOUND,
                                           "Method not found: this tool does not run as a task");
                        return *ret ? 0 : -ENOMEM;
                }
        }
        return mcp_call_handle(req, ret);
}

typedef int (*handler_t)(McpRequest *req, json_object **ret);

static const struct {
        const char *method;
        handler_t handler;
        bool legacy, stateless;
} methods[] = {
        { "ping", handle_ping, .legacy = true },
        { "logging/setLevel", handle_set_level, .legacy = true },
        { "tools/list", handle_tools_list, .legacy = true, .stateless = true },
        { "tools/call", handle_tools_call, .legacy = true, .stateless = true },
        { "server/discover", handle_discover, .stateless = true },
        /* Tasks (mcp-task.h): each checks that the revision has its format. */
        { "tasks/get", mcp_task_handle_get, .legacy = true, .stateless = true },
        { "tasks/result", mcp_task_handle_result, .legacy = true },
        { "tasks/list", mcp_task_handle_list, .legacy = true },
        { "tasks/cancel", mcp_task_handle_cancel, .legacy = true, .stateless = true },
        { "tasks/update", mcp_task_handle_update, .stateless = true },
        { "subscriptions/listen", mcp_task_handle_listen, .stateless = true },
};

static int method_not_found(McpRequest *req, json_object **ret) {
        _cleanup_free_ char *m = NULL;

        assert(req);
        assert(ret);

        if (asprintf(&m, "Method not found: %.*s", utf8_prefix_len(req->method, ECHO_MAX), req->method) < 0)
                return -ENOMEM;
        *ret = error_reply(req, JSONRPC_METHOD_NOT_FOUND, m);
        return 0;
}

static int find_method(const char *method) {
        for (size_t i = 0; i < ELEMENTSOF(methods); i++)
                if (streq(methods[i].method, method))
                        return (int) i;
        return -ENOENT;
}

/* 2026-07-28: everything the request needs is in its _meta. */
static int handle_stateless(McpRequest *req, json_object **ret) {
        json_object *pv = json_get(req->meta, MCP_META_PROTOCOL_VERSION), *level;
        int i;

        assert(req);
        assert(ret);

        req->rev = mcp_revision_stateless();
        if (!json_object_is_type(pv, json_type_string)) {
                *ret = error_reply(req, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: _meta needs a \"" MCP_META_PROTOCOL_VERSION "\" string");
                return 0;
        }
        if (!streq(json_object_get_string(pv), req->rev->version)) {
                *ret = mcp_error_unsupported_version(req->id, json_object_get_string(pv),
                                                     (size_t) json_object_get_string_len(pv));
                return *ret ? 0 : -ENOMEM;
        }
        if (!json_object_is_type(json_get(req->meta, MCP_META_CLIENT_CAPABILITIES), json_type_object)) {
                *ret = error_reply(req, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: _meta needs a \"" MCP_META_CLIENT_CAPABILITIES "\" object");
                return 0;
        }
        if (json_object_object_get_ex(req->meta, MCP_META_LOG_LEVEL, &level) &&
            log_level_from_string(json_object_is_type(level, json_type_string) ? json_object_get_string(level) :
                                                                                  NULL) < 0) {
                *ret = error_reply(req, JSONRPC_INVALID_PARAMS, "Invalid params: unknown log level in _meta");
                return 0;
        }
        req->session->stateless_seen = true;

        i = find_method(req->method);
        if (i < 0 || !methods[i].stateless)
                return method_not_found(req, ret);
        return methods[i].handler(req, ret);
}

/* 2024-11-05 to 2025-11-25: a session negotiated by initialize. */
static int handle_legacy(McpRequest *req, json_object **ret) {
        McpSession *s = req->session;
        int i;

        assert(req);
        assert(ret);

        if (streq(req->method, "initialize"))
                return handle_initialize(req, ret);
        i = find_method(req->method);
        if (i < 0 || !methods[i].legacy)
                return method_not_found(req, ret);
        /* Only ping may come before initialize. */
        if (!s->revision && !streq(req->method, "ping")) {
                *ret = error_reply(req, JSONRPC_INVALID_REQUEST,
                                   "Invalid Request: not initialized; send initialize first (or use protocol "
                                   "version 2026-07-28 with _meta in every request)");
                return 0;
        }
        req->rev = s->revision ?: mcp_revision_latest_legacy();
        if (streq(req->method, "logging/setLevel") && !req->rev->logging)
                return method_not_found(req, ret);
        return methods[i].handler(req, ret);
}

_Static_assert(MCP_PROGRESS_TOKEN_MAX == 256, "the error below says 256");

static int handle_request(McpSession *s, const JsonRpcMessage *m, McpBatch *b, uint64_t origin, json_object **ret) {
        assert(s);
        assert(m);
        assert(ret);

        McpRequest req = {
                .session = s,
                .method = m->method,
                .id = m->id,
                .batch = b,
                .origin = origin,
        };

        if (m->params && !json_object_is_type(m->params, json_type_object)) {
                *ret = jsonrpc_error_new(m->id, JSONRPC_INVALID_PARAMS, "Invalid params: params must be an object",
                                         NULL);
                return 0;
        }
        req.params = m->params;
        req.meta = json_get(m->params, "_meta");
        if (!json_object_is_type(req.meta, json_type_object))
                req.meta = NULL;
        if (mcp_progress_token_check(json_get(req.meta, "progressToken")) == -E2BIG) {
                *ret = jsonrpc_error_new(m->id, JSONRPC_INVALID_PARAMS,
                                         "Invalid params: _meta.progressToken is too long (a string of at most "
                                         "256 bytes, or an integer within +-(2^53 - 1))", NULL);
                return *ret ? 0 : -ENOMEM;
        }

        return mcp_request_is_stateless(req.method, req.meta) ? handle_stateless(&req, ret) : handle_legacy(&req, ret);
}

static void handle_notification(McpSession *s, const JsonRpcMessage *m) {
        json_object *id;

        assert(s);
        assert(m);

        if (streq(m->method, "notifications/cancelled")) {
                /* Unknown or finished ids are fine: the race is expected. */
                id = json_get(m->params, "requestId");
                if (jsonrpc_id_is_valid(id)) {
                        mcp_call_cancel(s, id);
                        mcp_task_listener_cancel(s, id);
                        mcp_task_call_cancel(s, id);
                }
        }
        /* notifications/initialized and everything else: nothing to do, and
         * a notification never gets a reply. */
}

/* One message, alone or from a batch; *ret is its immediate reply, if any. */
static int handle_message(McpSession *s, json_object *msg, McpBatch *b, uint64_t origin, json_object **ret) {
        JsonRpcMessage m;
        int r;

        assert(s);
        assert(ret);

        *ret = NULL;
        jsonrpc_classify(msg, &m);
        switch (m.kind) {
        case JSONRPC_INVALID:
                *ret = jsonrpc_error_new(m.id, m.error_code, m.error_message, NULL);
                return *ret ? 0 : -ENOMEM;
        case JSONRPC_IGNORED:
                /* A response of the client's: to a question of ours? */
                (void) mcp_confirm_response(s, msg);
                return 0;
        case JSONRPC_NOTIFICATION:
                handle_notification(s, &m);
                return 0;
        case JSONRPC_REQUEST:
                r = handle_request(s, &m, b, origin, ret);
                if (r < 0 && !*ret)
                        /* Tell the client rather than leave it waiting; may fail too. */
                        *ret = jsonrpc_error_new(m.id, JSONRPC_INTERNAL_ERROR, "Internal error", NULL);
                return r;
        }
        return 0;
}

static int handle_batch(McpSession *s, json_object *array, uint64_t origin) {
        size_t n = json_object_array_length(array);
        McpBatch *b;
        int r = 0;

        assert(s);
        assert(array);

        if (n == 0)
                return mcp_session_send_reply(s, origin, jsonrpc_error_new(NULL, JSONRPC_INVALID_REQUEST,
                                                                           "Invalid Request: empty batch", NULL));
        if (!s->revision || !s->revision->batches) {
                _cleanup_free_ char *m = NULL;
                if (asprintf(&m, "Invalid Request: JSON-RPC batches are not supported %s%s%s",
                             s->revision ? "in protocol revision " : "before initialize",
                             s->revision ? s->revision->version : "",
                             s->revision ? "; send one message at a time" : "") < 0)
                        return -ENOMEM;
                return mcp_session_send_reply(s, origin, jsonrpc_error_new(NULL, JSONRPC_INVALID_REQUEST, m, NULL));
        }
        if (n > BATCH_MAX) {
                _cleanup_free_ char *m = NULL;
                if (asprintf(&m, "Invalid Request: a batch of %zu messages, more than %u", n, BATCH_MAX) < 0)
                        return -ENOMEM;
                return mcp_session_send_reply(s, origin, jsonrpc_error_new(NULL, JSONRPC_INVALID_REQUEST, m, NULL));
        }

        b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        *b = (McpBatch) { .session = s, .origin = origin, .replies = json_object_new_array(), .pending = 1 };
        if (!b->replies) {
                free(b);
                return -ENOMEM;
        }
        /* Nobody hears the rest once the peer is gone. */
        for (size_t i = 0; i < n && r >= 0 && !s->dead; i++) {
                json_object *reply;
                r = handle_message(s, json_object_array_get_idx(array, i), b, origin, &reply);
                if (reply)
                        mcp_batch_add(b, reply);
        }
        /* Sends what is there once the deferred replies are in too. */
        mcp_batch_release(b);
        return r;
}

int mcp_session_handle_inbound(McpSession *s, McpInbound *i, uint64_t origin) {
        _cleanup_json_ json_object *msg = NULL;
        json_object *reply = NULL;
        int r;

        assert(s);
        assert(i);

        /* Ours now, whatever happens; what pointed into it goes with it. */
        msg = TAKE_PTR(i->msg);
        i->method = i->protocol_version = i->name = i->param_session = NULL;
        i->id = NULL;

        if (!s->server)
                return -ESHUTDOWN;
        if (s->dead)
                return 0;
        if (i->error)
                return mcp_session_send_reply(s, origin, jsonrpc_error_new(NULL, i->error_code, i->error, NULL));

        if (json_object_is_type(msg, json_type_array))
                return handle_batch(s, msg, origin);
        r = handle_message(s, msg, NULL, origin, &reply);
        if (reply)
                (void) mcp_session_send_reply(s, origin, reply);
        return r;
}

int mcp_session_handle(McpSession *s, const char *data, size_t len, uint64_t origin) {
        _cleanup_(mcp_inbound_done) McpInbound in = {};
        int r;

        assert(s);

        if (!s->server)
                return -ESHUTDOWN;
        if (s->dead)
                return 0;
        r = mcp_inbound_parse(data, len, &in);
        if (r < 0 && !in.error)
                return r;
        return mcp_session_handle_inbound(s, &in, origin);
}

unsigned mcp_server_tasks(const McpServer *s) {
        assert(s);

        return s->n_tasks;
}

void mcp_server_task_stats(const McpServer *s, McpTaskStats *ret) {
        unsigned n[_MCP_TASK_STATUS_MAX];

        assert(s);
        assert(ret);

        mcp_tasks_count(s, n);
        *ret = (McpTaskStats) {
                .working = n[MCP_TASK_WORKING],
                .completed = n[MCP_TASK_COMPLETED],
                .failed = n[MCP_TASK_FAILED],
                .cancelled = n[MCP_TASK_CANCELLED],
                .ended_completed = s->tasks_ended[MCP_TASK_COMPLETED],
                .ended_failed = s->tasks_ended[MCP_TASK_FAILED],
                .ended_cancelled = s->tasks_ended[MCP_TASK_CANCELLED],
        };
}
