/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The HTTP server in-process (src/http with libmicrohttpd in our sd-event
 * loop) against raw requests from a forked client: every status rule,
 * sessions, SSE streams, the stateless revision, the legacy transport, and a
 * POST suspended while its call waits (a fake broker that never answers),
 * ended by the client hanging up and by notifications/cancelled. A second
 * server with tight limits: slow clients, session expiry and eviction, and
 * the connection and per-session stream limits. */

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "http-auth.h"
#include "http-internal.h"
#include "http-server.h"
#include "macro.h"
#include "mcp-internal.h"  /* mcp_server_set_progress_interval() */
#include "mcp-server.h"
#include "node-id.h"
#include "test-helpers.h"

#define TOKEN "t0ken"
#define MAX_BODY 4096

static uint16_t port, port_limits, port_flood, port_stream;
static MemBudget flood_budget = { .max = 128 * 1024 };
static MemBudget stream_budget = { .max = 64 << 20 };
static unsigned failures;

#define CHECK(cond, ...)                                                                \
        do {                                                                            \
                if (!(cond)) {                                                          \
                        fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
                        fprintf(stderr, __VA_ARGS__);                                   \
                        fputc('\n', stderr);                                            \
                        failures++;                                                     \
                }                                                                       \
        } while (0)

/* Client side (the forked child): blocking sockets, one request each. */

static int connect_server(void) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct timeval tv = { .tv_sec = 10 };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0);
        ASSERT_TRUE(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
        return fd;
}

static void send_all(int fd, const char *s, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
                if (k <= 0)
                        return; /* the server may close early (413): read what it said */
                s += k;
                n -= (size_t) k;
        }
}

/* Reads until EOF, or until want appears (for streams that stay open). */
static char *read_response(int fd, const char *want) {
        size_t size = 0, alloc = 65536;
        char *b = malloc(alloc);

        ASSERT_TRUE(b);
        for (;;) {
                ssize_t k;
                if (size + 1 >= alloc) {
                        alloc *= 2;
                        b = realloc(b, alloc);
                        ASSERT_TRUE(b);
                }
                k = recv(fd, b + size, alloc - size - 1, 0);
                if (k <= 0)
                        break;
                size += (size_t) k;
                b[size] = 0;
                if (want && strstr(b, want))
                        break;
        }
        b[size] = 0;
        return b;
}

static char *build(const char *method, const char *path, const char *headers, const char *body, bool close_conn) {
        char *r;

        ASSERT_TRUE(asprintf(&r,
                             "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s%s%s"
                             "Content-Length: %zu\r\n\r\n%s",
                             method, path, (unsigned) port, close_conn ? "Connection: close\r\n" : "",
                             headers ? headers : "", body ? "Content-Type: application/json\r\n" : "",
                             body ? strlen(body) : (size_t) 0, body ? body : "") >= 0);
        return r;
}

/* One request on its own connection; the whole response. */
static char *exchange(const char *method, const char *path, const char *headers, const char *body) {
        char *req = build(method, path, headers, body, true), *resp;
        int fd = connect_server();

        send_all(fd, req, strlen(req));
        resp = read_response(fd, NULL);
        close(fd);
        free(req);
        return resp;
}

static unsigned status_of(const char *resp) {
        unsigned s = 0;
        return sscanf(resp, "HTTP/1.%*d %u", &s) == 1 ? s : 0;
}

/* A header's value, copied into buf. */
static const char *header_of(const char *resp, const char *name, char *buf, size_t size) {
        size_t l = strlen(name);

        for (const char *p = strstr(resp, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n"))
                if (strncasecmp(p + 2, name, l) == 0 && p[2 + l] == ':') {
                        const char *v = p + 3 + l, *e;
                        while (*v == ' ')
                                v++;
                        e = strstr(v, "\r\n");
                        (void) snprintf(buf, size, "%.*s", (int) (e - v), v);
                        return buf;
                }
        return NULL;
}

#define AUTH "X-MCP-AUTH: " TOKEN "\r\n"
#define ACCEPT_BOTH "Accept: application/json, text/event-stream\r\n"
/* A named token of the main server (http-tokens.h): another caller. */
#define TOKEN_ALICE "alice-s3cret"
#define AUTH_ALICE "X-MCP-AUTH: " TOKEN_ALICE "\r\n"
#define INIT_BODY                                                                                              \
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"," \
        "\"capabilities\":{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}"
#define STATELESS_META                                                                       \
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","              \
        "\"io.modelcontextprotocol/clientCapabilities\":{}}"

static void expect(const char *what, const char *method, const char *path, const char *headers, const char *body,
                   unsigned status, const char *contains) {
        char *r = exchange(method, path, headers, body);

        CHECK(status_of(r) == status, "%s: status %u, want %u: %.300s", what, status_of(r), status, r);
        if (contains)
                CHECK(strstr(r, contains), "%s: no \"%s\" in: %.500s", what, contains, r);
        free(r);
}

static void test_refusals(void) {
        char *r, *big, *req;
        int fd;

        /* Host and Origin first, then the token, everywhere. */
        fd = connect_server();
        ASSERT_TRUE(asprintf(&req, "POST /mcp HTTP/1.1\r\nHost: evil.example:%u\r\n" AUTH ACCEPT_BOTH
                                   "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                             (unsigned) port) >= 0);
        send_all(fd, req, strlen(req));
        r = read_response(fd, NULL);
        CHECK(status_of(r) == 403, "bad Host: %.200s", r);
        free(r);
        free(req);
        close(fd);

        expect("bad Origin", "POST", "/mcp", "Origin: http://evil.example\r\n" AUTH ACCEPT_BOTH, "{}", 403, NULL);
        expect("no token", "POST", "/mcp", ACCEPT_BOTH, INIT_BODY, 401, "WWW-Authenticate: Bearer realm=\"mcp-exec\"");
        expect("wrong token", "POST", "/mcp", "X-MCP-AUTH: nope\r\n" ACCEPT_BOTH, INIT_BODY, 401, NULL);
        expect("no token /sse", "GET", "/sse", NULL, NULL, 401, "WWW-Authenticate: Bearer");
        /* Only an event-stream reader gets a legacy session, as on GET /mcp. */
        expect("/sse without Accept", "GET", "/sse", AUTH, NULL, 406, "text/event-stream");
        expect("/sse Accept: JSON", "GET", "/sse", AUTH "Accept: application/json\r\n", NULL, 406, NULL);
        expect("no token /messages", "POST", "/messages?sessionId=x", NULL, "{}", 401, "WWW-Authenticate: Bearer");
        expect("bearer", "POST", "/mcp", "Authorization: Bearer " TOKEN "\r\n" ACCEPT_BOTH, "{}", 400, NULL);
        expect("unknown path", "GET", "/nope", AUTH, NULL, 404, NULL);
        expect("PUT", "PUT", "/mcp", AUTH, NULL, 405, "Allow: GET, POST, DELETE");
        expect("GET /messages", "GET", "/messages", AUTH, NULL, 405, NULL);
        expect("Accept json only", "POST", "/mcp", AUTH "Accept: application/json\r\n", INIT_BODY, 406, NULL);
        expect("no Accept", "POST", "/mcp", AUTH, INIT_BODY, 406, NULL);
        expect("GET Accept json", "GET", "/mcp", AUTH "Accept: application/json\r\n", NULL, 406, NULL);

        r = exchange("POST", "/mcp", AUTH ACCEPT_BOTH "Content-Type: text/plain\r\n", NULL);
        CHECK(status_of(r) == 415, "no JSON Content-Type: %.200s", r);
        free(r);

        big = malloc(MAX_BODY + 2);
        ASSERT_TRUE(big);
        memset(big, ' ', MAX_BODY + 1);
        big[MAX_BODY + 1] = 0;
        expect("body too large", "POST", "/mcp", AUTH ACCEPT_BOTH, big, 413, NULL);
        /* Chunked, so only found out while reading. */
        fd = connect_server();
        ASSERT_TRUE(asprintf(&req, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n" AUTH ACCEPT_BOTH
                                   "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                                   "Connection: close\r\n\r\n%x\r\n%s\r\n0\r\n\r\n",
                             (unsigned) port, MAX_BODY + 1, big) >= 0);
        send_all(fd, req, strlen(req));
        r = read_response(fd, NULL);
        CHECK(status_of(r) == 413, "chunked body too large: %.200s", r);
        free(r);
        free(req);
        close(fd);
        free(big);

        /* Headers beyond MHD's memory limit. */
        big = malloc(100 * 1024);
        ASSERT_TRUE(big);
        strcpy(big, AUTH "X-Filler: ");
        memset(big + strlen(big), 'a', 70 * 1024);
        strcpy(big + strlen(AUTH "X-Filler: ") + 70 * 1024, "\r\n");
        r = exchange("GET", "/mcp", big, NULL);
        CHECK(status_of(r) == 431 || status_of(r) == 413, "huge header: %.200s", r);
        free(r);
        free(big);

        expect("bad JSON", "POST", "/mcp", AUTH ACCEPT_BOTH, "{", 400, "-32700");
}

static char *initialize(char sid[64]) {
        char *r = exchange("POST", "/mcp", AUTH ACCEPT_BOTH, INIT_BODY);

        CHECK(status_of(r) == 200, "initialize: %.300s", r);
        CHECK(header_of(r, "Mcp-Session-Id", sid, 64), "no session id: %.300s", r);
        CHECK(strstr(r, "\"protocolVersion\":\"2025-06-18\""), "initialize result: %.300s", r);
        return r;
}

/* A named token is its own caller: its sessions are not found with another
 * token, and the other way round. */
static void test_named_tokens(void) {
        char sid[64] = "", h[512], *r;

        r = exchange("POST", "/mcp", AUTH_ALICE ACCEPT_BOTH, INIT_BODY);
        CHECK(status_of(r) == 200, "initialize with a named token: %.300s", r);
        CHECK(header_of(r, "Mcp-Session-Id", sid, 64), "no session id: %.300s", r);
        free(r);
        (void) snprintf(h, sizeof h, AUTH_ALICE ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", sid);
        expect("named token, own session", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
               200, "\"name\":\"exec\"");
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", sid);
        expect("another token, alice's session", "POST", "/mcp", h,
               "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 404, NULL);
        expect("another token, alice's session, DELETE", "DELETE", "/mcp", h, NULL, 404, NULL);
        (void) snprintf(h, sizeof h, AUTH_ALICE ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", sid);
        expect("DELETE by its owner", "DELETE", "/mcp", h, NULL, 200, NULL);
        expect("a token that is alice's with one more byte", "POST", "/mcp", "X-MCP-AUTH: " TOKEN_ALICE "x\r\n" ACCEPT_BOTH,
               INIT_BODY, 401, NULL);
        /* Two headers, two callers: no caller at all (never a third). Both
         * with the same token pass (400: the body is no request). */
        expect("the single token and alice's", "POST", "/mcp",
               AUTH "Authorization: Bearer " TOKEN_ALICE "\r\n" ACCEPT_BOTH, INIT_BODY, 401, NULL);
        expect("alice's token and a wrong one", "POST", "/mcp",
               AUTH_ALICE "Authorization: Bearer nope\r\n" ACCEPT_BOTH, INIT_BODY, 401, NULL);
        expect("alice's token in both", "POST", "/mcp",
               AUTH_ALICE "Authorization: Bearer " TOKEN_ALICE "\r\n" ACCEPT_BOTH, "{}", 400, NULL);
}

static void test_sessions(void) {
        char sid[64] = "", h[512], *r;
        int fd;

        free(initialize(sid));
        CHECK(node_id_owns(sid) && strneq(sid, node_id(), strlen(node_id())), "session id %s", sid);
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-06-18\r\n", sid);
        expect("initialized", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
               202, NULL);
        expect("tools/list", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 200,
               "\"name\":\"exec\"");
        expect("response from client", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}", 202, NULL);
        expect("no session", "POST", "/mcp", AUTH ACCEPT_BOTH, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
               400, NULL);
        expect("unknown session", "POST", "/mcp", AUTH ACCEPT_BOTH "Mcp-Session-Id: 0123\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 404, NULL);
        /* The same random part under another node's prefix: not ours, 404
         * (behind a balancer the client then starts over). */
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: other-node.%s\r\n", (strchr(sid, '.') ?: sid) + 1);
        expect("another node's session", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
               404, "-32001");
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", (strchr(sid, '.') ?: sid) + 1);
        expect("session id without its node", "POST", "/mcp", h,
               "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 404, NULL);
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 1999-01-01\r\n", sid);
        expect("bad version", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 400,
               "-32022");

        /* Without a broker the call fails at once, as a tool result. */
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", sid);
        /* With a progress token the answer is an event stream. */
        expect("call with progress", "POST", "/mcp", h,
               "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"print(1)\"},\"_meta\":{\"progressToken\":7}}}",
               200, "text/event-stream");

        /* The GET stream: one per session. */
        (void) snprintf(h, sizeof h, AUTH "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n", sid);
        fd = connect_server();
        r = build("GET", "/mcp", h, NULL, true);
        send_all(fd, r, strlen(r));
        free(r);
        r = read_response(fd, "\r\n\r\n");
        CHECK(status_of(r) == 200 && strstr(r, "text/event-stream"), "GET stream: %.300s", r);
        free(r);
        expect("second GET stream", "GET", "/mcp", h, NULL, 409, NULL);

        /* DELETE ends it: the stream ends too, and the id is unknown after. */
        (void) snprintf(h, sizeof h, AUTH "Mcp-Session-Id: %s\r\n", sid);
        expect("DELETE", "DELETE", "/mcp", h, NULL, 200, NULL);
        r = read_response(fd, NULL);
        CHECK(strstr(r, "0\r\n\r\n"), "the GET stream did not end with its session: %.200s", r);
        free(r);
        close(fd);
        expect("DELETE again", "DELETE", "/mcp", h, NULL, 404, NULL);
        expect("DELETE without id", "DELETE", "/mcp", AUTH, NULL, 400, NULL);
}

static void test_pending(void) {
        char sid[64] = "", h[512], *r, *req;
        int fd;

        /* The fake broker takes the call and never answers: the POST waits. */
        free(initialize(sid));
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", sid);
        fd = connect_server();
        req = build("POST", "/mcp", h,
                    "{\"jsonrpc\":\"2.0\",\"id\":\"wait1\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                    "\"arguments\":{\"code\":\"print(1)\"}}}",
                    true);
        send_all(fd, req, strlen(req));
        free(req);
        (void) usleep(300 * 1000);
        /* The client gives up; then cancels a call nobody waits for. */
        close(fd);
        (void) usleep(200 * 1000);
        expect("cancel after hang-up", "POST", "/mcp", h,
               "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"wait1\"}}", 202,
               NULL);

        /* A cancelled call ends its POST with an empty event stream. */
        fd = connect_server();
        req = build("POST", "/mcp", h,
                    "{\"jsonrpc\":\"2.0\",\"id\":\"wait2\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                    "\"arguments\":{\"code\":\"print(2)\"}}}",
                    true);
        send_all(fd, req, strlen(req));
        free(req);
        (void) usleep(300 * 1000);
        expect("cancel", "POST", "/mcp", h,
               "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"wait2\"}}", 202,
               NULL);
        r = read_response(fd, NULL);
        CHECK(status_of(r) == 200 && strstr(r, "text/event-stream"), "cancelled POST: %.300s", r);
        free(r);
        close(fd);

        /* Two POSTs of one session wait with progress at once, and a third
         * is answered in between: each gets its own progress, reply and end. */
        {
                int fa, fb;
                char *ra, *rb;

                fa = connect_server();
                req = build("POST", "/mcp", h,
                            "{\"jsonrpc\":\"2.0\",\"id\":\"waitA\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                            "{\"progressToken\":\"tokA\"},\"name\":\"exec\",\"arguments\":{\"code\":\"1\"}}}",
                            true);
                send_all(fa, req, strlen(req));
                free(req);
                ra = read_response(fa, "tokA");
                fb = connect_server();
                req = build("POST", "/mcp", h,
                            "{\"jsonrpc\":\"2.0\",\"id\":\"waitB\",\"method\":\"tools/call\",\"params\":{\"_meta\":"
                            "{\"progressToken\":\"tokB\"},\"name\":\"exec\",\"arguments\":{\"code\":\"2\"}}}",
                            true);
                send_all(fb, req, strlen(req));
                free(req);
                rb = read_response(fb, "tokB");
                CHECK(status_of(ra) == 200 && strstr(ra, "text/event-stream") && strstr(ra, "\"progressToken\":\"tokA\""),
                      "first waiting POST: %.400s", ra);
                CHECK(status_of(rb) == 200 && strstr(rb, "\"progressToken\":\"tokB\""), "second waiting POST: %.400s", rb);
                free(ra);
                free(rb);
                /* Fails at once (the broker hangs up): a reply of its own. */
                expect("call between", "POST", "/mcp", h,
                       "{\"jsonrpc\":\"2.0\",\"id\":\"mid\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                       "\"arguments\":{\"code\":\"3\"}}}",
                       200, "\"id\":\"mid\"");
                /* Cancelling B ends B's stream, with nothing of A or the third in it. */
                expect("cancel B", "POST", "/mcp", h,
                       "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"waitB\"}}",
                       202, NULL);
                rb = read_response(fb, NULL);
                CHECK(strstr(rb, "0\r\n\r\n") && !strstr(rb, "tokA") && !strstr(rb, "waitA") && !strstr(rb, "mid"),
                      "B's stream after its cancel: %.400s", rb);
                free(rb);
                close(fb);
                /* A's stream is still open (keep-alives aside, nothing comes). */
                {
                        struct timeval shortly = { .tv_usec = 300 * 1000 }, normal = { .tv_sec = 10 };
                        ASSERT_TRUE(setsockopt(fa, SOL_SOCKET, SO_RCVTIMEO, &shortly, sizeof shortly) == 0);
                        ra = read_response(fa, NULL);
                        CHECK(!strstr(ra, "\r\n0\r\n\r\n") && !strstr(ra, "tokB"), "A's stream after B's cancel: %.400s", ra);
                        free(ra);
                        ASSERT_TRUE(setsockopt(fa, SOL_SOCKET, SO_RCVTIMEO, &normal, sizeof normal) == 0);
                }
                expect("cancel A", "POST", "/mcp", h,
                       "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"waitA\"}}",
                       202, NULL);
                ra = read_response(fa, NULL);
                CHECK(strstr(ra, "0\r\n\r\n") && !strstr(ra, "tokB") && !strstr(ra, "waitB") && !strstr(ra, "mid"),
                      "A's stream after its cancel: %.400s", ra);
                free(ra);
                close(fa);
        }

        /* A waiting POST of a session that ends gets 404. */
        fd = connect_server();
        req = build("POST", "/mcp", h,
                    "{\"jsonrpc\":\"2.0\",\"id\":\"wait3\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                    "\"arguments\":{\"code\":\"print(3)\"}}}",
                    true);
        send_all(fd, req, strlen(req));
        free(req);
        (void) usleep(300 * 1000);
        (void) snprintf(h, sizeof h, AUTH "Mcp-Session-Id: %s\r\n", sid);
        expect("DELETE busy session", "DELETE", "/mcp", h, NULL, 200, NULL);
        r = read_response(fd, NULL);
        CHECK(status_of(r) == 404, "POST of an ended session: %.300s", r);
        free(r);
        close(fd);
}

static void test_stateless(void) {
        expect("discover", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" STATELESS_META "}}", 200,
               "supportedVersions");
        expect("stateless tools/list", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nMcp-Session-Id: x\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" STATELESS_META "}}", 200,
               "\"name\":\"exec\"");
        expect("stateless call", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                                "Mcp-Name: =?base64?ZXhlYw==?=\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\"}," STATELESS_META "}}",
               200, "\"isError\":true");
        expect("stateless name mismatch", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: other\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\"}," STATELESS_META "}}",
               400, "-32020");
        /* The session handle is mirrored (x-mcp-header) and must agree; the
         * call itself is then the tool's business (here: an unknown handle,
         * or no sessions at all). */
        expect("stateless session header missing", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: exec\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\",\"session\":\"n.0123\"}," STATELESS_META "}}",
               400, "Mcp-Param-Session header is missing");
        expect("stateless session header mismatch", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: exec\r\n"
                                "Mcp-Param-Session: n.4567\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\",\"session\":\"n.0123\"}," STATELESS_META "}}",
               400, "-32020");
        expect("stateless session header without one in the body", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: exec\r\n"
                                "Mcp-Param-Session: n.4567\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\"}," STATELESS_META "}}",
               400, "-32020");
        expect("stateless session header encoded", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: exec\r\n"
                                "Mcp-Param-Session: =?base64?bi4wMTIz?=\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\",\"session\":\"n.0123\"}," STATELESS_META "}}",
               200, "\"isError\":true");
        expect("stateless no Mcp-Method", "POST", "/mcp", AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" STATELESS_META "}}", 400,
               "-32020");
        expect("stateless unknown method", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: x/y\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x/y\",\"params\":{" STATELESS_META "}}", 404, "-32601");
        /* A newer client's probe: a 4xx it understands, never 5xx. */
        expect("newer version", "POST", "/mcp",
               AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2099-01-01\r\nMcp-Method: server/discover\r\n",
               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{\"_meta\":{"
               "\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
               "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
               400, "\"supported\"");
        expect("stateless GET", "GET", "/mcp", AUTH "Accept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n",
               NULL, 405, NULL);
        expect("stateless batch", "POST", "/mcp", AUTH ACCEPT_BOTH "MCP-Protocol-Version: 2026-07-28\r\n", "[]", 400,
               NULL);
}

static void test_legacy(void) {
        char *r, *req, path[128], h[256];
        const char *p;
        int fd;

        fd = connect_server();
        req = build("GET", "/sse", AUTH "Accept: text/event-stream\r\n", NULL, false);
        send_all(fd, req, strlen(req));
        free(req);
        r = read_response(fd, "sessionId=");
        r = realloc(r, strlen(r) + 64);
        {
                char *more = read_response(fd, "\n\n");
                strcat(r, more);
                free(more);
        }
        p = strstr(r, "data: /messages?sessionId=");
        CHECK(status_of(r) == 200 && strstr(r, "event: endpoint") && p, "endpoint event: %.300s", r);
        if (!p) {
                free(r);
                close(fd);
                return;
        }
        (void) snprintf(path, sizeof path, "%.*s", (int) strcspn(p + 6, "\r\n"), p + 6);
        free(r);

        (void) snprintf(h, sizeof h, AUTH "MCP-Protocol-Version: 2024-11-05\r\n");
        expect("legacy initialize", "POST", path, h, INIT_BODY, 202, NULL);
        r = read_response(fd, "\"protocolVersion\"");
        CHECK(strstr(r, "event: message") && strstr(r, "\"id\":1"), "reply on the stream: %.300s", r);
        free(r);
        expect("legacy bad JSON", "POST", path, AUTH, "{", 400, NULL);
        expect("legacy bad version", "POST", path, AUTH "MCP-Protocol-Version: 1.0\r\n", "{}", 400, NULL);
        expect("legacy unknown session", "POST", "/messages?sessionId=00", AUTH, "{}", 404, NULL);
        {
                char other[160];
                (void) snprintf(other, sizeof other, "/messages?sessionId=other-node.%s", (strchr(path, '.') ?: path) + 1);
                expect("legacy session of another node", "POST", other, AUTH, INIT_BODY, 404, NULL);
        }
        expect("legacy no session", "POST", "/messages", AUTH, "{}", 400, NULL);
        /* The stream is the session: gone with it. */
        close(fd);
        (void) usleep(300 * 1000);
        expect("legacy after close", "POST", path, AUTH, INIT_BODY, 404, NULL);
}

static void test_preflight(void) {
        /* Not allowed: 403. Allowed (see main): CORS headers, no token needed. */
        expect("preflight", "OPTIONS", "/mcp", "Origin: https://app.example\r\n", NULL, 204,
               "Access-Control-Allow-Headers");
        expect("allowed origin", "POST", "/mcp", "Origin: https://app.example\r\n" AUTH ACCEPT_BOTH, INIT_BODY, 200,
               "Access-Control-Allow-Origin: https://app.example");
}


/* Opens a GET stream of session sid; returns its fd once the headers are in. */
static int open_stream(const char *sid) {
        char h[256], *r;
        int fd = connect_server();

        (void) snprintf(h, sizeof h, AUTH "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n", sid);
        r = build("GET", "/mcp", h, NULL, true);
        send_all(fd, r, strlen(r));
        free(r);
        r = read_response(fd, "\r\n\r\n");
        CHECK(status_of(r) == 200, "stream of %s: %.200s", sid, r);
        free(r);
        return fd;
}

static void test_limits(void) {
        char a[64] = "", b[64] = "", c[64] = "", f[64] = "", h[256], *r, *req;
        int sb, sc, idle1, idle2, post;

        port = port_limits;

        /* A client that never finishes its request is dropped (timeout 1 s here). */
        idle1 = connect_server();
        send_all(idle1, "GET /mcp HTTP/1.1\r\nHost: x", strlen("GET /mcp HTTP/1.1\r\nHost: x"));
        (void) usleep(2500 * 1000);
        r = read_response(idle1, NULL);
        CHECK(r[0] == 0 || status_of(r) == 408, "a slow client was not dropped: %.200s", r);
        free(r);
        close(idle1);

        /* A session nobody uses ends (1 s here). */
        free(initialize(f));
        (void) usleep(2500 * 1000);
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", f);
        expect("expired session", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 404,
               NULL);

        /* Two sessions at most: the longest idle one makes room, busy ones do not. */
        free(initialize(a));
        free(initialize(b));
        sb = open_stream(b);
        free(initialize(c));
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", a);
        expect("evicted session", "POST", "/mcp", h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", 404,
               NULL);
        sc = open_stream(c);
        expect("no room for a session", "POST", "/mcp", AUTH ACCEPT_BOTH, INIT_BODY, 503, "Retry-After");
        expect("no room for a legacy session", "GET", "/sse", AUTH "Accept: text/event-stream\r\n", NULL, 503,
               "Retry-After");

        /* Four connections at most: two streams and two idle clients fill them. */
        idle1 = connect_server();
        idle2 = connect_server();
        (void) usleep(100 * 1000);
        expect("too many connections", "GET", "/mcp", AUTH, NULL, 503, NULL);
        close(idle1);
        close(idle2);
        (void) usleep(300 * 1000);

        /* Two streams per session: the GET stream and one call with progress. */
        (void) snprintf(h, sizeof h, AUTH ACCEPT_BOTH "Mcp-Session-Id: %s\r\n", b);
        post = connect_server();
        req = build("POST", "/mcp", h,
                    "{\"jsonrpc\":\"2.0\",\"id\":\"wait-s\",\"method\":\"tools/call\",\"params\":{\"name\":"
                    "\"exec\",\"arguments\":{\"code\":\"1\"},\"_meta\":{\"progressToken\":1}}}",
                    true);
        send_all(post, req, strlen(req));
        free(req);
        r = read_response(post, "\r\n\r\n");
        CHECK(status_of(r) == 200 && strstr(r, "text/event-stream"), "call with progress: %.200s", r);
        free(r);
        expect("too many streams", "POST", "/mcp", h,
               "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\"},\"_meta\":{\"progressToken\":2}}}",
               429, NULL);
        /* A call without progress needs no stream. */
        expect("call without a stream", "POST", "/mcp", h,
               "{\"jsonrpc\":\"2.0\",\"id\":\"y\",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
               "\"arguments\":{\"code\":\"1\"}}}",
               200, "isError");

        /* Keep-alive comments flow on idle streams (every 200 ms here). */
        r = read_response(sb, ": keep-alive");
        CHECK(strstr(r, ": keep-alive"), "no keep-alive on the GET stream: %.200s", r);
        free(r);
        close(post);
        close(sb);
        close(sc);
}

/* The flood server: 4 connections (MHD takes 16 more), headers within 1 s. */
#define FLOOD_CLIENTS 48

static uint64_t mono_usec(void) {
        struct timespec ts;
        ASSERT_TRUE(clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* True if the server closed fd (EOF, after our 503 or nothing) before until. */
static bool closed_by_server(int fd, uint64_t until) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                uint64_t now = mono_usec();
                char b[512];
                ssize_t k;

                if (now >= until || poll(&p, 1, (int) ((until - now) / 1000) + 1) <= 0)
                        return false;
                k = recv(fd, b, sizeof b, MSG_DONTWAIT);
                if (k == 0 || (k < 0 && errno == ECONNRESET))
                        return true;
                if (k < 0 && errno != EAGAIN)
                        return false;
        }
}

/* Issue 37: a legacy stream whose client reads its endpoint and then
 * nothing more, while progress of calls that never end goes to it (each
 * millisecond, on the fourth server): dropped once more than a small
 * backlog waits behind what it read (before: at 64 MiB), its session
 * ended with its calls, and what it held given back (checked in main). */
static void test_unread_stream(void) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port_stream),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct timeval tv = { .tv_sec = 10 };
        char token[201], body[512], path[128], *r, *req;
        int fd, small = 4096;
        const char *p;
        uint16_t saved = port;

        memset(token, 'k', sizeof token - 1);
        token[sizeof token - 1] = 0;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) == 0);
        ASSERT_TRUE(connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0);
        ASSERT_TRUE(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
        port = port_stream;     /* build() and exchange() go there for now */
        req = build("GET", "/sse", AUTH "Accept: text/event-stream\r\n", NULL, false);
        send_all(fd, req, strlen(req));
        free(req);
        r = read_response(fd, "sessionId=");
        p = strstr(r, "data: /messages?sessionId=");
        CHECK(p, "unread stream: no endpoint: %.300s", r);
        if (p) {
                (void) snprintf(path, sizeof path, "%.*s", (int) strcspn(p + 6, "\r\n"), p + 6);
                expect("unread stream: initialize", "POST", path, AUTH "MCP-Protocol-Version: 2024-11-05\r\n",
                       INIT_BODY, 202, NULL);
                for (int i = 0; i < 8; i++) {
                        (void) snprintf(body, sizeof body,
                                        "{\"jsonrpc\":\"2.0\",\"id\":\"wait%i\",\"method\":\"tools/call\",\"params\":{"
                                        "\"name\":\"exec\",\"arguments\":{\"code\":\"1\"},\"_meta\":"
                                        "{\"progressToken\":\"%s\"}}}", i, token);
                        expect("unread stream: a call", "POST", path, AUTH, body, 202, NULL);
                }
                /* Reads nothing for a while, then everything there is. */
                (void) usleep(3000 * 1000);
                CHECK(closed_by_server(fd, mono_usec() + 10 * USEC_PER_SEC), "unread stream: not dropped");
        }
        free(r);
        close(fd);
        port = saved;
}

static void test_flood(void) {
        char half[128], *r;
        int fds[FLOOD_CLIENTS], fd;
        unsigned n_closed = 0;
        bool closed = false;
        uint64_t until;

        port = port_flood;
        (void) snprintf(half, sizeof half, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n", (unsigned) port);

        /* More clients than MHD takes, each sending half a request, then nothing. */
        for (unsigned i = 0; i < FLOOD_CLIENTS; i++) {
                fds[i] = connect_server();
                send_all(fds[i], half, strlen(half));
        }
        (void) usleep(200 * 1000);

        /* Past MHD's limit a newcomer is refused at once, not left in the backlog. */
        r = exchange("POST", "/mcp", AUTH ACCEPT_BOTH, INIT_BODY);
        CHECK(status_of(r) == 503 && strstr(r, "Retry-After"), "a client past the limit: %.300s", r);
        free(r);

        /* Every one of them is closed: the refused ones at once, the others at
         * their headers' deadline (1 s), well before MHD's idle timeout (30 s). */
        until = mono_usec() + 5 * USEC_PER_SEC;
        for (unsigned i = 0; i < FLOOD_CLIENTS; i++)
                n_closed += closed_by_server(fds[i], until);
        CHECK(n_closed == FLOOD_CLIENTS, "%u of %u half-sent requests were closed", n_closed, FLOOD_CLIENTS);
        for (unsigned i = 0; i < FLOOD_CLIENTS; i++)
                close(fds[i]);

        /* A client that is never silent for long, but never finishes its
         * headers, is cut off at the deadline too. */
        fd = connect_server();
        send_all(fd, half, strlen(half));
        for (unsigned i = 0; i < 40 && !closed; i++) {
                char b[64];
                if (send(fd, "X", 1, MSG_NOSIGNAL) < 0)
                        closed = true;
                else if (recv(fd, b, sizeof b, MSG_DONTWAIT) == 0)
                        closed = true;
                else
                        (void) usleep(150 * 1000);
        }
        CHECK(closed, "a client trickling its headers was never cut off");
        close(fd);

        /* Now every slot is free: served again, at once. (Before the fix MHD
         * was never run again once its connections were gone, and this
         * request waited in the backlog for ever.) */
        r = exchange("POST", "/mcp", AUTH ACCEPT_BOTH, INIT_BODY);
        CHECK(status_of(r) == 200 && strstr(r, "protocolVersion"), "after the flood: %.300s", r);
        free(r);
}

/* Sends a request's head (and the start of its body) only; reads the answer. */
static char *send_headers_only(const char *head) {
        int fd = connect_server();
        char *r;

        send_all(fd, head, strlen(head));
        r = read_response(fd, "\r\n\r\n");
        close(fd);
        return r;
}

/* Bodies of all connections together: 128 KiB past the free 64 KiB each. */
static void test_budget(void) {
        char hdr[512], *r;
        size_t big = 150000;    /* 84464 bytes over the free part */
        int a;

        port = port_flood;
        (void) snprintf(hdr, sizeof hdr,
                        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n" AUTH ACCEPT_BOTH
                        "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n{\"pad\":\"",
                        (unsigned) port, big);
        /* One large body on its way holds its share ... */
        a = connect_server();
        send_all(a, hdr, strlen(hdr));
        (void) usleep(200 * 1000);
        /* ... so a second one does not fit: 503 at once, nothing read. */
        r = send_headers_only(hdr);
        CHECK(status_of(r) == 503 && strstr(r, "in flight"), "a body past the budget: %.300s", r);
        free(r);
        /* Small ones still go through. */
        r = exchange("POST", "/mcp", AUTH ACCEPT_BOTH, INIT_BODY);
        CHECK(status_of(r) == 200, "a small body while the budget is used: %.300s", r);
        free(r);
        /* The first one gone, its share is back. */
        close(a);
        (void) usleep(200 * 1000);
        a = connect_server();
        send_all(a, hdr, strlen(hdr));
        (void) usleep(200 * 1000);
        r = send_headers_only(hdr);
        CHECK(status_of(r) == 503, "the budget was not given back or used twice: %.300s", r);
        free(r);
        close(a);
}

static void test_liveness(void) {
        HttpLiveness l = {};
        const char *why = NULL;
        uint64_t s = USEC_PER_SEC;

        /* An empty backlog is never stuck. */
        CHECK(!http_liveness_check(&l, false, 0, 0, 100 * s, &why), "empty backlog");
        /* Waiting, with accepts going on: fine, however long. */
        CHECK(!http_liveness_check(&l, true, 1, 0, 101 * s, &why), "pending, accepting");
        CHECK(!http_liveness_check(&l, true, 2, 0, 130 * s, &why), "pending, accepting");
        /* Waiting with nothing accepted: only past the grace (15 s). */
        CHECK(!http_liveness_check(&l, true, 2, 0, 140 * s, &why), "pending 10 s");
        CHECK(http_liveness_check(&l, true, 2, 0, 146 * s, &why) && why, "pending 16 s, nothing accepted");
        /* One accept resets it. */
        CHECK(!http_liveness_check(&l, true, 3, 0, 147 * s, &why), "accepted again");
        /* A connection shut down at its deadline but never reaped. */
        CHECK(!http_liveness_check(&l, false, 3, 140 * s, 150 * s, &why), "expired 10 s ago");
        why = NULL;
        CHECK(http_liveness_check(&l, false, 3, 140 * s, 156 * s, &why) && why, "expired 16 s ago");
}

/* /healthz and /metrics against fake_status() (the parent's): who gets
 * details, what is refused, and an answer that comes later. */
static void test_status(void) {
        char *r, *req, h[256];
        int fd;

        /* No token, no Host: a load balancer's check gets the verdict. */
        fd = connect_server();
        req = strdup("GET /healthz HTTP/1.0\r\n\r\n");
        send_all(fd, req, strlen(req));
        r = read_response(fd, NULL);
        CHECK(status_of(r) == 200 && strstr(r, "health details=0") && strstr(r, "Cache-Control: no-store"),
              "plain health check: %.300s", r);
        free(r);
        free(req);
        close(fd);
        expect("health with the token", "GET", "/healthz", AUTH, NULL, 200, "health details=1");
        expect("health, wrong token", "GET", "/healthz", "X-MCP-AUTH: nope\r\n", NULL, 200, "health details=0");
        expect("health, token, foreign Origin", "GET", "/healthz", AUTH "Origin: http://evil.example\r\n", NULL, 200,
               "health details=0");
        fd = connect_server();
        ASSERT_TRUE(asprintf(&req, "GET /healthz HTTP/1.1\r\nHost: evil.example:%u\r\n" AUTH "Connection: close\r\n\r\n",
                             (unsigned) port) >= 0);
        send_all(fd, req, strlen(req));
        r = read_response(fd, NULL);
        CHECK(status_of(r) == 200 && strstr(r, "health details=0"), "health, token, foreign Host: %.300s", r);
        free(r);
        free(req);
        close(fd);
        r = exchange("HEAD", "/healthz", NULL, NULL);
        CHECK(status_of(r) == 200 && !strstr(r, "health details"), "HEAD /healthz: %.300s", r);
        free(r);
        expect("POST /healthz", "POST", "/healthz", NULL, "{}", 405, "Allow: GET, HEAD");
        (void) snprintf(h, sizeof h, "Transfer-Encoding: chunked\r\n");
        expect("/healthz with a body", "GET", "/healthz", h, NULL, 400, NULL);

        /* /metrics is guarded like /mcp. */
        expect("metrics without the token", "GET", "/metrics", NULL, NULL, 401, NULL);
        expect("metrics, foreign Origin", "GET", "/metrics", AUTH "Origin: http://evil.example\r\n", NULL, 403, NULL);
        expect("metrics", "GET", "/metrics", AUTH, NULL, 200, "metrics details=1");
        expect("PUT /metrics", "PUT", "/metrics", AUTH, NULL, 405, "Allow: GET, HEAD");

        /* A check that hangs up while its answer is pending: forgotten. */
        fd = connect_server();
        req = build("GET", "/healthz", NULL, NULL, true);
        send_all(fd, req, strlen(req));
        free(req);
        close(fd);
        (void) usleep(50 * 1000);
        expect("health after a hang-up", "GET", "/healthz", NULL, NULL, 200, "health details=0");
}

static int child(void) {
        test_status();
        test_refusals();
        test_sessions();
        test_named_tokens();
        test_pending();
        test_stateless();
        test_legacy();
        test_preflight();
        test_limits();
        test_flood();
        test_budget();
        test_liveness();
        test_unread_stream();
        fprintf(stderr, "client: %u failures\n", failures);
        return failures == 0 ? 0 : 1;
}

/* Server side */

static int fake_fds[64];
static unsigned n_fake;

static int on_fake_call(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        char buf[4096];
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int) * 8)];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf - 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control };
        ssize_t k = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

        /* The run's pipes: the sandbox side is ours to drop. */
        for (struct cmsghdr *c = k >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
                                close(((int *) CMSG_DATA(c))[i]);
        if (k > 0) {
                buf[k] = 0;
                /* Request ids starting with "wait": take the call, never answer. */
                if (strstr(buf, ":wait") && n_fake < ELEMENTSOF(fake_fds)) {
                        fake_fds[n_fake++] = fd;
                        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        return 0;
                }
        }
        /* Anything else: the broker hangs up, the call fails at once. The
         * source is the loop's (floating): just switch it off. */
        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        close(fd);
        return 0;
}

static int on_fake_broker(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (c >= 0 && sd_event_add_io(sd_event_source_get_event(s), NULL, c, EPOLLIN, on_fake_call, NULL) < 0)
                close(c);
        return 0;
}

static int on_child(sd_event_source *s, const siginfo_t *si, void *userdata) {
        int *status = userdata;

        *status = si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The status handler: /healthz waits for a timer first, as the daemon's
 * waits for the broker; /metrics answers at once. */
static unsigned n_status_deferred;
static bool status_fresh;

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        status_fresh = true;
        http_server_status_ready(userdata);
        status_fresh = false;
        return 0;
}

static int fake_status(HttpServer *h, HttpStatusKind kind, bool details, HttpStatusAnswer *ret, void *userdata) {
        if (kind == HTTP_STATUS_HEALTH && !status_fresh) {
                n_status_deferred++;
                ASSERT_TRUE(sd_event_add_time_relative(userdata, NULL, CLOCK_MONOTONIC, 30 * 1000, 0, on_status_timer, h) >= 0);
                return 0;
        }
        ret->status = 200;
        ret->content_type = "text/plain";
        ASSERT_TRUE(asprintf(&ret->body, "%s details=%d\n", kind == HTTP_STATUS_HEALTH ? "health" : "metrics",
                             details) > 0);
        ret->size = strlen(ret->body);
        return 1;
}

static void on_activity(HttpServer *h, void *userdata) {
        (*(unsigned *) userdata)++;
}

int main(void) {
        McpServerConfig cfg = { .default_timeout_s = 30, .max_timeout_s = 60, .max_output_bytes = 1 << 20,
                                .max_stdin_bytes = 1 << 20, .max_code_bytes = 1 << 20, .max_concurrent = 4,
                                .max_queue = 8 };
        HttpServerConfig hc = HTTP_SERVER_CONFIG_DEFAULTS;
        HttpAuth auth = {};
        struct sockaddr_un su = { .sun_family = AF_UNIX };
        sd_event *e = NULL;
        McpServer *mcp = NULL, *mcp4 = NULL;
        HttpServer *h = NULL, *h2 = NULL, *h3 = NULL, *h4 = NULL;
        char dir[] = "/tmp/test-http-server.XXXXXX";
        int lfd, bfd, status = -1;
        unsigned activity = 0;
        bool loopback;
        sigset_t mask;
        pid_t pid;

        (void) signal(SIGPIPE, SIG_IGN);
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGCHLD);
        ASSERT_TRUE(sigprocmask(SIG_BLOCK, &mask, NULL) == 0);

        ASSERT_TRUE(mkdtemp(dir));
        (void) snprintf(su.sun_path, sizeof su.sun_path, "%s/broker.sock", dir);
        bfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        ASSERT_TRUE(bfd >= 0);
        ASSERT_TRUE(bind(bfd, (struct sockaddr *) &su, sizeof su) == 0 && listen(bfd, 16) == 0);
        cfg.broker_socket = su.sun_path;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        ASSERT_TRUE(sd_event_add_io(e, NULL, bfd, EPOLLIN, on_fake_broker, NULL) >= 0);
        ASSERT_EQ_INT(mcp_server_new(e, &cfg, &mcp), 0);

        ASSERT_EQ_INT(http_listen("127.0.0.1:0", &lfd), 0);
        ASSERT_EQ_INT(http_socket_describe(lfd, &loopback, &port, &auth.bound_host), 0);
        ASSERT_TRUE(loopback && port > 0);
        auth.token = strdup(TOKEN);
        {
                HttpTokens named = {};
                const char *why = NULL;
                char buf[64];
                ASSERT_EQ_INT(http_tokens_parse("alice " TOKEN_ALICE "\n", strlen("alice " TOKEN_ALICE "\n"), &named, buf,
                                                sizeof buf, &why), 0);
                ASSERT_EQ_INT(http_auth_set_named(&auth, &named, &why), 0);
        }
        auth.check_host = true;
        auth.port = port;
        ASSERT_EQ_INT(http_auth_parse_origins("https://app.example", &auth.origins), 0);
        hc.max_body = MAX_BODY;
        hc.keepalive_usec = 200 * 1000;
        ASSERT_EQ_INT(http_server_new(e, mcp, lfd, &hc, &auth, on_activity, &activity, &h), 0);
        ASSERT_TRUE(http_server_is_idle(h));
        http_server_set_status_handler(h, fake_status, e);

        /* The second server, with tight limits. */
        {
                HttpServerConfig tight = HTTP_SERVER_CONFIG_DEFAULTS;
                HttpAuth a2 = { .token = strdup(TOKEN), .check_host = true };
                int lfd2;

                ASSERT_EQ_INT(http_listen("127.0.0.1:0", &lfd2), 0);
                ASSERT_EQ_INT(http_socket_describe(lfd2, &loopback, &port_limits, &a2.bound_host), 0);
                a2.port = port_limits;
                tight.max_body = MAX_BODY;
                tight.max_connections = 4;
                tight.max_sessions = 2;
                tight.max_streams_per_session = 2;
                tight.connection_timeout_s = 1;
                tight.session_idle_usec = USEC_PER_SEC;
                tight.keepalive_usec = 200 * 1000;
                ASSERT_EQ_INT(http_server_new(e, mcp, lfd2, &tight, &a2, NULL, NULL, &h2), 0);
        }

        /* The third, for floods: MHD's default idle timeout, a short deadline for headers. */
        {
                HttpServerConfig flood = HTTP_SERVER_CONFIG_DEFAULTS;
                HttpAuth a3 = { .token = strdup(TOKEN), .check_host = true };
                int lfd3;

                ASSERT_EQ_INT(http_listen("127.0.0.1:0", &lfd3), 0);
                ASSERT_EQ_INT(http_socket_describe(lfd3, &loopback, &port_flood, &a3.bound_host), 0);
                a3.port = port_flood;
                flood.max_body = 1 << 20;
                flood.max_connections = 4;
                flood.header_timeout_s = 1;
                flood.budget = &flood_budget;
                ASSERT_EQ_INT(http_server_new(e, mcp, lfd3, &flood, &a3, NULL, NULL, &h3), 0);
        }

        /* The fourth, for streams: progress every millisecond, a budget of its own. */
        {
                McpServerConfig c4 = cfg;
                HttpServerConfig sc = HTTP_SERVER_CONFIG_DEFAULTS;
                HttpAuth a4 = { .token = strdup(TOKEN), .check_host = true };
                int lfd4;

                c4.budget = &stream_budget;
                ASSERT_EQ_INT(mcp_server_new(e, &c4, &mcp4), 0);
                mcp_server_set_progress_interval(mcp4, 1000);
                ASSERT_EQ_INT(http_listen("127.0.0.1:0", &lfd4), 0);
                ASSERT_EQ_INT(http_socket_describe(lfd4, &loopback, &port_stream, &a4.bound_host), 0);
                a4.port = port_stream;
                sc.max_body = MAX_BODY;
                sc.budget = &stream_budget;
                ASSERT_EQ_INT(http_server_new(e, mcp4, lfd4, &sc, &a4, NULL, NULL, &h4), 0);
        }

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0)
                _exit(child());
        ASSERT_TRUE(sd_event_add_child(e, NULL, pid, WEXITED, on_child, &status) >= 0);
        ASSERT_TRUE(sd_event_loop(e) >= 0);
        ASSERT_EQ_INT(status, 0);
        ASSERT_TRUE(activity > 0);
        ASSERT_TRUE(n_status_deferred >= 7);
        {
                HttpServerStats st;
                http_server_get_stats(h, &st);
                ASSERT_TRUE(st.accepted > 20);
                http_server_get_stats(h3, &st);
                ASSERT_TRUE(st.refused > 0 && st.expired > 0);
                http_server_get_stats(NULL, &st);
                ASSERT_EQ_U64(st.accepted, 0);
        }

        /* The dropped stream's session and calls are gone, and all they held. */
        ASSERT_EQ_U64(stream_budget.used, 0);
        http_server_quiesce(h);
        h = http_server_free(h);
        h4 = http_server_free(h4);
        mcp4 = mcp_server_free(mcp4);
        h2 = http_server_free(h2);
        h3 = http_server_free(h3);
        mcp = mcp_server_free(mcp);
        for (unsigned i = 0; i < n_fake; i++)
                close(fake_fds[i]);
        e = sd_event_unref(e);
        close(bfd);
        (void) unlink(su.sun_path);
        (void) rmdir(dir);
        return 0;
}
