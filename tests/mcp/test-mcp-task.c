/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MCP tasks (mcp-task.h) through the core's public interface: test peers
 * collect what the server sends, code "runs" through the real exec client
 * against the fake broker (fake-broker.h), on one event loop. Both wire
 * formats; who may see a task; cancel; caps. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "fake-broker.h"
#include "json-util.h"
#include "jsonrpc.h"
#include "macro.h"
#include "mcp-server.h"
#include "test-helpers.h"
#include "util.h"

typedef struct Peer {
        McpSession *session;
        json_object *msgs;              /* every message received, parsed */
        uint64_t origin;
        /* Set: what it receives stays unread, charged as the transports
         * charge what they hold (by force, once they have it). */
        MemCharge held;
        /* A shared_parts peer: the shared parts it was handed (and keeps a
         * reference to), as HTTP's JSON replies do. */
        const char *shared_seen[4];
        McpShared shared_kept[4];
        unsigned n_shared;
} Peer;

typedef struct Env {
        sd_event *event;
        FakeBroker *broker;
        McpServer *server;
} Env;

static int peer_send(McpSession *s, const McpMessage *m, void *userdata) {
        Peer *p = userdata;

        if (m->json)
                ASSERT_EQ_INT(json_object_array_add(p->msgs, json_tokener_parse(m->json)), 0);
        /* As the transports: a charge that came with the message is taken
         * over for the copy kept; else the copy is charged refusably (a
         * stream would drop past that). A peer that never reads holds it. */
        if (m->json && p->held.budget) {
                if (m->charge && m->charge->budget) {
                        uint64_t before = p->held.bytes;

                        mem_charge_move(&p->held, m->charge);
                        ASSERT_EQ_INT(mem_charge_set(&p->held, before + m->len), 0);
                } else
                        (void) mem_charge_grow(&p->held, m->len);
        }
        return 0;
}

static const McpTransport transport = { .send = peer_send };

static int peer_send_shared(McpSession *s, const McpMessage *m, void *userdata) {
        _cleanup_free_ char *flat = NULL;
        Peer *p = userdata;
        size_t len;

        if (!m->json)
                return 0;
        flat = mcp_message_flatten(m, &len);
        ASSERT_TRUE(flat);
        ASSERT_EQ_INT(json_object_array_add(p->msgs, json_tokener_parse(flat)), 0);
        if (m->shared) {
                ASSERT_TRUE(p->n_shared < ELEMENTSOF(p->shared_kept));
                /* Kept past the message, as a transport that sends later. */
                m->shared->ref(m->shared->owner);
                p->shared_seen[p->n_shared] = m->shared->data;
                p->shared_kept[p->n_shared++] = *m->shared;
        }
        return 0;
}

static const McpTransport transport_shared = { .send = peer_send_shared, .shared_parts = true };

static void env_init_full(Env *env, uint64_t max_tasks, uint64_t per_caller, uint64_t ttl_max_s, MemBudget *budget) {
        McpServerConfig config;

        *env = (Env) {};
        ASSERT_TRUE(sd_event_new(&env->event) >= 0);
        ASSERT_EQ_INT(fake_broker_new(env->event, &env->broker), 0);
        config = (McpServerConfig) {
                .broker_socket = env->broker->path,
                .default_timeout_s = 30,
                .max_timeout_s = 300,
                .task_max_timeout_s = 3600,
                .task_ttl_max_s = ttl_max_s,
                .max_tasks = max_tasks,
                .max_tasks_per_caller = per_caller,
                .task_after_ms = 100,
                .max_output_bytes = 1 << 20,
                .max_stdin_bytes = 1 << 20,
                .max_code_bytes = 1 << 20,
                .max_concurrent = 4,
                .max_queue = 8,
                .budget = budget,
        };
        ASSERT_EQ_INT(mcp_server_new(env->event, &config, &env->server), 0);
}

static void env_init_ttl(Env *env, uint64_t max_tasks, uint64_t per_caller, uint64_t ttl_max_s) {
        env_init_full(env, max_tasks, per_caller, ttl_max_s, NULL);
}

static void env_init(Env *env, uint64_t max_tasks, uint64_t per_caller) {
        env_init_ttl(env, max_tasks, per_caller, 7200);
}

static void env_done(Env *env) {
        env->server = mcp_server_free(env->server);
        env->broker = fake_broker_free(env->broker);
        env->event = sd_event_unref(env->event);
}

static void peer_open(Env *env, Peer *p, const char *caller) {
        McpPeer who = { .transport = "test", .uid = 1000, .caller = caller };

        *p = (Peer) { .msgs = json_object_new_array() };
        ASSERT_TRUE(p->msgs);
        ASSERT_EQ_INT(mcp_session_new(env->server, &transport, p, &who, &p->session), 0);
}

/* A peer that leaves what it is sent unread (an HTTP client that does
 * not read its replies): the transport's copies stay charged. */
static void peer_open_held(Env *env, Peer *p, const char *caller, MemBudget *budget) {
        peer_open(env, p, caller);
        ASSERT_EQ_INT(mem_charge_init(&p->held, budget, caller), 0);
}

static void peer_close(Peer *p) {
        p->session = mcp_session_free(p->session);
        mem_charge_done(&p->held);
        p->msgs = (json_object_put(p->msgs), NULL);
}

static void sendf(Peer *p, const char *fmt, ...) _printf_(2, 3);
static void sendf(Peer *p, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
        ASSERT_TRUE(vasprintf(&s, fmt, ap) >= 0);
        va_end(ap);
        ASSERT_EQ_INT(mcp_session_handle(p->session, s, strlen(s), ++p->origin), 0);
}

/* The reply to request id (a string id), NULL if none came yet. */
static json_object *reply_to(const Peer *p, const char *id) {
        for (size_t i = 0; i < json_object_array_length(p->msgs); i++) {
                json_object *m = json_object_array_get_idx(p->msgs, i);
                if (!json_get(m, "method") && streq_ptr(json_get_string(m, "id"), id))
                        return m;
        }
        return NULL;
}

static json_object *wait_reply(Env *env, Peer *p, const char *id) {
        uint64_t end = now_usec() + 10 * USEC_PER_SEC;
        json_object *r;

        while (!(r = reply_to(p, id))) {
                if (now_usec() > end)
                        ASSERT_FAIL_("timed out waiting for the reply to %s", id);
                ASSERT_TRUE(sd_event_run(env->event, 10 * USEC_PER_MSEC) >= 0);
        }
        return r;
}

static void run_for(Env *env, unsigned ms) {
        uint64_t end = now_usec() + ms * USEC_PER_MSEC;

        while (now_usec() < end)
                ASSERT_TRUE(sd_event_run(env->event, 5 * USEC_PER_MSEC) >= 0);
}

static int error_code(json_object *reply) {
        ASSERT_TRUE(json_get(reply, "error"));
        return json_object_get_int(json_get(json_get(reply, "error"), "code"));
}

static json_object *result(json_object *reply) {
        ASSERT_TRUE(reply);
        if (json_get(reply, "error"))
                fprintf(stderr, "unexpected error: %s\n", json_object_to_json_string(reply));
        ASSERT_TRUE(!json_get(reply, "error"));
        return json_get(reply, "result");
}

static const char *text_of(json_object *res) {
        return json_get_string(json_object_array_get_idx(json_get(res, "content"), 0), "text");
}

static void initialize(Env *env, Peer *p) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                 "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
        ASSERT_TRUE(result(wait_reply(env, p, "init")));
}

/* tools/call with a task; returns the task id (owned by the reply). */
static const char *call_task(Env *env, Peer *p, const char *id, const char *code) {
        json_object *task;

        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"%s\"},\"task\":{\"ttl\":1000}}}", id, code);
        task = json_get(result(wait_reply(env, p, id)), "task");
        ASSERT_STREQ(json_get_string(task, "status"), "working");
        /* Never shorter than the run may take plus a minute to fetch it. */
        ASSERT_EQ_INT(json_get_int64(task, "ttl", 0), 30 * 1000 + 60 * 1000);
        ASSERT_TRUE(json_get_string(task, "createdAt"));
        return json_get_string(task, "taskId");
}

static void task_req(Peer *p, const char *id, const char *method, const char *task_id) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"%s\",\"params\":{\"taskId\":\"%s\"}}", id, method,
              task_id);
}

TEST(test_core_capability_and_tool) {
        Env env;
        Peer p;
        json_object *r, *exec;

        env_init(&env, 8, 4);
        peer_open(&env, &p, "uid:1000");
        initialize(&env, &p);
        r = result(reply_to(&p, "init"));
        ASSERT_TRUE(json_get(json_get(json_get(r, "capabilities"), "tasks"), "list"));
        ASSERT_TRUE(json_get(json_get(json_get(json_get(json_get(r, "capabilities"), "tasks"), "requests"), "tools"),
                             "call"));
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"l\",\"method\":\"tools/list\"}");
        exec = json_object_array_get_idx(json_get(result(wait_reply(&env, &p, "l")), "tools"), 0);
        ASSERT_STREQ(json_get_string(json_get(exec, "execution"), "taskSupport"), "optional");
        peer_close(&p);

        /* An anonymous loopback peer cannot list: it is everyone. */
        peer_open(&env, &p, "http:loopback");
        initialize(&env, &p);
        r = result(reply_to(&p, "init"));
        ASSERT_TRUE(json_get(json_get(r, "capabilities"), "tasks"));
        ASSERT_TRUE(!json_get(json_get(json_get(r, "capabilities"), "tasks"), "list"));
        peer_close(&p);
        env_done(&env);

        /* No tasks configured: no capability, no taskSupport, and a task call is no method. */
        env_init(&env, 0, 4);
        peer_open(&env, &p, "uid:1000");
        initialize(&env, &p);
        ASSERT_TRUE(!json_get(json_get(result(reply_to(&p, "init")), "capabilities"), "tasks"));
        sendf(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#out a\"},\"task\":{}}}");
        ASSERT_EQ_INT(error_code(wait_reply(&env, &p, "c")), JSONRPC_METHOD_NOT_FOUND);
        task_req(&p, "g", "tasks/get", "x");
        ASSERT_EQ_INT(error_code(wait_reply(&env, &p, "g")), JSONRPC_METHOD_NOT_FOUND);
        peer_close(&p);
        env_done(&env);
}

TEST(test_core_lifecycle) {
        _cleanup_free_ char *id = NULL;
        Env env;
        Peer a, b, other;
        json_object *r;

        env_init(&env, 8, 4);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        id = strdup(call_task(&env, &a, "c1", "#sleep 300\\n#out hello"));
        ASSERT_TRUE(id);

        task_req(&a, "g1", "tasks/get", id);
        ASSERT_STREQ(json_get_string(result(wait_reply(&env, &a, "g1")), "status"), "working");
        /* tasks/result blocks until the run ends. */
        task_req(&a, "r1", "tasks/result", id);
        run_for(&env, 50);
        ASSERT_TRUE(!reply_to(&a, "r1"));
        r = result(wait_reply(&env, &a, "r1"));
        ASSERT_TRUE(strstr(text_of(r), "hello"));
        ASSERT_STREQ(json_get_string(json_get(json_get(r, "_meta"), "io.modelcontextprotocol/related-task"), "taskId"),
                     id);

        /* The caller's, not the session's: a new session of the same caller
         * sees it after the first is gone. */
        peer_close(&a);
        peer_open(&env, &b, "uid:1000");
        initialize(&env, &b);
        task_req(&b, "g2", "tasks/get", id);
        ASSERT_STREQ(json_get_string(result(wait_reply(&env, &b, "g2")), "status"), "completed");
        task_req(&b, "r2", "tasks/result", id);
        ASSERT_TRUE(strstr(text_of(result(wait_reply(&env, &b, "r2"))), "hello"));
        sendf(&b, "{\"jsonrpc\":\"2.0\",\"id\":\"l\",\"method\":\"tasks/list\"}");
        r = result(wait_reply(&env, &b, "l"));
        ASSERT_EQ_INT(json_object_array_length(json_get(r, "tasks")), 1);

        /* Anyone else: as if it did not exist. */
        peer_open(&env, &other, "uid:1001");
        initialize(&env, &other);
        task_req(&other, "g3", "tasks/get", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &other, "g3")), JSONRPC_INVALID_PARAMS);
        task_req(&other, "r3", "tasks/result", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &other, "r3")), JSONRPC_INVALID_PARAMS);
        task_req(&other, "x3", "tasks/cancel", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &other, "x3")), JSONRPC_INVALID_PARAMS);
        sendf(&other, "{\"jsonrpc\":\"2.0\",\"id\":\"l3\",\"method\":\"tasks/list\"}");
        ASSERT_EQ_INT(json_object_array_length(json_get(result(wait_reply(&env, &other, "l3")), "tasks")), 0);
        task_req(&other, "g4", "tasks/get", "local.0123456789abcdef0123456789abcdef");
        ASSERT_EQ_INT(error_code(wait_reply(&env, &other, "g4")), JSONRPC_INVALID_PARAMS);

        /* Cancelling one that ended is an error in this format, and
         * deletes it: its caller wants no more of it. */
        task_req(&b, "x1", "tasks/cancel", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &b, "x1")), JSONRPC_INVALID_PARAMS);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        task_req(&b, "g5", "tasks/get", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &b, "g5")), JSONRPC_INVALID_PARAMS);
        peer_close(&b);
        peer_close(&other);
        env_done(&env);
}

TEST(test_core_cancel) {
        _cleanup_free_ char *id = NULL;
        McpTaskStats stats;
        Env env;
        Peer a;
        json_object *r;

        env_init(&env, 8, 4);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        id = strdup(call_task(&env, &a, "c1", "#hang"));
        task_req(&a, "r1", "tasks/result", id);
        /* Waiting requests are bounded: stdio has no other bound. */
        for (unsigned i = 0; i < 40; i++) {
                char rid[16];
                (void) snprintf(rid, sizeof rid, "w%u", i);
                task_req(&a, rid, "tasks/result", id);
        }
        /* Eight per task, each a copy of the result when it ends. */
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "w7")), JSONRPC_INVALID_REQUEST);
        ASSERT_TRUE(!reply_to(&a, "w6"));
        run_for(&env, 100);
        ASSERT_EQ_INT(fake_broker_n_started(env.broker), 1);
        task_req(&a, "x1", "tasks/cancel", id);
        r = result(wait_reply(&env, &a, "x1"));
        ASSERT_STREQ(json_get_string(r, "status"), "cancelled");
        /* The waiting tasks/result is answered, and the run is stopped. */
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "r1")), JSONRPC_INVALID_PARAMS);
        for (unsigned i = 0; i < 200 && fake_broker_n_cancelled(env.broker) < 1; i++)
                run_for(&env, 10);
        ASSERT_EQ_INT(fake_broker_n_cancelled(env.broker), 1);
        mcp_server_task_stats(env.server, &stats);
        ASSERT_EQ_INT(stats.cancelled, 1);
        /* Once ended, cancelling it again deletes it. */
        task_req(&a, "x2", "tasks/cancel", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "x2")), JSONRPC_INVALID_PARAMS);
        mcp_server_task_stats(env.server, &stats);
        ASSERT_EQ_INT(stats.cancelled, 0);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        ASSERT_EQ_INT(stats.working, 0);
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 0);
        peer_close(&a);
        env_done(&env);
}

TEST(test_core_invalid_arguments_fail_the_task) {
        Env env;
        Peer a;
        json_object *task;

        env_init(&env, 8, 4);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"cod\":\"x\"},\"task\":{}}}");
        task = json_get(result(wait_reply(&env, &a, "c")), "task");
        ASSERT_STREQ(json_get_string(task, "status"), "failed");
        ASSERT_TRUE(json_get_string(task, "statusMessage"));
        /* An unknown tool is the request's own error: no task. */
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"tools/call\",\"params\":{\"name\":\"nope\","
                  "\"task\":{}}}");
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "d")), JSONRPC_INVALID_PARAMS);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 1);
        peer_close(&a);
        env_done(&env);
}

/* Issue 23: a task's result carries the installer's report as a call's
 * does, and a failed install fails the task with the installer's text. */
TEST(test_packages) {
        char dir[] = "/tmp/test-mcp-task-packages.XXXXXX", manifest[96];
        _cleanup_(tool_packages_freep) ToolPackages *pk = NULL;
        _cleanup_free_ char *ok = NULL, *bad = NULL;
        McpServerConfig config;
        json_object *r, *pkg;
        FILE *f;
        Env env;
        Peer a;

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(manifest, sizeof manifest, "%s/SHA256SUMS", dir);
        f = fopen(manifest, "we");
        ASSERT_TRUE(f);
        fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  a-1.0-py3-none-any.whl\n", f);
        ASSERT_EQ_INT(fclose(f), 0);
        ASSERT_EQ_INT(tool_packages_new(dir, 4, &pk), 0);

        env_init(&env, 8, 4);
        env.server = mcp_server_free(env.server);
        config = (McpServerConfig) {
                .broker_socket = env.broker->path,
                .default_timeout_s = 30, .max_timeout_s = 300, .task_max_timeout_s = 3600, .task_ttl_max_s = 7200,
                .max_tasks = 8, .max_tasks_per_caller = 4, .task_after_ms = 100,
                .max_output_bytes = 1 << 20, .max_stdin_bytes = 1 << 20, .max_code_bytes = 1 << 20,
                .max_concurrent = 4, .max_queue = 8,
                .result_channel = true,
                .packages = pk,
        };
        env.broker->result_channel = true;
        ASSERT_EQ_INT(mcp_server_new(env.event, &config, &env.server), 0);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);

        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#sleep 100\\n#packages {\\\"ok\\\":true,\\\"duration_us\\\":7}\\n#out hi\","
                  "\"packages\":[\"a\"]},\"task\":{}}}");
        ok = strdup(json_get_string(json_get(result(wait_reply(&env, &a, "c1")), "task"), "taskId"));
        ASSERT_TRUE(ok);
        task_req(&a, "r1", "tasks/result", ok);
        r = result(wait_reply(&env, &a, "r1"));
        ASSERT_TRUE(!json_get_bool(r, "isError"));
        pkg = json_get(json_get(r, "structuredContent"), "packages");
        ASSERT_TRUE(json_get_bool(pkg, "ok"));
        ASSERT_STREQ(json_get_string(pkg, "log"), FAKE_PIP_LOG);
        ASSERT_STREQ(json_get_string(json_get(r, "structuredContent"), "stdout"), "hi\n");

        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"c2\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#sleep 100\\n#packages {\\\"ok\\\":false,\\\"error\\\":\\\"pip failed\\\"}"
                  "\\n#exit 1\",\"packages\":[\"a\"]},\"task\":{}}}");
        bad = strdup(json_get_string(json_get(result(wait_reply(&env, &a, "c2")), "task"), "taskId"));
        ASSERT_TRUE(bad);
        task_req(&a, "r2", "tasks/result", bad);
        r = result(wait_reply(&env, &a, "r2"));
        ASSERT_TRUE(json_get_bool(r, "isError"));
        ASSERT_STREQ(text_of(r), "pip failed");
        ASSERT_TRUE(json_get(json_get(r, "structuredContent"), "packages"));
        task_req(&a, "g2", "tasks/get", bad);
        ASSERT_STREQ(json_get_string(result(wait_reply(&env, &a, "g2")), "status"), "failed");

        peer_close(&a);
        env_done(&env);
        ASSERT_EQ_INT(unlink(manifest), 0);
        ASSERT_EQ_INT(rmdir(dir), 0);
}

/* Polls tasks/get (core) until the task is no longer working. */
static void wait_ended(Env *env, Peer *p, const char *task_id) {
        for (unsigned i = 0; i < 500; i++) {
                _cleanup_free_ char *rid = NULL;
                ASSERT_TRUE(asprintf(&rid, "poll-%s-%u", task_id, i) >= 0);
                task_req(p, rid, "tasks/get", task_id);
                if (!streq(json_get_string(result(wait_reply(env, p, rid)), "status"), "working"))
                        return;
                run_for(env, 10);
        }
        ASSERT_FAIL_("task %s did not end", task_id);
}

static json_object *call_task_raw(Env *env, Peer *p, const char *id, const char *code) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"%s\"},\"task\":{}}}", id, code);
        return wait_reply(env, p, id);
}

/* The caps: per caller and for all. A caller's own oldest ended task makes
 * room for its next; another caller's never does. */
TEST(test_caps) {
        _cleanup_free_ char *ended = NULL, *third = NULL;
        Env env;
        Peer a, b;
        json_object *r;

        env_init(&env, 3, 2);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        (void) call_task(&env, &a, "c1", "#hang");
        ended = strdup(call_task(&env, &a, "c2", "#out x"));
        wait_ended(&env, &a, ended);
        /* The caller's share is full, but one of them ended: it goes. */
        third = strdup(call_task(&env, &a, "c3", "#hang"));
        task_req(&a, "g2", "tasks/get", ended);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "g2")), JSONRPC_INVALID_PARAMS);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 2);
        /* All of its share running: refused. */
        r = call_task_raw(&env, &a, "c4", "#out x");
        ASSERT_EQ_INT(error_code(r), JSONRPC_INVALID_REQUEST);
        ASSERT_TRUE(strstr(json_get_string(json_get(r, "error"), "message"), "too many tasks"));
        /* The extension leaves it to us: past the cap a slow call is answered inline. */
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#sleep 300\\n#out inline\"},\"_meta\":{"
                  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":"
                  "{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}}}}");
        r = result(wait_reply(&env, &a, "e1"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_TRUE(strstr(text_of(r), "inline"));
        /* Another caller gets one; then all are taken. */
        peer_open(&env, &b, "uid:1001");
        initialize(&env, &b);
        (void) call_task(&env, &b, "c5", "#hang");
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 3);
        /* The first caller's task ends (cancelled): not the other's to
         * evict, so the cap holds for it. */
        task_req(&a, "x3", "tasks/cancel", third);
        ASSERT_STREQ(json_get_string(result(wait_reply(&env, &a, "x3")), "status"), "cancelled");
        ASSERT_EQ_INT(error_code(call_task_raw(&env, &b, "c6", "#out x")), JSONRPC_INVALID_REQUEST);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 3);
        /* Its caller deletes it: there is room. */
        task_req(&a, "x4", "tasks/cancel", third);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "x4")), JSONRPC_INVALID_PARAMS);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 2);
        ASSERT_TRUE(json_get(result(call_task_raw(&env, &b, "c7", "#hang")), "task"));
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 3);
        /* Shutdown with runs going stops them. */
        peer_close(&a);
        peer_close(&b);
        env_done(&env);

        /* A per-caller maximum as large as the cap: one caller still
         * cannot take all of it. */
        env_init(&env, 2, 2);
        peer_open(&env, &a, "uid:1000");
        peer_open(&env, &b, "uid:1001");
        initialize(&env, &a);
        initialize(&env, &b);
        (void) call_task(&env, &a, "c1", "#hang");
        ASSERT_EQ_INT(error_code(call_task_raw(&env, &a, "c2", "#hang")), JSONRPC_INVALID_REQUEST);
        (void) call_task(&env, &b, "c3", "#hang");
        peer_close(&a);
        peer_close(&b);
        env_done(&env);

        /* Two callers' ended tasks fill the cap: a third caller makes room
         * with the oldest ended task of one holding more than one above it
         * (never a working one), until the cap is shared. */
        {
                _cleanup_free_ char *a1 = NULL, *a2 = NULL, *b1 = NULL, *b2 = NULL;
                Peer c;

                env_init(&env, 4, 2);
                peer_open(&env, &a, "uid:1000");
                peer_open(&env, &b, "uid:1001");
                peer_open(&env, &c, "uid:1002");
                initialize(&env, &a);
                initialize(&env, &b);
                initialize(&env, &c);
                a1 = strdup(call_task(&env, &a, "a1", "#out x"));
                wait_ended(&env, &a, a1);
                a2 = strdup(call_task(&env, &a, "a2", "#out x"));
                wait_ended(&env, &a, a2);
                b1 = strdup(call_task(&env, &b, "b1", "#hang"));
                b2 = strdup(call_task(&env, &b, "b2", "#out x"));
                wait_ended(&env, &b, b2);
                ASSERT_EQ_INT(mcp_server_tasks(env.server), 4);
                /* a's oldest ended goes (a holds 2, c none). */
                (void) call_task(&env, &c, "c1", "#hang");
                task_req(&a, "g1", "tasks/get", a1);
                ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "g1")), JSONRPC_INVALID_PARAMS);
                task_req(&a, "g2", "tasks/get", a2);
                (void) result(wait_reply(&env, &a, "g2"));
                /* Now c holds 1, a 1, b 2: b is not more than one above c. */
                ASSERT_EQ_INT(error_code(call_task_raw(&env, &c, "c2", "#hang")), JSONRPC_INVALID_REQUEST);
                task_req(&b, "g3", "tasks/get", b1);
                (void) result(wait_reply(&env, &b, "g3"));
                task_req(&b, "g4", "tasks/get", b2);
                (void) result(wait_reply(&env, &b, "g4"));
                peer_close(&a);
                peer_close(&b);
                peer_close(&c);
                env_done(&env);
        }
}

/* Which ended task makes room at the global cap: the caller's own before
 * any other's, and of the others' the one of the caller holding the most,
 * not the oldest. */
TEST(test_caps_ranking) {
        _cleanup_free_ char *a1 = NULL, *a2 = NULL, *b3 = NULL, *c1 = NULL, *c2 = NULL, *c3 = NULL, *d1 = NULL;
        Env env;
        Peer a, b, c, d;

        /* a holds 2 ended (the oldest), b 3 with one ended: b holds the
         * most, so b's ended task goes, though a's are older. */
        env_init(&env, 5, 3);
        peer_open(&env, &a, "uid:1000");
        peer_open(&env, &b, "uid:1001");
        peer_open(&env, &c, "uid:1002");
        initialize(&env, &a);
        initialize(&env, &b);
        initialize(&env, &c);
        a1 = strdup(call_task(&env, &a, "a1", "#out x"));
        wait_ended(&env, &a, a1);
        a2 = strdup(call_task(&env, &a, "a2", "#out x"));
        wait_ended(&env, &a, a2);
        (void) call_task(&env, &b, "b1", "#hang");
        (void) call_task(&env, &b, "b2", "#hang");
        b3 = strdup(call_task(&env, &b, "b3", "#out x"));
        wait_ended(&env, &b, b3);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 5);
        (void) call_task(&env, &c, "c1", "#hang");
        task_req(&b, "g1", "tasks/get", b3);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &b, "g1")), JSONRPC_INVALID_PARAMS);
        task_req(&a, "g2", "tasks/get", a1);
        (void) result(wait_reply(&env, &a, "g2"));
        task_req(&a, "g3", "tasks/get", a2);
        (void) result(wait_reply(&env, &a, "g3"));
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 5);
        peer_close(&a);
        peer_close(&b);
        peer_close(&c);
        env_done(&env);

        /* c holds 3 ended, d 1 ended (the newest): at the cap d's own goes,
         * though c holds more than one above d. */
        env_init(&env, 4, 3);
        peer_open(&env, &c, "uid:1002");
        peer_open(&env, &d, "uid:1003");
        initialize(&env, &c);
        initialize(&env, &d);
        c1 = strdup(call_task(&env, &c, "c1", "#out x"));
        wait_ended(&env, &c, c1);
        c2 = strdup(call_task(&env, &c, "c2", "#out x"));
        wait_ended(&env, &c, c2);
        c3 = strdup(call_task(&env, &c, "c3", "#out x"));
        wait_ended(&env, &c, c3);
        d1 = strdup(call_task(&env, &d, "d1", "#out x"));
        wait_ended(&env, &d, d1);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 4);
        (void) call_task(&env, &d, "d2", "#hang");
        task_req(&d, "g4", "tasks/get", d1);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &d, "g4")), JSONRPC_INVALID_PARAMS);
        task_req(&c, "g5", "tasks/get", c1);
        (void) result(wait_reply(&env, &c, "g5"));
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 4);
        peer_close(&c);
        peer_close(&d);
        env_done(&env);
}

/* The configuration's floor is a minute; the core takes any ttl, so a
 * second shows expiry here. */
TEST(test_expiry) {
        _cleanup_free_ char *running = NULL, *ended = NULL;
        json_object *task;
        Env env;
        Peer a;

        env_init_ttl(&env, 8, 4, 1);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#hang\"},\"task\":{\"ttl\":600000}}}");
        task = json_get(result(wait_reply(&env, &a, "c1")), "task");
        /* What is granted is what is said: the operator's maximum. */
        ASSERT_EQ_INT(json_get_int64(task, "ttl", 0), 1000);
        running = strdup(json_get_string(task, "taskId"));
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"c2\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#out x\"},\"task\":{}}}");
        ended = strdup(json_get_string(json_get(result(wait_reply(&env, &a, "c2")), "task"), "taskId"));
        task_req(&a, "r2", "tasks/result", ended);
        ASSERT_TRUE(strstr(text_of(result(wait_reply(&env, &a, "r2"))), "x"));
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 2);

        run_for(&env, 1300);
        /* Both are gone, the running one's run stopped. */
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        task_req(&a, "g1", "tasks/get", running);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "g1")), JSONRPC_INVALID_PARAMS);
        task_req(&a, "g2", "tasks/get", ended);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "g2")), JSONRPC_INVALID_PARAMS);
        for (unsigned i = 0; i < 200 && fake_broker_n_cancelled(env.broker) < 1; i++)
                run_for(&env, 10);
        ASSERT_EQ_INT(fake_broker_n_cancelled(env.broker), 1);
        ASSERT_EQ_INT(mcp_server_in_flight(env.server), 0);
        peer_close(&a);
        env_done(&env);
}

/* A finished, unread result is charged to its caller's share of the
 * budget until its ttl ends, and to nobody else's. */
TEST(test_budget) {
        MemBudget budget = { .max = 64 << 20 };
        _cleanup_free_ char *id = NULL;
        uint64_t held;
        Env env;
        Peer a;

        env_init_full(&env, 8, 4, 1, &budget);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#sleep 100\\n#out %0200d\"},\"task\":{}}}", 0);
        id = strdup(json_get_string(json_get(result(wait_reply(&env, &a, "c1")), "task"), "taskId"));
        task_req(&a, "r1", "tasks/result", id);
        ASSERT_TRUE(strstr(text_of(result(wait_reply(&env, &a, "r1"))), "00000"));
        run_for(&env, 50);
        held = mem_budget_caller_used(&budget, "uid:1000");
        /* At least the task and its result; nothing of it elsewhere. */
        ASSERT_TRUE(held >= 2048 + 200);
        ASSERT_EQ_U64(mem_budget_caller_used(&budget, "uid:1001"), 0);
        ASSERT_EQ_U64(budget.used, held);
        /* The ttl ends: all of it is given back. */
        run_for(&env, 1200);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        ASSERT_EQ_U64(mem_budget_caller_used(&budget, "uid:1000"), 0);
        peer_close(&a);
        env_done(&env);
        ASSERT_EQ_U64(budget.used, 0);
}

static void stateless_call(Peer *p, const char *id, const char *code, bool extension) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"%s\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                 "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{%s}}}}",
              id, code, extension ? "\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}" : "");
}

static void stateless_req(Peer *p, const char *id, const char *method, const char *task_id) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"%s\",\"params\":{\"taskId\":\"%s\",\"_meta\":"
                 "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", id, method, task_id);
}

TEST(test_extension) {
        _cleanup_free_ char *id = NULL;
        Env env;
        Peer a, b;
        json_object *r;

        env_init(&env, 8, 4);
        peer_open(&env, &a, "http:token:alice");
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\",\"params\":{\"_meta\":"
                  "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        r = result(wait_reply(&env, &a, "d"));
        ASSERT_TRUE(json_get(json_get(json_get(r, "capabilities"), "extensions"), "io.modelcontextprotocol/tasks"));

        /* Quick: inline, as if there were no tasks. */
        stateless_call(&a, "q", "#out quick", true);
        r = result(wait_reply(&env, &a, "q"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_TRUE(strstr(text_of(r), "quick"));
        /* Slow without the extension: inline, never a task. */
        stateless_call(&a, "n", "#sleep 400\\n#out slow", false);
        r = result(wait_reply(&env, &a, "n"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        /* Slow with it: a task after task_after_ms. */
        stateless_call(&a, "s", "#sleep 400\\n#exit 3", true);
        r = result(wait_reply(&env, &a, "s"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "task");
        ASSERT_STREQ(json_get_string(r, "status"), "working");
        ASSERT_TRUE(json_get(r, "ttlMs"));
        id = strdup(json_get_string(r, "taskId"));
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 1);

        /* A subscription for it (and for an id that is nobody's): only
         * ours is acknowledged, and its end comes on the stream. */
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"sub\",\"method\":\"subscriptions/listen\",\"params\":{"
                  "\"notifications\":{\"taskIds\":[\"%s\",\"local.0123456789abcdef0123456789abcdef\"]},\"_meta\":"
                  "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", id);
        r = json_object_array_get_idx(a.msgs, json_object_array_length(a.msgs) - 1);
        ASSERT_STREQ(json_get_string(r, "method"), "notifications/subscriptions/acknowledged");
        ASSERT_STREQ(json_get_string(json_get(json_get(r, "params"), "_meta"), "io.modelcontextprotocol/subscriptionId"),
                     "sub");
        ASSERT_EQ_INT(json_object_array_length(json_get(json_get(json_get(r, "params"), "notifications"), "taskIds")), 1);
        ASSERT_TRUE(!reply_to(&a, "sub"));

        /* The same caller from another session (a new HTTP request). */
        peer_open(&env, &b, "http:token:alice");
        for (unsigned i = 0; i < 100; i++) {
                _cleanup_free_ char *rid = NULL;
                ASSERT_TRUE(asprintf(&rid, "g%u", i) >= 0);
                stateless_req(&b, rid, "tasks/get", id);
                r = result(wait_reply(&env, &b, rid));
                if (!streq(json_get_string(r, "status"), "working"))
                        break;
                run_for(&env, 20);
        }
        ASSERT_STREQ(json_get_string(r, "status"), "completed");
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_TRUE(json_get(r, "result"));
        /* The subscriber heard of it, with the outcome inline. */
        r = json_object_array_get_idx(a.msgs, json_object_array_length(a.msgs) - 1);
        ASSERT_STREQ(json_get_string(r, "method"), "notifications/tasks");
        ASSERT_STREQ(json_get_string(json_get(r, "params"), "taskId"), id);
        ASSERT_STREQ(json_get_string(json_get(r, "params"), "status"), "completed");
        ASSERT_TRUE(json_get(json_get(r, "params"), "result"));
        /* The call's own result, as tools/call would have answered it. */
        ASSERT_STREQ(json_get_string(json_get(json_get(r, "params"), "result"), "resultType"), "complete");
        stateless_req(&b, "u", "tasks/update", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &b, "u")), JSONRPC_INVALID_PARAMS);
        /* Cancel: an empty ack, also for one that ended, which goes. */
        stateless_req(&b, "x", "tasks/cancel", id);
        ASSERT_STREQ(json_get_string(result(wait_reply(&env, &b, "x")), "resultType"), "complete");
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        /* No tasks/list or tasks/result in this format. */
        stateless_req(&b, "r", "tasks/result", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &b, "r")), JSONRPC_METHOD_NOT_FOUND);
        peer_close(&b);

        /* Another token: unknown. */
        peer_open(&env, &b, "http:token:bob");
        stateless_req(&b, "g", "tasks/get", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &b, "g")), JSONRPC_INVALID_PARAMS);
        peer_close(&b);

        /* notifications/cancelled before it became a task: no reply, the run stops. */
        stateless_call(&a, "k", "#hang", true);
        run_for(&env, 30);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 1);
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"k\"}}");
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        for (unsigned i = 0; i < 200 && fake_broker_n_cancelled(env.broker) < 1; i++)
                run_for(&env, 10);
        ASSERT_EQ_INT(fake_broker_n_cancelled(env.broker), 1);
        run_for(&env, 200);
        ASSERT_TRUE(!reply_to(&a, "k"));

        /* A client that hangs up before its call became a task stops the run. */
        stateless_call(&a, "h", "#hang", true);
        run_for(&env, 30);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 1);
        peer_close(&a);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        for (unsigned i = 0; i < 200 && fake_broker_n_cancelled(env.broker) < 2; i++)
                run_for(&env, 10);
        ASSERT_EQ_INT(fake_broker_n_cancelled(env.broker), 2);
        env_done(&env);
}

/* A large result and many readers of it, as issue 37 drove them: forty
 * subscriptions, forty unread tasks/get, waiting tasks/result. The outcome
 * is kept once (its text, not its tree and a copy); each reader's copy is
 * charged before it is built, and those the caller's share cannot take get
 * a small error or the status alone; readers are capped per caller and per
 * task, not per session; another caller is served throughout. */
TEST(test_readers) {
        MemBudget budget = { .max = 1200 << 10 };       /* a caller's share: 600 KiB */
        _cleanup_free_ char *big = NULL, *id = NULL;
        Peer a, w, readers[40];
        unsigned acked = 0, listening = 0, full = 0, status_only = 0, ok = 0, busy = 0;
        size_t len = 0;
        uint64_t held;
        Env env;
        json_object *r;

        /* Less than a pipe holds: the fake broker writes it at once. */
        big = malloc(60001);
        ASSERT_TRUE(big);
        memset(big, 'x', 60000);
        big[60000] = 0;
        env_init_full(&env, 8, 4, 7200, &budget);
        peer_open(&env, &a, "http:token:alice");
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#sleep 300\\n#echo\",\"stdin\":\"%s\"},\"_meta\":{"
                  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                  "\"io.modelcontextprotocol/clientCapabilities\":"
                  "{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}}}}", big);
        r = result(wait_reply(&env, &a, "s"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "task");
        id = strdup(json_get_string(r, "taskId"));

        /* Forty subscriptions, each its own session (its own request):
         * sixteen per caller, four of them for this task. */
        for (unsigned i = 0; i < 40; i++) {
                peer_open_held(&env, &readers[i], "http:token:alice", &budget);
                sendf(&readers[i], "{\"jsonrpc\":\"2.0\",\"id\":\"sub\",\"method\":\"subscriptions/listen\","
                                   "\"params\":{\"notifications\":{\"taskIds\":[\"%s\"]},\"_meta\":"
                                   "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                   "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", id);
                r = json_object_array_get_idx(readers[i].msgs, 0);
                if (json_get(r, "error"))
                        continue;
                listening++;
                acked += json_object_array_length(
                        json_get(json_get(json_get(r, "params"), "notifications"), "taskIds")) > 0;
        }
        ASSERT_EQ_INT(listening, 16);
        ASSERT_EQ_INT(acked, 4);

        /* It ends: the outcome is kept once, as text. */
        for (unsigned i = 0; i < 200 && json_object_array_length(readers[0].msgs) < 2; i++)
                run_for(&env, 10);
        for (unsigned i = 0; i < 40; i++) {
                json_object *n = json_object_array_get_idx(readers[i].msgs, 1);
                if (!n)
                        continue;
                ASSERT_STREQ(json_get_string(n, "method"), "notifications/tasks");
                ASSERT_STREQ(json_get_string(json_get(n, "params"), "status"), "completed");
                if (json_get(json_get(n, "params"), "result")) {
                        full++;
                        len = strlen(json_object_to_json_string_ext(json_get(json_get(n, "params"), "result"),
                                                                     JSON_C_TO_STRING_PLAIN));
                } else
                        status_only++;
        }
        ASSERT_EQ_INT(full + status_only, 4);
        ASSERT_TRUE(full >= 1);
        ASSERT_TRUE(status_only >= 1);
        ASSERT_TRUE(len > 120000);
        held = mem_budget_caller_used(&budget, "http:token:alice");
        ASSERT_TRUE(held <= budget.max / 2);
        for (unsigned i = 0; i < 40; i++)
                held -= readers[i].held.bytes;
        /* The task holds its result once: not its tree beside it. */
        ASSERT_TRUE(held < len + 16384);

        /* Forty tasks/get, never read: what fits is served, the rest told
         * the server is busy; the caller's share holds. */
        for (unsigned i = 0; i < 40; i++) {
                char rid[16];
                (void) snprintf(rid, sizeof rid, "g%u", i);
                stateless_req(&readers[i], rid, "tasks/get", id);
                r = wait_reply(&env, &readers[i], rid);
                if (json_get(r, "error")) {
                        ASSERT_EQ_INT(error_code(r), JSONRPC_SERVER_ERROR);
                        ASSERT_TRUE(strstr(json_get_string(json_get(r, "error"), "message"), "server busy"));
                        busy++;
                } else {
                        ASSERT_TRUE(json_get(json_get(r, "result"), "result"));
                        ok++;
                }
                ASSERT_TRUE(mem_budget_caller_used(&budget, "http:token:alice") <= budget.max / 2);
        }
        ASSERT_TRUE(busy > 30);
        /* Another caller is served: a call of its own, and its result. */
        peer_open(&env, &w, "http:token:bob");
        stateless_call(&w, "q", "#out witness", true);
        ASSERT_TRUE(strstr(text_of(result(wait_reply(&env, &w, "q"))), "witness"));
        peer_close(&w);
        /* Readers gone, their room is back: tasks/get is served again. */
        for (unsigned i = 0; i < 40; i++)
                peer_close(&readers[i]);
        stateless_req(&a, "again", "tasks/get", id);
        ASSERT_TRUE(json_get(result(wait_reply(&env, &a, "again")), "result"));
        /* Deleted by its caller (cancel once ended): all of it given back. */
        stateless_req(&a, "del", "tasks/cancel", id);
        ASSERT_STREQ(json_get_string(result(wait_reply(&env, &a, "del")), "resultType"), "complete");
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        ASSERT_EQ_U64(mem_budget_caller_used(&budget, "http:token:alice"), 0);
        peer_close(&a);
        env_done(&env);
        ASSERT_EQ_U64(budget.used, 0);
}

/* The core's tasks/result: waiters answered one by one when the task
 * ends, each charged first; the deep copy per waiter is gone. */
TEST(test_result_waiters) {
        MemBudget budget = { .max = 1200 << 10 };
        _cleanup_free_ char *big = NULL, *id = NULL;
        unsigned ok = 0, busy = 0;
        Env env;
        Peer a, readers[8];
        json_object *r;

        big = malloc(60001);
        ASSERT_TRUE(big);
        memset(big, 'y', 60000);
        big[60000] = 0;
        env_init_full(&env, 8, 4, 7200, &budget);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                  "\"arguments\":{\"code\":\"#sleep 200\\n#echo\",\"stdin\":\"%s\"},\"task\":{}}}", big);
        id = strdup(json_get_string(json_get(result(wait_reply(&env, &a, "c")), "task"), "taskId"));
        for (unsigned i = 0; i < 8; i++) {
                peer_open_held(&env, &readers[i], "uid:1000", &budget);
                initialize(&env, &readers[i]);
                task_req(&readers[i], "r", "tasks/result", id);
        }
        for (unsigned i = 0; i < 8; i++) {
                r = wait_reply(&env, &readers[i], "r");
                if (json_get(r, "error")) {
                        ASSERT_EQ_INT(error_code(r), JSONRPC_SERVER_ERROR);
                        busy++;
                } else {
                        ASSERT_STREQ(json_get_string(json_get(json_get(json_get(r, "result"), "_meta"),
                                                              "io.modelcontextprotocol/related-task"), "taskId"), id);
                        ASSERT_TRUE(strstr(text_of(json_get(r, "result")), "yyyy"));
                        ok++;
                }
        }
        ASSERT_TRUE(ok >= 1);
        ASSERT_TRUE(busy >= 1);
        ASSERT_TRUE(mem_budget_caller_used(&budget, "uid:1000") <= budget.max / 2);
        for (unsigned i = 0; i < 8; i++)
                peer_close(&readers[i]);
        peer_close(&a);
        env_done(&env);
        ASSERT_EQ_U64(budget.used, 0);
}

/* A transport that takes shared parts is handed the outcome's one copy:
 * the same bytes for every reader, and the whole message is what any
 * other transport gets. The copy lives as long as a reader holds it, also
 * past its task. */
TEST(test_shared_outcome) {
        _cleanup_free_ char *id = NULL, *plain = NULL;
        McpPeer who = { .transport = "test", .uid = 1000, .caller = "uid:1000" };
        MemBudget budget = { .max = 64 << 20 };
        Env env;
        Peer a, r1, r2;
        json_object *r;

        env_init_full(&env, 8, 4, 7200, &budget);
        peer_open(&env, &a, "uid:1000");
        initialize(&env, &a);
        id = strdup(call_task(&env, &a, "c1", "#out shared-bytes"));
        wait_ended(&env, &a, id);
        task_req(&a, "r0", "tasks/result", id);
        plain = strdup(json_object_to_json_string_ext(wait_reply(&env, &a, "r0"), JSON_C_TO_STRING_PLAIN));
        for (Peer *p = &r1; p; p = p == &r1 ? &r2 : NULL) {
                *p = (Peer) { .msgs = json_object_new_array() };
                ASSERT_EQ_INT(mcp_session_new(env.server, &transport_shared, p, &who, &p->session), 0);
                initialize(&env, p);
                task_req(p, "r0", "tasks/result", id);
                r = wait_reply(&env, p, "r0");
                ASSERT_STREQ(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN), plain);
                ASSERT_EQ_INT(p->n_shared, 1);
        }
        /* One copy for both. */
        ASSERT_TRUE(r1.shared_seen[0] == r2.shared_seen[0]);
        ASSERT_TRUE(strstr(r1.shared_seen[0], "shared-bytes"));
        /* The task goes; the readers still hold its bytes, charged. */
        task_req(&a, "x", "tasks/cancel", id);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "x")), JSONRPC_INVALID_PARAMS);
        ASSERT_EQ_INT(mcp_server_tasks(env.server), 0);
        ASSERT_TRUE(strstr(r1.shared_seen[0], "shared-bytes"));
        ASSERT_TRUE(mem_budget_caller_used(&budget, "uid:1000") > 0);
        for (Peer *p = &r1; p; p = p == &r1 ? &r2 : NULL) {
                for (unsigned i = 0; i < p->n_shared; i++)
                        p->shared_kept[i].unref(p->shared_kept[i].owner);
                peer_close(p);
        }
        peer_close(&a);
        ASSERT_EQ_U64(mem_budget_caller_used(&budget, "uid:1000"), 0);
        env_done(&env);
        ASSERT_EQ_U64(budget.used, 0);
}

/* ---------------------------------------------------------------------- */
/* Code mode's question to confirm a destructive tool (the fake broker's
 * #confirm) in a task's call (2025-11-25): the task is input_required while
 * it is open, elicitation/create goes on the caller's tasks/result with the
 * task's related-task _meta, and only the answer on that session counts. */

static void initialize_elicit(Env *env, Peer *p) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                 "\"2025-11-25\",\"capabilities\":{\"elicitation\":{}},"
                 "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
        ASSERT_TRUE(result(wait_reply(env, p, "init")));
}

static json_object *nth_method(const Peer *p, const char *method, unsigned nth) {
        for (size_t i = 0; i < json_object_array_length(p->msgs); i++) {
                json_object *m = json_object_array_get_idx(p->msgs, i);
                if (streq_ptr(json_get_string(m, "method"), method) && nth-- == 0)
                        return m;
        }
        return NULL;
}

/* Polls tasks/get until the task says status. */
static void wait_status(Env *env, Peer *p, const char *task_id, const char *status) {
        static unsigned n;
        uint64_t end = now_usec() + 10 * USEC_PER_SEC;

        for (;;) {
                char id[32];

                (void) snprintf(id, sizeof id, "ws%u", n++);
                task_req(p, id, "tasks/get", task_id);
                if (streq_ptr(json_get_string(result(wait_reply(env, p, id)), "status"), status))
                        return;
                if (now_usec() > end)
                        ASSERT_FAIL_("task never became %s", status);
                run_for(env, 20);
        }
}

static json_object *wait_method(Env *env, Peer *p, const char *method, unsigned nth) {
        uint64_t end = now_usec() + 10 * USEC_PER_SEC;
        json_object *m;

        while (!(m = nth_method(p, method, nth))) {
                if (now_usec() > end)
                        ASSERT_FAIL_("timed out waiting for %s", method);
                ASSERT_TRUE(sd_event_run(env->event, 10 * USEC_PER_MSEC) >= 0);
        }
        return m;
}

static const char *result_json(Env *env, Peer *p, const char *id) {
        return json_object_to_json_string(result(wait_reply(env, p, id)));
}

TEST(test_core_confirm) {
        _cleanup_free_ char *id = NULL, *id2 = NULL, *id3 = NULL;
        Env env;
        Peer a, a2, other, none;
        json_object *q, *status;
        char answer[256];

        env_init(&env, 8, 8);
        peer_open(&env, &a, "uid:1000");
        initialize_elicit(&env, &a);
        peer_open(&env, &a2, "uid:1000");
        initialize_elicit(&env, &a2);
        peer_open(&env, &other, "uid:1001");
        initialize_elicit(&env, &other);

        /* input_required while the question is open; it goes nowhere until
         * the client calls tasks/result. */
        id = strdup(call_task(&env, &a, "c1", "#confirm files edit_file"));
        ASSERT_TRUE(id);
        wait_status(&env, &a, id, "input_required");
        status = json_get(nth_method(&a, "notifications/tasks/status", 0), "params");
        ASSERT_STREQ(json_get_string(status, "status"), "input_required");
        ASSERT_TRUE(!nth_method(&a, "elicitation/create", 0));
        task_req(&a, "r1", "tasks/result", id);
        q = wait_method(&env, &a, "elicitation/create", 0);
        ASSERT_STREQ(json_get_string(json_get(q, "params"), "mode"), "form");
        ASSERT_CONTAINS(json_get_string(json_get(q, "params"), "message"), "\"edit_file\"");
        ASSERT_STREQ(json_get_string(json_get(json_get(json_get(q, "params"), "_meta"),
                                              "io.modelcontextprotocol/related-task"), "taskId"), id);

        /* The answer counts only on the session it was asked on: not
         * another caller's, not another session of the same caller. */
        (void) snprintf(answer, sizeof answer, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"accept\","
                        "\"content\":{\"confirm\":true}}}", json_get_string(q, "id"));
        sendf(&other, "%s", answer);
        sendf(&a2, "%s", answer);
        /* Nor by tasks/update, which is the extension's (no method here). */
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"up\",\"method\":\"tasks/update\",\"params\":{\"taskId\":\"%s\","
                  "\"inputResponses\":{\"%s\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}}}}",
              id, json_get_string(q, "id"));
        ASSERT_TRUE(json_get(wait_reply(&env, &a, "up"), "error"));
        run_for(&env, 50);
        ASSERT_TRUE(!reply_to(&a, "r1"));
        ASSERT_TRUE(!env.broker->runs[0]->confirm_answers);
        /* A new tasks/result (the client lost the last one's stream) is
         * asked the open question again, by the same id. */
        task_req(&a, "r1b", "tasks/result", id);
        ASSERT_STREQ(json_get_string(wait_method(&env, &a, "elicitation/create", 1), "id"), json_get_string(q, "id"));
        sendf(&a, "%s", answer);
        ASSERT_CONTAINS(result_json(&env, &a, "r1"), "confirm: accept=1 reason=");
        ASSERT_CONTAINS(result_json(&env, &a, "r1b"), "confirm: accept=1 reason=");
        ASSERT_EQ_INT(json_object_array_length(env.broker->runs[0]->confirm_answers), 1);
        /* Back to working before it completed. */
        status = json_get(nth_method(&a, "notifications/tasks/status", 1), "params");
        ASSERT_STREQ(json_get_string(status, "status"), "working");
        wait_status(&env, &a, id, "completed");

        /* Declined: the call hears no. A tasks/result open before the
         * question gets it at once. */
        id2 = strdup(call_task(&env, &a, "c2", "#confirm files edit_file"));
        ASSERT_TRUE(id2);
        task_req(&a, "r2", "tasks/result", id2);
        q = wait_method(&env, &a, "elicitation/create", 2);
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"decline\"}}", json_get_string(q, "id"));
        ASSERT_CONTAINS(result_json(&env, &a, "r2"), "the user declined");

        /* The session it was asked on goes: the question is asked again on
         * the next tasks/result, and answered there. */
        id3 = strdup(call_task(&env, &a2, "c3", "#confirm files edit_file"));
        ASSERT_TRUE(id3);
        task_req(&a2, "r3", "tasks/result", id3);
        wait_method(&env, &a2, "elicitation/create", 0);
        peer_close(&a2);
        wait_status(&env, &a, id3, "input_required");
        task_req(&a, "r4", "tasks/result", id3);
        q = wait_method(&env, &a, "elicitation/create", 3);
        ASSERT_STREQ(json_get_string(json_get(json_get(json_get(q, "params"), "_meta"),
                                              "io.modelcontextprotocol/related-task"), "taskId"), id3);
        sendf(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"accept\","
                  "\"content\":{\"confirm\":true}}}", json_get_string(q, "id"));
        ASSERT_CONTAINS(result_json(&env, &a, "r4"), "confirm: accept=1 reason=");
        ASSERT_TRUE(!nth_method(&other, "elicitation/create", 0));

        /* A client without elicitation: no, saying why, never input_required. */
        peer_open(&env, &none, "uid:1002");
        initialize(&env, &none);
        free(id);
        id = strdup(call_task(&env, &none, "c4", "#confirm files edit_file"));
        ASSERT_TRUE(id);
        task_req(&none, "r5", "tasks/result", id);
        ASSERT_CONTAINS(result_json(&env, &none, "r5"), "did not declare the elicitation capability");
        ASSERT_TRUE(!nth_method(&none, "elicitation/create", 0));
        peer_close(&none);
        peer_close(&other);
        peer_close(&a);
        env_done(&env);
}

/* The same in the 2026-07-28 tasks extension: the call becomes a task
 * when it asks, tasks/get shows input_required with the question in
 * inputRequests, and tasks/update's inputResponses answer it. */

static void stateless_call_caps(Peer *p, const char *id, const char *code, const char *caps) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"%s\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                 "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{%s}}}}", id, code, caps);
}

static void task_update(Peer *p, const char *id, const char *task_id, const char *responses) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tasks/update\",\"params\":{\"taskId\":\"%s\","
                 "\"inputResponses\":%s,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", id, task_id, responses);
}

static json_object *ext_get(Env *env, Peer *p, const char *task_id) {
        static unsigned n;
        char id[32];

        (void) snprintf(id, sizeof id, "eg%u", n++);
        stateless_req(p, id, "tasks/get", task_id);
        return result(wait_reply(env, p, id));
}

TEST(test_extension_confirm) {
        static const char ext[] = "\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}";
        static const char caps[] = "\"extensions\":{\"io.modelcontextprotocol/tasks\":{}},"
                                   "\"elicitation\":{\"form\":{}}";
        _cleanup_free_ char *id = NULL, *key = NULL;
        Env env;
        Peer a, other;
        json_object *r, *requests;
        char body[256];

        env_init(&env, 8, 4);
        peer_open(&env, &a, "http:token:alice");
        peer_open(&env, &other, "http:token:bob");

        /* A task at once when it asks (before task_after_ms would make it one). */
        stateless_call_caps(&a, "c1", "#confirm files edit_file", caps);
        r = result(wait_reply(&env, &a, "c1"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "task");
        id = strdup(json_get_string(r, "taskId"));
        ASSERT_TRUE(id);
        r = ext_get(&env, &a, id);
        ASSERT_STREQ(json_get_string(r, "status"), "input_required");
        requests = json_get(r, "inputRequests");
        ASSERT_EQ_INT(json_object_object_length(requests), 1);
        json_object_object_foreach(requests, k, v) {
                key = strdup(k);
                ASSERT_STREQ(json_get_string(v, "method"), "elicitation/create");
                ASSERT_STREQ(json_get_string(json_get(v, "params"), "mode"), "form");
                ASSERT_CONTAINS(json_get_string(json_get(v, "params"), "message"), "\"edit_file\"");
                ASSERT_TRUE(!json_get(v, "id"));
        }
        ASSERT_TRUE(key);

        /* Another caller: no such task. A key that is not the question's,
         * or not an object: nothing answered. */
        (void) snprintf(body, sizeof body, "{\"%s\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}}", key);
        task_update(&other, "u0", id, body);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &other, "u0")), JSONRPC_INVALID_PARAMS);
        task_update(&a, "u1", id, "{\"mcp-exec-confirm-999\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}}");
        ASSERT_TRUE(result(wait_reply(&env, &a, "u1")));
        task_update(&a, "u2", id, "[]");
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "u2")), JSONRPC_INVALID_PARAMS);
        ASSERT_STREQ(json_get_string(ext_get(&env, &a, id), "status"), "input_required");
        ASSERT_TRUE(!env.broker->runs[0]->confirm_answers);

        /* The answer: the call goes on, the task completes. */
        task_update(&a, "u3", id, body);
        ASSERT_TRUE(result(wait_reply(&env, &a, "u3")));
        for (unsigned i = 0; i < 200; i++) {
                r = ext_get(&env, &a, id);
                if (!streq(json_get_string(r, "status"), "working"))
                        break;
                run_for(&env, 20);
        }
        ASSERT_STREQ(json_get_string(r, "status"), "completed");
        ASSERT_TRUE(!json_get(r, "inputRequests"));
        ASSERT_CONTAINS(json_object_to_json_string(json_get(r, "result")), "confirm: accept=1 reason=");
        task_update(&a, "u4", id, body);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "u4")), JSONRPC_INVALID_PARAMS);

        /* A decline: no. */
        free(id);
        stateless_call_caps(&a, "c2", "#confirm files edit_file", caps);
        id = strdup(json_get_string(result(wait_reply(&env, &a, "c2")), "taskId"));
        ASSERT_TRUE(id);
        r = ext_get(&env, &a, id);
        json_object_object_foreach(json_get(r, "inputRequests"), k2, v2) {
                (void) v2;
                (void) snprintf(body, sizeof body, "{\"%s\":{\"action\":\"decline\"}}", k2);
        }
        task_update(&a, "u5", id, body);
        ASSERT_TRUE(result(wait_reply(&env, &a, "u5")));
        for (unsigned i = 0; i < 200; i++) {
                r = ext_get(&env, &a, id);
                if (!streq(json_get_string(r, "status"), "working") && !streq(json_get_string(r, "status"),
                                                                              "input_required"))
                        break;
                run_for(&env, 20);
        }
        ASSERT_CONTAINS(json_object_to_json_string(json_get(r, "result")), "the user declined");

        /* No elicitation declared, with or without the extension: no,
         * saying why. */
        stateless_call_caps(&a, "c3", "#confirm files edit_file", ext);
        ASSERT_CONTAINS(text_of(result(wait_reply(&env, &a, "c3"))), "did not declare the elicitation capability");
        stateless_call_caps(&a, "c3b", "#confirm files edit_file", "");
        ASSERT_CONTAINS(text_of(result(wait_reply(&env, &a, "c3b"))), "did not declare the elicitation capability");
        peer_close(&other);
        peer_close(&a);
        env_done(&env);
}

/* A plain 2026-07-28 call of a client that declared elicitation (multi
 * round-trip requests): the call that asks ends with InputRequiredResult
 * (inputRequests, requestState), the run waits, and the retry with the
 * inputResponses gets the call's result. */

static void retry_call(Peer *p, const char *id, const char *state, const char *responses) {
        sendf(p, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"#confirm files edit_file\"},\"requestState\":\"%s\",\"inputResponses\":%s,"
                 "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{\"form\":{}}}}}}",
              id, state, responses);
}

TEST(test_mrtr_confirm) {
        static const char caps[] = "\"elicitation\":{\"form\":{}}";
        _cleanup_free_ char *state = NULL, *key = NULL;
        Env env;
        Peer a, a2, a3, other;
        json_object *r;
        char body[256];

        env_init(&env, 8, 4);
        peer_open(&env, &a, "http:token:alice");
        peer_open(&env, &other, "http:token:bob");

        /* Quick and asking nothing: inline, as ever. */
        stateless_call_caps(&a, "q", "#out quick", caps);
        r = result(wait_reply(&env, &a, "q"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_TRUE(strstr(text_of(r), "quick"));

        stateless_call_caps(&a, "c1", "#confirm files edit_file", caps);
        r = result(wait_reply(&env, &a, "c1"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "input_required");
        state = strdup(json_get_string(r, "requestState"));
        ASSERT_TRUE(state);
        ASSERT_EQ_INT(json_object_object_length(json_get(r, "inputRequests")), 1);
        json_object_object_foreach(json_get(r, "inputRequests"), k, v) {
                key = strdup(k);
                ASSERT_STREQ(json_get_string(v, "method"), "elicitation/create");
                ASSERT_STREQ(json_get_string(json_get(v, "params"), "mode"), "form");
        }
        ASSERT_TRUE(key);
        /* Not a task anyone sees. */
        stateless_req(&a, "g", "tasks/get", state);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "g")), JSONRPC_INVALID_PARAMS);

        /* Another caller's retry, an unknown state: no. */
        (void) snprintf(body, sizeof body, "{\"%s\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}}", key);
        retry_call(&other, "x", state, body);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &other, "x")), JSONRPC_INVALID_PARAMS);
        retry_call(&a, "y", "local.0123456789abcdef0123456789abcdef", body);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a, "y")), JSONRPC_INVALID_PARAMS);
        ASSERT_TRUE(!env.broker->runs[1]->confirm_answers);

        /* A retry without the answer is asked again, at once. */
        peer_open(&env, &a2, "http:token:alice");
        retry_call(&a2, "r1", state, "{}");
        r = result(wait_reply(&env, &a2, "r1"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "input_required");
        ASSERT_TRUE(json_get(json_get(r, "inputRequests"), key));
        peer_close(&a2);

        /* The retry with it (a new request, a new id): the call's result. */
        peer_open(&env, &a3, "http:token:alice");
        retry_call(&a3, "r2", state, body);
        r = result(wait_reply(&env, &a3, "r2"));
        ASSERT_STREQ(json_get_string(r, "resultType"), "complete");
        ASSERT_CONTAINS(text_of(r), "confirm: accept=1 reason=");
        /* It ended: its state names nothing now. */
        retry_call(&a3, "r3", state, body);
        ASSERT_EQ_INT(error_code(wait_reply(&env, &a3, "r3")), JSONRPC_INVALID_PARAMS);
        peer_close(&a3);

        /* A decline: no. */
        free(state);
        stateless_call_caps(&a, "c2", "#confirm files edit_file", caps);
        r = result(wait_reply(&env, &a, "c2"));
        state = strdup(json_get_string(r, "requestState"));
        ASSERT_TRUE(state);
        json_object_object_foreach(json_get(r, "inputRequests"), k2, v2) {
                (void) v2;
                (void) snprintf(body, sizeof body, "{\"%s\":{\"action\":\"decline\"}}", k2);
        }
        retry_call(&a, "r4", state, body);
        ASSERT_CONTAINS(text_of(result(wait_reply(&env, &a, "r4"))), "the user declined");
        peer_close(&other);
        peer_close(&a);
        env_done(&env);
}

int main(void) {
        /* The log goes to stderr; the ids are random. */
        RUN(test_core_capability_and_tool);
        RUN(test_core_lifecycle);
        RUN(test_core_cancel);
        RUN(test_core_invalid_arguments_fail_the_task);
        RUN(test_caps);
        RUN(test_caps_ranking);
        RUN(test_packages);
        RUN(test_expiry);
        RUN(test_budget);
        RUN(test_extension);
        RUN(test_readers);
        RUN(test_result_waiters);
        RUN(test_shared_outcome);
        RUN(test_core_confirm);
        RUN(test_extension_confirm);
        RUN(test_mrtr_confirm);
        return 0;
}
