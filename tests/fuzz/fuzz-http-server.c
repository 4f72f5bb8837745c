/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: raw HTTP requests through the real libmicrohttpd daemon
 * and the HTTP transports (src/http), with the MCP core behind them and
 * tools/call runs going to tests/mcp/fake-broker.c, all on one sd-event loop
 * as in mcp-execd. Each input gets a fresh event loop, server and broker.
 *
 * The server listens on an abstract AF_UNIX socket (a supported MCP_EXEC_ADDR
 * kind, so http-server.c runs unchanged), but with the Host check, a token and
 * an Origin allow-list configured as on loopback TCP:
 *   Host: 127.0.0.1:8080 (or localhost:8080, [::1]:8080)
 *   X-MCP-AUTH: fuzz-token / Authorization: Bearer fuzz-token
 *   Origin: https://ok.example
 *
 * Input: segments separated by "@@@". A segment's first byte, if one of
 * these, picks what happens to the rest of it (otherwise it is 'n'):
 *   n  write it on a new connection
 *   s  write it on the current connection (keep-alive, after the replies)
 *   h  new connection, and shut down its write side after the segment
 *   c  close the current connection first, then a new one
 *   t  as 'n', but first time passes: every session is as if unused for the
 *      idle time, and the sweep and the SSE keep-alive timers fire now
 *   q  as 'n', and at the end the server stops with the connections still
 *      open (suspended requests, streams), as when mcp-execd exits
 * At most MAX_CONNS connections are open; past that, 'n' goes on on the
 * current one. A connection the server closed is closed by the client too. In a
 * segment, "{SID}" becomes the last session id the server handed out
 * (Mcp-Session-Id header or sessionId= of a legacy endpoint event), and
 * "{CL}" the number of bytes from the blank line after it to the segment's
 * end (the body's Content-Length). After each segment the loop runs until
 * nothing moves (never waiting: no timer fires unless already due); at the
 * end every connection is closed and everything freed (LeakSanitizer).
 *
 * FUZZ_DEBUG=1 shows the server's log; FUZZ_DEBUG=2 also what each
 * connection received. */

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "fake-broker.h"
#include "http-auth.h"
#include "http-internal.h"
#include "http-server.h"
#include "log.h"
#include "macro.h"
#include "mcp-server.h"
#include "node-id.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT ((size_t) 64 * 1024)
#define MAX_CONNS 6
/* Bytes of each connection's reply kept for the session id search. */
#define MAX_KEEP ((size_t) 256 * 1024)
/* sd_event_run() calls per segment; a run dispatches one source. */
#define MAX_ITERATIONS 4000
#define SEP "@@@"
#define TOKEN "fuzz-token"
/* A fixed node id, so that ids look the same on every machine. */
#define FUZZ_NODE "fuzz"
#define FUZZ_SID_LEN (sizeof FUZZ_NODE + 32)

static const char *const modules[] = { "numpy", NULL };
static int debug;

typedef struct Client {
        int fd;
        char *out;
        size_t out_size, out_off;
        bool shut_after;
        char *in;
        size_t in_size, in_alloc, scanned;
        bool eof;
} Client;

typedef struct Fuzz {
        sd_event *event;
        Client c[MAX_CONNS];
        unsigned current;
        struct sockaddr_un addr;
        socklen_t addr_len;
        char sid[NODE_ID_HANDLE_MAX];
        HttpServer *http;
        bool stop_first;
        sd_event_source *status_defer;  /* the status handler's "broker answered" */
        bool status_fresh;
} Fuzz;

/* /healthz and /metrics: the health answer waits for a deferred event, as
 * the daemon's waits for the broker; the metrics answer comes at once. */
static int on_status_defer(sd_event_source *s, void *userdata) {
        Fuzz *f = userdata;

        f->status_fresh = true;
        http_server_status_ready(f->http);
        f->status_fresh = false;
        return 0;
}

static int fuzz_status(HttpServer *h, HttpStatusKind kind, bool details, HttpStatusAnswer *ret, void *userdata) {
        Fuzz *f = userdata;

        if (kind == HTTP_STATUS_HEALTH && !f->status_fresh) {
                (void) sd_event_source_set_enabled(f->status_defer, SD_EVENT_ONESHOT);
                return 0;
        }
        ret->status = details ? 200 : 503;
        ret->content_type = "text/plain";
        ret->body = strdup(kind == HTTP_STATUS_HEALTH ? "ok\n" : "mcp_exec_up 1\n");
        if (!ret->body)
                return -ENOMEM;
        ret->size = strlen(ret->body);
        return 1;
}

static void client_close(Client *c) {
        if (debug >= 2 && c->in_size > 0)
                fprintf(stderr, "--- received %zu bytes:\n%.*s\n---\n", c->in_size, (int) MIN(c->in_size, (size_t) 8192),
                        c->in);
        c->fd = safe_close(c->fd);
        c->out = mfree(c->out);
        c->in = mfree(c->in);
        c->in_size = c->in_alloc = c->out_size = c->out_off = c->scanned = 0;
}

static int client_open(Fuzz *f) {
        unsigned i;
        int fd;

        for (i = 0; i < MAX_CONNS && f->c[i].fd >= 0; i++)
                ;
        if (i >= MAX_CONNS)
                return -ENOSPC;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                abort();
        /* Into the listen backlog at once: the server accepts from the loop. */
        if (connect(fd, (struct sockaddr *) &f->addr, f->addr_len) < 0)
                abort();
        f->c[i] = (Client) { .fd = fd };
        f->current = i;
        return 0;
}

static bool is_hex32(const char *p, const char *end) {
        if (end - p < 32)
                return false;
        for (int i = 0; i < 32; i++)
                if (!strchr("0123456789abcdef", p[i]))
                        return false;
        return true;
}

/* The last session id the server announced to this client. */
static void client_scan(Fuzz *f, Client *c) {
        static const char *const keys[] = { "Mcp-Session-Id: ", "sessionId=" };
        const char *end;

        if (!c->in)
                return;
        end = c->in + c->in_size;
        /* Back up a little: a key may straddle two reads. */
        for (const char *p = c->in + (c->scanned > 64 ? c->scanned - 64 : 0); p < end; p++)
                for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                        size_t l = strlen(keys[k]);
                        if ((size_t) (end - p) >= l + FUZZ_SID_LEN && memcmp(p, keys[k], l) == 0 &&
                            memcmp(p + l, FUZZ_NODE ".", strlen(FUZZ_NODE) + 1) == 0 &&
                            is_hex32(p + l + strlen(FUZZ_NODE) + 1, end)) {
                                memcpy(f->sid, p + l, FUZZ_SID_LEN);
                                f->sid[FUZZ_SID_LEN] = 0;
                        }
                }
        c->scanned = c->in_size;
}

/* Writes what is pending and reads what is there; true if anything moved. */
static bool pump(Fuzz *f) {
        bool moved = false;

        for (unsigned i = 0; i < MAX_CONNS; i++) {
                Client *c = &f->c[i];
                char buf[16384];
                ssize_t k;

                if (c->fd < 0)
                        continue;
                if (c->out_off < c->out_size) {
                        k = send(c->fd, c->out + c->out_off, c->out_size - c->out_off, MSG_NOSIGNAL);
                        if (k > 0) {
                                c->out_off += (size_t) k;
                                moved = true;
                        } else if (k < 0 && errno != EAGAIN)
                                c->out_off = c->out_size;       /* the server closed: drop it */
                        if (c->out_off == c->out_size && c->shut_after) {
                                (void) shutdown(c->fd, SHUT_WR);
                                c->shut_after = false;
                        }
                }
                while (!c->eof) {
                        k = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
                        if (k < 0 && errno == EAGAIN)
                                break;
                        if (k <= 0) {
                                /* The server closed: so do we, which frees the slot. */
                                c->eof = true;
                                moved = true;
                                client_scan(f, c);
                                client_close(c);
                                break;
                        }
                        moved = true;
                        if (c->in_size + (size_t) k > MAX_KEEP)
                                continue;
                        if (c->in_size + (size_t) k > c->in_alloc) {
                                c->in_alloc = MAX(c->in_alloc * 2, c->in_size + (size_t) k);
                                c->in = realloc(c->in, c->in_alloc);
                                if (!c->in)
                                        abort();
                        }
                        memcpy(c->in + c->in_size, buf, (size_t) k);
                        c->in_size += (size_t) k;
                }
        }
        return moved;
}

/* Runs the loop until nothing is left to do right now. */
static void settle(Fuzz *f) {
        unsigned quiet = 0;

        for (unsigned i = 0; i < MAX_ITERATIONS && quiet < 3; i++) {
                int r = sd_event_run(f->event, 0);
                bool moved = pump(f);
                quiet = r > 0 || moved ? 0 : quiet + 1;
        }
        for (unsigned i = 0; i < MAX_CONNS; i++)
                client_scan(f, &f->c[i]);
}

static char *replace_all(const char *s, size_t n, const char *what, const char *with, size_t *ret_n) {
        size_t wl = strlen(what), rl = strlen(with), o = 0;
        char *out = malloc(n * (rl > wl ? rl : 1) + 1);

        if (!out)
                abort();
        for (size_t i = 0; i < n;) {
                if (n - i >= wl && memcmp(s + i, what, wl) == 0) {
                        memcpy(out + o, with, rl);
                        o += rl;
                        i += wl;
                } else
                        out[o++] = s[i++];
        }
        *ret_n = o;
        return out;
}

/* {CL}: the bytes after the next blank line (CRLF CRLF, or LF LF) up to the end. */
static char *fill_lengths(const char *s, size_t n, size_t *ret_n) {
        char *out = malloc(n * 5 + 1);
        size_t o = 0;

        if (!out)
                abort();
        for (size_t i = 0; i < n;) {
                if (n - i >= 4 && memcmp(s + i, "{CL}", 4) == 0) {
                        size_t body = 0;
                        for (size_t j = i + 4; j < n; j++) {
                                if (n - j >= 4 && memcmp(s + j, "\r\n\r\n", 4) == 0) {
                                        body = n - j - 4;
                                        break;
                                }
                                if (n - j >= 2 && memcmp(s + j, "\n\n", 2) == 0) {
                                        body = n - j - 2;
                                        break;
                                }
                        }
                        o += (size_t) sprintf(out + o, "%zu", body);
                        i += 4;
                } else
                        out[o++] = s[i++];
        }
        *ret_n = o;
        return out;
}

/* We cannot wait, so the clocks move instead: what an idle session, the
 * sweep and the keep-alive timers see is as if their time had passed. */
static void time_passes(Fuzz *f) {
        HttpServer *h = f->http;
        int enabled;

        LIST_FOREACH(sessions, s, h->sessions) {
                s->last_used = s->last_used > h->config.session_idle_usec ? s->last_used - h->config.session_idle_usec : 0;
                for (HttpRequest *r = s->requests; r; r = r->sess_next)
                        if (r->sse.keepalive)
                                (void) sd_event_source_set_time_relative(r->sse.keepalive, 0);
        }
        if (sd_event_source_get_enabled(h->sweep_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                (void) sd_event_source_set_time_relative(h->sweep_timer, 0);
        settle(f);
}

static void segment(Fuzz *f, char op, const uint8_t *p, size_t n) {
        char *a, *b;
        size_t na, nb;
        Client *c;

        if (op == 't')
                time_passes(f);
        if (op == 'q')
                f->stop_first = true;
        switch (op) {
        case 's':
                if (f->c[f->current].fd < 0)
                        (void) client_open(f);
                break;
        case 'c':
                if (f->c[f->current].fd >= 0) {
                        client_close(&f->c[f->current]);
                        settle(f);
                }
                __attribute__((fallthrough));
        default:
                /* All slots busy: the current connection goes on. */
                (void) client_open(f);
                break;
        }
        c = &f->c[f->current];
        if (c->fd < 0)
                return;

        a = replace_all((const char *) p, n, "{SID}", f->sid[0] ? f->sid : "{SID}", &na);
        b = fill_lengths(a, na, &nb);
        free(a);
        if (c->out_off < c->out_size) {
                /* Still unsent: append. */
                char *m = realloc(c->out, c->out_size + nb + 1);
                if (!m)
                        abort();
                memcpy(m + c->out_size, b, nb);
                c->out = m;
                c->out_size += nb;
                free(b);
        } else {
                free(c->out);
                c->out = b;
                c->out_size = nb;
                c->out_off = 0;
        }
        c->shut_after = op == 'h';
        settle(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static bool initialized = false;
        Fuzz f = {};
        FakeBroker *broker = NULL;
        McpServer *mcp = NULL;
        HttpServer *http = NULL;
        int listen_fd;

        if (size > MAX_INPUT)
                return 0;
        if (!initialized) {
                const char *d = getenv("FUZZ_DEBUG");
                debug = d ? atoi(d) ?: 1 : 0;
                log_set_max_level(debug ? LOG_DEBUG : LOG_CRIT);
                (void) signal(SIGPIPE, SIG_IGN);
                if (node_id_init(FUZZ_NODE) < 0)
                        abort();
                initialized = true;
        }

        McpServerConfig config = {
                .default_timeout_s = 5,
                .max_timeout_s = 10,
                .max_output_bytes = 4096,
                .max_stdin_bytes = 4096,
                .max_code_bytes = 4096,
                .max_concurrent = 2,
                .max_queue = 2,
                .memory_max_bytes = 256ULL << 20,
                .tasks_max = 64,
                .python_version = "3.11.2",
                .modules = modules,
        };
        /* Small limits, so that fuzzing reaches them. */
        HttpServerConfig hc = HTTP_SERVER_CONFIG_DEFAULTS;
        hc.max_body = 4096;
        hc.max_connections = 4;
        hc.max_sessions = 3;
        hc.max_streams_per_session = 2;

        HttpAuth auth = { .check_host = true, .port = 8080 };
        auth.token = strdup(TOKEN);
        auth.bound_host = strdup("127.0.0.1");
        if (!auth.token || !auth.bound_host || http_auth_parse_origins("https://ok.example", &auth.origins) < 0)
                abort();

        for (unsigned i = 0; i < MAX_CONNS; i++)
                f.c[i].fd = -EBADF;
        if (sd_event_new(&f.event) < 0)
                abort();
        if (fake_broker_new(f.event, &broker) < 0)
                abort();
        config.broker_socket = broker->path;
        if (mcp_server_new(f.event, &config, &mcp) < 0)
                abort();

        /* An abstract socket with a name the kernel picks: nothing on disk. */
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        f.addr = (struct sockaddr_un) { .sun_family = AF_UNIX };
        f.addr_len = sizeof f.addr;
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *) &f.addr, sizeof(sa_family_t)) < 0 ||
            getsockname(listen_fd, (struct sockaddr *) &f.addr, &f.addr_len) < 0 || listen(listen_fd, 16) < 0)
                abort();
        if (http_server_new(f.event, mcp, listen_fd, &hc, &auth, NULL, NULL, &http) < 0)
                abort();
        f.http = http;
        if (sd_event_add_defer(f.event, &f.status_defer, on_status_defer, &f) < 0 ||
            sd_event_source_set_enabled(f.status_defer, SD_EVENT_OFF) < 0)
                abort();
        http_server_set_status_handler(http, fuzz_status, &f);

        for (size_t i = 0; i <= size;) {
                const uint8_t *sep = size - i >= 3 ? memmem(data + i, size - i, SEP, 3) : NULL;
                size_t end = sep ? (size_t) (sep - data) : size;
                char op = 'n';

                if (i < end && data[i] != 0 && strchr("nshctq", data[i]))
                        op = (char) data[i++];
                segment(&f, op, data + i, end - i);
                i = end + 3;
        }

        /* Every client goes: suspended requests see the hangup. Or the
         * server stops under them. */
        if (!f.stop_first) {
                for (unsigned i = 0; i < MAX_CONNS; i++)
                        client_close(&f.c[i]);
                settle(&f);
        }
        f.status_defer = sd_event_source_disable_unref(f.status_defer);
        http = f.http = http_server_free(http);
        for (unsigned i = 0; i < MAX_CONNS; i++)
                client_close(&f.c[i]);
        for (int i = 0; i < 5; i++)
                (void) sd_event_run(f.event, 0);
        mcp = mcp_server_free(mcp);
        for (int i = 0; i < 5; i++)
                (void) sd_event_run(f.event, 0);
        broker = fake_broker_free(broker);
        f.event = sd_event_unref(f.event);
        return 0;
}
