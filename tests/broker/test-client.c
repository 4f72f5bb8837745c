/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/client.[ch] without systemd: one connection of a
 * Manager that has no bus, driven through its socket. What the op table lets
 * through in which state, the errors of a bad run or call (the fd and
 * timeout checks run and session_exec share), and that a connection whose
 * one request failed is closed. Packages (issue 23): what the broker takes
 * in "packages", what it hands a launcher, and that a session's call
 * carries the session's specs. */

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker-proto.h"
#include "client.h"
#include "json-util.h"
#include "manager.h"
#include "package-spec.h"
#include "packages.h"
#include "client-sessions.h"
#include "test-helpers.h"

typedef struct Fixture {
        Manager m;
        int peer;                       /* the caller's end */
} Fixture;

static void fixture_init(Fixture *f) {
        int sv[2];

        *f = (Fixture) {};
        f->m.listen_fd = -EBADF;
        f->m.config.default_timeout_s = 30;
        f->m.config.max_timeout_s = 300;
        f->m.config.task_max_timeout_s = 3600;
        f->m.config.max_concurrent = 2;
        f->m.config.wheelhouse = (char *) WHEELHOUSE_DEFAULT;
        f->m.config.package_store = (char *) PACKAGE_STORE_DEFAULT;
        f->m.config.max_packages = 4;
        f->m.config.max_install_bytes = 48 << 20;
        ASSERT_EQ_INT(sd_event_new(&f->m.event), 0);
        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        ASSERT_EQ_INT(client_new(&f->m, sv[0], getpid(), 0), 0);
        f->peer = sv[1];
}

static void fixture_done(Fixture *f) {
        while (f->m.clients)
                client_free(f->m.clients);
        ASSERT_EQ_INT(f->m.n_clients, 0);
        sandbox_sessions_done(&f->m.sessions);
        f->m.event = sd_event_unref(f->m.event);
        f->peer = safe_close(f->peer);
}

/* Sends req (with fds) and lets the broker's side handle it. */
static void request(Fixture *f, const char *req, const int *fds, size_t n_fds) {
        _cleanup_json_ json_object *j = json_tokener_parse(req);

        ASSERT_TRUE(j);
        ASSERT_EQ_INT(packet_send(f->peer, j, fds, n_fds), 0);
        for (unsigned i = 0; i < 8; i++)
                ASSERT_TRUE(sd_event_run(f->m.event, 0) >= 0);
}

/* The next reply: its event, and for an error its message. */
static void expect_reply(Fixture *f, const char *event, const char *message) {
        _cleanup_json_ json_object *j = NULL;
        int fds[PACKET_MAX_FDS];
        size_t n_fds = 0;

        ASSERT_EQ_INT(packet_recv(f->peer, &j, fds, ELEMENTSOF(fds), &n_fds), 1);
        ASSERT_EQ_INT(n_fds, 0);
        ASSERT_STREQ(json_get_string(j, "event"), event);
        if (message)
                ASSERT_STREQ(json_get_string(j, "message"), message);
}

static void expect_closed(Fixture *f) {
        _cleanup_json_ json_object *j = NULL;
        int fds[PACKET_MAX_FDS];

        ASSERT_EQ_INT(packet_recv(f->peer, &j, fds, ELEMENTSOF(fds), NULL), 0);
        ASSERT_TRUE(!f->m.clients);
}

/* Nothing to read, and the connection waits in line for a slot. */
static void expect_open_waiting(Fixture *f) {
        _cleanup_json_ json_object *j = NULL;
        int fds[PACKET_MAX_FDS];

        ASSERT_EQ_INT(packet_recv(f->peer, &j, fds, ELEMENTSOF(fds), NULL), -EAGAIN);
        ASSERT_TRUE(f->m.clients);
        ASSERT_EQ_INT(f->m.clients->state, CLIENT_WAITING);
}

static void expect_open(Fixture *f) {
        _cleanup_json_ json_object *j = NULL;
        int fds[PACKET_MAX_FDS];

        ASSERT_EQ_INT(packet_recv(f->peer, &j, fds, ELEMENTSOF(fds), NULL), -EAGAIN);
        ASSERT_TRUE(f->m.clients);
        ASSERT_EQ_INT(f->m.clients->state, CLIENT_NEW);
}

/* Questions and ops that need a run: the connection stays open. */
TEST(test_new_connection) {
        Fixture f;

        fixture_init(&f);
        request(&f, "{}", NULL, 0);
        expect_reply(&f, "error", "missing op");
        expect_open(&f);
        request(&f, "{\"op\":\"frobnicate\"}", NULL, 0);
        expect_reply(&f, "error", "unknown op");
        /* Valid ops, but not before a run: as unknown as any. */
        request(&f, "{\"op\":\"detach\"}", NULL, 0);
        expect_reply(&f, "error", "unknown op");
        request(&f, "{\"op\":\"cancel\"}", NULL, 0);
        expect_reply(&f, "error", "unknown op");
        expect_open(&f);
        request(&f, "{\"op\":\"stats\"}", NULL, 0);
        expect_reply(&f, "stats", NULL);
        expect_open(&f);
        fixture_done(&f);
}

/* One connection, one request: a run that cannot start ends it. */
TEST(test_bad_run) {
        int p[2], file;
        Fixture f;

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
        file = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(file >= 0);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\"}", NULL, 0);
        expect_reply(&f, "error",
                     "a run needs three or four pipe or socket fds: stdin, stdout, stderr and the result channel");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\"}", (int[]) { p[0], p[1], file }, 3);
        expect_reply(&f, "error", "a run's fds must be pipes or sockets");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\",\"timeout_s\":-1}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "timeout_s must be a non-negative integer");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"run\",\"timeout_s\":\"5\"}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "timeout_s must be a non-negative integer");
        expect_closed(&f);
        fixture_done(&f);

        /* The caller is only a key, but a bounded string. */
        fixture_init(&f);
        request(&f, "{\"op\":\"run\",\"caller\":5}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "caller must be a short string");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        {
                char req[600];
                (void) snprintf(req, sizeof req, "{\"op\":\"run\",\"caller\":\"%0300d\"}", 0);
                request(&f, req, (int[]) { p[0], p[1], p[1] }, 3);
        }
        expect_reply(&f, "error", "caller must be a short string");
        expect_closed(&f);
        fixture_done(&f);

        /* The self-check failed: refused, with its reason. */
        fixture_init(&f);
        f.m.probe_state = SELF_CHECK_FAILED;
        request(&f, "{\"op\":\"run\",\"timeout_s\":5}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "the sandbox self-check failed");
        expect_closed(&f);
        ASSERT_EQ_U64(f.m.stats.runs[RUN_OUTCOME_REFUSED], 1);
        fixture_done(&f);

        safe_close(p[0]);
        safe_close(p[1]);
        safe_close(file);
}

/* session_exec shares the checks, in its own words; then the session must
 * be the caller's. */
TEST(test_bad_call) {
        int p[2];
        Fixture f;

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_exec\"}", (int[]) { p[0] }, 1);
        expect_reply(&f, "error",
                     "a call needs three or four pipe or socket fds: stdin, stdout, stderr and the result channel");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_exec\",\"timeout_s\":1.5}", (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "timeout_s must be a non-negative integer");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_exec\",\"session\":\"00000000000000000000000000000000\",\"caller\":\"uid:0\"}",
                (int[]) { p[0], p[1], p[1] }, 3);
        expect_reply(&f, "error", "no such session: it ended (closed, expired, or lost), or it is not yours");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_close_scope\",\"caller\":\"uid:0\"}", NULL, 0);
        expect_reply(&f, "error", "closing a scope needs a caller and a scope");
        expect_closed(&f);
        fixture_done(&f);

        fixture_init(&f);
        request(&f, "{\"op\":\"session_close_scope\",\"caller\":\"uid:0\",\"scope\":\"s\"}", NULL, 0);
        expect_reply(&f, "closed", NULL);
        expect_closed(&f);
        fixture_done(&f);

        safe_close(p[0]);
        safe_close(p[1]);
}

/* The timeout: absent or 0 is the default, the rest is clamped. */
TEST(test_parse_timeout) {
        struct {
                const char *req;
                uint64_t want;
        } cases[] = {
                { "{}", 30 },
                { "{\"timeout_s\":0}", 30 },
                { "{\"timeout_s\":1}", 1 },
                { "{\"timeout_s\":299}", 299 },
                /* A task's run may take longer: the broker's cap is the task maximum. */
                { "{\"timeout_s\":301}", 301 },
                { "{\"timeout_s\":100000}", 3600 },
        };
        Fixture f;

        fixture_init(&f);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_json_ json_object *j = json_tokener_parse(cases[i].req);
                uint64_t t = 0;

                ASSERT_EQ_INT(client_parse_timeout(f.m.clients, j, &t), 0);
                ASSERT_EQ_U64(t, cases[i].want);
        }
        expect_open(&f);
        fixture_done(&f);
}

/* The compact JSON of o, or "null". */
static const char *json_text(json_object *o) {
        return o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "null";
}

#define NOT_A_SPEC "is not a package spec: a name, optional [extras] and version clauses (\"polars\", \"numpy~=1.26\"); " \
                   "no URL, marker, space or leading \"-\""

/* "packages": exactly a short array of distinct valid specs, or nothing;
 * anything else is a bad request naming the entry, and nothing is kept. */
TEST(test_parse_packages) {
        static char long_spec[PACKAGE_SPEC_MAX + 16];
        struct {
                const char *req;
                const char *want;       /* the kept specs as JSON, or NULL: refused with error */
                const char *error;
        } cases[] = {
                { "{}", "null", NULL },
                { "{\"packages\":null}", "null", NULL },
                { "{\"packages\":[]}", "null", NULL },
                { "{\"packages\":[\"polars\",\"scikit-learn==1.5.*\",\"requests[socks]>=2.31,<3\",\"numpy~=1.26\"]}",
                  "[\"polars\",\"scikit-learn==1.5.*\",\"requests[socks]>=2.31,<3\",\"numpy~=1.26\"]", NULL },
                /* Exact duplicates only: the installer resolves the rest. */
                { "{\"packages\":[\"NumPy\",\"numpy\"]}", "[\"NumPy\",\"numpy\"]", NULL },
                { "{\"packages\":\"polars\"}", NULL, "packages must be an array of package specs" },
                { "{\"packages\":{\"polars\":1}}", NULL, "packages must be an array of package specs" },
                { "{\"packages\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", NULL, "packages: 5 specs, at most 4 (MCP_EXEC_MAX_PACKAGES)" },
                { "{\"packages\":[\"numpy\",\"polars\",\"numpy\"]}", NULL, "packages[2] \"numpy\" repeats packages[0]" },
                { "{\"packages\":[\"polars\",3]}", NULL, "packages[1] is not a string" },
                { "{\"packages\":[null]}", NULL, "packages[0] is not a string" },
                { "{\"packages\":[[\"polars\"]]}", NULL, "packages[0] is not a string" },
                /* An option to pip, a requirements file, a URL, a marker. */
                { "{\"packages\":[\"-r/etc/shadow\"]}", NULL, "packages[0] \"-r/etc/shadow\" " NOT_A_SPEC },
                { "{\"packages\":[\"polars\",\"--index-url=http://10.0.0.1/\"]}", NULL,
                  "packages[1] \"--index-url=http://10.0.0.1/\" " NOT_A_SPEC },
                { "{\"packages\":[\"evil@https://10.0.0.1/evil.whl\"]}", NULL,
                  "packages[0] \"evil@https://10.0.0.1/evil.whl\" " NOT_A_SPEC },
                { "{\"packages\":[\"evil @ file:///etc/passwd\"]}", NULL,
                  "packages[0] \"evil @ file:///etc/passwd\" " NOT_A_SPEC },
                { "{\"packages\":[\"numpy;python_version>'3'\"]}", NULL,
                  "packages[0] \"numpy;python_version>'3'\" " NOT_A_SPEC },
                { "{\"packages\":[\"\"]}", NULL, "packages[0] \"\" " NOT_A_SPEC },
                /* What cannot be shown is shown as '?', or not at all after a NUL. */
                { "{\"packages\":[\"polars\\n-r /etc/shadow\"]}", NULL, "packages[0] \"polars?-r /etc/shadow\" " NOT_A_SPEC },
                { "{\"packages\":[\"polars\\u0000x\"]}", NULL, "packages[0] \"polars\" " NOT_A_SPEC },
        };
        Fixture f;

        fixture_init(&f);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_json_ json_object *j = json_tokener_parse(cases[i].req);
                Client *c = f.m.clients;
                int r;

                ASSERT_TRUE(j);
                r = client_parse_packages(c, j);
                if (cases[i].want) {
                        ASSERT_EQ_INT(r, 0);
                        ASSERT_STREQ(json_text(c->packages), cases[i].want);
                        expect_open(&f);
                } else {
                        ASSERT_EQ_INT(r, -EINVAL);
                        expect_reply(&f, "error", cases[i].error);
                        /* The earlier, good specs stay: a refused request
                         * ends its connection anyway. */
                }
        }

        /* One byte too long, shown as far as a spec may go. */
        memset(long_spec, 'a', PACKAGE_SPEC_MAX + 1);
        {
                _cleanup_json_ json_object *j = json_object_new_object(), *a = json_object_new_array();
                char want[512];

                ASSERT_EQ_INT(json_append(a, json_object_new_string(long_spec)), 0);
                ASSERT_EQ_INT(json_add(j, "packages", json_object_get(a)), 0);
                ASSERT_EQ_INT(client_parse_packages(f.m.clients, j), -EINVAL);
                long_spec[PACKAGE_SPEC_MAX] = 0;
                (void) snprintf(want, sizeof want, "packages[0] \"%s\" " NOT_A_SPEC, long_spec);
                expect_reply(&f, "error", want);
                long_spec[PACKAGE_SPEC_MAX - 1] = 0;
                json_object_array_put_idx(a, 0, json_object_new_string(long_spec));
                ASSERT_EQ_INT(client_parse_packages(f.m.clients, j), 0);
                ASSERT_EQ_U64(packages_count(f.m.clients->packages), 1);
        }
        fixture_done(&f);

        /* Off: no wheelhouse, or no packages allowed. An empty list is no
         * request for any. */
        for (unsigned off = 0; off < 2; off++) {
                _cleanup_json_ json_object *some = json_tokener_parse("{\"packages\":[\"polars\"]}");
                _cleanup_json_ json_object *none = json_tokener_parse("{\"packages\":[]}");

                fixture_init(&f);
                if (off == 0)
                        f.m.config.wheelhouse = (char *) "";
                else
                        f.m.config.max_packages = 0;
                ASSERT_EQ_INT(client_parse_packages(f.m.clients, some), -EINVAL);
                expect_reply(&f, "error", "packages are not enabled on this server");
                ASSERT_TRUE(!f.m.clients->packages);
                ASSERT_EQ_INT(client_parse_packages(f.m.clients, none), 0);
                ASSERT_TRUE(!f.m.clients->packages);
                expect_open(&f);
                fixture_done(&f);
        }
}

/* A bad "packages" ends the request before anything starts, on each op
 * that takes one. */
TEST(test_bad_packages_request) {
        static const char *const reqs[] = {
                "{\"op\":\"run\",\"packages\":[\"-r/etc/shadow\"]}",
                "{\"op\":\"session_create\",\"caller\":\"uid:0\",\"packages\":[\"-r/etc/shadow\"]}",
                ("{\"op\":\"session_exec\",\"session\":\"00000000000000000000000000000000\",\"caller\":\"uid:0\","
                 "\"packages\":[\"-r/etc/shadow\"]}"),
        };
        int p[2];

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
        for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
                Fixture f;

                fixture_init(&f);
                request(&f, reqs[i], (int[]) { p[0], p[1], p[1] }, 3);
                expect_reply(&f, "error", "packages[0] \"-r/etc/shadow\" " NOT_A_SPEC);
                expect_closed(&f);
                ASSERT_TRUE(!f.m.sessions.list);
                fixture_done(&f);
        }
        safe_close(p[0]);
        safe_close(p[1]);
}

/* The launcher of a run gets its packages and the install cap; a run
 * without packages gets exactly what it always did. */
TEST(test_run_message) {
        _cleanup_json_ json_object *none = NULL, *some = NULL;
        _cleanup_json_ json_object *req = json_tokener_parse("{\"packages\":[\"polars\",\"numpy~=1.26\"]}");
        Fixture f;

        fixture_init(&f);
        f.m.config.max_images = 3;
        ASSERT_EQ_INT(client_run_message(f.m.clients, &none), 0);
        ASSERT_STREQ(json_text(none), "{\"op\":\"run\",\"limits\":{\"max_images\":3,\"max_image_bytes\":0,\"max_files\":0,"
                                      "\"max_result_bytes\":0,\"max_input_bytes\":0}}");
        ASSERT_EQ_INT(client_parse_packages(f.m.clients, req), 0);
        ASSERT_EQ_INT(client_run_message(f.m.clients, &some), 0);
        ASSERT_STREQ(json_text(some), "{\"op\":\"run\",\"limits\":{\"max_images\":3,\"max_image_bytes\":0,\"max_files\":0,"
                                      "\"max_result_bytes\":0,\"max_input_bytes\":0},"
                                      "\"packages\":[\"polars\",\"numpy~=1.26\"],\"packages_max_bytes\":50331648}");
        fixture_done(&f);
}

/* Every unit that runs code gets the store when packages are on (issue
 * 41: never the raw wheelhouse), and every unit is denied the wheelhouse
 * whenever one is configured, packages on or off. */
TEST(test_spec_wheelhouse) {
        SandboxSpec spec;
        Fixture f;

        fixture_init(&f);
        manager_fill_spec(&f.m, 5, &spec);
        ASSERT_STREQ(spec.package_store, PACKAGE_STORE_DEFAULT);
        ASSERT_STREQ(spec.wheelhouse, WHEELHOUSE_DEFAULT);
        f.m.config.max_packages = 0;
        manager_fill_spec(&f.m, 5, &spec);
        ASSERT_TRUE(!spec.package_store);
        ASSERT_STREQ(spec.wheelhouse, WHEELHOUSE_DEFAULT);
        f.m.config.max_packages = 4;
        f.m.config.wheelhouse = (char *) "";
        manager_fill_spec(&f.m, 5, &spec);
        ASSERT_TRUE(!spec.package_store);
        ASSERT_TRUE(!spec.wheelhouse);
        fixture_done(&f);
}

/* A session that is up, without systemd: its launcher's end of the control
 * socket is *ret_peer. */
static SandboxSession *fake_session(Fixture *f, const char *packages, int *ret_peer) {
        SandboxSession *se;
        int sv[2];

        ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        se = calloc(1, sizeof *se);
        ASSERT_TRUE(se);
        se->event = sd_event_ref(f->m.event);
        se->control = sv[0];
        se->pidfd = -EBADF;
        se->caller = strdup("uid:0");
        se->scope = strdup("");
        ASSERT_TRUE(se->caller && se->scope);
        memset(se->id, 'a', SANDBOX_SESSION_ID_LEN);
        se->ready = se->launcher_ready = true;
        se->idle_usec = 60 * USEC_PER_SEC;
        se->packages = packages ? json_tokener_parse(packages) : NULL;
        LIST_PREPEND(sessions, f->m.sessions.list, se);
        f->m.sessions.n++;
        *ret_peer = sv[1];
        return se;
}

/* A call in the fake session, with those packages (JSON) or none. */
static void session_call(Fixture *f, const char *call_packages) {
        int p[2];
        char buf[512];

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
        (void) snprintf(buf, sizeof buf,
                        "{\"op\":\"session_exec\",\"session\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"caller\":\"uid:0\""
                        "%s%s}", call_packages ? ",\"packages\":" : "", call_packages ?: "");
        request(f, buf, (int[]) { p[0], p[1], p[1] }, 3);
        safe_close(p[0]);
        safe_close(p[1]);
}

/* A session keeps its specs: each call's launcher gets them first, then
 * the call's own that the session does not have. */
TEST(test_session_packages) {
        struct {
                const char *session, *call;
                const char *want;       /* the launcher's "packages", or NULL for none */
        } cases[] = {
                { NULL, NULL, NULL },
                { "[\"polars\"]", NULL, "[\"polars\"]" },
                { NULL, "[\"requests\"]", "[\"requests\"]" },
                { "[\"polars\",\"numpy~=1.26\"]", "[\"requests\",\"polars\"]", "[\"polars\",\"numpy~=1.26\",\"requests\"]" },
                /* As many as one call may install, the session's included. */
                { "[\"a\",\"b\",\"c\"]", "[\"d\",\"a\"]", "[\"a\",\"b\",\"c\",\"d\"]" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_json_ json_object *msg = NULL;
                int peer, fds[PACKET_MAX_FDS];
                size_t n_fds = 0;
                Fixture f;

                fixture_init(&f);
                (void) fake_session(&f, cases[i].session, &peer);
                session_call(&f, cases[i].call);
                expect_reply(&f, "started", NULL);
                ASSERT_EQ_INT(packet_recv(peer, &msg, fds, ELEMENTSOF(fds), &n_fds), 1);
                ASSERT_EQ_INT(n_fds, 3);
                for (size_t k = 0; k < n_fds; k++)
                        safe_close(fds[k]);
                ASSERT_STREQ(json_get_string(msg, "op"), "run");
                if (cases[i].want) {
                        ASSERT_STREQ(json_text(json_get(msg, "packages")), cases[i].want);
                        ASSERT_EQ_U64(json_get_int64(msg, "packages_max_bytes", -1), 48 << 20);
                } else {
                        ASSERT_TRUE(!json_get(msg, "packages"));
                        ASSERT_TRUE(!json_get(msg, "packages_max_bytes"));
                }
                fixture_done(&f);
                safe_close(peer);
        }
}

/* More than one call may install, the session's and its own together: a
 * bad request, and the session's launcher hears nothing. */
TEST(test_session_too_many_packages) {
        _cleanup_json_ json_object *msg = NULL;
        int peer, fds[PACKET_MAX_FDS];
        Fixture f;

        fixture_init(&f);
        (void) fake_session(&f, "[\"a\",\"b\",\"c\"]", &peer);
        session_call(&f, "[\"d\",\"e\"]");
        expect_reply(&f, "error", "packages: the session's 3 and this call's 2 make 5, at most 4 (MCP_EXEC_MAX_PACKAGES)");
        expect_closed(&f);
        ASSERT_EQ_INT(packet_recv(peer, &msg, fds, ELEMENTSOF(fds), NULL), -EAGAIN);
        ASSERT_TRUE(!f.m.sessions.list->busy);
        fixture_done(&f);
        safe_close(peer);
}

/* A run that finds no room for it waits, with its owner and whether it is a
 * long hold: a task's past MCP_EXEC_MAX_TIMEOUT_S while all but one slot
 * hold long ones (issue 37). */
TEST(test_run_waits) {
        int p[2];
        Fixture f;

        ASSERT_EQ_INT(pipe2(p, O_CLOEXEC), 0);
        fixture_init(&f);
        f.m.n_runs = 1;
        f.m.n_long = 1;                 /* of 2: the cap of long holds */
        request(&f, "{\"op\":\"run\",\"timeout_s\":600,\"caller\":\"http:token:a\"}", (int[]) { p[0], p[1], p[1] }, 3);
        ASSERT_TRUE(f.m.wait_list);
        ASSERT_EQ_INT(f.m.wait_list->state, CLIENT_WAITING);
        ASSERT_STREQ(f.m.wait_list->caller, "http:token:a");
        ASSERT_TRUE(f.m.wait_list->long_hold);
        ASSERT_FALSE(manager_run_has_room(&f.m, f.m.wait_list));
        ASSERT_TRUE(manager_next_waiter(&f.m) == NULL);
        expect_open_waiting(&f);
        fixture_done(&f);
        safe_close(p[0]);
        safe_close(p[1]);
}

typedef struct Waiters {
        Manager m;
        Client c[8];
        unsigned n;
} Waiters;

/* A hand-made connection: running (counted) or waiting, newest last. */
static Client *add(Waiters *w, uid_t uid, const char *caller, bool long_hold, bool running) {
        Client *c = &w->c[w->n++];

        *c = (Client) { .manager = &w->m, .uid = uid, .caller = (char *) caller, .long_hold = long_hold };
        LIST_PREPEND(clients, w->m.clients, c);
        if (running) {
                c->counted = true;
                w->m.n_runs++;
                w->m.n_long += long_hold;
        } else {
                c->state = CLIENT_WAITING;
                LIST_APPEND(wait, w->m.wait_list, c);
        }
        return c;
}

/* It ends, or it starts. */
static void set_running(Waiters *w, Client *c, bool running) {
        if (running) {
                LIST_REMOVE(wait, w->m.wait_list, c);
                c->state = CLIENT_STARTING;
        }
        c->counted = running;
        w->m.n_runs += running ? 1 : -1;
        w->m.n_long += running ? c->long_hold : -(unsigned) c->long_hold;
}

static void waiters_init(Waiters *w, uint64_t max_concurrent) {
        *w = (Waiters) {};
        w->m.config.max_timeout_s = 300;
        w->m.config.max_concurrent = max_concurrent;
}

/* The broker's choice of the next run (manager.h). */
TEST(test_fair_waiters) {
        Waiters w;
        Client *a1, *a2, *a3, *b, *b2, *z, *root;

        /* Issue 37: A's tasks hold 2 of 3 slots, its third waits for a long
         * one; B's short call may take the last slot, and goes first. */
        waiters_init(&w, 3);
        add(&w, 994, "http:token:a", true, true);
        add(&w, 994, "http:token:a", true, true);
        a3 = add(&w, 994, "http:token:a", true, false);
        b = add(&w, 994, "http:token:b", false, false);
        ASSERT_FALSE(manager_run_has_room(&w.m, a3));
        ASSERT_TRUE(manager_run_has_room(&w.m, b));
        ASSERT_TRUE(manager_next_waiter(&w.m) == b);
        set_running(&w, b, true);
        ASSERT_TRUE(manager_next_waiter(&w.m) == NULL);
        /* Every slot held: A's short call and B's second wait; when B's
         * first ends, B (one held) goes before A (two held), though A's
         * came first. */
        a1 = add(&w, 994, "http:token:a", false, false);
        b2 = add(&w, 994, "http:token:b", false, false);
        ASSERT_TRUE(manager_next_waiter(&w.m) == NULL);
        set_running(&w, b, false);
        ASSERT_TRUE(manager_next_waiter(&w.m) == b2);
        set_running(&w, b2, true);
        set_running(&w, b2, false);
        /* B holds none and waits for nothing: A's short call, the oldest
         * that may start, takes the slot (work-conserving). */
        ASSERT_TRUE(manager_next_waiter(&w.m) == a1);

        /* The uid first: a front end that names a new caller for each run
         * does not go before root, who holds fewer. */
        waiters_init(&w, 2);
        add(&w, 994, "x", false, true);
        add(&w, 994, "y", false, true);
        z = add(&w, 994, "z", false, false);
        root = add(&w, 0, "", false, false);
        set_running(&w, &w.c[0], false);
        ASSERT_TRUE(manager_next_waiter(&w.m) == root);
        set_running(&w, root, true);
        set_running(&w, root, false);
        /* Root's next run again, though z came first: z's uid holds one. */
        a2 = add(&w, 0, "", false, false);
        ASSERT_TRUE(manager_next_waiter(&w.m) == a2);
        /* Equals (none held by either): the oldest. */
        set_running(&w, &w.c[1], false);
        ASSERT_TRUE(manager_next_waiter(&w.m) == z);

        /* One slot: nothing to share, a long hold takes it. */
        waiters_init(&w, 1);
        a1 = add(&w, 994, "a", true, false);
        ASSERT_TRUE(manager_next_waiter(&w.m) == a1);
}

int main(void) {
        RUN(test_new_connection);
        RUN(test_bad_run);
        RUN(test_bad_call);
        RUN(test_parse_timeout);
        RUN(test_parse_packages);
        RUN(test_bad_packages_request);
        RUN(test_run_message);
        RUN(test_spec_wheelhouse);
        RUN(test_session_packages);
        RUN(test_session_too_many_packages);
        RUN(test_run_waits);
        RUN(test_fair_waiters);
        return 0;
}
