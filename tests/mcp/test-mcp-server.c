/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tests for the MCP core through its public interface (mcp-server.h): a test
 * transport collects what the server sends, and code runs through the real
 * exec client against a fake broker speaking the real broker protocol on the
 * same event loop (fake-broker.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "fake-broker.h"
#include "json-util.h"
#include "jsonrpc.h"
#include "macro.h"
#include "mcp-internal.h"
#include "mcp-server.h"
#include "node-id.h"
#include "broker-proto.h"
#include "test-helpers.h"
#include "util.h"

static const char *const modules[] = { "numpy", NULL };


typedef struct Peer {
        McpSession *session;
        json_object *msgs;              /* every message received, parsed */
        bool free_in_send;              /* frees its session from inside send, as a dying transport may */
        unsigned n_free_in_send;
        bool free_when_idle;
        bool fail_send;                 /* the peer is gone: send fails */
        unsigned n_idle;                /* idle callbacks */
        unsigned in_flight_at_last_send;
        /* What the routing facts are checked against: */
        uint64_t last_origin;           /* of the last message handed to the session */
        json_object *origins;           /* request id (JSON text) -> array of the origins it came with */
        json_object *token_ids;         /* progress token (JSON text) -> array of ids (JSON text) that named it */
        json_object *unanswered;        /* ids of MCP_MESSAGE_UNANSWERED, in order */
        json_object *facts;             /* every send: {"kind","origin","id","error_code","token"} */
} Peer;

typedef struct Env {
        sd_event *event;
        FakeBroker *broker;
        McpServer *server;
        McpServerConfig config;
} Env;

static const char *id_key(json_object *id) {
        /* 5 and "5" differ here, as they do for the core. */
        return json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
}

static bool array_has_string(json_object *a, const char *s) {
        for (size_t i = 0; i < json_object_array_length(a); i++)
                if (streq(json_object_get_string(json_object_array_get_idx(a, i)), s))
                        return true;
        return false;
}

/* Whether request id was handed to the session with origin. */
static bool came_with(const Peer *p, json_object *id, uint64_t origin) {
        json_object *a = json_get(p->origins, id_key(id));

        for (size_t i = 0; i < json_object_array_length(a); i++)
                if ((uint64_t) json_object_get_int64(json_object_array_get_idx(a, i)) == origin)
                        return true;
        return false;
}

/* What the core says about a message must be what the message says: a
 * transport routes by these facts alone. */
static void check_facts(const Peer *p, const McpMessage *m, json_object *j) {
        ASSERT_TRUE(m->origin >= 1 && m->origin <= p->last_origin);
        switch (m->kind) {
        case MCP_MESSAGE_RESPONSE:
                ASSERT_TRUE(j && !json_get(j, "method"));
                if (json_object_is_type(j, json_type_array)) {
                        ASSERT_TRUE(!m->id);
                        ASSERT_EQ_INT(m->error_code, 0);
                        for (size_t i = 0; i < json_object_array_length(j); i++) {
                                json_object *id = json_get(json_object_array_get_idx(j, i), "id");
                                if (jsonrpc_id_is_valid(id))
                                        ASSERT_TRUE(came_with(p, id, m->origin));
                        }
                        break;
                }
                ASSERT_EQ_INT(m->error_code, json_object_get_int(json_get(json_get(j, "error"), "code")));
                if (jsonrpc_id_is_valid(json_get(j, "id"))) {
                        ASSERT_TRUE(jsonrpc_id_equal(m->id, json_get(j, "id")));
                        ASSERT_TRUE(came_with(p, m->id, m->origin));
                } else {
                        ASSERT_TRUE(!m->id);
                        ASSERT_TRUE(m->error_code != 0);
                }
                break;
        case MCP_MESSAGE_REQUEST:
                /* A question about a call, where that call came from. */
                ASSERT_STREQ(json_get_string(j, "method"), "elicitation/create");
                ASSERT_TRUE(json_object_is_type(json_get(j, "id"), json_type_string));
                ASSERT_TRUE(jsonrpc_id_is_valid(m->id) && came_with(p, m->id, m->origin));
                break;
        case MCP_MESSAGE_NOTIFICATION: {
                json_object *token = json_get(json_get(j, "params"), "progressToken");
                if (streq_ptr(json_get_string(j, "method"), "notifications/cancelled")) {
                        /* The end of a question of ours, about a call. */
                        ASSERT_TRUE(jsonrpc_id_is_valid(m->id) && came_with(p, m->id, m->origin));
                        break;
                }
                ASSERT_STREQ(json_get_string(j, "method"), "notifications/progress");
                ASSERT_TRUE(jsonrpc_id_is_valid(m->id) && jsonrpc_id_is_valid(token));
                ASSERT_TRUE(array_has_string(json_get(p->token_ids, id_key(token)), id_key(m->id)));
                ASSERT_TRUE(came_with(p, m->id, m->origin));
                ASSERT_EQ_INT(m->error_code, 0);
                break;
        }
        case MCP_MESSAGE_UNANSWERED:
                ASSERT_TRUE(!j && !m->json && m->len == 0);
                ASSERT_TRUE(jsonrpc_id_is_valid(m->id));
                ASSERT_TRUE(came_with(p, m->id, m->origin));
                break;
        default:
                ASSERT_FAIL_("unknown kind %i", (int) m->kind);
        }
}

static int peer_send(McpSession *s, const McpMessage *m, void *userdata) {
        Peer *p = userdata;
        json_object *j = NULL;

        ASSERT_TRUE(s == p->session);
        if (p->fail_send)
                return -EPIPE;
        if (m->json) {
                ASSERT_EQ_U64(strlen(m->json), m->len);
                ASSERT_TRUE(!memchr(m->json, '\n', m->len));    /* one line per message on stdio */
                j = json_tokener_parse(m->json);
                ASSERT_TRUE(j);
        }
        check_facts(p, m, j);
        {
                json_object *f = json_object_new_object(), *token = json_get(json_get(j, "params"), "progressToken");
                ASSERT_TRUE(f);
                ASSERT_EQ_INT(json_add_int(f, "kind", m->kind), 0);
                ASSERT_EQ_INT(json_add_int(f, "origin", (int64_t) m->origin), 0);
                ASSERT_EQ_INT(json_add_int(f, "error_code", m->error_code), 0);
                if (m->id)
                        ASSERT_EQ_INT(json_add_string(f, "id", id_key(m->id)), 0);
                if (token)
                        ASSERT_EQ_INT(json_add_string(f, "token", id_key(token)), 0);
                ASSERT_EQ_INT(json_object_array_add(p->facts, f), 0);
        }
        if (j) {
                ASSERT_EQ_INT(json_object_array_add(p->msgs, j), 0);
                p->in_flight_at_last_send = mcp_session_in_flight(s);
        } else
                ASSERT_EQ_INT(json_object_array_add(p->unanswered, json_object_get(m->id)), 0);
        if (p->free_in_send) {
                p->free_in_send = false;
                p->n_free_in_send++;
                p->session = mcp_session_free(p->session);
        }
        return 0;
}

static const McpTransport transport = { .send = peer_send };

static void peer_idle(McpSession *s, void *userdata) {
        Peer *p = userdata;

        ASSERT_TRUE(s == p->session);
        ASSERT_EQ_INT(mcp_session_in_flight(s), 0);
        p->n_idle++;
        if (p->free_when_idle)
                p->session = mcp_session_free(p->session);
}

static void env_init_budget(Env *env, uint64_t max_concurrent, uint64_t max_queue, MemBudget *budget) {
        *env = (Env) {};
        ASSERT_TRUE(sd_event_new(&env->event) >= 0);
        ASSERT_EQ_INT(fake_broker_new(env->event, &env->broker), 0);
        env->config = (McpServerConfig) {
                .broker_socket = env->broker->path,
                .default_timeout_s = 30,
                .max_timeout_s = 300,
                .max_output_bytes = 1 << 20,
                .max_stdin_bytes = 1 << 20,
                .max_code_bytes = 1 << 20,
                .max_concurrent = max_concurrent,
                .max_queue = max_queue,
                .memory_max_bytes = 256ULL << 20,
                .tasks_max = 64,
                .python_version = "3.11.2",
                .modules = modules,
                .budget = budget,
        };
        ASSERT_EQ_INT(mcp_server_new(env->event, &env->config, &env->server), 0);
        mcp_server_set_progress_interval(env->server, 100 * USEC_PER_MSEC);
}

static void env_init(Env *env, uint64_t max_concurrent, uint64_t max_queue) {
        env_init_budget(env, max_concurrent, max_queue, NULL);
}

static void env_done(Env *env) {
        env->server = mcp_server_free(env->server);
        env->broker = fake_broker_free(env->broker);
        env->event = sd_event_unref(env->event);
}

static void peer_open_as(Env *env, Peer *p, const char *transport_name, const char *caller) {
        McpPeer who = { .transport = transport_name, .uid = 1000, .pid = 42, .caller = caller };

        *p = (Peer) {
                .msgs = json_object_new_array(),
                .origins = json_object_new_object(),
                .token_ids = json_object_new_object(),
                .unanswered = json_object_new_array(),
                .facts = json_object_new_array(),
        };
        ASSERT_TRUE(p->msgs && p->origins && p->token_ids && p->unanswered && p->facts);
        ASSERT_EQ_INT(mcp_session_new(env->server, &transport, p, &who, &p->session), 0);
        mcp_session_set_idle_callback(p->session, peer_idle);
}

static void peer_open(Env *env, Peer *p, const char *transport_name) {
        peer_open_as(env, p, transport_name, NULL);
}

static void peer_close(Peer *p) {
        p->session = mcp_session_free(p->session);
        p->msgs = (json_object_put(p->msgs), NULL);
        p->origins = (json_object_put(p->origins), NULL);
        p->token_ids = (json_object_put(p->token_ids), NULL);
        p->unanswered = (json_object_put(p->unanswered), NULL);
        p->facts = (json_object_put(p->facts), NULL);
}

static void append_to(json_object *map, const char *key, json_object *v) {
        json_object *a = json_get(map, key);

        if (!a) {
                a = json_object_new_array();
                ASSERT_TRUE(a);
                ASSERT_EQ_INT(json_object_object_add(map, key, a), 0);
        }
        ASSERT_EQ_INT(json_object_array_add(a, v), 0);
}

/* Notes which origin each request came with, and which request named each
 * progress token, for check_facts(). */
static void note_requests(Peer *p, json_object *m, uint64_t origin) {
        json_object *id = json_get(m, "id"), *token;

        if (json_object_is_type(m, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(m); i++)
                        note_requests(p, json_object_array_get_idx(m, i), origin);
                return;
        }
        if (!jsonrpc_id_is_valid(id))
                return;
        append_to(p->origins, id_key(id), json_object_new_int64((int64_t) origin));
        token = json_get(json_get(json_get(m, "params"), "_meta"), "progressToken");
        if (jsonrpc_id_is_valid(token))
                append_to(p->token_ids, id_key(token), json_object_new_string(id_key(id)));
}

/* Hands data to the session with an origin of its own; returns that. */
static uint64_t peer_handle(Peer *p, const char *data, size_t len, int expect) {
        _cleanup_json_ json_object *m = json_tokener_parse(data);
        uint64_t origin = ++p->last_origin;

        if (m)
                note_requests(p, m, origin);
        ASSERT_EQ_INT(mcp_session_handle(p->session, data, len, origin), expect);
        return origin;
}

static uint64_t sendf(Peer *p, const char *fmt, ...) _printf_(2, 3);
static uint64_t sendf(Peer *p, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
        ASSERT_TRUE(vasprintf(&s, fmt, ap) >= 0);
        va_end(ap);
        return peer_handle(p, s, strlen(s), 0);
}

/* A tools/call of exec with nothing but code: CODE is the body of a JSON string (already escaped,
 * "#out a\\n#sleep 200"); ID a string or (call_exec_int) a number. Returns the message's origin. */
static uint64_t call_exec(Peer *p, const char *id, const char *code) {
        assert(p);
        assert(id);
        assert(code);
        return sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                     "\"arguments\":{\"code\":\"%s\"}}}", id, code);
}

/* A tools/call of exec whose "arguments" object has the members ARGS, as JSON
 * ("\"code\":\"#out x\",\"network\":\"pypi\""); ID a string. */
static uint64_t call_exec_with(Peer *p, const char *id, const char *args) {
        assert(p);
        assert(id);
        assert(args);
        return sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                     "\"arguments\":{%s}}}", id, args);
}

static uint64_t call_exec_int(Peer *p, int id, const char *code) {
        assert(p);
        assert(code);
        return sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":%i,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                     "\"arguments\":{\"code\":\"%s\"}}}", id, code);
}

static size_t n_msgs(const Peer *p) {
        return json_object_array_length(p->msgs);
}

static json_object *msg(const Peer *p, size_t i) {
        return json_object_array_get_idx(p->msgs, i);
}

static json_object *last(const Peer *p) {
        ASSERT_TRUE(n_msgs(p) > 0);
        return msg(p, n_msgs(p) - 1);
}

static bool id_matches(json_object *m, const char *id) {
        json_object *v = json_get(m, "id");
        return v && streq(json_object_get_string(v), id);
}

/* The reply (result or error) to request id, NULL if none came. Ids are
 * compared in their JSON text form: 5 and "5" look alike, so tests keep
 * them distinct. */
static json_object *reply_to(const Peer *p, const char *id) {
        json_object *found = NULL;

        for (size_t i = 0; i < n_msgs(p); i++) {
                json_object *m = msg(p, i);
                if (json_get(m, "method") || !id_matches(m, id))
                        continue;
                ASSERT_TRUE(!found);            /* exactly one reply per request */
                found = m;
        }
        return found;
}

static unsigned count_method(const Peer *p, const char *method) {
        unsigned n = 0;
        for (size_t i = 0; i < n_msgs(p); i++)
                n += streq_ptr(json_get_string(msg(p, i), "method"), method);
        return n;
}

static int error_code(json_object *reply) {
        ASSERT_TRUE(reply);
        ASSERT_TRUE(json_get(reply, "error"));
        return json_object_get_int(json_get(json_get(reply, "error"), "code"));
}

static const char *error_message(json_object *reply) {
        return json_get_string(json_get(reply, "error"), "message");
}

static json_object *result(json_object *reply) {
        ASSERT_TRUE(reply);
        ASSERT_TRUE(!json_get(reply, "error"));
        ASSERT_TRUE(json_get(reply, "result"));
        return json_get(reply, "result");
}

static bool is_error_result(json_object *res) {
        return json_object_get_boolean(json_get(res, "isError"));
}

static const char *text_of(json_object *res) {
        return json_get_string(json_object_array_get_idx(json_get(res, "content"), 0), "text");
}

typedef bool (*cond_t)(void *userdata);

static void run_until(Env *env, cond_t cond, void *userdata, unsigned timeout_ms, const char *what) {
        uint64_t end = now_usec() + timeout_ms * USEC_PER_MSEC;

        while (!cond(userdata)) {
                if (now_usec() > end)
                        ASSERT_FAIL_("timed out waiting for %s", what);
                ASSERT_TRUE(sd_event_run(env->event, 10 * USEC_PER_MSEC) >= 0);
        }
}

static void run_for(Env *env, unsigned ms) {
        uint64_t end = now_usec() + ms * USEC_PER_MSEC;
        while (now_usec() < end)
                ASSERT_TRUE(sd_event_run(env->event, 5 * USEC_PER_MSEC) >= 0);
}

typedef struct Wait {
        const Peer *peer;
        const char *id;
        const FakeBroker *broker;
        unsigned n;
} Wait;

static bool has_reply(void *userdata) {
        Wait *w = userdata;
        for (size_t i = 0; i < n_msgs(w->peer); i++)
                if (!json_get(msg(w->peer, i), "method") && id_matches(msg(w->peer, i), w->id))
                        return true;
        return false;
}

static bool has_n_msgs(void *userdata) {
        Wait *w = userdata;
        return n_msgs(w->peer) >= w->n;
}

static bool broker_started(void *userdata) {
        Wait *w = userdata;
        return fake_broker_n_started(w->broker) >= w->n;
}

static bool broker_cancelled(void *userdata) {
        Wait *w = userdata;
        return fake_broker_n_cancelled(w->broker) >= w->n;
}

static bool server_idle(void *userdata) {
        return mcp_server_in_flight(userdata) == 0;
}

static json_object *wait_reply(Env *env, Peer *p, const char *id) {
        Wait w = { .peer = p, .id = id };
        run_until(env, has_reply, &w, 5000, id);
        return reply_to(p, id);
}

static void wait_started(Env *env, unsigned n) {
        Wait w = { .broker = env->broker, .n = n };
        run_until(env, broker_started, &w, 5000, "runs to start");
}

static void wait_cancelled(Env *env, unsigned n) {
        Wait w = { .broker = env->broker, .n = n };
        run_until(env, broker_cancelled, &w, 5000, "runs to be cancelled");
}

static void initialize(Peer *p, const char *version) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                 "\"capabilities\":{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}",
              version);
        ASSERT_TRUE(result(reply_to(p, "init")));
        sendf(p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientCapabilities\":{}}"

/* ---------------------------------------------------------------------- */

TEST(test_negotiation) {
        static const struct {
                const char *asked, *answered;
                bool title;
        } cases[] = {
                { "2024-11-05", "2024-11-05", false },
                { "2025-03-26", "2025-03-26", false },
                { "2025-06-18", "2025-06-18", true },
                { "2025-11-25", "2025-11-25", true },
                { "1999-01-01", "2025-11-25", true },   /* unknown: our newest, no error */
                { "2026-07-28", "2025-11-25", true },   /* that one has no initialize */
        };
        Env env;

        env_init(&env, 2, 2);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Peer p;
                json_object *r, *caps, *info;

                peer_open(&env, &p, "stdio");
                ASSERT_TRUE(!mcp_session_protocol_version(p.session));
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                          "\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"0\"}}}",
                      cases[i].asked);
                r = result(reply_to(&p, "1"));
                ASSERT_STREQ(json_get_string(r, "protocolVersion"), cases[i].answered);
                ASSERT_STREQ(mcp_session_protocol_version(p.session), cases[i].answered);
                caps = json_get(r, "capabilities");
                ASSERT_TRUE(json_object_is_type(json_get(caps, "tools"), json_type_object));
                ASSERT_TRUE(json_object_is_type(json_get(json_get(caps, "tools"), "listChanged"), json_type_boolean));
                ASSERT_FALSE(json_object_get_boolean(json_get(json_get(caps, "tools"), "listChanged")));
                ASSERT_TRUE(json_object_is_type(json_get(caps, "logging"), json_type_object));
                info = json_get(r, "serverInfo");
                ASSERT_STREQ(json_get_string(info, "name"), "mcp-exec");
                ASSERT_TRUE(json_get_string(info, "version"));
                ASSERT_EQ_INT(!!json_get(info, "title"), cases[i].title);
                ASSERT_TRUE(json_get_string(r, "instructions"));
                ASSERT_TRUE(!json_get(r, "resultType"));

                /* The initialized notification gets no reply; a second initialize is refused. */
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
                ASSERT_EQ_INT(n_msgs(&p), 1);
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\"}}",
                      cases[i].asked);
                ASSERT_EQ_INT(error_code(reply_to(&p, "2")), -32600);
                ASSERT_STREQ(mcp_session_protocol_version(p.session), cases[i].answered);
                peer_close(&p);
        }

        /* No protocolVersion at all is malformed. */
        {
                Peer p;
                peer_open(&env, &p, "stdio");
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
                ASSERT_EQ_INT(error_code(reply_to(&p, "1")), -32602);
                ASSERT_TRUE(!mcp_session_protocol_version(p.session));
                peer_close(&p);
        }
        env_done(&env);
}

TEST(test_before_initialize) {
        Env env;
        Peer p;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");

        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "1")), -32600);
        ASSERT_CONTAINS(error_message(reply_to(&p, "1")), "not initialized");
        call_exec_int(&p, 2, "#out x");
        ASSERT_EQ_INT(error_code(reply_to(&p, "2")), -32600);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"info\"}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "3")), -32600);
        /* ping is allowed before initialize. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
        ASSERT_EQ_INT(json_object_object_length(result(reply_to(&p, "4"))), 0);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"no/such\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "5")), -32601);
        /* Notifications are never answered, whatever they are. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\",\"params\":{\"x\":1}}");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":99}}");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":\"bad\"}");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}");
        ASSERT_EQ_INT(n_msgs(&p), 5);
        run_for(&env, 20);
        ASSERT_EQ_INT(fake_broker_n_started(env.broker), 0);
        ASSERT_EQ_INT(env.broker->n_runs, 0);
        peer_close(&p);
        env_done(&env);
}

TEST(test_jsonrpc_errors) {
        Env env;
        Peer p;
        json_object *r;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "unix");
        initialize(&p, "2025-06-18");
        json_object_array_del_idx(p.msgs, 0, n_msgs(&p));

        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,");
        r = last(&p);
        ASSERT_EQ_INT(error_code(r), -32700);
        ASSERT_TRUE(json_object_object_get_ex(r, "id", NULL) && !json_get(r, "id"));

        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}");
        r = last(&p);
        ASSERT_EQ_INT(error_code(r), -32600);
        ASSERT_TRUE(json_object_object_get_ex(r, "id", NULL) && !json_get(r, "id"));
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
        ASSERT_EQ_INT(error_code(last(&p)), -32600);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}");
        ASSERT_EQ_INT(error_code(last(&p)), -32600);
        sendf(&p, "42");
        ASSERT_EQ_INT(error_code(last(&p)), -32600);
        sendf(&p, "{\"id\":\"v\",\"method\":\"ping\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "v")), -32600);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"ap\",\"method\":\"ping\",\"params\":[1]}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "ap")), -32602);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":\"resources/list\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "m")), -32601);
        ASSERT_CONTAINS(error_message(reply_to(&p, "m")), "resources/list");
        /* A reply from the client (we send no requests) is dropped. */
        {
                size_t n = n_msgs(&p);
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}");
                ASSERT_EQ_INT(n_msgs(&p), n);
        }
        /* String and integer ids come back as they were. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"ping\"}");
        ASSERT_TRUE(json_object_is_type(json_get(reply_to(&p, "s-1"), "id"), json_type_string));
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"ping\"}");
        ASSERT_TRUE(json_object_is_type(json_get(reply_to(&p, "9007199254740993"), "id"), json_type_int));

        /* logging/setLevel validates the level. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"l1\",\"method\":\"logging/setLevel\",\"params\":{\"level\":\"warning\"}}");
        ASSERT_TRUE(result(reply_to(&p, "l1")));
        ASSERT_EQ_INT(p.session->log_level, 4);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"l2\",\"method\":\"logging/setLevel\",\"params\":{\"level\":\"loud\"}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "l2")), -32602);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"l3\",\"method\":\"logging/setLevel\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "l3")), -32602);
        peer_close(&p);
        env_done(&env);
}

/* A ping whose params.pad is an array of n - 11 nulls: n JSON values in all
 * (the envelope has 8 values and 3 keys). */
static char *ping_of_values(const char *id, size_t n) {
        size_t k = n - 11;
        char *s = malloc(k * 5 + 128), *p = s;

        ASSERT_TRUE(s && n >= 11);
        p += sprintf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"ping\",\"params\":{\"pad\":[", id);
        for (size_t i = 0; i < k; i++)
                p += sprintf(p, "%snull", i > 0 ? "," : "");
        strcpy(p, "]}}");
        return s;
}

/* Issue 19: a message of more values than any real one is refused before
 * json-c builds it, with id null; one of as many as allowed is served. */
TEST(test_value_limit) {
        _cleanup_free_ char *fits = ping_of_values("fits", JSONRPC_MAX_VALUES),
                            *over = ping_of_values("over", JSONRPC_MAX_VALUES + 1);
        char deep[2 * (JSONRPC_MAX_DEPTH + 1) + 1];
        Env env;
        Peer p;
        json_object *r;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-06-18");

        sendf(&p, "%s", fits);
        ASSERT_TRUE(result(reply_to(&p, "fits")));
        sendf(&p, "%s", over);
        ASSERT_TRUE(!reply_to(&p, "over"));
        r = last(&p);
        ASSERT_EQ_INT(error_code(r), -32600);
        ASSERT_TRUE(json_object_object_get_ex(r, "id", NULL) && !json_get(r, "id"));
        ASSERT_CONTAINS(error_message(r), "16384 JSON values");

        memset(deep, '[', JSONRPC_MAX_DEPTH + 1);
        memset(deep + JSONRPC_MAX_DEPTH + 1, ']', JSONRPC_MAX_DEPTH + 1);
        deep[sizeof deep - 1] = 0;
        sendf(&p, "%s", deep);
        ASSERT_EQ_INT(error_code(last(&p)), -32700);
        ASSERT_CONTAINS(error_message(last(&p)), "nested too deeply");
        peer_close(&p);
        env_done(&env);
}

/* A transport's parse is the one the core uses: it takes the tree (and
 * drops it when done), and what pointed into it is cleared. */
TEST(test_handle_inbound) {
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":\"once\",\"method\":\"ping\"}";
        _cleanup_free_ char *over = ping_of_values("over", JSONRPC_MAX_VALUES + 1);
        McpInbound in = {};
        json_object *keep, *r;
        Env env;
        Peer p;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "http");
        initialize(&p, "2025-06-18");

        ASSERT_EQ_INT(mcp_inbound_parse(ping, strlen(ping), &in), 0);
        ASSERT_TRUE(in.msg && in.method && in.id && in.n_requests == 1);
        note_requests(&p, in.msg, ++p.last_origin);
        keep = json_object_get(in.msg);
        ASSERT_EQ_INT(mcp_session_handle_inbound(p.session, &in, p.last_origin), 0);
        ASSERT_TRUE(!in.msg && !in.method && !in.id && !in.protocol_version && !in.name && !in.param_session);
        ASSERT_EQ_INT(in.n_requests, 1);
        ASSERT_TRUE(result(reply_to(&p, "once")));
        /* Ours was the last reference: the core let go of the tree. */
        ASSERT_EQ_INT(json_object_put(keep), 1);
        mcp_inbound_done(&in);

        /* Refused unparsed: answered with its error and id null. */
        ASSERT_EQ_INT(mcp_inbound_parse(over, strlen(over), &in), -E2BIG);
        ASSERT_TRUE(!in.msg && in.error && in.error_code == JSONRPC_INVALID_REQUEST);
        ASSERT_EQ_INT(mcp_session_handle_inbound(p.session, &in, ++p.last_origin), 0);
        r = last(&p);
        ASSERT_EQ_INT(error_code(r), -32600);
        ASSERT_TRUE(json_object_object_get_ex(r, "id", NULL) && !json_get(r, "id"));
        mcp_inbound_done(&in);

        peer_close(&p);
        env_done(&env);
}

static void check_tool(json_object *tool, bool structured) {
        static const char *const fields[] = {
                "stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out", "oom_killed", "signal",
                "cpu_ms", "memory_peak_bytes",
        };
        json_object *ann = json_get(tool, "annotations"), *out = json_get(tool, "outputSchema");
        json_object *in = json_get(tool, "inputSchema");

        ASSERT_STREQ(json_get_string(tool, "name"), "exec");
        ASSERT_CONTAINS(json_get_string(tool, "description"), "no network");
        ASSERT_FALSE(json_object_get_boolean(json_get(ann, "readOnlyHint")));
        ASSERT_TRUE(json_object_get_boolean(json_get(ann, "destructiveHint")));
        ASSERT_FALSE(json_object_get_boolean(json_get(ann, "idempotentHint")));
        ASSERT_FALSE(json_object_get_boolean(json_get(ann, "openWorldHint")));
        ASSERT_STREQ(json_get_string(in, "type"), "object");
        ASSERT_TRUE(json_get(json_get(in, "properties"), "code"));
        ASSERT_TRUE(json_get(json_get(in, "properties"), "timeout_s"));
        ASSERT_TRUE(json_get(json_get(in, "properties"), "stdin"));
        ASSERT_FALSE(json_object_get_boolean(json_get(in, "additionalProperties")));
        ASSERT_TRUE(json_object_object_get_ex(in, "additionalProperties", NULL));
        if (!structured) {
                ASSERT_TRUE(!out);
                return;
        }
        ASSERT_TRUE(json_get_string(tool, "title"));
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                bool req = false;
                ASSERT_TRUE(json_get(json_get(out, "properties"), fields[i]));
                for (size_t k = 0; k < json_object_array_length(json_get(out, "required")); k++)
                        req = req || streq(json_object_get_string(json_object_array_get_idx(json_get(out, "required"), k)),
                                           fields[i]);
                ASSERT_TRUE(req);
        }
}

TEST(test_tools_list) {
        Env env;
        Peer p, q;
        json_object *r, *tools;
        _cleanup_free_ char *first = NULL;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
        r = result(reply_to(&p, "1"));
        tools = json_get(r, "tools");
        ASSERT_EQ_INT(json_object_array_length(tools), 1);
        check_tool(json_object_array_get_idx(tools, 0), true);
        ASSERT_TRUE(!json_get(r, "nextCursor"));
        first = strdup(json_serialize(r, NULL));

        /* Deterministic. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}");
        ASSERT_STREQ(json_serialize(result(reply_to(&p, "2")), NULL), first);
        /* We never issue cursors, so none is valid. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"cursor\":\"abc\"}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "3")), -32602);
        peer_close(&p);

        /* The oldest revision gets the oldest Tool shape. */
        peer_open(&env, &q, "stdio");
        initialize(&q, "2024-11-05");
        sendf(&q, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
        r = json_object_array_get_idx(json_get(result(reply_to(&q, "1")), "tools"), 0);
        ASSERT_TRUE(!json_get(r, "annotations") && !json_get(r, "outputSchema") && !json_get(r, "title"));
        peer_close(&q);
        env_done(&env);
}

TEST(test_call_result) {
        Env env;
        Peer p;
        json_object *res, *sc, *parsed;
        FakeRun *run;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-06-18");

        call_exec_with(&p, "ok",
                       "\"code\":\"#out hello\\n#err warn\\n#echo\",\"stdin\":\"IN\\u00e9\",\"timeout_s\":999");
        ASSERT_TRUE(!reply_to(&p, "ok"));       /* comes later, from the loop */
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 1);
        res = result(wait_reply(&env, &p, "ok"));
        ASSERT_FALSE(is_error_result(res));
        sc = json_get(res, "structuredContent");
        ASSERT_TRUE(sc);
        parsed = json_tokener_parse(text_of(res));
        ASSERT_TRUE(json_object_equal(parsed, sc));
        json_object_put(parsed);
        ASSERT_STREQ(json_get_string(sc, "stdout"), "hello\nIN\xc3\xa9");
        ASSERT_STREQ(json_get_string(sc, "stderr"), "warn\n");
        ASSERT_EQ_INT(json_object_get_int(json_get(sc, "exit_code")), 0);
        ASSERT_EQ_INT(json_object_get_int(json_get(sc, "duration_ms")), 7);
        ASSERT_EQ_INT(json_object_get_int(json_get(sc, "cpu_ms")), 3);
        ASSERT_EQ_INT(json_object_get_int(json_get(sc, "memory_peak_bytes")), 4096);
        ASSERT_FALSE(json_object_get_boolean(json_get(sc, "timed_out")));
        ASSERT_TRUE(json_object_object_get_ex(sc, "signal", NULL) && !json_get(sc, "signal"));
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 0);

        /* What reached the broker: the code and stdin exactly, the timeout clamped. */
        ASSERT_EQ_INT(env.broker->n_runs, 1);
        run = env.broker->runs[0];
        ASSERT_EQ_U64(run->code_len, strlen("#out hello\n#err warn\n#echo"));
        ASSERT_MEMEQ(run->code, "#out hello\n#err warn\n#echo", run->code_len);
        ASSERT_EQ_U64(run->stdin_len, 4);
        ASSERT_MEMEQ(run->stdin_data, "IN\xc3\xa9", 4);
        ASSERT_EQ_INT(json_object_get_int(json_object_object_get(run->request, "timeout_s")), 300);
        ASSERT_CONTAINS(json_object_get_string(json_object_object_get(run->request, "tag")), ":ok");

        /* Non-zero exits, timeouts and OOM kills are results, not errors. */
        call_exec(&p, "three", "#err Traceback\\n#exit 3");
        res = result(wait_reply(&env, &p, "three"));
        ASSERT_FALSE(is_error_result(res));
        ASSERT_EQ_INT(json_object_get_int(json_get(json_get(res, "structuredContent"), "exit_code")), 3);
        ASSERT_EQ_INT(json_object_get_int(json_object_object_get(env.broker->runs[1]->request, "timeout_s")), 30);

        call_exec_with(&p, "to", "\"code\":\"#timeout\",\"timeout_s\":2");
        res = result(wait_reply(&env, &p, "to"));
        ASSERT_FALSE(is_error_result(res));
        sc = json_get(res, "structuredContent");
        ASSERT_TRUE(json_object_get_boolean(json_get(sc, "timed_out")));
        ASSERT_STREQ(json_get_string(sc, "signal"), "SIGKILL");
        ASSERT_EQ_INT(json_object_get_int(json_object_object_get(env.broker->runs[2]->request, "timeout_s")), 2);

        call_exec(&p, "oom", "#oom");
        res = result(wait_reply(&env, &p, "oom"));
        ASSERT_FALSE(is_error_result(res));
        ASSERT_TRUE(json_object_get_boolean(json_get(json_get(res, "structuredContent"), "oom_killed")));
        peer_close(&p);

        /* Before structured content (2025-03-26): the same JSON as text only. */
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-03-26");
        call_exec(&p, "old", "#out x");
        res = result(wait_reply(&env, &p, "old"));
        ASSERT_FALSE(is_error_result(res));
        ASSERT_TRUE(!json_get(res, "structuredContent"));
        parsed = json_tokener_parse(text_of(res));
        ASSERT_STREQ(json_get_string(parsed, "stdout"), "x\n");
        json_object_put(parsed);
        peer_close(&p);
        env_done(&env);
}

/* Figures and files through the whole core, on every revision: what the
 * fake launcher sends comes back as blocks, input files reach it exactly,
 * and bad files are refused before anything runs. */
TEST(test_call_outputs) {
        Env env;

        env_init(&env, 2, 2);
        /* What mcp-execd sets when the broker's info says "result_channel". */
        mcp_server_free(env.server);
        env.config.result_channel = env.broker->result_channel = true;
        env.config.max_images = 8;
        env.config.max_image_bytes = 1 << 20;
        env.config.max_files_out = 16;
        env.config.max_result_bytes = 4 << 20;
        env.config.max_input_bytes = 1 << 20;
        ASSERT_EQ_INT(mcp_server_new(env.event, &env.config, &env.server), 0);

        for (size_t v = 0; mcp_protocol_versions[v]; v++) {
                const char *version = mcp_protocol_versions[v];
                bool stateless = streq(version, "2026-07-28");
                json_object *res, *content, *b;
                FakeRun *run;
                Peer p;
                char id[32];

                peer_open(&env, &p, "stdio");
                if (!stateless) {
                        initialize(&p, version);
                        ASSERT_CONTAINS(json_get_string(result(reply_to(&p, "init")), "instructions"),
                                        "files the program writes under /tmp/outputs/");
                }
                (void) snprintf(id, sizeof id, "rich-%zu", v);
                sendf(&p,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                      "\"arguments\":{\"code\":\"#figure\\n#file /tmp/outputs/r.csv a,b\\n#returnfiles\","
                      "\"files\":[{\"name\":\"in.txt\",\"content\":\"h\\u00e9\"},"
                      "{\"name\":\"in.bin\",\"content\":\"AP8K\",\"encoding\":\"base64\"}]}%s%s}}",
                      id, stateless ? "," : "", stateless ? META : "");
                res = result(wait_reply(&env, &p, id));
                ASSERT_FALSE(is_error_result(res));

                run = env.broker->runs[env.broker->n_runs - 1];
                ASSERT_EQ_INT(run->n_files, 2);
                ASSERT_EQ_U64(run->files[0].size, 3);
                ASSERT_MEMEQ(run->files[0].data, "h\xc3\xa9", 3);
                ASSERT_EQ_U64(run->files[1].size, 3);
                ASSERT_MEMEQ(run->files[1].data, "\x00\xff\x0a", 3);

                /* result text, the figure, r.csv, in.txt (text), in.bin (blob) */
                content = json_get(res, "content");
                ASSERT_EQ_INT(json_object_array_length(content), 5);
                b = json_object_array_get_idx(content, 1);
                ASSERT_STREQ(json_get_string(b, "type"), "image");
                ASSERT_STREQ(json_get_string(b, "mimeType"), "image/png");
                ASSERT_TRUE(strneq(json_get_string(b, "data"), "iVBORw0KGgo", 11));
                b = json_get(json_object_array_get_idx(content, 2), "resource");
                ASSERT_STREQ(json_get_string(b, "uri"), "file:///tmp/outputs/r.csv");
                ASSERT_STREQ(json_get_string(b, "text"), "a,b");
                b = json_get(json_object_array_get_idx(content, 3), "resource");
                ASSERT_STREQ(json_get_string(b, "uri"), "file:///tmp/outputs/in.txt");
                ASSERT_STREQ(json_get_string(b, "text"), "h\xc3\xa9");
                b = json_get(json_object_array_get_idx(content, 4), "resource");
                ASSERT_STREQ(json_get_string(b, "blob"), "AP8K");
                ASSERT_STREQ(json_get_string(b, "mimeType"), "application/octet-stream");
                ASSERT_EQ_INT(!!json_get(res, "structuredContent"), mcp_revision_find(version)->structured);
                if (json_get(res, "structuredContent")) {
                        json_object *sc = json_get(res, "structuredContent");
                        ASSERT_EQ_INT(json_object_array_length(json_get(sc, "images")), 1);
                        ASSERT_EQ_INT(json_object_array_length(json_get(sc, "files")), 3);
                        ASSERT_TRUE(!strstr(json_serialize(sc, NULL), "iVBORw0KGgo"));
                }
                peer_close(&p);
        }

        /* Bad input files: an isError result, and nothing runs. */
        {
                static const char *const bad[] = {
                        "[{\"name\":\"../x\",\"content\":\"\"}]",
                        "[{\"name\":\"a\",\"content\":\"\"},{\"name\":\"a\",\"content\":\"\"}]",
                        "[{\"name\":\"a\",\"content\":\"!!\",\"encoding\":\"base64\"}]",
                        "{\"name\":\"a\",\"content\":\"\"}",
                };
                unsigned runs = env.broker->n_runs;
                Peer p;

                peer_open(&env, &p, "stdio");
                initialize(&p, "2025-06-18");
                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        char id[16];
                        json_object *res;

                        (void) snprintf(id, sizeof id, "bad-%zu", i);
                        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                                  "\"arguments\":{\"code\":\"#out x\",\"files\":%s}}}",
                              id, bad[i]);
                        res = result(reply_to(&p, id));
                        ASSERT_TRUE(is_error_result(res));
                        ASSERT_TRUE(!json_get(res, "structuredContent"));
                }
                run_for(&env, 20);
                ASSERT_EQ_INT(env.broker->n_runs, runs);
                peer_close(&p);
        }
        env_done(&env);
}

TEST(test_call_invalid) {
        static const struct {
                const char *args, *message;
        } cases[] = {
                { "{}", "missing argument \"code\"" },
                { "{\"code\":\"\"}", "empty" },
                { "{\"code\":7}", "must be a string" },
                { "{\"code\":\"x\",\"stdin\":5}", "\"stdin\" must be a string" },
                { "{\"code\":\"x\",\"timeout_s\":-3}", "negative" },
                { "{\"code\":\"x\",\"timeout_s\":\"10\"}", "whole number" },
                { "{\"code\":\"x\",\"cwd\":\"/\"}", "unknown argument \"cwd\"" },
                { "{\"code\":\"xxxxxxxxxxx\"}", "more than the limit of 10 bytes" },
                { "{\"code\":\"x\",\"stdin\":\"yyyyyy\"}", "more than the limit of 5 bytes" },
        };
        Env env;
        Peer p;

        env_init(&env, 2, 2);
        env.server = mcp_server_free(env.server);
        env.config.max_code_bytes = 10;
        env.config.max_stdin_bytes = 5;
        ASSERT_EQ_INT(mcp_server_new(env.event, &env.config, &env.server), 0);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char id[16];
                json_object *res;

                (void) snprintf(id, sizeof id, "bad%zu", i);
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                          "\"arguments\":%s}}",
                      id, cases[i].args);
                res = result(reply_to(&p, id));         /* at once */
                ASSERT_TRUE(is_error_result(res));
                ASSERT_TRUE(!json_get(res, "structuredContent"));
                ASSERT_CONTAINS(text_of(res), cases[i].message);
        }
        /* No arguments at all, and null arguments: the same as {}. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"noargs\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"}}");
        ASSERT_TRUE(is_error_result(result(reply_to(&p, "noargs"))));
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"nullargs\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":null}}");
        ASSERT_TRUE(is_error_result(result(reply_to(&p, "nullargs"))));

        /* Protocol errors: unknown tool, malformed request. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"tool\",\"method\":\"tools/call\",\"params\":{\"name\":\"bash\","
                  "\"arguments\":{\"code\":\"x\"}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "tool")), -32602);
        ASSERT_CONTAINS(error_message(reply_to(&p, "tool")), "bash");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"noname\",\"method\":\"tools/call\",\"params\":{\"arguments\":{}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "noname")), -32602);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"noparams\",\"method\":\"tools/call\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "noparams")), -32602);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"argstr\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":\"print(1)\"}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "argstr")), -32602);

        run_for(&env, 20);
        ASSERT_EQ_INT(env.broker->n_runs, 0);
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 0);
        peer_close(&p);
        env_done(&env);
}

TEST(test_call_failures) {
        Env env;
        Peer p;
        json_object *res;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");

        env.broker->fail_code = "sandbox-unavailable";
        env.broker->fail_message = "the probe saw a network interface";
        call_exec(&p, "u", "#out x");
        res = result(wait_reply(&env, &p, "u"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_TRUE(!json_get(res, "structuredContent"));
        ASSERT_STREQ(text_of(res), "the sandbox is unavailable: the probe saw a network interface");

        /* "busy" from the broker although the call holds one of our slots:
         * another front end's runs fill the broker. The call asks again after
         * a moment instead of failing (and freeing its slot for the next
         * queued call to fail the same way). */
        env.broker->fail_code = "busy";
        env.broker->fail_message = "too many runs at once";
        call_exec(&p, "b", "#out x");
        res = result(wait_reply(&env, &p, "b"));
        ASSERT_TRUE(!is_error_result(res));
        ASSERT_STREQ(json_get_string(json_get(res, "structuredContent"), "stdout"), "x\n");
        ASSERT_TRUE(!env.broker->fail_code);    /* the refusal did happen */

        env.broker->fail_code = "start-failed";
        call_exec(&p, "sf", "#out x");
        ASSERT_CONTAINS(text_of(result(wait_reply(&env, &p, "sf"))), "could not start");
        peer_close(&p);
        env_done(&env);

        /* No broker at all: an immediate isError result saying so. */
        env_init(&env, 2, 2);
        env.server = mcp_server_free(env.server);
        env.config.broker_socket = "/nonexistent/mcp-exec-test/broker.sock";
        ASSERT_EQ_INT(mcp_server_new(env.event, &env.config, &env.server), 0);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        call_exec(&p, "nb", "#out x");
        res = result(reply_to(&p, "nb"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_CONTAINS(text_of(res), "unreachable");
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 0);
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 0);
        peer_close(&p);
        env_done(&env);
}

/* Issue 22: "network" off, unknown, not the caller's, passed on, its
 * counts in the result, and the broker's egress-unavailable. */
TEST(test_call_network) {
        static char *pypi_hosts[] = { (char *) "pypi.org", NULL };
        static char *api_callers[] = { (char *) "uid:4242", NULL };
        static EgressPolicy policies[] = {
                { .name = (char *) "pypi", .hosts = pypi_hosts, .ports = { 443 }, .n_ports = 1 },
                { .name = (char *) "api", .hosts = pypi_hosts, .ports = { 443 }, .n_ports = 1, .callers = api_callers },
        };
        static const EgressConfig egress = { .policies = policies, .n_policies = 2, .max_connections = 8,
                                             .max_bytes = 1 << 20 };
        json_object *res, *e;
        Env env;
        Peer p;

        /* No policies: refused at once, nothing reaches the broker. */
        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        call_exec_with(&p, "off", "\"code\":\"#out x\",\"network\":\"pypi\"");
        res = result(reply_to(&p, "off"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_STREQ(text_of(res), "network access is not enabled on this server (no egress policy configured); "
                                   "runs have no network");
        run_for(&env, 20);
        ASSERT_EQ_INT(env.broker->n_runs, 0);
        peer_close(&p);
        env_done(&env);

        env_init(&env, 2, 2);
        env.server = mcp_server_free(env.server);
        env.config.egress = &egress;
        ASSERT_EQ_INT(mcp_server_new(env.event, &env.config, &env.server), 0);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");

        call_exec_with(&p, "unknown", "\"code\":\"#out x\",\"network\":\"github\"");
        res = result(reply_to(&p, "unknown"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_CONTAINS(text_of(res), "unknown network \"github\": this server's egress policies are \"pypi\", \"api\"");
        call_exec_with(&p, "notmine", "\"code\":\"#out x\",\"network\":\"api\"");
        res = result(reply_to(&p, "notmine"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_CONTAINS(text_of(res), "not available to you");
        run_for(&env, 20);
        ASSERT_EQ_INT(env.broker->n_runs, 0);

        /* Allowed: the broker gets it, the result shows the counts, only
         * the known members and verdicts. */
        call_exec_with(&p, "ok", "\"code\":\"#out x\",\"network\":\"pypi\"");
        res = result(wait_reply(&env, &p, "ok"));
        ASSERT_TRUE(!is_error_result(res));
        ASSERT_EQ_INT(env.broker->n_runs, 1);
        ASSERT_STREQ(json_get_string(env.broker->runs[0]->request, "network"), "pypi");
        e = json_get(json_get(res, "structuredContent"), "egress");
        ASSERT_STREQ(json_serialize(e, NULL),
                     "{\"policy\":\"pypi\",\"connections\":{\"allowed\":2},\"bytes_up\":5,\"bytes_down\":6}");
        /* A run without network has none. */
        call_exec(&p, "plain", "#out x");
        res = result(wait_reply(&env, &p, "plain"));
        ASSERT_TRUE(!json_get(json_get(res, "structuredContent"), "egress"));
        ASSERT_TRUE(!json_get(env.broker->runs[1]->request, "network"));

        /* With a result channel, a run with a network waits for the
         * broker's exit (its counts) instead of detaching at the
         * launcher's report: the counts are there though the exit comes
         * late. */
        peer_close(&p);
        env.server = mcp_server_free(env.server);
        env.config.result_channel = env.broker->result_channel = true;
        ASSERT_EQ_INT(mcp_server_new(env.event, &env.config, &env.server), 0);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        call_exec_with(&p, "late", "\"code\":\"#out x\\n#exitlate 300\",\"network\":\"pypi\"");
        res = result(wait_reply(&env, &p, "late"));
        ASSERT_TRUE(!is_error_result(res));
        ASSERT_TRUE(json_get(json_get(res, "structuredContent"), "egress"));

        /* So does a run with code mode's tools, which "started" names: its
         * tool_calls come with the broker's exit only. */
        env.broker->tools = true;
        call_exec_with(&p, "tools", "\"code\":\"#out x\\n#exitlate 300\"");
        res = result(wait_reply(&env, &p, "tools"));
        ASSERT_TRUE(!is_error_result(res));
        ASSERT_EQ_INT(json_get_int64(json_get(json_get(json_get(res, "structuredContent"), "tool_calls"), "everything"),
                                     "calls", -1), 2);
        env.broker->tools = false;

        env.broker->fail_code = "egress-unavailable";
        env.broker->fail_message = "mcp-exec-egressd is not reachable";
        call_exec_with(&p, "down", "\"code\":\"#out x\",\"network\":\"pypi\"");
        res = result(wait_reply(&env, &p, "down"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_STREQ(text_of(res), "the code did not run: its network (the egress proxy) could not be set up: "
                                   "mcp-exec-egressd is not reachable; retry later, or run without \"network\"");
        peer_close(&p);
        env_done(&env);
}

/* Issue 23: "packages" refused before any unit (off, not in the wheelhouse;
 * counted), passed on to the run, the session's call and session_create,
 * the installer's report as structuredContent.packages (never in stdout),
 * and a failed install as an isError with the installer's text. */
TEST(test_call_packages) {
        char dir[] = "/tmp/test-mcp-packages.XXXXXX", manifest[96], want[256];
        _cleanup_(tool_packages_freep) ToolPackages *pk = NULL;
        McpPackageStats st;
        json_object *res, *sc, *pkg;
        FILE *f;
        Env env;
        Peer p;

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(manifest, sizeof manifest, "%s/SHA256SUMS", dir);
        ASSERT_EQ_INT(tool_packages_new(dir, 4, &pk), 0);

        /* An empty wheelhouse: off, and nothing reaches the broker. */
        env_init(&env, 2, 2);
        env.server = mcp_server_free(env.server);
        env.config.packages = pk;
        env.config.result_channel = env.broker->result_channel = true;
        env.config.max_sessions = 4;
        env.config.max_sessions_per_caller = 2;
        env.config.session_idle_s = 600;
        env.config.session_max_s = 3600;
        ASSERT_EQ_INT(mcp_server_new(env.event, &env.config, &env.server), 0);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        call_exec_with(&p, "off", "\"code\":\"#out x\",\"packages\":[\"a\"]");
        res = result(reply_to(&p, "off"));
        ASSERT_TRUE(is_error_result(res));
        (void) snprintf(want, sizeof want, "packages are not enabled on this server: its wheelhouse %s is empty or "
                                           "missing; the operator fills it with `mcp-exec wheels add NAME`", dir);
        ASSERT_STREQ(text_of(res), want);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"l0\",\"method\":\"tools/list\"}");
        ASSERT_TRUE(!json_get(json_get(json_get(json_object_array_get_idx(json_get(result(reply_to(&p, "l0")), "tools"), 0),
                                                "inputSchema"), "properties"), "packages"));

        /* Filled: tools/list sees it without a restart. */
        f = fopen(manifest, "we");
        ASSERT_TRUE(f);
        fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  a-1.0-py3-none-any.whl\n", f);
        ASSERT_EQ_INT(fclose(f), 0);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"l1\",\"method\":\"tools/list\"}");
        res = json_object_array_get_idx(json_get(result(reply_to(&p, "l1")), "tools"), 0);
        ASSERT_TRUE(json_get(json_get(json_get(res, "inputSchema"), "properties"), "packages"));
        ASSERT_CONTAINS(json_get_string(res, "description"), "at most 4 per call: a (1.0).");

        call_exec_with(&p, "nope", "\"code\":\"#out x\",\"packages\":[\"polars\"]");
        res = result(reply_to(&p, "nope"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_STREQ(text_of(res), "package 'polars' is not in this server's wheelhouse; it has: a (1.0)");
        call_exec_with(&p, "opt", "\"code\":\"#out x\",\"packages\":[\"-r/etc/shadow\"]");
        res = result(reply_to(&p, "opt"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_CONTAINS(text_of(res), "'-r/etc/shadow' is not a package spec");
        run_for(&env, 20);
        ASSERT_EQ_INT(env.broker->n_runs, 0);

        /* Installed: the report beside the output, the log not in stdout. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"ok\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#packages {\\\"ok\\\":true,\\\"requested\\\":[\\\"a\\\"],\\\"installed\\\":"
                  "[{\\\"name\\\":\\\"a\\\",\\\"version\\\":\\\"1.0\\\"}],\\\"duration_us\\\":1500000}\\n#out hi\","
                  "\"packages\":[\"a\"]}}}");
        res = result(wait_reply(&env, &p, "ok"));
        ASSERT_TRUE(!is_error_result(res));
        ASSERT_EQ_INT(env.broker->n_runs, 1);
        ASSERT_STREQ(json_serialize(json_get(env.broker->runs[0]->request, "packages"), NULL), "[\"a\"]");
        sc = json_get(res, "structuredContent");
        ASSERT_STREQ(json_get_string(sc, "stdout"), "hi\n");
        pkg = json_get(sc, "packages");
        ASSERT_TRUE(json_get_bool(pkg, "ok"));
        ASSERT_STREQ(json_get_string(pkg, "log"), FAKE_PIP_LOG);
        ASSERT_STREQ(json_serialize(json_get(pkg, "installed"), NULL), "[{\"name\":\"a\",\"version\":\"1.0\"}]");
        ASSERT_TRUE(!strstr(text_of(res), "\"stdout\":\"hi\\nProcessing"));

        /* Failed: an isError with the installer's text, the report kept. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"bad\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#packages {\\\"ok\\\":false,\\\"error\\\":\\\"no wheel of a matches "
                  "a==9\\\",\\\"duration_us\\\":250000}\\n#exit 1\",\"packages\":[\"a==9\"]}}}");
        res = result(wait_reply(&env, &p, "bad"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_STREQ(text_of(res), "no wheel of a matches a==9");
        pkg = json_get(json_get(res, "structuredContent"), "packages");
        ASSERT_TRUE(pkg && !json_get_bool(pkg, "ok"));
        ASSERT_STREQ(json_get_string(pkg, "log"), FAKE_PIP_LOG);
        /* A run without packages sends none and reports none. */
        call_exec(&p, "plain", "#out x");
        res = result(wait_reply(&env, &p, "plain"));
        ASSERT_TRUE(!json_get(json_get(res, "structuredContent"), "packages"));
        ASSERT_TRUE(!json_get(env.broker->runs[2]->request, "packages"));

        /* session_create takes them; exec in the session may add more. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"sc\",\"method\":\"tools/call\",\"params\":{\"name\":\"session_create\","
                  "\"arguments\":{\"packages\":[\"a\"]}}}");
        res = result(wait_reply(&env, &p, "sc"));
        ASSERT_TRUE(!is_error_result(res));
        ASSERT_STREQ(json_serialize(json_get(env.broker->session_create, "packages"), NULL), "[\"a\"]");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"sx\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#out s\",\"session\":\"%s." FAKE_SESSION_ID "\",\"packages\":[\"A\"]}}}",
              node_id());
        res = result(wait_reply(&env, &p, "sx"));
        ASSERT_TRUE(!is_error_result(res));
        ASSERT_STREQ(json_get_string(env.broker->runs[env.broker->n_runs - 1]->request, "op"), "session_exec");
        ASSERT_STREQ(json_serialize(json_get(env.broker->runs[env.broker->n_runs - 1]->request, "packages"), NULL),
                     "[\"A\"]");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"sc2\",\"method\":\"tools/call\",\"params\":{\"name\":\"session_create\","
                  "\"arguments\":{\"packages\":[\"b\"]}}}");
        res = result(reply_to(&p, "sc2"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_STREQ(text_of(res), "package 'b' is not in this server's wheelhouse; it has: a (1.0)");

        mcp_server_package_stats(env.server, &st);
        ASSERT_EQ_U64(st.ok, 1);
        ASSERT_EQ_U64(st.failed, 1);
        ASSERT_EQ_U64(st.refused, 4);
        ASSERT_EQ_U64(st.install_usec, 1750000);
        peer_close(&p);
        env_done(&env);
        ASSERT_EQ_INT(unlink(manifest), 0);
        ASSERT_EQ_INT(rmdir(dir), 0);
}

TEST(test_batches) {
        Env env;
        Peer p;
        json_object *r;

        env_init(&env, 2, 2);

        /* Refused before initialize and in every revision but 2025-03-26. */
        peer_open(&env, &p, "stdio");
        sendf(&p, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
        ASSERT_EQ_INT(n_msgs(&p), 1);
        ASSERT_EQ_INT(error_code(last(&p)), -32600);
        ASSERT_CONTAINS(error_message(last(&p)), "batch");
        initialize(&p, "2025-06-18");
        sendf(&p, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
        ASSERT_EQ_INT(error_code(last(&p)), -32600);
        ASSERT_CONTAINS(error_message(last(&p)), "2025-06-18");
        ASSERT_TRUE(json_object_object_get_ex(last(&p), "id", NULL) && !json_get(last(&p), "id"));
        peer_close(&p);

        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        sendf(&p, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
        ASSERT_EQ_INT(error_code(last(&p)), -32600);
        peer_close(&p);

        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-03-26");
        json_object_array_del_idx(p.msgs, 0, n_msgs(&p));

        sendf(&p, "[]");
        ASSERT_EQ_INT(n_msgs(&p), 1);
        ASSERT_EQ_INT(error_code(last(&p)), -32600);

        /* Replies come as one array; notifications in it get none. */
        sendf(&p, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"},"
                  "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"method\":\"tools/list\"},"
                  "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"},"
                  "{\"foo\":1},"
                  "[]]");
        ASSERT_EQ_INT(n_msgs(&p), 2);
        r = last(&p);
        ASSERT_TRUE(json_object_is_type(r, json_type_array));
        ASSERT_EQ_INT(json_object_array_length(r), 5);
        ASSERT_TRUE(id_matches(json_object_array_get_idx(r, 0), "1"));
        ASSERT_TRUE(id_matches(json_object_array_get_idx(r, 1), "two"));
        ASSERT_EQ_INT(error_code(json_object_array_get_idx(r, 2)), -32601);
        ASSERT_EQ_INT(error_code(json_object_array_get_idx(r, 3)), -32600);
        ASSERT_EQ_INT(error_code(json_object_array_get_idx(r, 4)), -32600);

        /* Only notifications: nothing at all. */
        sendf(&p, "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/a\"},{\"jsonrpc\":\"2.0\",\"method\":\"notifications/b\"}]");
        ASSERT_EQ_INT(n_msgs(&p), 2);

        /* A tools/call in a batch: the array waits for its result. */
        sendf(&p, "[{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#out batched\\n#sleep 50\"}}},"
                  "{\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"ping\"},"
                  "{\"jsonrpc\":\"2.0\",\"id\":\"c2\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#out other\"}}}]");
        ASSERT_EQ_INT(n_msgs(&p), 2);
        {
                Wait w = { .peer = &p, .n = 3 };
                run_until(&env, has_n_msgs, &w, 5000, "the batch reply");
        }
        r = last(&p);
        ASSERT_TRUE(json_object_is_type(r, json_type_array));
        ASSERT_EQ_INT(json_object_array_length(r), 3);
        ASSERT_TRUE(id_matches(json_object_array_get_idx(r, 0), "p1"));
        /* The others in order of completion: the short one first. */
        ASSERT_TRUE(id_matches(json_object_array_get_idx(r, 1), "c2"));
        ASSERT_TRUE(id_matches(json_object_array_get_idx(r, 2), "c1"));
        /* 2025-03-26 has no structuredContent: the text carries the result. */
        ASSERT_TRUE(!json_get(json_get(json_object_array_get_idx(r, 2), "result"), "structuredContent"));
        ASSERT_CONTAINS(text_of(json_get(json_object_array_get_idx(r, 2), "result")), "batched");

        /* A cancelled call in a batch leaves no entry; the rest still comes. */
        sendf(&p, "[{\"jsonrpc\":\"2.0\",\"id\":\"h\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#hang\"}}},"
                  "{\"jsonrpc\":\"2.0\",\"id\":\"p2\",\"method\":\"ping\"}]");
        wait_started(&env, 3);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"h\"}}");
        {
                Wait w = { .peer = &p, .n = 4 };
                run_until(&env, has_n_msgs, &w, 5000, "the second batch reply");
        }
        r = last(&p);
        ASSERT_EQ_INT(json_object_array_length(r), 1);
        ASSERT_TRUE(id_matches(json_object_array_get_idx(r, 0), "p2"));
        ASSERT_EQ_INT(json_object_array_length(p.unanswered), 0);     /* the batch's array ends it */

        /* Too long. */
        {
                char *big = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&big, &size);
                fputc('[', f);
                for (int i = 0; i < 65; i++)
                        fprintf(f, "%s{\"jsonrpc\":\"2.0\",\"id\":%i,\"method\":\"ping\"}", i ? "," : "", i);
                fputc(']', f);
                ASSERT_EQ_INT(fclose(f), 0);
                (void) peer_handle(&p, big, size, 0);
                free(big);
                ASSERT_EQ_INT(error_code(last(&p)), -32600);
                ASSERT_CONTAINS(error_message(last(&p)), "65");
        }
        peer_close(&p);
        env_done(&env);
}

TEST(test_stateless) {
        Env env;
        Peer p;
        json_object *r, *e;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");

        /* server/discover, with no initialize ever. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\",\"params\":{" META "}}");
        r = result(reply_to(&p, "d"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_STREQ(json_object_get_string(json_object_array_get_idx(json_get(r, "supportedVersions"), 0)),
                     "2026-07-28");
        ASSERT_EQ_INT(json_object_array_length(json_get(r, "supportedVersions")), 5);
        ASSERT_TRUE(json_get(json_get(r, "capabilities"), "tools"));
        ASSERT_TRUE(!json_get(json_get(r, "capabilities"), "logging"));   /* deprecated: not adopted */
        ASSERT_TRUE(json_object_is_type(json_get(r, "ttlMs"), json_type_int));
        ASSERT_STREQ(json_get_string(r, "cacheScope"), "public");
        ASSERT_STREQ(json_get_string(json_get(json_get(r, "_meta"), "io.modelcontextprotocol/serverInfo"), "name"),
                     "mcp-exec");
        ASSERT_STREQ(mcp_session_protocol_version(p.session), "2026-07-28");

        /* An unsupported version gets -32022 with what we support. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"v\",\"method\":\"server/discover\",\"params\":{\"_meta\":{"
                  "\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
                  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        e = reply_to(&p, "v");
        ASSERT_EQ_INT(error_code(e), -32022);
        ASSERT_STREQ(json_get_string(json_get(json_get(e, "error"), "data"), "requested"), "2099-01-01");
        ASSERT_EQ_INT(json_object_array_length(json_get(json_get(json_get(e, "error"), "data"), "supported")), 5);
        /* The same for tools/list with an unknown version in _meta. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"v2\",\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                  "\"io.modelcontextprotocol/protocolVersion\":\"2027-01-01\","
                  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "v2")), -32022);

        /* Malformed _meta: -32602. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"nm\",\"method\":\"server/discover\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "nm")), -32602);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"nc\",\"method\":\"server/discover\",\"params\":{\"_meta\":{"
                  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "nc")), -32602);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"ll\",\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                  "\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/logLevel\":\"loud\"}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "ll")), -32602);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"pv\",\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                  "\"io.modelcontextprotocol/protocolVersion\":5,\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "pv")), -32602);

        /* Methods this revision removed. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"ping\",\"method\":\"ping\",\"params\":{" META "}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "ping")), -32601);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"lv\",\"method\":\"logging/setLevel\",\"params\":{\"level\":\"info\","
                  META "}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "lv")), -32601);

        /* tools/list and tools/call, statelessly. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"tl\",\"method\":\"tools/list\",\"params\":{" META "}}");
        r = result(reply_to(&p, "tl"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_TRUE(json_object_is_type(json_get(r, "ttlMs"), json_type_int));
        ASSERT_STREQ(json_get_string(r, "cacheScope"), "public");
        check_tool(json_object_array_get_idx(json_get(r, "tools"), 0), true);

        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"tc\",\"method\":\"tools/call\",\"params\":{" META ","
                  "\"name\":\"exec\",\"arguments\":{\"code\":\"#out modern\"}}}");
        r = result(wait_reply(&env, &p, "tc"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_FALSE(is_error_result(r));
        ASSERT_STREQ(json_get_string(json_get(r, "structuredContent"), "stdout"), "modern\n");
        ASSERT_TRUE(json_get(json_get(r, "_meta"), "io.modelcontextprotocol/serverInfo"));

        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"te\",\"method\":\"tools/call\",\"params\":{" META ","
                  "\"name\":\"exec\",\"arguments\":{\"code\":\"\"}}}");
        r = result(reply_to(&p, "te"));
        ASSERT_TRUE(is_error_result(r));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");

        /* Legacy requests on this session still need initialize. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"leg\",\"method\":\"tools/list\"}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "leg")), -32600);
        peer_close(&p);

        /* And both eras can share a session. */
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-06-18");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"mix\",\"method\":\"tools/list\",\"params\":{" META "}}");
        ASSERT_STREQ(json_get_string(result(reply_to(&p, "mix")), "resultType"), "complete");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"leg\",\"method\":\"tools/list\"}");
        ASSERT_TRUE(!json_get(result(reply_to(&p, "leg")), "resultType"));
        ASSERT_STREQ(mcp_session_protocol_version(p.session), "2025-06-18");
        peer_close(&p);
        env_done(&env);
}

/* How many messages of kind were sent for request id (JSON text), all of
 * them with origin; with id NULL: how many for no request came with origin. */
static unsigned facts_with(const Peer *p, McpMessageKind kind, const char *id, uint64_t origin) {
        unsigned n = 0;

        for (size_t i = 0; i < json_object_array_length(p->facts); i++) {
                json_object *f = json_object_array_get_idx(p->facts, i);
                const char *fid = json_get_string(f, "id");
                uint64_t o = (uint64_t) json_object_get_int64(json_get(f, "origin"));
                if (json_object_get_int(json_get(f, "kind")) != (int) kind || (id ? !fid || !streq(fid, id) : !!fid))
                        continue;
                if (id)
                        ASSERT_EQ_U64(o, origin);
                else if (o != origin)
                        continue;
                n++;
        }
        return n;
}

/* A transport routes by the facts alone (HTTP: each POST gets its own
 * replies and progress): two calls of one session that came from two
 * places never get each other's progress, reply or end. */
TEST(test_routing_facts) {
        uint64_t oa, ob, oc, ocancel, obad, ounknown, obatch;
        json_object *f;
        Env env;
        Peer p;

        env_init(&env, 1, 4);
        peer_open(&env, &p, "http");
        initialize(&p, "2025-03-26");
        json_object_array_del_idx(p.facts, 0, json_object_array_length(p.facts));

        oa = sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                       "{\"progressToken\":\"ta\"},\"name\":\"exec\",\"arguments\":{\"code\":\"#out a\\n#sleep 300\"}}}");
        ob = sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                       "{\"progressToken\":7},\"name\":\"exec\",\"arguments\":{\"code\":\"#hang\"}}}");
        oc = call_exec_int(&p, 7, "#out c");
        /* "b" and 7 wait behind "a": progress for "b" (token 7) says so. */
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_NOTIFICATION, "\"a\"", oa), 1);      /* started */
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_NOTIFICATION, "\"b\"", ob), 1);      /* queued */
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_NOTIFICATION, "7", oc), 0);          /* no token */

        /* The cancel comes from elsewhere; the end belongs to "b"'s origin. */
        ocancel = sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"b\"}}");
        ASSERT_TRUE(ocancel != ob);
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_UNANSWERED, "\"b\"", ob), 1);
        ASSERT_EQ_INT(json_object_array_length(p.unanswered), 1);

        obad = sendf(&p, "{\"jsonrpc\":");
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_RESPONSE, NULL, obad), 1);
        f = json_object_array_get_idx(p.facts, json_object_array_length(p.facts) - 1);
        ASSERT_EQ_INT(json_object_get_int(json_get(f, "error_code")), JSONRPC_PARSE_ERROR);
        ounknown = sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"no/such\"}");
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_RESPONSE, "\"u\"", ounknown), 1);
        f = json_object_array_get_idx(p.facts, json_object_array_length(p.facts) - 1);
        ASSERT_EQ_INT(json_object_get_int(json_get(f, "error_code")), JSONRPC_METHOD_NOT_FOUND);

        (void) wait_reply(&env, &p, "a");
        (void) wait_reply(&env, &p, "7");
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_RESPONSE, "\"a\"", oa), 1);
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_RESPONSE, "7", oc), 1);
        ASSERT_TRUE(facts_with(&p, MCP_MESSAGE_NOTIFICATION, "\"a\"", oa) >= 2);    /* started, running */
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_RESPONSE, "\"b\"", ob), 0);
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_NOTIFICATION, "7", oc), 0);

        /* A batch: its progress and its one array of replies carry its
         * origin; a call cancelled in it leaves the rest to that array. */
        obatch = sendf(&p, "[{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                           "{\"progressToken\":\"td\"},\"name\":\"exec\",\"arguments\":{\"code\":\"#hang\"}}},"
                           "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}]");
        wait_started(&env, 3);
        ASSERT_TRUE(facts_with(&p, MCP_MESSAGE_NOTIFICATION, "\"d\"", obatch) >= 1);
        (void) sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"d\"}}");
        {
                Wait w = { .peer = &p, .n = n_msgs(&p) + 1 };
                run_until(&env, has_n_msgs, &w, 5000, "the batch reply");
        }
        ASSERT_TRUE(json_object_is_type(last(&p), json_type_array));
        ASSERT_EQ_INT(facts_with(&p, MCP_MESSAGE_RESPONSE, NULL, obatch), 1);
        ASSERT_EQ_INT(json_object_array_length(p.unanswered), 1);      /* none for "d" */
        peer_close(&p);
        env_done(&env);
}

TEST(test_cancel_running) {
        Env env;
        Peer p;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        json_object_array_del_idx(p.msgs, 0, n_msgs(&p));

        call_exec_int(&p, 5, "#hang");
        wait_started(&env, 1);
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 1);
        /* A cancel for another id (or the same number as a string) changes nothing. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"5\"}}");
        run_for(&env, 30);
        ASSERT_EQ_INT(fake_broker_n_cancelled(env.broker), 0);

        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":5,"
                  "\"reason\":\"user\"}}");
        wait_cancelled(&env, 1);                /* the broker saw the connection close */
        run_until(&env, server_idle, env.server, 5000, "the slot to be released");
        run_for(&env, 100);
        ASSERT_EQ_INT(n_msgs(&p), 0);           /* never a reply for it */
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 0);
        /* The transport learnt that its request ended, once. */
        ASSERT_EQ_INT(json_object_array_length(p.unanswered), 1);
        ASSERT_EQ_INT(json_object_get_int(json_object_array_get_idx(p.unanswered, 0)), 5);

        /* The id may be used again. */
        call_exec_int(&p, 5, "#out again");
        ASSERT_FALSE(is_error_result(result(wait_reply(&env, &p, "5"))));
        peer_close(&p);
        env_done(&env);
}

TEST(test_cancel_queued) {
        Env env;
        Peer p;

        env_init(&env, 1, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");

        call_exec(&p, "a", "#out a\\n#sleep 200");
        call_exec(&p, "b", "#out b");
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 2);
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 2);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"b\"}}");
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 1);
        ASSERT_FALSE(is_error_result(result(wait_reply(&env, &p, "a"))));
        run_for(&env, 100);
        ASSERT_TRUE(!reply_to(&p, "b"));
        ASSERT_EQ_INT(json_object_array_length(p.unanswered), 1);
        ASSERT_STREQ(json_object_get_string(json_object_array_get_idx(p.unanswered, 0)), "b");
        ASSERT_EQ_INT(env.broker->n_runs, 1);   /* b never reached the broker */
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 0);
        peer_close(&p);
        env_done(&env);
}

static void check_progress(const Peer *p, const char *token, bool string_token, unsigned *ret_n,
                           bool *ret_started, bool *ret_running, bool *ret_queued) {
        int64_t prev = -1;
        unsigned n = 0;

        *ret_started = *ret_running = *ret_queued = false;
        for (size_t i = 0; i < n_msgs(p); i++) {
                json_object *m = msg(p, i), *params = json_get(m, "params"), *t;
                const char *message;
                if (!streq_ptr(json_get_string(m, "method"), "notifications/progress"))
                        continue;
                t = json_get(params, "progressToken");
                ASSERT_TRUE(json_object_is_type(t, json_type_string) || json_object_is_type(t, json_type_int));
                if (!json_object_is_type(t, string_token ? json_type_string : json_type_int) ||
                    !streq(json_object_get_string(t), token))
                        continue;
                n++;
                ASSERT_TRUE(json_object_get_int64(json_get(params, "progress")) > prev);
                prev = json_object_get_int64(json_get(params, "progress"));
                message = json_get_string(params, "message");
                ASSERT_TRUE(message);
                *ret_started |= streq(message, "started");
                *ret_queued |= strneq(message, "queued", 6);
                if (strneq(message, "running ", 8)) {
                        ASSERT_CONTAINS(message, " s, ");
                        ASSERT_CONTAINS(message, " bytes of output");
                        *ret_running = true;
                }
        }
        *ret_n = n;
}

TEST(test_progress) {
        Env env;
        Peer p;
        unsigned n, n2;
        bool started, running, queued;
        size_t reply_at = 0;

        env_init(&env, 1, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");

        /* A long run with a string token; a queued one behind it with an integer token. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"long\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":\"tok\"},\"name\":\"exec\",\"arguments\":{\"code\":\"#out x\\n#sleep 450\"}}}");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"next\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":77},\"name\":\"exec\",\"arguments\":{\"code\":\"#sleep 250\"}}}");
        /* Without a token: no progress at all. */
        call_exec(&p, "quiet", "#out q");
        (void) wait_reply(&env, &p, "long");
        for (size_t i = 0; i < n_msgs(&p); i++)
                if (id_matches(msg(&p, i), "long") && !json_get(msg(&p, i), "method"))
                        reply_at = i;

        check_progress(&p, "tok", true, &n, &started, &running, &queued);
        ASSERT_TRUE(n >= 3);
        ASSERT_TRUE(started && running && !queued);
        /* None of them after the reply. */
        for (size_t i = reply_at; i < n_msgs(&p); i++) {
                json_object *t = json_get(json_get(msg(&p, i), "params"), "progressToken");
                ASSERT_FALSE(t && json_object_is_type(t, json_type_string));
        }

        (void) wait_reply(&env, &p, "next");
        (void) wait_reply(&env, &p, "quiet");
        check_progress(&p, "77", false, &n2, &started, &running, &queued);
        ASSERT_TRUE(queued && started && running);
        run_for(&env, 300);
        check_progress(&p, "77", false, &n, &started, &running, &queued);
        ASSERT_EQ_INT(n, n2);                   /* nothing after the reply */
        {
                unsigned k;
                check_progress(&p, "tok", true, &k, &started, &running, &queued);
                /* "quiet" had no token and got none. */
                ASSERT_EQ_INT(count_method(&p, "notifications/progress"), n + k);
        }
        peer_close(&p);

        /* 2024-11-05 has no message field in progress. */
        peer_open(&env, &p, "stdio");
        initialize(&p, "2024-11-05");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"o\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":\"t\"},\"name\":\"exec\",\"arguments\":{\"code\":\"#sleep 150\"}}}");
        (void) wait_reply(&env, &p, "o");
        ASSERT_TRUE(count_method(&p, "notifications/progress") >= 1);
        for (size_t i = 0; i < n_msgs(&p); i++)
                if (streq_ptr(json_get_string(msg(&p, i), "method"), "notifications/progress"))
                        ASSERT_TRUE(!json_get(json_get(msg(&p, i), "params"), "message"));
        peer_close(&p);
        env_done(&env);
}

/* Issue 37, item 4: a token is echoed in every progress notification of
 * its call, so one past its bound is refused at once (invalid params), and
 * no run starts; one at the bound is echoed. */
TEST(test_progress_token_bound) {
        _cleanup_free_ char *at = NULL, *past = NULL;
        Env env;
        Peer p;
        json_object *r;
        unsigned n;
        bool started, running, queued;

        at = malloc(MCP_PROGRESS_TOKEN_MAX + 2);
        past = malloc(MCP_PROGRESS_TOKEN_MAX + 2);
        ASSERT_TRUE(at && past);
        memset(at, 'a', MCP_PROGRESS_TOKEN_MAX);
        at[MCP_PROGRESS_TOKEN_MAX] = 0;
        memset(past, 'b', MCP_PROGRESS_TOKEN_MAX + 1);
        past[MCP_PROGRESS_TOKEN_MAX + 1] = 0;

        env_init(&env, 1, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"past\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":\"%s\"},\"name\":\"exec\",\"arguments\":{\"code\":\"#sleep 150\"}}}", past);
        r = reply_to(&p, "past");
        ASSERT_TRUE(r);
        ASSERT_EQ_INT(error_code(r), JSONRPC_INVALID_PARAMS);
        ASSERT_TRUE(strstr(error_message(r), "progressToken"));
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":9007199254740992},\"name\":\"exec\",\"arguments\":{\"code\":\"#sleep 150\"}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "big")), JSONRPC_INVALID_PARAMS);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"neg\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":-9007199254740992},\"name\":\"exec\",\"arguments\":{\"code\":\"#sleep 150\"}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "neg")), JSONRPC_INVALID_PARAMS);
        /* Any request: the rule is about the token, not the method. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"ping\",\"method\":\"ping\",\"params\":{\"_meta\":"
                  "{\"progressToken\":18446744073709551615}}}");
        ASSERT_EQ_INT(error_code(reply_to(&p, "ping")), JSONRPC_INVALID_PARAMS);
        ASSERT_EQ_INT(env.broker->n_runs, 0);

        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"at\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":\"%s\"},\"name\":\"exec\",\"arguments\":{\"code\":\"#sleep 150\"}}}", at);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"max\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":9007199254740991},\"name\":\"exec\",\"arguments\":{\"code\":\"#sleep 150\"}}}");
        r = wait_reply(&env, &p, "at");
        ASSERT_FALSE(json_get(r, "error"));
        check_progress(&p, at, true, &n, &started, &running, &queued);
        ASSERT_TRUE(n >= 1);
        ASSERT_FALSE(json_get(wait_reply(&env, &p, "max"), "error"));
        check_progress(&p, "9007199254740991", false, &n, &started, &running, &queued);
        ASSERT_TRUE(n >= 1);
        peer_close(&p);
        env_done(&env);

        ASSERT_EQ_INT(mcp_progress_token_check(NULL), 0);
        {
                json_object *f = json_object_new_double(1.5);
                ASSERT_EQ_INT(mcp_progress_token_check(f), 0);
                json_object_put(f);
        }
}

TEST(test_concurrency) {
        Env env;
        Peer p, q;
        json_object *res;

        env_init(&env, 2, 1);
        peer_open(&env, &p, "stdio");
        peer_open(&env, &q, "http");
        initialize(&p, "2025-11-25");
        initialize(&q, "2025-11-25");

        call_exec(&p, "1", "#hang");
        call_exec(&q, "2", "#hang");
        call_exec(&p, "3", "#out third");
        /* Two running, one waiting: the fourth is turned away at once. */
        call_exec(&q, "4", "#out fourth");
        res = result(reply_to(&q, "4"));
        ASSERT_TRUE(is_error_result(res));
        ASSERT_STREQ(text_of(res), "server busy: 2 runs in progress and the queue of 1 is full; retry later");
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 3);

        wait_started(&env, 2);
        run_for(&env, 50);
        ASSERT_EQ_INT(env.broker->n_runs, 2);   /* the third waits */
        ASSERT_TRUE(!reply_to(&p, "3"));

        /* A slot frees: the waiting call starts and finishes. */
        sendf(&q, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"2\"}}");
        res = result(wait_reply(&env, &p, "3"));
        ASSERT_STREQ(json_get_string(json_get(res, "structuredContent"), "stdout"), "third\n");
        ASSERT_TRUE(!reply_to(&q, "2"));

        /* Freeing a session stops its runs; nothing is sent to it. */
        {
                size_t n = n_msgs(&p);
                p.session = mcp_session_free(p.session);
                wait_cancelled(&env, 2);
                ASSERT_EQ_INT(n_msgs(&p), n);
        }
        run_until(&env, server_idle, env.server, 5000, "an idle server");
        peer_close(&p);
        peer_close(&q);
        env_done(&env);
}

TEST(test_session_free_queued) {
        Env env;
        Peer p;

        env_init(&env, 1, 4);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        for (int i = 0; i < 4; i++)
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":%i,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                          "\"arguments\":{\"code\":\"#hang\"}}}",
                      i);
        wait_started(&env, 1);
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 4);
        p.session = mcp_session_free(p.session);
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 0);
        wait_cancelled(&env, 1);
        run_for(&env, 50);
        ASSERT_EQ_INT(env.broker->n_runs, 1);   /* the queued ones never started */
        peer_close(&p);
        env_done(&env);
}

TEST(test_duplicate_id) {
        Env env;
        Peer p;

        env_init(&env, 2, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        call_exec_int(&p, 9, "#hang");
        call_exec_int(&p, 9, "#out x");
        ASSERT_EQ_INT(error_code(reply_to(&p, "9")), -32600);
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 1);
        peer_close(&p);
        env_done(&env);
}

TEST(test_free_in_send) {
        Env env;
        Peer p;

        env_init(&env, 1, 2);

        /* The transport frees the session while we send a reply. */
        peer_open(&env, &p, "stdio");
        p.free_in_send = true;
        (void) peer_handle(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 40, 0);
        ASSERT_EQ_INT(p.n_free_in_send, 1);
        ASSERT_TRUE(!p.session);
        run_for(&env, 20);
        peer_close(&p);

        /* ... or while we send the first progress of a run that just started. */
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        p.free_in_send = true;
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":1},\"name\":\"exec\",\"arguments\":{\"code\":\"#hang\"}}}");
        ASSERT_TRUE(!p.session);
        run_for(&env, 100);
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 0);
        peer_close(&p);
        env_done(&env);
}

TEST(test_server_free_first) {
        Env env;
        Peer p;

        /* The daemon may free the server before its transports' sessions. */
        env_init(&env, 1, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        call_exec_int(&p, 1, "#hang");
        call_exec_int(&p, 2, "#hang");
        wait_started(&env, 1);
        env.server = mcp_server_free(env.server);
        wait_cancelled(&env, 1);
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 0);
        ASSERT_EQ_INT(mcp_session_handle(p.session, "{}", 2, 1), -ESHUTDOWN);
        peer_close(&p);
        env_done(&env);
}

TEST(test_idle) {
        Env env;
        Peer p;

        env_init(&env, 1, 2);
        peer_open(&env, &p, "stdio");
        initialize(&p, "2025-11-25");
        ASSERT_EQ_INT(p.n_idle, 0);

        /* The final reply already sees the call gone, then idle follows. */
        call_exec_int(&p, 1, "#out x");
        ASSERT_EQ_INT(p.n_idle, 0);
        (void) wait_reply(&env, &p, "1");
        ASSERT_EQ_INT(p.in_flight_at_last_send, 0);
        ASSERT_EQ_INT(p.n_idle, 1);

        /* Two calls: idle only once both are gone. */
        call_exec_int(&p, 2, "#out x");
        call_exec_int(&p, 3, "#out y");
        (void) wait_reply(&env, &p, "2");
        ASSERT_EQ_INT(p.n_idle, 1);
        (void) wait_reply(&env, &p, "3");
        ASSERT_EQ_INT(p.n_idle, 2);

        /* A cancelled call sends nothing, but idle still comes: at once
         * when it was queued, once the unit stopped when it was running. */
        call_exec_int(&p, 4, "#hang");
        call_exec_int(&p, 5, "#hang");
        wait_started(&env, 3);
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":5}}");
        ASSERT_EQ_INT(p.n_idle, 2);
        {
                size_t n = n_msgs(&p);
                p.free_when_idle = true;        /* as a transport whose peer already hung up */
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":4}}");
                wait_cancelled(&env, 1);
                run_until(&env, server_idle, env.server, 5000, "an idle server");
                ASSERT_EQ_INT(p.n_idle, 3);
                ASSERT_TRUE(!p.session);
                ASSERT_EQ_INT(n_msgs(&p), n);
        }
        run_for(&env, 20);
        peer_close(&p);
        env_done(&env);
}

TEST(test_progress_same_millisecond) {
        Env env;
        Peer p, q;
        unsigned n;
        bool started, running, queued;

        /* "queued" and "started" can come within one millisecond (a slot
         * frees right after the call came in): progress must still grow. */
        env_init(&env, 1, 2);
        peer_open(&env, &p, "stdio");
        peer_open(&env, &q, "stdio");
        initialize(&p, "2025-11-25");
        initialize(&q, "2025-11-25");
        call_exec_int(&q, 1, "#hang");
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"_meta\":"
                  "{\"progressToken\":\"same\"},\"name\":\"exec\",\"arguments\":{\"code\":\"#out x\"}}}");
        q.session = mcp_session_free(q.session);        /* the slot frees at once */
        check_progress(&p, "same", true, &n, &started, &running, &queued);
        ASSERT_EQ_INT(n, 2);
        ASSERT_TRUE(queued && started);
        (void) wait_reply(&env, &p, "2");
        peer_close(&p);
        peer_close(&q);
        env_done(&env);
}

TEST(test_dead_peer) {
        Env env;
        Peer p, q;

        /* Once send failed, a queued call of that session never starts. */
        env_init(&env, 1, 2);
        peer_open(&env, &p, "stdio");
        peer_open(&env, &q, "stdio");
        initialize(&p, "2025-11-25");
        initialize(&q, "2025-11-25");
        call_exec_int(&q, 1, "#hang");
        call_exec_int(&p, 2, "#out x");
        wait_started(&env, 1);
        p.fail_send = true;
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
        /* Further input is not even looked at. */
        call_exec_int(&p, 4, "#out x");
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 2);
        sendf(&q, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}");
        wait_cancelled(&env, 1);
        run_until(&env, server_idle, env.server, 5000, "an idle server");
        run_for(&env, 50);
        ASSERT_EQ_INT(env.broker->n_runs, 1);
        ASSERT_EQ_INT(mcp_session_in_flight(p.session), 0);
        peer_close(&p);
        peer_close(&q);
        env_done(&env);
}

/* A call whose code is about size bytes: a script line, then padding the
 * fake broker ignores. */
static void send_big_call(Peer *p, const char *id, const char *script, size_t size) {
        _cleanup_free_ char *pad = malloc(size + 1);

        ASSERT_TRUE(pad);
        memset(pad, 'x', size);
        pad[size] = 0;
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"%s\\n%s\"}}}",
          id, script, pad);
}

static bool is_budget_busy(json_object *reply) {
        json_object *res = result(reply);
        return res && is_error_result(res) && strneq(text_of(res), "server busy: the server's memory budget", 39);
}

/* Queued calls are charged to their caller when admitted: past the caller's
 * share, or the whole budget, a call gets "server busy" at once, and never
 * ends or evicts what other callers hold. Everything is given back once the
 * calls are gone. */
TEST(test_memory_budget) {
        /* 7 MiB: a's and b's three large calls each fit in the budget less
         * its reserve (for callers holding little), a fourth does not. */
        MemBudget budget = { .max = 7 << 20 };
        const size_t big = 900 * 1024;
        unsigned a_admitted = 0;
        char id[16];
        Env env;
        Peer a, b, c;
        json_object *res;

        env_init_budget(&env, 1, 64, &budget);
        peer_open_as(&env, &a, "http", "http:a");
        peer_open_as(&env, &b, "http", "http:b");
        peer_open_as(&env, &c, "stdio", "uid:3");
        initialize(&a, "2025-11-25");
        initialize(&b, "2025-11-25");
        initialize(&c, "2025-11-25");

        /* a holds the only run slot; what comes next waits. */
        call_exec(&a, "hold", "#hang");
        wait_started(&env, 1);

        /* a queues large calls until its share (half the budget) is spent. */
        for (int i = 0; i < 8; i++) {
                (void) snprintf(id, sizeof id, "a%i", i);
                send_big_call(&a, id, "#out a", big);
                if (reply_to(&a, id)) {
                        ASSERT_TRUE(is_budget_busy(reply_to(&a, id)));
                        break;
                }
                a_admitted++;
        }
        ASSERT_TRUE(a_admitted >= 3 && a_admitted < 8);
        ASSERT_TRUE(mem_budget_caller_used(&budget, "http:a") >= a_admitted * big);
        ASSERT_TRUE(mem_budget_caller_used(&budget, "http:a") <= mem_budget_caller_max(&budget));

        /* b is not starved by a: it gets its own share. */
        for (int i = 0; i < 8; i++) {
                (void) snprintf(id, sizeof id, "b%i", i);
                send_big_call(&b, id, "#out b", big);
                if (reply_to(&b, id))
                        break;
        }
        ASSERT_TRUE(!reply_to(&b, "b0") && !reply_to(&b, "b1") && !reply_to(&b, "b2"));
        ASSERT_TRUE(budget.used <= budget.max);

        /* The budget is (nearly) spent by a and b together: c's large call
         * is refused, and that ends or evicts nothing of theirs. */
        {
                unsigned before = mcp_server_in_flight(env.server);
                send_big_call(&c, "c0", "#out c", big);
                ASSERT_TRUE(is_budget_busy(reply_to(&c, "c0")));
                ASSERT_EQ_INT(mcp_server_in_flight(env.server), before);
        }

        /* The slot frees: a's queued calls all run and answer in full. */
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"hold\"}}");
        for (unsigned i = 0; i < a_admitted; i++) {
                (void) snprintf(id, sizeof id, "a%u", i);
                res = result(wait_reply(&env, &a, id));
                ASSERT_STREQ(json_get_string(json_get(res, "structuredContent"), "stdout"), "a\n");
        }
        ASSERT_TRUE(!reply_to(&b, "b0") || !is_budget_busy(reply_to(&b, "b0")));
        res = result(wait_reply(&env, &b, "b0"));
        ASSERT_STREQ(json_get_string(json_get(res, "structuredContent"), "stdout"), "b\n");
        run_until(&env, server_idle, env.server, 10000, "an idle server");

        /* All given back once the calls are gone and their replies out. */
        ASSERT_EQ_U64(budget.used, 0);
        ASSERT_TRUE(budget.callers == NULL);

        /* And room again: c is served now. */
        send_big_call(&c, "c1", "#out c", big);
        res = result(wait_reply(&env, &c, "c1"));
        ASSERT_STREQ(json_get_string(json_get(res, "structuredContent"), "stdout"), "c\n");
        run_until(&env, server_idle, env.server, 5000, "an idle server");

        /* A session freed with calls queued gives their charges back. */
        call_exec(&a, "hold2", "#hang");
        send_big_call(&a, "q", "#out q", big);
        ASSERT_TRUE(budget.used >= big);
        a.session = mcp_session_free(a.session);
        ASSERT_EQ_U64(budget.used, 0);
        wait_cancelled(&env, 2);

        peer_close(&a);
        peer_close(&b);
        peer_close(&c);
        env_done(&env);
        ASSERT_EQ_U64(budget.used, 0);
}

TEST(test_config) {
        sd_event *e;
        McpServer *s;
        McpServerConfig c = { .default_timeout_s = 30, .max_timeout_s = 300, .max_output_bytes = 1,
                              .max_code_bytes = 1, .max_concurrent = 1 };

        ASSERT_TRUE(sd_event_new(&e) >= 0);
        ASSERT_EQ_INT(mcp_server_new(e, &c, &s), 0);
        s = mcp_server_free(s);
        c.max_concurrent = 0;
        ASSERT_EQ_INT(mcp_server_new(e, &c, &s), -EINVAL);
        c.max_concurrent = 1;
        c.default_timeout_s = 301;
        ASSERT_EQ_INT(mcp_server_new(e, &c, &s), -EINVAL);
        ASSERT_TRUE(!mcp_server_free(NULL));
        ASSERT_TRUE(!mcp_session_free(NULL));
        ASSERT_STREQ(mcp_protocol_versions[0], "2024-11-05");
        sd_event_unref(e);
}

/* ---------------------------------------------------------------------- */
/* Code mode's confirmation of a destructive tool: the broker's question
 * (the fake's #confirm) becomes elicitation/create to a client that can
 * take it, and only its answer to that request answers the broker. */

static void initialize_caps(Peer *p, const char *version, const char *caps) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                 "\"capabilities\":%s,\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}",
              version, caps);
        ASSERT_TRUE(result(reply_to(p, "init")));
        sendf(p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static json_object *find_method(const Peer *p, const char *method, unsigned nth) {
        for (size_t i = 0; i < n_msgs(p); i++)
                if (streq_ptr(json_get_string(msg(p, i), "method"), method) && nth-- == 0)
                        return msg(p, i);
        return NULL;
}

typedef struct Asked {
        Peer *p;
        unsigned nth;
} Asked;

static bool was_asked(void *userdata) {
        Asked *a = userdata;
        return find_method(a->p, "elicitation/create", a->nth);
}

/* The stdout of call id's result. */
static const char *stdout_of(Env *env, Peer *p, const char *id) {
        return json_get_string(json_get(result(wait_reply(env, p, id)), "structuredContent"), "stdout");
}

/* The client's question for the nth time, and its id; answered with body. */
static json_object *ask_and_answer(Env *env, Peer *p, unsigned nth, const char *body) {
        Asked a = { p, nth };
        json_object *q;

        run_until(env, was_asked, &a, 5000, "elicitation/create");
        q = find_method(p, "elicitation/create", nth);
        if (body)
                sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",%s}", json_get_string(q, "id"), body);
        return q;
}

TEST(test_confirm) {
        Env env;
        Peer p, q;
        json_object *ask, *params, *schema;

        env_init(&env, 4, 4);
        peer_open(&env, &p, "stdio");
        initialize_caps(&p, "2025-11-25", "{\"elicitation\":{}}");

        /* Accept: the broker hears yes, for its id. */
        call_exec(&p, "c1", "#confirm files edit_file");
        ask = ask_and_answer(&env, &p, 0, "\"result\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}");
        params = json_get(ask, "params");
        ASSERT_STREQ(json_get_string(params, "mode"), "form");
        ASSERT_CONTAINS(json_get_string(params, "message"), "\"edit_file\"");
        ASSERT_CONTAINS(json_get_string(params, "message"), "\"files\"");
        schema = json_get(params, "requestedSchema");
        ASSERT_STREQ(json_get_string(schema, "type"), "object");
        ASSERT_STREQ(json_get_string(json_get(json_get(schema, "properties"), "confirm"), "type"), "boolean");
        ASSERT_STREQ(stdout_of(&env, &p, "c1"), "confirm: accept=1 reason=\n");
        ASSERT_TRUE(json_get_bool(env.broker->runs[0]->request, "confirm"));
        ASSERT_EQ_INT(json_object_get_int(json_get(json_object_array_get_idx(env.broker->runs[0]->confirm_answers,
                                                                             0), "id")), 7);

        /* Decline, cancel, accept without the box ticked, an error: no. A
         * response to an id never asked changes nothing. */
        static const struct {
                const char *body, *reason;
        } cases[] = {
                { "\"result\":{\"action\":\"decline\"}", "the user declined" },
                { "\"result\":{\"action\":\"cancel\"}", "the user cancelled" },
                { "\"result\":{\"action\":\"accept\",\"content\":{\"confirm\":false}}", "did not tick" },
                { "\"result\":{\"action\":\"accept\",\"content\":{\"confirm\":\"true\"}}", "did not tick" },
                { "\"error\":{\"code\":-1,\"message\":\"no\"}", "with an error" },
        };
        for (unsigned i = 0; i < ELEMENTSOF(cases); i++) {
                char id[8];

                (void) snprintf(id, sizeof id, "n%u", i);
                call_exec(&p, id, "#confirm files edit_file");
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"mcp-exec-confirm-99\",\"result\":{\"action\":\"accept\","
                          "\"content\":{\"confirm\":true}}}");
                sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":%u,\"result\":{\"action\":\"accept\"}}", i + 2);
                ask_and_answer(&env, &p, i + 1, cases[i].body);
                ASSERT_CONTAINS(stdout_of(&env, &p, id), "confirm: accept=0 reason=");
                ASSERT_CONTAINS(stdout_of(&env, &p, id), cases[i].reason);
        }
        /* The question's answered once: a second answer goes nowhere. */
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}}",
              json_get_string(ask, "id"));
        ASSERT_EQ_INT(json_object_array_length(env.broker->runs[0]->confirm_answers), 1);

        /* Not answered within the run's time left: no, and the client is told. */
        call_exec_with(&p, "late", "\"code\":\"#confirm files edit_file\",\"timeout_s\":1");
        ask_and_answer(&env, &p, ELEMENTSOF(cases) + 1, NULL);
        ASSERT_CONTAINS(stdout_of(&env, &p, "late"), "did not answer in time");
        ASSERT_TRUE(find_method(&p, "notifications/cancelled", 0));
        ASSERT_EQ_INT(count_method(&p, "elicitation/create"), ELEMENTSOF(cases) + 2);
        peer_close(&p);

        /* A client without the capability, and a revision without elicitation:
         * nobody is asked, the reason says why. */
        peer_open(&env, &q, "stdio");
        initialize_caps(&q, "2025-11-25", "{}");
        call_exec(&q, "x", "#confirm files edit_file");
        ASSERT_CONTAINS(stdout_of(&env, &q, "x"), "did not declare the elicitation capability");
        ASSERT_EQ_INT(count_method(&q, "elicitation/create"), 0);
        peer_close(&q);
        peer_open(&env, &q, "stdio");
        initialize_caps(&q, "2025-11-25", "{\"elicitation\":{\"url\":{}}}");       /* URL mode alone */
        call_exec(&q, "u", "#confirm files edit_file");
        ASSERT_CONTAINS(stdout_of(&env, &q, "u"), "did not declare the elicitation capability (form mode)");
        peer_close(&q);
        peer_open(&env, &q, "stdio");
        initialize_caps(&q, "2025-03-26", "{\"elicitation\":{}}");
        call_exec(&q, "y", "#confirm files edit_file");
        /* No structuredContent in 2025-03-26: the text has the result. */
        ASSERT_CONTAINS(text_of(result(wait_reply(&env, &q, "y"))), "revision has no elicitation");
        ASSERT_EQ_INT(count_method(&q, "elicitation/create"), 0);
        /* 2025-06-18: elicitation without "mode". */
        peer_close(&q);
        peer_open(&env, &q, "stdio");
        initialize_caps(&q, "2025-06-18", "{\"elicitation\":{}}");
        call_exec(&q, "z", "#confirm files edit_file");
        ask = ask_and_answer(&env, &q, 0, "\"result\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}");
        ASSERT_TRUE(!json_get(json_get(ask, "params"), "mode"));
        ASSERT_STREQ(stdout_of(&env, &q, "z"), "confirm: accept=1 reason=\n");
        /* A session that goes with a question open: nothing dangles. */
        call_exec(&q, "gone", "#confirm files edit_file");
        ask_and_answer(&env, &q, 1, NULL);
        peer_close(&q);
        env_done(&env);
}

int main(void) {
        RUN(test_config);
        RUN(test_negotiation);
        RUN(test_before_initialize);
        RUN(test_jsonrpc_errors);
        RUN(test_value_limit);
        RUN(test_handle_inbound);
        RUN(test_tools_list);
        RUN(test_call_result);
        RUN(test_call_outputs);
        RUN(test_call_invalid);
        RUN(test_call_failures);
        RUN(test_call_network);
        RUN(test_call_packages);
        RUN(test_batches);
        RUN(test_stateless);
        RUN(test_routing_facts);
        RUN(test_cancel_running);
        RUN(test_cancel_queued);
        RUN(test_progress);
        RUN(test_progress_token_bound);
        RUN(test_concurrency);
        RUN(test_session_free_queued);
        RUN(test_duplicate_id);
        RUN(test_free_in_send);
        RUN(test_server_free_first);
        RUN(test_idle);
        RUN(test_progress_same_millisecond);
        RUN(test_dead_peer);
        RUN(test_memory_budget);
        RUN(test_confirm);
        return 0;
}
