/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "execd-manager.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "build-config.h"
#include "daemon-util.h"
#include "execd-config.h"
#include "health.h"
#include "http-tokens.h"
#include "json-util.h"
#include "log.h"
#include "metrics.h"
#include "node-id.h"
#include "parse-util.h"
#include "server-config.h"
#include "strv.h"
#include "util.h"

static void manager_update_idle(Manager *m);

/* Connections, sessions and streams: they tell us when they come and go. */
static bool manager_has_clients(const Manager *m) {
        assert(m);

        return !stdio_server_is_idle(m->stdio) || !http_server_is_idle(m->http);
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        assert(m);

        /* Runs do not report their end to us: look again later. And never
         * leave connections in a backlog for an exit: they are ours to take
         * (the next instance would only take them later). */
        /* Sandbox sessions end with us: not while one may live. */
        if (manager_has_clients(m) || (m->server && mcp_server_in_flight(m->server) > 0) ||
            (m->server && mcp_server_sandbox_sessions(m->server) > 0) ||
            /* Nor while a task runs or keeps a result: they live here only. */
            (m->server && mcp_server_tasks(m->server) > 0) ||
            http_server_has_pending(m->http) || stdio_server_has_pending(m->stdio)) {
                (void) sd_event_source_set_time_relative(s, m->idle_usec);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        log_info("Idle, exiting; socket activation starts us again.");
        /* New connections wait in the socket's backlog for the next instance. */
        http_server_quiesce(m->http);
        stdio_server_quiesce(m->stdio);
        return daemon_exit_idle(m->event);
}

static void manager_update_idle(Manager *m) {
        assert(m);

        if (!m->socket_activated || m->idle_usec == 0)
                return;
        daemon_idle_update(m->event, &m->idle_timer, m->idle_usec, manager_has_clients(m), on_idle, m);
}

static void on_http_activity(HttpServer *h, void *userdata) {
        manager_update_idle(userdata);
}

static void on_stdio_activity(StdioServer *s, void *userdata) {
        manager_update_idle(userdata);
}

/* How often we look: a quarter of WatchdogSec=, and often enough to notice a
 * stuck HTTP server soon even without a watchdog. */
static uint64_t watchdog_period(const Manager *m) {
        uint64_t p = 5 * USEC_PER_SEC;

        assert(m);

        if (m->watchdog_usec > 0)
                p = MIN(p, m->watchdog_usec / 4);
        return MAX(p, 100 * USEC_PER_MSEC);
}

/* The watchdog is answered only while the HTTP side does its work: a loop that
 * runs but no longer drives libmicrohttpd is as dead as a hung one. Then we
 * exit at once instead of waiting for the watchdog: systemd records the
 * failure, and socket activation hands the backlog to a fresh instance. */
static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        const char *why = NULL;

        assert(m);

        if (http_server_is_stuck(m->http, &why)) {
                log_struct(LOG_ERR, "MESSAGE=The HTTP server is stuck (%s); exiting so that a fresh one takes over.",
                           why,
                           "MCP_TRANSPORT=http",
                           "MCP_HTTP_STUCK=%s", why);
                (void) sd_notify(false, "STATUS=Stuck, restarting");
                http_server_quiesce(m->http);
                return sd_event_exit(m->event, EXIT_FAILURE);
        }
        if (m->watchdog_usec > 0)
                (void) sd_notify(false, "WATCHDOG=1");
        (void) sd_event_source_set_time_relative(s, watchdog_period(m));
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static void health_input(Manager *m, const RunStats *broker, HealthInput *ret) {
        McpQueueStats q;

        assert(m);
        assert(ret);

        mcp_server_queue_stats(m->server, &q);
        *ret = (HealthInput) {
                .node = node_id(),
                .broker = broker,
                .calls_running = q.running,
                .calls_waiting = q.waiting,
                .max_running = q.max_running,
                .max_waiting = q.max_waiting,
        };
}

static int render_metrics(Manager *m, const HealthInput *in, HttpStatusAnswer *ret) {
        _cleanup_free_ HttpCallerStats *callers = NULL;
        _cleanup_free_ MetricsCaller *mc = NULL;
        size_t n_callers = 0;
        HttpServerStats hs;
        StdioServerStats ss;
        MetricsSnapshot snap = {
                .node = node_id(),
                .version = PACKAGE_VERSION,
                .healthy = health_decide(in) == HEALTH_OK,
                .broker = in->broker,
                .calls_running = in->calls_running,
                .calls_waiting = in->calls_waiting,
                .has_http = m->http,
                .has_stdio = m->stdio,
        };

        assert(m);
        assert(in);
        assert(ret);

        if (m->server) {
                McpTaskStats ts;
                mcp_server_task_stats(m->server, &ts);
                snap.tasks_working = ts.working;
                snap.tasks_completed = ts.completed;
                snap.tasks_failed = ts.failed;
                snap.tasks_cancelled = ts.cancelled;
                snap.tasks_ended_completed = ts.ended_completed;
                snap.tasks_ended_failed = ts.ended_failed;
                snap.tasks_ended_cancelled = ts.ended_cancelled;
                McpPackageStats ps;
                mcp_server_package_stats(m->server, &ps);
                snap.package_installs_ok = ps.ok;
                snap.package_installs_failed = ps.failed;
                snap.package_installs_refused = ps.refused;
                snap.package_install_usec = ps.install_usec;
        }
        http_server_get_stats(m->http, &hs);
        snap.http_connections = hs.connections;
        snap.http_accepted = hs.accepted;
        snap.http_refused = hs.refused;
        snap.http_expired = hs.expired;
        snap.http_sessions_streamable = hs.sessions_streamable;
        snap.http_sessions_legacy = hs.sessions_legacy;
        snap.http_streams = hs.streams;
        if (http_server_get_caller_stats(m->http, &callers, &n_callers) < 0 ||
            (n_callers > 0 && !(mc = new0(MetricsCaller, n_callers))))
                return -ENOMEM;
        for (size_t i = 0; i < n_callers; i++)
                mc[i] = (MetricsCaller) { .name = callers[i].name, .http_sessions = callers[i].sessions,
                                          .sandbox_sessions = callers[i].sandbox_sessions };
        snap.http_callers = mc;
        snap.n_http_callers = n_callers;
        stdio_server_get_stats(m->stdio, &ss);
        snap.stdio_connections = ss.connections;
        snap.stdio_refused_full = ss.refused_full;
        snap.stdio_refused_uid = ss.refused_uid;
        snap.stdio_closed_silent = ss.closed_silent;

        ret->status = 200;
        ret->content_type = METRICS_CONTENT_TYPE;
        return metrics_render(&snap, &ret->body, &ret->size);
}

/* GET /healthz and /metrics: both from the broker's stats, asked at most
 * once a second (node-status.c), and our own queue and connections. */
static int on_http_status(HttpServer *h, HttpStatusKind kind, bool details, HttpStatusAnswer *ret, void *userdata) {
        Manager *m = userdata;
        const RunStats *broker;
        HealthInput in;
        int r;

        assert(m);
        assert(ret);

        r = node_status_get(m->status, &broker);
        if (r <= 0)
                return r;
        health_input(m, broker, &in);
        if (kind == HTTP_STATUS_METRICS)
                r = render_metrics(m, &in, ret);
        else
                r = health_answer(&in, details, &ret->status, &ret->content_type, &ret->body, &ret->size);
        return r < 0 ? r : 1;
}

static void on_node_status_ready(NodeStatus *n, void *userdata) {
        Manager *m = userdata;

        assert(m);

        http_server_status_ready(m->http);
}

static void on_own_stdio_closed(LineConn *l, void *userdata) {
        Manager *m = userdata;

        assert(m);

        (void) sd_event_exit(m->event, 0);
}

/* Our own stdin/stdout (--stdio) and the stdio socket, where we have them. */
static int manager_serve_stdio(Manager *m) {
        int r;

        assert(m);

        if (m->own_stdio_wanted) {
                McpPeer peer = { .transport = "stdio", .uid = getuid(), .pid = getppid() };
                r = line_conn_new(m->event, m->server, STDIN_FILENO, STDOUT_FILENO, &peer, execd_max_line(&m->config),
                                  on_own_stdio_closed, m, &m->own_stdio);
                if (r >= 0) {
                        line_conn_set_budget(m->own_stdio, &m->budget);
                        r = line_conn_start(m->own_stdio);
                }
                if (r < 0)
                        return log_error_errno(r, "Cannot serve stdin/stdout: %m");
        }
        if (m->stdio_listen_fd >= 0) {
                StdioServerConfig sc = {
                        .max_connections = (unsigned) m->config.stdio_max_connections,
                        .max_per_uid = (unsigned) m->config.stdio_max_per_uid,
                        .hello_timeout_usec = m->config.stdio_hello_timeout_s * USEC_PER_SEC,
                        .max_line = execd_max_line(&m->config),
                        .budget = &m->budget,
                };
                r = stdio_server_new(m->event, m->server, TAKE_FD(m->stdio_listen_fd), &sc, on_stdio_activity, m,
                                     &m->stdio);
                if (r < 0)
                        return log_error_errno(r, "Cannot serve the stdio socket: %m");
        }
        return 0;
}

/* The HTTP socket, with /healthz and /metrics, where we have one. */
static int manager_serve_http(Manager *m) {
        HttpServerConfig hc = HTTP_SERVER_CONFIG_DEFAULTS;
        int r;

        assert(m);

        if (m->http_listen_fd < 0)
                return 0;
        hc.max_body = execd_max_line(&m->config);
        hc.max_connections = (unsigned) m->config.http_max_connections;
        hc.header_timeout_s = (unsigned) m->config.http_header_timeout_s;
        hc.connection_timeout_s = (unsigned) m->config.http_timeout_s;
        hc.budget = &m->budget;
        r = http_server_new(m->event, m->server, TAKE_FD(m->http_listen_fd), &hc, &m->http_auth,
                            on_http_activity, m, &m->http);
        if (r < 0)
                return log_error_errno(r, "Cannot start the HTTP server: %m");
        r = node_status_new(m->event, m->broker_socket, on_node_status_ready, m, &m->status);
        if (r < 0)
                return log_error_errno(r, "Cannot set up /healthz and /metrics: %m");
        http_server_set_status_handler(m->http, on_http_status, m);
        return 0;
}

/* The broker described the sandbox: set up the MCP server and its transports. */
static int manager_serve(Manager *m) {
        McpServerConfig cfg;
        int r;

        assert(m);

        execd_server_config(&m->config, &m->info, &cfg);
        cfg.broker_socket = m->broker_socket;
        cfg.budget = &m->budget;
        cfg.egress = &m->egress;
        cfg.packages = m->packages;
        cfg.servers = m->servers;
        r = mcp_server_new(m->event, &cfg, &m->server);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the MCP server: %m");
        r = manager_serve_stdio(m);
        if (r < 0)
                return r;
        r = manager_serve_http(m);
        if (r < 0)
                return r;
        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        manager_update_idle(m);
        return 0;
}

static void on_broker_info(json_object *reply, void *userdata) {
        Manager *m = userdata;

        assert(m);

        /* Read once: from here on the reply is a struct (broker-proto.h). */
        if (broker_sandbox_info_parse(reply, &m->info) < 0) {
                (void) log_oom();
                (void) sd_event_exit(m->event, EXIT_FAILURE);
                return;
        }
        m->info_query = broker_info_free(m->info_query);
        if (!reply)
                log_warning("The broker did not describe the sandbox; the tool description will lack details.");
        else if (streq_ptr(m->info.sandbox, "failed"))
                log_error("The broker refuses runs: %s", m->info.sandbox_failure ?: "sandbox check failed");
        if (manager_serve(m) < 0)
                (void) sd_event_exit(m->event, EXIT_FAILURE);
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
static int load_named_tokens(Manager *m, HttpAuth *auth) {
        _cleanup_(http_tokens_done) HttpTokens t = {};
        const char *path, *why = NULL;
        _cleanup_free_ char *names = NULL;
        size_t len = 0, n;
        char buf[128];
        FILE *f;
        int r = 0;

        assert(m);

        path = m->config.auth_tokens_file;
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
        r = auth ? http_auth_set_named(auth, &t, &why) : http_server_set_named_tokens(m->http, &t, &why);
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
        Manager *m = userdata;

        assert(m);

        if (!m->http && m->http_listen_fd < 0) {
                log_info("SIGHUP: no HTTP served here, nothing to reload.");
                return 0;
        }
        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading the named tokens");
        /* Before the broker answered, the server is not there yet and the
         * tokens wait in m->http_auth for it. */
        if (load_named_tokens(m, m->http ? NULL : &m->http_auth) < 0)
                log_warning("Reload failed; the named tokens stay as they were.");
        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        return 0;
}

/* Who may use the HTTP socket: the token, allowed Origins, the Host check
 * (loopback names on loopback, and MCP_EXEC_ALLOWED_HOSTS anywhere). A
 * socket others can reach is refused without a token. */
static int http_setup(Manager *m) {
        _cleanup_free_ char *host = NULL;
        const char *source = NULL, *why = NULL;
        bool loopback;
        uint16_t port;
        int r;

        assert(m);

        r = http_socket_describe(m->http_listen_fd, &loopback, &port, &host);
        if (r < 0)
                return log_error_errno(r, "The HTTP socket is no listening stream socket: %m");
        r = http_auth_load_token(getenv("CREDENTIALS_DIRECTORY"), &m->http_auth.token, &source, &why);
        if (r < 0) {
                /* Fail closed: a token meant to be there must not silently be missing. */
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: auth token: %s%s%s", why ?: "out of memory",
                           r == -EINVAL ? "" : ": ", r == -EINVAL ? "" : strerror(-r),
                           "MCP_CONFIG_ERROR=MCP_EXEC_AUTH_TOKEN");
                return r;
        }
        r = load_named_tokens(m, &m->http_auth);
        if (r < 0)
                return r;
        r = http_auth_parse_origins(getenv("MCP_EXEC_ALLOWED_ORIGINS"), &m->http_auth.origins);
        if (r >= 0)
                r = http_auth_parse_hosts(m->config.allowed_hosts, &m->http_auth.hosts);
        if (r < 0)
                return log_oom();
        if (!loopback && !http_auth_has_token(&m->http_auth) && !env_true("MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN")) {
                log_struct(LOG_ERR,
                           "MESSAGE=Refusing to serve HTTP on %s:%u without a token: whoever reaches it could run "
                           "code. Set the auth-token credential or MCP_EXEC_AUTH_TOKEN, listen on loopback, or set "
                           "MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN=1.", host ?: "?", (unsigned) port,
                           "MCP_CONFIG_ERROR=MCP_EXEC_AUTH_TOKEN");
                return -EPERM;
        }
        /* Over a unix socket no browser can be steered to us: no Host check. */
        m->http_auth.check_host = loopback && host;
        m->http_auth.port = port;
        if (!loopback && !http_auth_has_token(&m->http_auth))
                log_warning("Serving HTTP beyond loopback without a token, "
                            "as MCP_EXEC_ALLOW_REMOTE_WITHOUT_TOKEN says.");
        log_struct(LOG_INFO, "MESSAGE=Serving HTTP on %s:%u (/mcp, /sse) as node %s; token: %s; named tokens: %zu.",
                   host ?: "unix socket", (unsigned) port, node_id(),
                   source ?: loopback ? "none, loopback only" : "none", m->http_auth.named.n,
                   "MCP_TRANSPORT=http",
                   "MCP_NODE_ID=%s", node_id(),
                   "MCP_HTTP_LISTEN=%s:%u", host ?: "unix", (unsigned) port,
                   "MCP_HTTP_AUTH=%s", source ?: "none");
        m->http_auth.bound_host = TAKE_PTR(host);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        m->own_stdio = line_conn_free(m->own_stdio);
        /* Before the core: their sessions belong to it. */
        m->stdio = stdio_server_free(m->stdio);
        m->http = http_server_free(m->http);
        m->status = node_status_free(m->status);
        safe_close(m->http_listen_fd);
        safe_close(m->stdio_listen_fd);
        http_auth_done(&m->http_auth);
        m->info_query = broker_info_free(m->info_query);
        m->server = mcp_server_free(m->server);
        sd_event_source_disable_unref(m->idle_timer);
        sd_event_source_disable_unref(m->watchdog_timer);
        log_after_detach();
        sd_event_unref(m->event);
        broker_sandbox_info_done(&m->info);
        config_done(&m->config);
        egress_config_done(&m->egress);
        tool_packages_free(m->packages);
        tool_servers_free(m->servers);
        free(m);
        return NULL;
}

/* Our configuration, from the environment. */
static int manager_load_config(Manager *m) {
        _cleanup_free_ char *err = NULL;
        extern char **environ;
        uint64_t idle_s = 60;
        const char *e;
        int r;

        assert(m);

        r = config_parse(environ, &m->config, &err);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: %s", err ?: "out of memory", "MCP_CONFIG_ERROR=%s",
                           err ?: "");
                return r;
        }
        err = mfree(err);
        /* The same file as the broker's: a policy the front end offers is
         * one the broker knows (it checks again, and fails closed). */
        r = egress_config_parse(environ, &m->egress, &err);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: %s", err ?: "out of memory", "MCP_CONFIG_ERROR=%s",
                           err ?: "");
                return r;
        }
        /* Read on the first tools/list or call with packages, and again
         * whenever `mcp-exec wheels` rewrote the manifest. */
        r = tool_packages_new(m->config.wheelhouse, m->config.max_packages, &m->packages);
        if (r < 0)
                return log_oom();
        /* Read on the first tools/list, and again when servers.d changed. */
        r = tool_servers_new(SERVERS_DIR, &m->servers);
        if (r < 0)
                return log_oom();
        tool_servers_set_egress(m->servers, &m->egress);
        m->budget.max = m->config.frontend_budget;
        e = getenv("MCP_EXEC_IDLE_EXIT_S");
        if (e && parse_uint(e, &idle_s) < 0) {
                log_struct(LOG_ERR,
                           "MESSAGE=Bad configuration: MCP_EXEC_IDLE_EXIT_S=%s: invalid value, expected seconds", e,
                           "MCP_CONFIG_ERROR=MCP_EXEC_IDLE_EXIT_S");
                return -EINVAL;
        }
        m->idle_usec = idle_s * USEC_PER_SEC;
        /* Valid if set (config_parse() checked); else from the machine id. */
        r = node_id_init(m->config.node_id);
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Cannot derive a node id from the machine id (%s); set MCP_EXEC_NODE_ID.",
                           strerror(-r),
                           "MCP_CONFIG_ERROR=MCP_EXEC_NODE_ID");
                return r;
        }
        if (streq(m->config.transport, "stdio"))
                m->own_stdio_wanted = true;
        return 0;
}

/* The sockets systemd passed, told apart by FileDescriptorName=; without
 * them, MCP_EXEC_TRANSPORT=http binds MCP_EXEC_ADDR itself. */
static int manager_listen(Manager *m) {
        char **names = NULL;
        int r, n;

        assert(m);

        n = sd_listen_fds_with_names(true, &names);
        for (int i = 0; i < MAX(n, 0); i++) {
                int fd = SD_LISTEN_FDS_START + i;
                m->socket_activated = true;
                if (names && streq(names[i], "stdio"))
                        m->stdio_listen_fd = fd;
                else if (names && streq(names[i], "http"))
                        m->http_listen_fd = fd;
                else
                        log_warning("Ignoring socket %s: not served by this build.", names ? names[i] : "?");
        }
        strv_free(names);
        if (streq(m->config.transport, "http") || streq(m->config.transport, "sse")) {
                if (m->socket_activated)
                        log_notice("MCP_EXEC_TRANSPORT=%s ignored: socket-activated, HTTP comes from mcp-exec.socket.",
                                   m->config.transport);
                else {
                        /* Unset, it is loopback; the Go server's ":8080" meant every
                         * interface, and still does when given (then a token is needed). */
                        const char *addr = getenv("MCP_EXEC_ADDR") ? m->config.addr : "127.0.0.1:8080";
                        r = http_listen(addr, &m->http_listen_fd);
                        if (r < 0) {
                                log_struct(LOG_ERR, "MESSAGE=Cannot listen on MCP_EXEC_ADDR=%s: %s", addr,
                                           r == -EINVAL ? "expected host:port, [v6]:port or :port" : strerror(-r),
                                           "MCP_CONFIG_ERROR=MCP_EXEC_ADDR");
                                return r;
                        }
                }
        }
        if (!m->own_stdio_wanted && m->stdio_listen_fd < 0 && m->http_listen_fd < 0)
                return log_error_errno(EINVAL,
                                       "Nothing to serve: start me through mcp-exec-stdio.socket or mcp-exec.socket, "
                                       "or with --stdio or MCP_EXEC_TRANSPORT=http.");
        if (m->http_listen_fd >= 0) {
                r = http_setup(m);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every connection is an fd (a local one two), and so is every refusal we
 * still read from. The units raise LimitNOFILE= (setrlimit() is filtered
 * out, @resources); if it still does not cover the configured connections,
 * serve fewer rather than fail at accept() under load. */
static void manager_fit_nofile(Manager *m) {
        uint64_t avail, want_http, want_stdio;
        struct rlimit rl;

        assert(m);

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur <= 256)
                return;
        avail = rl.rlim_cur - 256;      /* the bus, the broker's runs, the journal, ... */
        want_http = m->http_listen_fd >= 0 ? m->config.http_max_connections + 16 + 64 : 0;
        want_stdio = m->stdio_listen_fd >= 0 ? 2 * m->config.stdio_max_connections : 0;
        if (want_http + want_stdio <= avail)
                return;
        if (want_http > 0) {
                uint64_t h = avail - MIN(want_stdio, avail / 2);
                m->config.http_max_connections = h > 96 ? h - 80 : 16;
        }
        if (want_stdio > 0)
                m->config.stdio_max_connections = MAX(MIN(want_stdio, avail / 2) / 2, 1);
        log_warning("LimitNOFILE=%" PRIu64 " is too low for the configured connections; serving at most %" PRIu64
                    " HTTP and %" PRIu64 " local ones.",
                    (uint64_t) rl.rlim_cur, m->config.http_max_connections, m->config.stdio_max_connections);
}

static int manager_setup_event(Manager *m) {
        sigset_t mask;
        int r;

        assert(m);

        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        /* A peer vanishing mid-write must not kill us. */
        (void) signal(SIGPIPE, SIG_IGN);

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m");
        /* The per-call lines wait for the loop's idle moment (log.h). */
        r = log_after_attach(m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the log: %m");
        (void) sd_event_add_signal(m->event, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(m->event, NULL, SIGINT, NULL, NULL);
        r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGHUP: %m");
        /* Not sd_event_set_watchdog(): that answers whenever the loop runs. */
        if (sd_watchdog_enabled(false, &m->watchdog_usec) <= 0)
                m->watchdog_usec = 0;
        r = sd_event_add_time_relative(m->event, &m->watchdog_timer, CLOCK_MONOTONIC, watchdog_period(m),
                                       watchdog_period(m) / 10, on_watchdog, m);
        if (r < 0)
                return log_error_errno(r, "Cannot arm the watchdog timer: %m");
        return 0;
}
int manager_new(const ManagerArgs *args, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        assert(args);
        assert(args->broker_socket);
        assert(ret);

        m = new0(Manager, 1);
        if (!m)
                return log_oom();
        *m = (Manager) {
                .broker_socket = args->broker_socket,
                .own_stdio_wanted = args->stdio,
                .stdio_listen_fd = -EBADF,
                .http_listen_fd = -EBADF,
        };
        /* No answer yet: every member unset. */
        r = broker_sandbox_info_parse(NULL, &m->info);
        if (r < 0)
                return log_oom();
        r = manager_load_config(m);
        if (r < 0)
                return r;
        r = manager_listen(m);
        if (r < 0)
                return r;
        manager_fit_nofile(m);
        r = manager_setup_event(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int manager_start(Manager *m) {
        int r;

        assert(m);

        r = broker_info_start(m->event, m->broker_socket, on_broker_info, m, &m->info_query);
        if (r < 0) {
                log_warning_errno(r, "Cannot reach the broker at %s: %m", m->broker_socket);
                return manager_serve(m);
        }
        return 0;
}
