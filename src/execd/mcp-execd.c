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
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "broker-info.h"
#include "build-config.h"
#include "config.h"
#include "daemon-util.h"
#include "egress-policy.h"
#include "tool-arg-packages.h"
#include "health.h"
#include "launch-frame.h"
#include "http-auth.h"
#include "http-server.h"
#include "http-tokens.h"
#include "line-conn.h"
#include "json-util.h"
#include "log.h"
#include "main-func.h"
#include "metrics.h"
#include "node-id.h"
#include "node-status.h"
#include "macro.h"
#include "mcp-server.h"
#include "stdio-server.h"
#include "strv.h"
#include "broker-proto.h"
#include "util.h"

typedef struct Daemon {
        sd_event *event;
        Config config;
        EgressConfig egress;            /* the operator's egress policies (issue 22) */
        ToolPackages *packages;         /* the operator's wheelhouse (issue 23) */
        McpServer *server;
        BrokerInfo *info;
        json_object *info_reply;
        char **modules, **preloaded;    /* borrowed strings of info_reply */
        MemBudget budget;               /* all that clients make us hold: input, calls, replies */
        int stdio_listen_fd;            /* taken by the stdio server */
        StdioServer *stdio;
        LineConn *own_stdio;            /* --stdio mode */
        bool socket_activated;
        uint64_t idle_usec;
        sd_event_source *idle_timer, *watchdog_timer;
        uint64_t watchdog_usec;         /* WatchdogSec=, 0 if none */
        int http_listen_fd;             /* taken by the HTTP server */
        HttpAuth http_auth;             /* likewise */
        HttpServer *http;
        NodeStatus *status;             /* the broker's stats, for /healthz and /metrics */
} Daemon;

static bool arg_stdio;
static const char *arg_broker_socket = BROKER_SOCKET_PATH;

static void daemon_update_idle(Daemon *d);

static size_t max_line(const Daemon *d) {
        assert(d);

        /* Twice code, stdin and input files: room for the escapes of text
         * (a quote or a newline takes two bytes) and base64 (4/3), and each
         * file name fully escaped. Not six times, as if every byte were a
         * \u00XX escape: parsing holds up to about three times a message
         * beside it (the parsed strings, json-c's growing buffer), outside
         * the memory budget, so this bounds what one message costs the front
         * end (README, "The front ends' memory budget"). Binary content
         * travels as a base64 input file. */
        return (size_t) (2 * (d->config.max_code_bytes + d->config.max_stdin_bytes + d->config.max_input_bytes) +
                         LAUNCH_FILES_MAX * (6 * LAUNCH_FILE_NAME_MAX + 64) + 64 * 1024);
}

/* Connections, sessions and streams: they tell us when they come and go. */
static bool daemon_has_clients(const Daemon *d) {
        assert(d);

        return !stdio_server_is_idle(d->stdio) || !http_server_is_idle(d->http);
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Daemon *d = userdata;

        assert(d);

        /* Runs do not report their end to us: look again later. And never
         * leave connections in a backlog for an exit: they are ours to take
         * (the next instance would only take them later). */
        /* Sandbox sessions end with us: not while one may live. */
        if (daemon_has_clients(d) || (d->server && mcp_server_in_flight(d->server) > 0) ||
            (d->server && mcp_server_sandbox_sessions(d->server) > 0) ||
            /* Nor while a task runs or keeps a result: they live here only. */
            (d->server && mcp_server_tasks(d->server) > 0) ||
            http_server_has_pending(d->http) || stdio_server_has_pending(d->stdio)) {
                (void) sd_event_source_set_time_relative(s, d->idle_usec);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        log_info("Idle, exiting; socket activation starts us again.");
        /* New connections wait in the socket's backlog for the next instance. */
        http_server_quiesce(d->http);
        stdio_server_quiesce(d->stdio);
        return daemon_exit_idle(d->event);
}

static void daemon_update_idle(Daemon *d) {
        assert(d);

        if (!d->socket_activated || d->idle_usec == 0)
                return;
        daemon_idle_update(d->event, &d->idle_timer, d->idle_usec, daemon_has_clients(d), on_idle, d);
}

static void on_http_activity(HttpServer *h, void *userdata) {
        daemon_update_idle(userdata);
}

static void on_stdio_activity(StdioServer *s, void *userdata) {
        daemon_update_idle(userdata);
}

/* How often we look: a quarter of WatchdogSec=, and often enough to notice a
 * stuck HTTP server soon even without a watchdog. */
static uint64_t watchdog_period(const Daemon *d) {
        uint64_t p = 5 * USEC_PER_SEC;

        assert(d);

        if (d->watchdog_usec > 0)
                p = MIN(p, d->watchdog_usec / 4);
        return MAX(p, 100 * USEC_PER_MSEC);
}

/* The watchdog is answered only while the HTTP side does its work: a loop that
 * runs but no longer drives libmicrohttpd is as dead as a hung one. Then we
 * exit at once instead of waiting for the watchdog: systemd records the
 * failure, and socket activation hands the backlog to a fresh instance. */
static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata) {
        Daemon *d = userdata;
        const char *why = NULL;

        assert(d);

        if (http_server_is_stuck(d->http, &why)) {
                log_struct(LOG_ERR, "MESSAGE=The HTTP server is stuck (%s); exiting so that a fresh one takes over.",
                           why,
                           "MCP_TRANSPORT=http",
                           "MCP_HTTP_STUCK=%s", why);
                (void) sd_notify(false, "STATUS=Stuck, restarting");
                http_server_quiesce(d->http);
                return sd_event_exit(d->event, EXIT_FAILURE);
        }
        if (d->watchdog_usec > 0)
                (void) sd_notify(false, "WATCHDOG=1");
        (void) sd_event_source_set_time_relative(s, watchdog_period(d));
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static void health_input(Daemon *d, const RunStats *broker, HealthInput *ret) {
        McpQueueStats q;

        assert(d);
        assert(ret);

        mcp_server_queue_stats(d->server, &q);
        *ret = (HealthInput) {
                .node = node_id(),
                .broker = broker,
                .calls_running = q.running,
                .calls_waiting = q.waiting,
                .max_running = q.max_running,
                .max_waiting = q.max_waiting,
        };
}

static int render_metrics(Daemon *d, const HealthInput *in, HttpStatusAnswer *ret) {
        _cleanup_free_ HttpCallerStats *callers = NULL;
        _cleanup_free_ MetricsCaller *mc = NULL;
        size_t n_callers = 0;
        HttpServerStats hs;
        StdioServerStats ss;
        MetricsSnapshot m = {
                .node = node_id(),
                .version = PACKAGE_VERSION,
                .healthy = health_decide(in) == HEALTH_OK,
                .broker = in->broker,
                .calls_running = in->calls_running,
                .calls_waiting = in->calls_waiting,
                .has_http = d->http,
                .has_stdio = d->stdio,
        };

        assert(d);
        assert(in);
        assert(ret);

        if (d->server) {
                McpTaskStats ts;
                mcp_server_task_stats(d->server, &ts);
                m.tasks_working = ts.working;
                m.tasks_completed = ts.completed;
                m.tasks_failed = ts.failed;
                m.tasks_cancelled = ts.cancelled;
                m.tasks_ended_completed = ts.ended_completed;
                m.tasks_ended_failed = ts.ended_failed;
                m.tasks_ended_cancelled = ts.ended_cancelled;
                McpPackageStats ps;
                mcp_server_package_stats(d->server, &ps);
                m.package_installs_ok = ps.ok;
                m.package_installs_failed = ps.failed;
                m.package_installs_refused = ps.refused;
                m.package_install_usec = ps.install_usec;
        }
        http_server_get_stats(d->http, &hs);
        m.http_connections = hs.connections;
        m.http_accepted = hs.accepted;
        m.http_refused = hs.refused;
        m.http_expired = hs.expired;
        m.http_sessions_streamable = hs.sessions_streamable;
        m.http_sessions_legacy = hs.sessions_legacy;
        m.http_streams = hs.streams;
        if (http_server_get_caller_stats(d->http, &callers, &n_callers) < 0 ||
            (n_callers > 0 && !(mc = new0(MetricsCaller, n_callers))))
                return -ENOMEM;
        for (size_t i = 0; i < n_callers; i++)
                mc[i] = (MetricsCaller) { .name = callers[i].name, .http_sessions = callers[i].sessions,
                                          .sandbox_sessions = callers[i].sandbox_sessions };
        m.http_callers = mc;
        m.n_http_callers = n_callers;
        stdio_server_get_stats(d->stdio, &ss);
        m.stdio_connections = ss.connections;
        m.stdio_refused_full = ss.refused_full;
        m.stdio_refused_uid = ss.refused_uid;
        m.stdio_closed_silent = ss.closed_silent;

        ret->status = 200;
        ret->content_type = METRICS_CONTENT_TYPE;
        return metrics_render(&m, &ret->body, &ret->size);
}

/* GET /healthz and /metrics: both from the broker's stats, asked at most
 * once a second (node-status.c), and our own queue and connections. */
static int on_http_status(HttpServer *h, HttpStatusKind kind, bool details, HttpStatusAnswer *ret, void *userdata) {
        Daemon *d = userdata;
        const RunStats *broker;
        HealthInput in;
        int r;

        assert(d);
        assert(ret);

        r = node_status_get(d->status, &broker);
        if (r <= 0)
                return r;
        health_input(d, broker, &in);
        if (kind == HTTP_STATUS_METRICS)
                r = render_metrics(d, &in, ret);
        else
                r = health_answer(&in, details, &ret->status, &ret->content_type, &ret->body, &ret->size);
        return r < 0 ? r : 1;
}

static void on_node_status_ready(NodeStatus *n, void *userdata) {
        Daemon *d = userdata;

        assert(d);

        http_server_status_ready(d->http);
}

static void on_own_stdio_closed(LineConn *l, void *userdata) {
        Daemon *d = userdata;

        assert(d);

        (void) sd_event_exit(d->event, 0);
}

static uint64_t info_u64(json_object *info, const char *key, uint64_t def) {
        int64_t v;

        assert(key);

        v = json_get_int64(info, key, -1);
        return v < 0 ? def : (uint64_t) v;
}

/* A list of strings in the broker's reply, borrowed from it; NULL when absent. */
static int info_strv(json_object *info, const char *key, char ***ret) {
        json_object *v;
        char **l = NULL;
        size_t n;

        assert(key);
        assert(ret);

        v = json_get(info, key);
        if (json_object_is_type(v, json_type_array)) {
                n = json_object_array_length(v);
                l = calloc(n + 1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
                for (size_t i = 0, k = 0; i < n; i++) {
                        const char *m = json_object_get_string(json_object_array_get_idx(v, i));
                        if (m)
                                l[k++] = (char *) m;
                }
        }
        *ret = l;
        return 0;
}

/* The MCP server's settings: ours, narrowed by what the broker said it
 * enforces. */
static int daemon_server_config(Daemon *d, McpServerConfig *cfg) {
        int r;

        assert(d);
        assert(cfg);

        *cfg = (McpServerConfig) {
                .broker_socket = arg_broker_socket,
                .default_timeout_s = d->config.default_timeout_s,
                .max_timeout_s = d->config.max_timeout_s,
                .max_output_bytes = d->config.max_output_bytes,
                .max_stdin_bytes = d->config.max_stdin_bytes,
                .max_code_bytes = d->config.max_code_bytes,
                .max_concurrent = d->config.max_concurrent,
                .max_queue = d->config.max_queue,
                .max_images = d->config.max_images,
                .max_image_bytes = d->config.max_image_bytes,
                .max_files_out = d->config.max_files_out,
                .max_result_bytes = d->config.max_result_bytes,
                .max_input_bytes = d->config.max_input_bytes,
                .budget = &d->budget,
                .task_ttl_max_s = d->config.task_ttl_max_s,
                .max_tasks = d->config.max_tasks,
                .max_tasks_per_caller = d->config.max_tasks_per_caller,
                .task_after_ms = d->config.task_after_ms,
                .egress = &d->egress,
                .packages = d->packages,
        };

        /* What the sandbox really enforces comes from the broker, which owns
         * those settings; ours are only a fallback. */
        cfg->memory_max_bytes = info_u64(d->info_reply, "memory_max_bytes", d->config.memory_max);
        cfg->tasks_max = info_u64(d->info_reply, "tasks_max", d->config.tasks_max);
        cfg->cpu_quota_percent = info_u64(d->info_reply, "cpu_quota_percent", d->config.cpu_quota_percent);
        cfg->max_timeout_s = MIN(cfg->max_timeout_s, info_u64(d->info_reply, "max_timeout_s", cfg->max_timeout_s));
        /* A broker that does not say takes no longer runs for tasks. */
        cfg->task_max_timeout_s = MIN(d->config.task_max_timeout_s,
                                      info_u64(d->info_reply, "task_max_timeout_s", cfg->max_timeout_s));
        cfg->task_max_timeout_s = MAX(cfg->task_max_timeout_s, cfg->max_timeout_s);
        cfg->max_code_bytes = MIN(cfg->max_code_bytes, info_u64(d->info_reply, "max_code_bytes", cfg->max_code_bytes));
        cfg->python_version = json_get_string(d->info_reply, "python_version");
        /* Figures, files and input files need the broker's fourth fd and
         * launch frames of version 2; an older broker refuses both. */
        cfg->result_channel = json_get_bool(d->info_reply, "result_channel");
        r = info_strv(d->info_reply, "modules", &d->modules);
        if (r < 0)
                return log_oom();
        cfg->modules = (const char *const *) d->modules;
        r = info_strv(d->info_reply, "preloaded", &d->preloaded);
        if (r < 0)
                return log_oom();
        cfg->preloaded = (const char *const *) d->preloaded;
        /* Sessions: what the broker allows; none from one that has none. */
        cfg->max_sessions = info_u64(d->info_reply, "max_sessions", 0);
        cfg->max_sessions_per_caller = info_u64(d->info_reply, "max_sessions_per_caller", 0);
        cfg->session_idle_s = info_u64(d->info_reply, "session_idle_s", 0);
        cfg->session_max_s = info_u64(d->info_reply, "session_max_s", 0);
        if (cfg->max_sessions_per_caller == 0 || cfg->session_idle_s == 0 || cfg->session_max_s == 0)
                cfg->max_sessions = 0;
        return 0;
}

/* Our own stdin/stdout (--stdio) and the stdio socket, where we have them. */
static int daemon_serve_stdio(Daemon *d) {
        int r;

        assert(d);

        if (arg_stdio) {
                McpPeer peer = { .transport = "stdio", .uid = getuid(), .pid = getppid() };
                r = line_conn_new(d->event, d->server, STDIN_FILENO, STDOUT_FILENO, &peer, max_line(d),
                                  on_own_stdio_closed, d, &d->own_stdio);
                if (r >= 0) {
                        line_conn_set_budget(d->own_stdio, &d->budget);
                        r = line_conn_start(d->own_stdio);
                }
                if (r < 0)
                        return log_error_errno(r, "Cannot serve stdin/stdout: %m");
        }
        if (d->stdio_listen_fd >= 0) {
                StdioServerConfig sc = {
                        .max_connections = (unsigned) d->config.stdio_max_connections,
                        .max_per_uid = (unsigned) d->config.stdio_max_per_uid,
                        .hello_timeout_usec = d->config.stdio_hello_timeout_s * USEC_PER_SEC,
                        .max_line = max_line(d),
                        .budget = &d->budget,
                };
                r = stdio_server_new(d->event, d->server, TAKE_FD(d->stdio_listen_fd), &sc, on_stdio_activity, d,
                                     &d->stdio);
                if (r < 0)
                        return log_error_errno(r, "Cannot serve the stdio socket: %m");
        }
        return 0;
}

/* The HTTP socket, with /healthz and /metrics, where we have one. */
static int daemon_serve_http(Daemon *d) {
        HttpServerConfig hc = HTTP_SERVER_CONFIG_DEFAULTS;
        int r;

        assert(d);

        if (d->http_listen_fd < 0)
                return 0;
        hc.max_body = max_line(d);
        hc.max_connections = (unsigned) d->config.http_max_connections;
        hc.header_timeout_s = (unsigned) d->config.http_header_timeout_s;
        hc.connection_timeout_s = (unsigned) d->config.http_timeout_s;
        hc.budget = &d->budget;
        r = http_server_new(d->event, d->server, TAKE_FD(d->http_listen_fd), &hc, &d->http_auth,
                            on_http_activity, d, &d->http);
        if (r < 0)
                return log_error_errno(r, "Cannot start the HTTP server: %m");
        r = node_status_new(d->event, arg_broker_socket, on_node_status_ready, d, &d->status);
        if (r < 0)
                return log_error_errno(r, "Cannot set up /healthz and /metrics: %m");
        http_server_set_status_handler(d->http, on_http_status, d);
        return 0;
}

/* The broker described the sandbox: set up the MCP server and its transports. */
static int daemon_serve(Daemon *d) {
        McpServerConfig cfg;
        int r;

        assert(d);

        r = daemon_server_config(d, &cfg);
        if (r < 0)
                return r;
        r = mcp_server_new(d->event, &cfg, &d->server);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the MCP server: %m");
        r = daemon_serve_stdio(d);
        if (r < 0)
                return r;
        r = daemon_serve_http(d);
        if (r < 0)
                return r;
        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        daemon_update_idle(d);
        return 0;
}

static void on_broker_info(json_object *info, void *userdata) {
        Daemon *d = userdata;

        assert(d);

        d->info = broker_info_free(d->info);
        d->info_reply = json_object_get(info);
        if (!info)
                log_warning("The broker did not describe the sandbox; the tool description will lack details.");
        else if (streq_ptr(json_get_string(info, "sandbox"), "failed"))
                log_error("The broker refuses runs: %s", json_get_string(info, "sandbox_failure") ?: "sandbox check failed");
        if (daemon_serve(d) < 0)
                (void) sd_event_exit(d->event, EXIT_FAILURE);
}

static bool env_true(const char *name) {
        const char *e;

        assert(name);

        e = getenv(name);
        return e && (streq(e, "1") || streq(e, "yes") || streq(e, "true"));
}

/* The named tokens of MCP_EXEC_AUTH_TOKENS_FILE, checked against the single
 * token, into *auth (at start) or the server's (on reload). Logs why not;
 * never a token, never a line of the file. */
static int load_named_tokens(Daemon *d, HttpAuth *auth) {
        _cleanup_(http_tokens_done) HttpTokens t = {};
        const char *path, *why = NULL;
        _cleanup_free_ char *names = NULL;
        size_t len = 0, n;
        char buf[128];
        FILE *f;
        int r = 0;

        assert(d);

        path = d->config.auth_tokens_file;
        if (!isempty(path))
                r = http_tokens_load(path, &t, buf, sizeof buf, &why);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: MCP_EXEC_AUTH_TOKENS_FILE=%s: %s", path,
                           why ?: strerror(-r),
                           "MCP_CONFIG_ERROR=MCP_EXEC_AUTH_TOKENS_FILE");
                return r;
        }
        f = open_memstream(&names, &len);
        for (size_t i = 0; f && i < t.n; i++)
                (void) fprintf(f, "%s%s", i > 0 ? ", " : "", t.entries[i].name);
        if (f)
                (void) fclose(f);
        n = t.n;
        r = auth ? http_auth_set_named(auth, &t, &why) : http_server_set_named_tokens(d->http, &t, &why);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: MCP_EXEC_AUTH_TOKENS_FILE=%s: %s", path, why,
                           "MCP_CONFIG_ERROR=MCP_EXEC_AUTH_TOKENS_FILE");
                return r;
        }
        log_struct(LOG_INFO, "MESSAGE=Named HTTP tokens: %zu%s%s%s.", n, n > 0 ? " (" : "",
                   n > 0 && names ? names : "", n > 0 ? ")" : "",
                   "MCP_TRANSPORT=http",
                   "MCP_HTTP_TOKEN_NAMES=%s", names ?: "");
        return 0;
}

/* SIGHUP (systemctl reload): the named tokens again. A bad file keeps the
 * old set. The single token (credential, environment) stays as it was:
 * systemd does not refresh credentials on reload. */
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *d = userdata;

        assert(d);

        if (!d->http && d->http_listen_fd < 0) {
                log_info("SIGHUP: no HTTP served here, nothing to reload.");
                return 0;
        }
        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading the named tokens");
        /* Before the broker answered, the server is not there yet and the
         * tokens wait in d->http_auth for it. */
        if (load_named_tokens(d, d->http ? NULL : &d->http_auth) < 0)
                log_warning("Reload failed; the named tokens stay as they were.");
        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        return 0;
}

/* Who may use the HTTP socket: the token, allowed Origins, the Host check
 * (loopback names on loopback, and MCP_EXEC_ALLOWED_HOSTS anywhere). A
 * socket others can reach is refused without a token. */
static int http_setup(Daemon *d) {
        _cleanup_free_ char *host = NULL;
        const char *source = NULL, *why = NULL;
        bool loopback;
        uint16_t port;
        int r;

        assert(d);

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
        r = load_named_tokens(d, &d->http_auth);
        if (r < 0)
                return r;
        r = http_auth_parse_origins(getenv("MCP_EXEC_ALLOWED_ORIGINS"), &d->http_auth.origins);
        if (r >= 0)
                r = http_auth_parse_hosts(d->config.allowed_hosts, &d->http_auth.hosts);
        if (r < 0)
                return log_oom();
        if (!loopback && !http_auth_has_token(&d->http_auth) && !env_true("MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN")) {
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
        if (!loopback && !http_auth_has_token(&d->http_auth))
                log_warning("Serving HTTP beyond loopback without a token, as MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN says.");
        log_struct(LOG_INFO, "MESSAGE=Serving HTTP on %s:%u (/mcp, /sse) as node %s; token: %s; named tokens: %zu.",
                   host ?: "unix socket", (unsigned) port, node_id(),
                   source ?: loopback ? "none, loopback only" : "none", d->http_auth.named.n,
                   "MCP_TRANSPORT=http",
                   "MCP_NODE_ID=%s", node_id(),
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

        assert(argv);

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

static Daemon *daemon_free(Daemon *d) {
        if (!d)
                return NULL;
        d->own_stdio = line_conn_free(d->own_stdio);
        /* Before the core: their sessions belong to it. */
        d->stdio = stdio_server_free(d->stdio);
        d->http = http_server_free(d->http);
        d->status = node_status_free(d->status);
        safe_close(d->http_listen_fd);
        safe_close(d->stdio_listen_fd);
        http_auth_done(&d->http_auth);
        d->info = broker_info_free(d->info);
        d->server = mcp_server_free(d->server);
        sd_event_source_disable_unref(d->idle_timer);
        sd_event_source_disable_unref(d->watchdog_timer);
        log_after_detach();
        sd_event_unref(d->event);
        json_object_put(d->info_reply);
        free(d->modules);
        free(d->preloaded);
        config_done(&d->config);
        egress_config_done(&d->egress);
        tool_packages_free(d->packages);
        free(d);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Daemon *, daemon_free);

static int daemon_new(Daemon **ret) {
        _cleanup_(daemon_freep) Daemon *d = NULL;
        _cleanup_free_ char *err = NULL;
        extern char **environ;
        uint64_t idle_s = 60;
        const char *e;
        int r;

        assert(ret);

        d = calloc(1, sizeof *d);
        if (!d)
                return log_oom();
        *d = (Daemon) { .stdio_listen_fd = -EBADF, .http_listen_fd = -EBADF };

        r = config_parse(environ, &d->config, &err);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: %s", err ?: "out of memory", "MCP_CONFIG_ERROR=%s",
                           err ?: "");
                return r;
        }
        err = mfree(err);
        /* The same file as the broker's: a policy the front end offers is
         * one the broker knows (it checks again, and fails closed). */
        r = egress_config_parse(environ, &d->egress, &err);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: %s", err ?: "out of memory", "MCP_CONFIG_ERROR=%s",
                           err ?: "");
                return r;
        }
        /* Read on the first tools/list or call with packages, and again
         * whenever `mcp-exec wheels` rewrote the manifest. */
        r = tool_packages_new(d->config.wheelhouse, d->config.max_packages, &d->packages);
        if (r < 0)
                return log_oom();
        d->budget.max = d->config.frontend_budget;
        e = getenv("MCP_EXEC_IDLE_EXIT_S");
        if (e && parse_uint(e, &idle_s) < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: MCP_EXEC_IDLE_EXIT_S=%s: invalid value, expected seconds", e,
                           "MCP_CONFIG_ERROR=MCP_EXEC_IDLE_EXIT_S");
                return -EINVAL;
        }
        d->idle_usec = idle_s * USEC_PER_SEC;
        /* Valid if set (config_parse() checked); else from the machine id. */
        r = node_id_init(d->config.node_id);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Cannot derive a node id from the machine id (%s); set MCP_EXEC_NODE_ID.",
                           strerror(-r),
                           "MCP_CONFIG_ERROR=MCP_EXEC_NODE_ID");
                return r;
        }
        if (streq(d->config.transport, "stdio"))
                arg_stdio = true;
        *ret = TAKE_PTR(d);
        return 0;
}

/* The sockets systemd passed, told apart by FileDescriptorName=; without
 * them, MCP_EXEC_TRANSPORT=http binds MCP_EXEC_ADDR itself. */
static int daemon_listen(Daemon *d) {
        char **names = NULL;
        int r, n;

        assert(d);

        n = sd_listen_fds_with_names(true, &names);
        for (int i = 0; i < MAX(n, 0); i++) {
                int fd = SD_LISTEN_FDS_START + i;
                d->socket_activated = true;
                if (names && streq(names[i], "stdio"))
                        d->stdio_listen_fd = fd;
                else if (names && streq(names[i], "http"))
                        d->http_listen_fd = fd;
                else
                        log_warning("Ignoring socket %s: not served by this build.", names ? names[i] : "?");
        }
        strv_free(names);
        if (streq(d->config.transport, "http") || streq(d->config.transport, "sse")) {
                if (d->socket_activated)
                        log_notice("MCP_EXEC_TRANSPORT=%s ignored: socket-activated, HTTP comes from mcp-exec.socket.",
                                   d->config.transport);
                else {
                        /* Unset, it is loopback; the Go server's ":8080" meant every
                         * interface, and still does when given (then a token is needed). */
                        const char *addr = getenv("MCP_EXEC_ADDR") ? d->config.addr : "127.0.0.1:8080";
                        r = http_listen(addr, &d->http_listen_fd);
                        if (r < 0) {
                                log_struct(LOG_ERR, "MESSAGE=Cannot listen on MCP_EXEC_ADDR=%s: %s", addr,
                                           r == -EINVAL ? "expected host:port, [v6]:port or :port" : strerror(-r),
                                           "MCP_CONFIG_ERROR=MCP_EXEC_ADDR");
                                return r;
                        }
                }
        }
        if (!arg_stdio && d->stdio_listen_fd < 0 && d->http_listen_fd < 0)
                return log_error_errno(EINVAL,
                                       "Nothing to serve: start me through mcp-exec-stdio.socket or mcp-exec.socket, "
                                       "or with --stdio or MCP_EXEC_TRANSPORT=http.");
        if (d->http_listen_fd >= 0) {
                r = http_setup(d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every connection is an fd (a local one two), and so is every refusal we
 * still read from. The units raise LimitNOFILE= (setrlimit() is filtered
 * out, @resources); if it still does not cover the configured connections,
 * serve fewer rather than fail at accept() under load. */
static void daemon_fit_nofile(Daemon *d) {
        uint64_t avail, want_http, want_stdio;
        struct rlimit rl;

        assert(d);

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur <= 256)
                return;
        avail = rl.rlim_cur - 256;      /* the bus, the broker's runs, the journal, ... */
        want_http = d->http_listen_fd >= 0 ? d->config.http_max_connections + 16 + 64 : 0;
        want_stdio = d->stdio_listen_fd >= 0 ? 2 * d->config.stdio_max_connections : 0;
        if (want_http + want_stdio <= avail)
                return;
        if (want_http > 0) {
                uint64_t h = avail - MIN(want_stdio, avail / 2);
                d->config.http_max_connections = h > 96 ? h - 80 : 16;
        }
        if (want_stdio > 0)
                d->config.stdio_max_connections = MAX(MIN(want_stdio, avail / 2) / 2, 1);
        log_warning("LimitNOFILE=%" PRIu64 " is too low for the configured connections; serving at most %" PRIu64
                    " HTTP and %" PRIu64 " local ones.",
                    (uint64_t) rl.rlim_cur, d->config.http_max_connections, d->config.stdio_max_connections);
}

static int daemon_setup_event(Daemon *d) {
        sigset_t mask;
        int r;

        assert(d);

        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        /* A peer vanishing mid-write must not kill us. */
        (void) signal(SIGPIPE, SIG_IGN);

        r = sd_event_default(&d->event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m");
        /* The per-call lines wait for the loop's idle moment (log.h). */
        r = log_after_attach(d->event);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the log: %m");
        (void) sd_event_add_signal(d->event, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(d->event, NULL, SIGINT, NULL, NULL);
        r = sd_event_add_signal(d->event, NULL, SIGHUP, on_sighup, d);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGHUP: %m");
        /* Not sd_event_set_watchdog(): that answers whenever the loop runs. */
        if (sd_watchdog_enabled(false, &d->watchdog_usec) <= 0)
                d->watchdog_usec = 0;
        r = sd_event_add_time_relative(d->event, &d->watchdog_timer, CLOCK_MONOTONIC, watchdog_period(d),
                                       watchdog_period(d) / 10, on_watchdog, d);
        if (r < 0)
                return log_error_errno(r, "Cannot arm the watchdog timer: %m");
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(daemon_freep) Daemon *d = NULL;
        int r;

        log_open("mcp-execd");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        /* We hold every client's token, code and output in memory: no other
         * process of our uid (the other front end, whatever runs as
         * mcp-exec) may read it through /proc/PID/mem, ptrace or a core
         * dump. The units also deny process_vm_readv/writev. */
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return log_error_errno(errno, "Cannot make ourselves non-dumpable: %m");

        r = daemon_new(&d);
        if (r < 0)
                return r;
        r = daemon_listen(d);
        if (r < 0)
                return r;
        daemon_fit_nofile(d);
        r = daemon_setup_event(d);
        if (r < 0)
                return r;

        r = broker_info_start(d->event, arg_broker_socket, on_broker_info, d, &d->info);
        if (r < 0) {
                log_warning_errno(r, "Cannot reach the broker at %s: %m", arg_broker_socket);
                r = daemon_serve(d);
                if (r < 0)
                        return r;
        }

        r = sd_event_loop(d->event);
        (void) sd_notify(false, "STOPPING=1");
        return r;
}

DEFINE_MAIN_FUNCTION(run);
