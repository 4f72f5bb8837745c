/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mcp-execd: the MCP front end. Runs as the unprivileged user mcp-exec,
 * socket-activated; speaks MCP and asks the broker to run code. It never talks
 * to systemd's manager itself.
 *
 * Sockets, told apart by FileDescriptorName=:
 *   stdio  /run/mcp-exec/stdio.sock: one newline-delimited MCP session per
 *          connection, for peers polkit allows (org.mcp-exec.run)
 *   http   127.0.0.1:8080 (mcp-exec.socket): Streamable HTTP at /mcp and the
 *          legacy HTTP+SSE transport, guarded by a token (src/http/)
 * With --stdio (or MCP_EXEC_TRANSPORT=stdio) it serves one session on its own
 * stdin and stdout instead; MCP_EXEC_TRANSPORT=http without socket activation
 * binds MCP_EXEC_ADDR itself.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "broker-info.h"
#include "build-config.h"
#include "config.h"
#include "http-auth.h"
#include "http-server.h"
#include "line-conn.h"
#include "log.h"
#include "macro.h"
#include "mcp-server.h"
#include "peer-auth.h"
#include "broker-proto.h"
#include "util.h"

#define MAX_STDIO_CONNECTIONS 256

typedef struct Daemon Daemon;

typedef struct Conn {
        Daemon *daemon;
        struct Conn *next, *prev;
        LineConn *line;
        PeerAuth *auth;
        pid_t pid;
        uid_t uid;
} Conn;

struct Daemon {
        sd_event *event;
        sd_bus *bus;            /* system bus, for polkit */
        Config config;
        McpServer *server;
        BrokerInfo *info;
        json_object *info_reply;
        char **modules;
        int stdio_listen_fd;
        sd_event_source *stdio_listen_io, *idle_timer;
        Conn *conns;
        unsigned n_conns;
        LineConn *own_stdio;    /* --stdio mode */
        bool socket_activated;
        uint64_t idle_usec;
        int http_listen_fd;     /* taken by the HTTP server */
        HttpAuth http_auth;     /* likewise */
        HttpServer *http;
};

static bool arg_stdio;
static const char *arg_broker_socket = BROKER_SOCKET_PATH;

static void daemon_update_idle(Daemon *d);

static size_t max_line(const Daemon *d) {
        /* JSON may escape each byte of code and stdin as \u00XX. */
        return (size_t) (6 * (d->config.max_code_bytes + d->config.max_stdin_bytes) + 64 * 1024);
}

static Conn *conn_free(Conn *c) {
        if (!c)
                return NULL;
        Daemon *d = c->daemon;
        peer_auth_free(c->auth);
        line_conn_free(c->line);
        if (c->prev)
                c->prev->next = c->next;
        else
                d->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        d->n_conns--;
        free(c);
        daemon_update_idle(d);
        return NULL;
}

static void on_conn_closed(LineConn *l, void *userdata) {
        conn_free(userdata);
}

static void on_auth_done(bool allowed, const char *reason, void *userdata) {
        Conn *c = userdata;
        char msg[512];

        c->auth = peer_auth_free(c->auth);
        log_struct(allowed ? LOG_INFO : LOG_NOTICE,
                   "MESSAGE=Local MCP session for uid %u %s: %s", (unsigned) c->uid, allowed ? "allowed" : "denied", reason,
                   "MCP_TRANSPORT=%s", "stdio-socket",
                   "MCP_CLIENT_UID=%u", (unsigned) c->uid,
                   "MCP_CLIENT_PID=%i", (int) c->pid,
                   "MCP_DECISION=%s", allowed ? "allowed" : "denied",
                   "MCP_POLKIT_ACTION=%s", PEER_AUTH_ACTION);
        if (allowed) {
                if (line_conn_start(c->line) < 0)
                        conn_free(c);
                return;
        }
        (void) snprintf(msg, sizeof msg,
                        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32001,\"message\":"
                        "\"access denied: uid %u is not authorized for %s (%s)\"}}",
                        (unsigned) c->uid, PEER_AUTH_ACTION, reason);
        (void) line_conn_send_and_close(c->line, msg);
}

/* The system bus, for polkit. When dbus restarted since we connected, that
 * connection is closed for good: a new one serves from then on. */
static int daemon_bus(Daemon *d) {
        sd_bus *bus = NULL;
        int r;

        if (d->bus && sd_bus_is_open(d->bus) > 0)
                return 0;
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(bus, d->event, 0);
        if (r < 0) {
                sd_bus_close_unref(bus);
                return r;
        }
        if (d->bus)
                log_notice("The system bus connection was lost; reconnected (for polkit).");
        sd_bus_close_unref(d->bus);
        d->bus = bus;
        return 0;
}

static int on_stdio_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Daemon *d = userdata;
        _cleanup_close_ int cfd = -EBADF;
        McpPeer peer = { .transport = "stdio-socket" };
        Conn *c;
        int r;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return 0;
        if (d->n_conns >= MAX_STDIO_CONNECTIONS) {
                log_warning("Too many local sessions (%u), refusing one.", d->n_conns);
                return 0;
        }
        r = getpeercred_fd(cfd, &peer.pid, &peer.uid, NULL);
        if (r < 0)
                return log_warning_errno(r, "Cannot read peer credentials, refusing: %m"), 0;

        c = calloc(1, sizeof *c);
        if (!c)
                return log_oom(), 0;
        c->daemon = d;
        c->pid = peer.pid;
        c->uid = peer.uid;
        c->next = d->conns;
        if (d->conns)
                d->conns->prev = c;
        d->conns = c;
        d->n_conns++;
        daemon_update_idle(d);

        r = line_conn_new(d->event, d->server, cfd, cfd, &peer, max_line(d), on_conn_closed, c, &c->line);
        if (r < 0) {
                conn_free(c);
                return 0;
        }
        TAKE_FD(cfd);

        r = daemon_bus(d);
        if (r >= 0)
                r = peer_auth_start(d->bus, peer.pid, peer.uid, on_auth_done, c, &c->auth);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask polkit about pid %i: %m", (int) peer.pid);
                on_auth_done(false, "polkit could not be asked", c);
        }
        return 0;
}

/* Connections, sessions and streams: they tell us when they come and go. */
static bool daemon_has_clients(const Daemon *d) {
        return d->n_conns > 0 || !http_server_is_idle(d->http);
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Daemon *d = userdata;

        /* Runs do not report their end to us: look again later. */
        if (daemon_has_clients(d) || (d->server && mcp_server_in_flight(d->server) > 0)) {
                (void) sd_event_source_set_time_relative(s, d->idle_usec);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        log_info("Idle, exiting; socket activation starts us again.");
        (void) sd_notify(false, "STOPPING=1");
        /* New connections wait in the socket's backlog for the next instance. */
        http_server_quiesce(d->http);
        d->stdio_listen_io = sd_event_source_disable_unref(d->stdio_listen_io);
        return sd_event_exit(d->event, 0);
}

static void daemon_update_idle(Daemon *d) {
        if (!d->socket_activated || d->idle_usec == 0)
                return;
        if (daemon_has_clients(d)) {
                (void) sd_event_source_set_enabled(d->idle_timer, SD_EVENT_OFF);
                return;
        }
        if (!d->idle_timer) {
                if (sd_event_add_time_relative(d->event, &d->idle_timer, CLOCK_MONOTONIC, d->idle_usec, 0, on_idle,
                                               d) < 0)
                        log_warning("Cannot arm the idle timer, ignoring.");
                return;
        }
        (void) sd_event_source_set_time_relative(d->idle_timer, d->idle_usec);
        (void) sd_event_source_set_enabled(d->idle_timer, SD_EVENT_ONESHOT);
}

static void on_http_activity(HttpServer *h, void *userdata) {
        daemon_update_idle(userdata);
}

static void on_own_stdio_closed(LineConn *l, void *userdata) {
        Daemon *d = userdata;
        (void) sd_event_exit(d->event, 0);
}

static uint64_t info_u64(json_object *info, const char *key, uint64_t def) {
        json_object *v;
        if (!info || !json_object_object_get_ex(info, key, &v) || !json_object_is_type(v, json_type_int))
                return def;
        return (uint64_t) json_object_get_int64(v);
}

static int daemon_serve(Daemon *d) {
        McpServerConfig cfg = {
                .broker_socket = arg_broker_socket,
                .default_timeout_s = d->config.default_timeout_s,
                .max_timeout_s = d->config.max_timeout_s,
                .max_output_bytes = d->config.max_output_bytes,
                .max_stdin_bytes = d->config.max_stdin_bytes,
                .max_code_bytes = d->config.max_code_bytes,
                .max_concurrent = d->config.max_concurrent,
                .max_queue = d->config.max_queue,
        };
        json_object *v;
        int r;

        /* What the sandbox really enforces comes from the broker, which owns
         * those settings; ours are only a fallback. */
        cfg.memory_max_bytes = info_u64(d->info_reply, "memory_max_bytes", d->config.memory_max);
        cfg.tasks_max = info_u64(d->info_reply, "tasks_max", d->config.tasks_max);
        cfg.cpu_quota_percent = info_u64(d->info_reply, "cpu_quota_percent", d->config.cpu_quota_percent);
        cfg.max_timeout_s = MIN(cfg.max_timeout_s, info_u64(d->info_reply, "max_timeout_s", cfg.max_timeout_s));
        cfg.max_code_bytes = MIN(cfg.max_code_bytes, info_u64(d->info_reply, "max_code_bytes", cfg.max_code_bytes));
        if (d->info_reply && json_object_object_get_ex(d->info_reply, "python_version", &v))
                cfg.python_version = json_object_get_string(v);
        if (d->info_reply && json_object_object_get_ex(d->info_reply, "modules", &v) &&
            json_object_is_type(v, json_type_array)) {
                size_t n = json_object_array_length(v);
                d->modules = calloc(n + 1, sizeof(char *));
                if (!d->modules)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        d->modules[i] = (char *) json_object_get_string(json_object_array_get_idx(v, i));
                cfg.modules = (const char *const *) d->modules;
        }

        r = mcp_server_new(d->event, &cfg, &d->server);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the MCP server: %m");

        if (arg_stdio) {
                McpPeer peer = { .transport = "stdio", .uid = getuid(), .pid = getppid() };
                r = line_conn_new(d->event, d->server, STDIN_FILENO, STDOUT_FILENO, &peer, max_line(d),
                                  on_own_stdio_closed, d, &d->own_stdio);
                if (r >= 0)
                        r = line_conn_start(d->own_stdio);
                if (r < 0)
                        return log_error_errno(r, "Cannot serve stdin/stdout: %m");
        }
        if (d->stdio_listen_fd >= 0) {
                r = sd_event_add_io(d->event, &d->stdio_listen_io, d->stdio_listen_fd, EPOLLIN, on_stdio_accept, d);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch the stdio socket: %m");
        }
        if (d->http_listen_fd >= 0) {
                HttpServerConfig hc = HTTP_SERVER_CONFIG_DEFAULTS;
                hc.max_body = max_line(d);
                r = http_server_new(d->event, d->server, TAKE_FD(d->http_listen_fd), &hc, &d->http_auth,
                                    on_http_activity, d, &d->http);
                if (r < 0)
                        return log_error_errno(r, "Cannot start the HTTP server: %m");
        }
        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        daemon_update_idle(d);
        return 0;
}

static void on_broker_info(json_object *info, void *userdata) {
        Daemon *d = userdata;

        d->info = broker_info_free(d->info);
        d->info_reply = json_object_get(info);
        if (!info)
                log_warning("The broker did not describe the sandbox; the tool description will lack details.");
        else {
                json_object *v;
                if (json_object_object_get_ex(info, "sandbox", &v) && !streq(json_object_get_string(v), "ok"))
                        log_error("The broker refuses runs: %s",
                                  json_object_object_get_ex(info, "sandbox_failure", &v) ? json_object_get_string(v)
                                                                                        : "sandbox check failed");
        }
        if (daemon_serve(d) < 0)
                (void) sd_event_exit(d->event, EXIT_FAILURE);
}

static bool env_true(const char *name) {
        const char *e = getenv(name);
        return e && (streq(e, "1") || streq(e, "yes") || streq(e, "true"));
}

/* Who may use the HTTP socket: the token, allowed Origins, the Host check.
 * A socket others can reach is refused without a token. */
static int http_setup(Daemon *d) {
        _cleanup_free_ char *host = NULL;
        const char *source = NULL, *why = NULL;
        bool loopback;
        uint16_t port;
        int r;

        r = http_socket_describe(d->http_listen_fd, &loopback, &port, &host);
        if (r < 0)
                return log_error_errno(r, "The HTTP socket is no listening stream socket: %m");
        r = http_auth_load_token(getenv("CREDENTIALS_DIRECTORY"), &d->http_auth.token, &source, &why);
        if (r < 0) {
                /* Fail closed: a token meant to be there must not silently be missing. */
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: auth token: %s%s%s", why ?: "out of memory",
                           r == -EINVAL ? "" : ": ", r == -EINVAL ? "" : strerror(-r),
                           "MCP_CONFIG_ERROR=MCP_EXEC_AUTH_TOKEN");
                return r;
        }
        r = http_auth_parse_origins(getenv("MCP_EXEC_ALLOWED_ORIGINS"), &d->http_auth.origins);
        if (r < 0)
                return log_oom();
        if (!loopback && !d->http_auth.token && !env_true("MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN")) {
                log_struct(LOG_ERR,
                           "MESSAGE=Refusing to serve HTTP on %s:%u without a token: whoever reaches it could run "
                           "code. Set the auth-token credential or MCP_EXEC_AUTH_TOKEN, listen on loopback, or set "
                           "MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN=1.", host ?: "?", (unsigned) port,
                           "MCP_CONFIG_ERROR=MCP_EXEC_AUTH_TOKEN");
                return -EPERM;
        }
        /* Over a unix socket no browser can be steered to us: no Host check. */
        d->http_auth.check_host = loopback && host;
        d->http_auth.port = port;
        if (!loopback && !d->http_auth.token)
                log_warning("Serving HTTP beyond loopback without a token, as MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN says.");
        log_struct(LOG_INFO, "MESSAGE=Serving HTTP on %s:%u (/mcp, /sse); token: %s.", host ?: "unix socket",
                   (unsigned) port, source ?: loopback ? "none, loopback only" : "none",
                   "MCP_TRANSPORT=http",
                   "MCP_HTTP_LISTEN=%s:%u", host ?: "unix", (unsigned) port,
                   "MCP_HTTP_AUTH=%s", source ?: "none");
        d->http_auth.bound_host = TAKE_PTR(host);
        return 0;
}

static void help(void) {
        printf("mcp-execd [OPTIONS]\n\n"
               "The mcp-exec MCP server. Normally socket-activated (mcp-exec-stdio.socket,\n"
               "mcp-exec.socket).\n\n"
               "Without systemd, MCP_EXEC_TRANSPORT=http serves HTTP on MCP_EXEC_ADDR (default\n"
               "127.0.0.1:8080; \":8080\" means every interface, which needs a token).\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show the version\n"
               "     --stdio            Serve one MCP session on stdin/stdout\n"
               "     --broker=PATH      The broker's socket (default " BROKER_SOCKET_PATH ")\n");
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "stdio", no_argument, NULL, 's' },
                { "broker", required_argument, NULL, 'r' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("mcp-execd %s\n", PACKAGE_VERSION);
                        return 0;
                case 's':
                        arg_stdio = true;
                        break;
                case 'r':
                        arg_broker_socket = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument: %s", argv[optind]);
        return 1;
}

int main(int argc, char *argv[]) {
        Daemon d = { .stdio_listen_fd = -EBADF, .http_listen_fd = -EBADF };
        _cleanup_free_ char *err = NULL;
        extern char **environ;
        char **names = NULL;
        sigset_t mask;
        uint64_t idle_s = 60;
        const char *e;
        int r, n;

        log_open("mcp-execd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        r = config_parse(environ, &d.config, &err);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: %s", err ?: "out of memory", "MCP_CONFIG_ERROR=%s",
                           err ?: "");
                return EXIT_FAILURE;
        }
        e = getenv("MCP_EXEC_IDLE_EXIT_S");
        if (e && parse_uint(e, &idle_s) < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: MCP_EXEC_IDLE_EXIT_S=%s: invalid value, expected seconds", e,
                           "MCP_CONFIG_ERROR=MCP_EXEC_IDLE_EXIT_S");
                return EXIT_FAILURE;
        }
        d.idle_usec = idle_s * USEC_PER_SEC;
        if (streq(d.config.transport, "stdio"))
                arg_stdio = true;

        n = sd_listen_fds_with_names(true, &names);
        for (int i = 0; i < MAX(n, 0); i++) {
                int fd = SD_LISTEN_FDS_START + i;
                d.socket_activated = true;
                if (names && streq(names[i], "stdio"))
                        d.stdio_listen_fd = fd;
                else if (names && streq(names[i], "http"))
                        d.http_listen_fd = fd;
                else
                        log_warning("Ignoring socket %s: not served by this build.", names ? names[i] : "?");
        }
        for (int i = 0; names && i < MAX(n, 0); i++)
                free(names[i]);
        free(names);
        if (streq(d.config.transport, "http") || streq(d.config.transport, "sse")) {
                if (d.socket_activated)
                        log_notice("MCP_EXEC_TRANSPORT=%s ignored: socket-activated, HTTP comes from mcp-exec.socket.",
                                   d.config.transport);
                else {
                        /* Unset, it is loopback; the Go server's ":8080" meant every
                         * interface, and still does when given (then a token is needed). */
                        const char *addr = getenv("MCP_EXEC_ADDR") ? d.config.addr : "127.0.0.1:8080";
                        r = http_listen(addr, &d.http_listen_fd);
                        if (r < 0) {
                                log_struct(LOG_ERR, "MESSAGE=Cannot listen on MCP_EXEC_ADDR=%s: %s", addr,
                                           r == -EINVAL ? "expected host:port, [v6]:port or :port" : strerror(-r),
                                           "MCP_CONFIG_ERROR=MCP_EXEC_ADDR");
                                return EXIT_FAILURE;
                        }
                }
        }
        if (!arg_stdio && d.stdio_listen_fd < 0 && d.http_listen_fd < 0)
                return log_error("Nothing to serve: start me through mcp-exec-stdio.socket or mcp-exec.socket, "
                                 "or with --stdio or MCP_EXEC_TRANSPORT=http."),
                       EXIT_FAILURE;
        if (d.http_listen_fd >= 0 && http_setup(&d) < 0)
                return EXIT_FAILURE;
        if (d.stdio_listen_fd >= 0)
                (void) fd_nonblock(d.stdio_listen_fd, true);

        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        /* A peer vanishing mid-write must not kill us. */
        (void) signal(SIGPIPE, SIG_IGN);

        r = sd_event_default(&d.event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m"), EXIT_FAILURE;
        (void) sd_event_add_signal(d.event, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(d.event, NULL, SIGINT, NULL, NULL);
        (void) sd_event_set_watchdog(d.event, true);

        if (d.stdio_listen_fd >= 0) {
                r = sd_bus_open_system(&d.bus);
                if (r < 0)
                        return log_error_errno(r, "Cannot connect to the system bus (for polkit): %m"), EXIT_FAILURE;
                r = sd_bus_attach_event(d.bus, d.event, 0);
                if (r < 0)
                        return log_error_errno(r, "Cannot attach the bus: %m"), EXIT_FAILURE;
        }

        r = broker_info_start(d.event, arg_broker_socket, on_broker_info, &d, &d.info);
        if (r < 0) {
                log_warning_errno(r, "Cannot reach the broker at %s: %m", arg_broker_socket);
                if (daemon_serve(&d) < 0)
                        return EXIT_FAILURE;
        }

        r = sd_event_loop(d.event);

        (void) sd_notify(false, "STOPPING=1");
        while (d.conns)
                conn_free(d.conns);
        d.own_stdio = line_conn_free(d.own_stdio);
        /* Before the core: HTTP sessions belong to it. */
        d.http = http_server_free(d.http);
        safe_close(d.http_listen_fd);
        http_auth_done(&d.http_auth);
        d.info = broker_info_free(d.info);
        d.server = mcp_server_free(d.server);
        sd_event_source_disable_unref(d.stdio_listen_io);
        sd_event_source_disable_unref(d.idle_timer);
        d.bus = sd_bus_flush_close_unref(d.bus);
        d.event = sd_event_unref(d.event);
        json_object_put(d.info_reply);
        free(d.modules);
        config_done(&d.config);
        return r < 0 ? EXIT_FAILURE : r;
}
