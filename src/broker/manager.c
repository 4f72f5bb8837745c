/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "broker-proto.h"
#include "bus-properties.h"
#include "build-config.h"
#include "probe-cache.h"
#include "client.h"
#include "client-sessions.h"
#include "daemon-util.h"
#include "json-util.h"
#include "log.h"
#include "packages.h"
#include "run.h"
#include "stats.h"
#include "tmpfs-proto.h"
#include "util.h"

#define FRONTEND_USER "mcp-exec"
/* Preloaded when MCP_EXEC_PRELOAD is unset: the data stack the Go server's
 * image shipped, those of it that are installed. */
#define PRELOAD_DEFAULT "numpy,pandas,matplotlib,matplotlib.pyplot,PIL,PIL.Image,yaml,jinja2"

void manager_fill_spec(Manager *m, uint64_t timeout_s, SandboxSpec *ret) {
        assert(m);
        assert(ret);

        *ret = (SandboxSpec) {
                .launcher = m->args.launcher,
                .bootstrap = m->args.bootstrap,
                .mpl_cache = m->mpl_cache,
                .package_store = packages_enabled(&m->config) ? m->config.package_store : NULL,
                .wheelhouse = isempty(m->config.wheelhouse) ? NULL : m->config.wheelhouse,
                .tmpfs = m->tmpfs,
                .python = m->python,
                .max_code_bytes = m->config.max_code_bytes,
                .timeout_usec = timeout_s * USEC_PER_SEC,
                .memory_max = m->config.memory_max,
                .tasks_max = m->config.tasks_max,
                .cpu_quota_percent = m->config.cpu_quota_percent,
                .file_size_max = m->config.file_size_max,
                .tmp_size_max = m->config.tmp_size_max,
                .slice = "mcp-exec.slice",
                .binds_to = m->own_unit,
                .systemd_version = m->systemd_version,
        };
}

/* A warm unit: the preload, room for what it took (the pool lowers the limit
 * to MemoryMax= plus that once it is ready), and a cap on its whole life.
 * The spare: a cold run's properties with the same cap, as the pool's
 * deadline, not RuntimeMaxSec=, ends its run (client.c). */
void manager_fill_pool_spec(void *userdata, bool spare, SandboxSpec *ret) {
        Manager *m = userdata;

        assert(m);
        assert(ret);

        manager_fill_spec(m, m->config.pool_idle_s + m->config.max_timeout_s + 60, ret);
        if (spare) {
                ret->description = SANDBOX_DESCRIPTION_SPARE;
                return;
        }
        ret->preload = m->preload;
        /* Where systemd keeps our fd store across an exit, a warm unit may
         * outlive our idle exit (pool-store.h): PartOf= us, so that a stop
         * or restart of the broker still stops it (and its run, once it has
         * one), and its RuntimeMaxSec= ends it if no broker comes back. A
         * broker that dies closes its control socket: its launcher, waiting,
         * exits; a run on it is stopped by the next start's sweep. */
        ret->part_of = m->fdstore_max > 0;
        ret->memory_max = m->config.memory_max + (UINT64_C(512) << 20);
        ret->cpu_weight = SANDBOX_CPU_WEIGHT_IDLE;
        ret->description = SANDBOX_DESCRIPTION_WARM;
}

/* Whether a run's unit is being started: systemd starts one unit at a time,
 * and a warm unit's start would come before it. */
static bool manager_run_starting(Manager *m) {
        assert(m);

        LIST_FOREACH(clients, c, m->clients)
                if (c->run && !run_is_started(c->run))
                        return true;
        return false;
}

void manager_update_pool(Manager *m) {
        /* No replacement while the runs need systemd or the CPU: saturated,
         * a unit of a run (or the self-check) starting. Once started, a
         * warm unit's imports yield to the runs by its CPUWeight=. */
        bool busy = m->n_runs >= m->config.max_concurrent || manager_next_waiter(m) ||
                    m->probe_state == SELF_CHECK_PENDING || manager_run_starting(m);

        assert(m);

        pool_set_busy(m->pool, busy);
        pool_set_runs(m->pool, m->n_runs);
        manager_language_pools_update(m, busy);
}

void manager_slot_freed(Manager *m) {
        assert(m);

        if (m->wait_list && m->dispatch)
                (void) sd_event_source_set_enabled(m->dispatch, SD_EVENT_ONESHOT);
}

/* The configured limits of what comes back and goes in, for the launcher:
 * the same for runs and session calls. */
int manager_result_limits(Manager *m, json_object **ret) {
        assert(m);
        assert(ret);

        return json_build(ret,
                          JB_INT("max_images", m->config.max_images),
                          JB_INT("max_image_bytes", m->config.max_image_bytes),
                          JB_INT("max_files", m->config.max_files_out),
                          JB_INT("max_result_bytes", m->config.max_result_bytes),
                          JB_INT("max_input_bytes", m->config.max_input_bytes),
                          JB_END);
}

static void on_discovery_done(json_object *info, void *userdata);

/* Warm units imported what was installed when they started: after a package
 * was installed, upgraded or removed, none of them may serve (no stale numpy
 * after an upgrade). Cheap: a stat() of the interpreter and each directory of
 * its path, before each run. */
void manager_check_packages(Manager *m) {
        _cleanup_free_ char *now = NULL;
        SandboxSpec spec;

        assert(m);

        if (!m->pool || !m->stamp || m->discovering)
                return;
        now = discovery_stamp(m->python, json_get(m->sandbox_info, "path"));
        if (!now || streq(now, m->stamp))
                return;
        log_struct(LOG_NOTICE,
                   "MESSAGE=Python or its packages changed; replacing the warm units and discovering again.",
                   "MCP_POOL=%s", "recycled");
        free(m->stamp);
        m->stamp = TAKE_PTR(now);
        pool_recycle(m->pool);
        manager_fill_spec(m, 60, &spec);
        spec.mpl_cache = NULL;
        if (discovery_start(m->event, m->bus, &spec, on_discovery_done, m, &m->discovery) >= 0)
                m->discovering = true;
}

bool manager_run_has_room(const Manager *m, const Client *c) {
        uint64_t max_long;

        assert(m);
        assert(c);

        /* The warm units kept across our idle exit are being checked: the
         * run waits for them (a round trip to PID 1) rather than start a
         * unit of its own. */
        if (m->restoring)
                return false;
        /* One slot: nothing to share, a long hold may take it. */
        max_long = m->config.max_concurrent > 1 ? m->config.max_concurrent - 1 : 1;
        return m->n_runs < m->config.max_concurrent && (!c->long_hold || m->n_long < max_long);
}

/* How many slots w's uid holds, and how many its owner (uid and caller). */
static void slots_held(const Manager *m, const Client *w, unsigned *ret_uid, unsigned *ret_owner) {
        unsigned uid = 0, owner = 0;

        LIST_FOREACH(clients, c, m->clients) {
                if (!c->counted || c->uid != w->uid)
                        continue;
                uid++;
                owner += streq(c->caller ?: "", w->caller ?: "");
        }
        *ret_uid = uid;
        *ret_owner = owner;
}

/* O(waiting × connections), both bounded by the connection limit. */
Client *manager_next_waiter(const Manager *m) {
        unsigned best_uid = 0, best_owner = 0;
        Client *best = NULL;

        assert(m);

        LIST_FOREACH(wait, w, m->wait_list) {
                unsigned uid, owner;

                if (!manager_run_has_room(m, w))
                        continue;
                slots_held(m, w, &uid, &owner);
                /* Strictly fewer: of equals, the oldest (first in the list). */
                if (!best || uid < best_uid || (uid == best_uid && owner < best_owner)) {
                        best = w;
                        best_uid = uid;
                        best_owner = owner;
                }
        }
        return best;
}

/* Starts waiting runs, by fair shares (manager.h), while slots are free.
 * Deferred from wherever a slot frees, so no list changes under a caller's
 * feet. */
static int on_dispatch(sd_event_source *es, void *userdata) {
        Manager *m = userdata;
        Client *c;

        while ((c = m->probe_state == SELF_CHECK_FAILED ? m->wait_list : manager_next_waiter(m))) {
                client_unwait(c);
                if (m->probe_state == SELF_CHECK_FAILED) {
                        stats_refused(&m->stats);
                        (void) client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE,
                                                 m->probe_failure ?: "the sandbox self-check failed");
                } else
                        (void) client_start_run(c);
                if (!c->run)
                        client_free(c);
        }
        manager_update_pool(m);
        return 0;
}

/* Answers a connection we will not serve. What it already sent is read and
 * dropped first: closing a unix socket with unread data resets it, and the
 * peer would see ECONNRESET instead of our answer. */
static void refuse(int fd, BrokerError error, const char *message) {
        assert(fd >= 0);
        assert(message);

        for (unsigned i = 0; i < 8; i++) {
                _cleanup_json_ json_object *m = NULL;
                int fds[PACKET_MAX_FDS];
                size_t n = 0;
                int r = packet_recv(fd, &m, fds, ELEMENTSOF(fds), &n);
                for (size_t k = 0; k < n && r > 0; k++)
                        safe_close(fds[k]);
                if (r <= 0 && r != -EBADMSG)
                        break;
        }
        (void) broker_send_error(fd, error, message);
        (void) shutdown(fd, SHUT_WR);
}

static void refuse_not_allowed(int fd, void *userdata) {
        refuse(fd, BROKER_ERROR_ACCESS_DENIED, "only root and the mcp-exec user may use the broker");
}

static int on_accept(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        _cleanup_close_ int cfd = -EBADF;
        pid_t pid;
        uid_t uid;
        int r;

        assert(m);

        r = daemon_accept_root(fd, m->have_frontend_uid ? m->frontend_uid : UID_INVALID, refuse_not_allowed, NULL,
                               &cfd, &pid, &uid);
        if (r <= 0)
                return 0;

        /* Connections cost little, but every one is bounded. */
        if (m->n_clients >= 2 * m->config.max_concurrent + 16) {
                stats_refused(&m->stats);
                refuse(cfd, BROKER_ERROR_BUSY, "too many connections");
                return 0;
        }

        r = client_new(m, cfd, pid, uid);
        if (r < 0)
                return log_error_errno(r, "Failed to watch a client: %m"), 0;
        TAKE_FD(cfd);
        return 0;
}

static int on_idle(sd_event_source *es, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (m->n_clients > 0 || m->n_runs > 0 || m->sessions.n > 0)
                return 0;
        /* A warm unit still importing would be lost: wait for it (its
         * start is bounded by its RuntimeMaxSec=). */
        if (m->fdstore_max > 0 && manager_pools_starting(m) > 0) {
                manager_update_idle(m);
                return 0;
        }
        manager_keep_pool(m);
        /* Those not kept go with us (BindsTo=, or stopped): the next start refills. */
        log_info("Idle for %" PRIu64 " s, exiting; socket activation starts us again.", m->idle_usec / USEC_PER_SEC);
        return daemon_exit_idle(m->event);
}

void manager_update_idle(Manager *m) {
        assert(m);

        if (!m->socket_activated || m->args.idle_exit_sec == 0)
                return;
        /* Sessions live in us: their handles die with us (BindsTo=). */
        daemon_idle_update(m->event, &m->idle_timer, m->idle_usec,
                           m->n_clients > 0 || m->sessions.n > 0 || m->probe_state == SELF_CHECK_PENDING ||
                                   m->discovering,
                           on_idle, m);
}

static void manager_answer_pending_info(Manager *m) {
        assert(m);

        LIST_FOREACH(clients, c, m->clients)
                if (c->info_pending)
                        client_answer_info(c);
}

static void on_pool_ready(void *userdata) {
        Manager *m = userdata;
        /* "info" says which modules warm units preload. */
        manager_answer_pending_info(m);
}

/* What warm units preload: MCP_EXEC_PRELOAD, or the default; only modules
 * that are installed or in the standard library (a missing one would fail in
 * every warm unit). */
static char *manager_preload(Manager *m) {
        _cleanup_free_ char *want = strdup(m->config.preload ?: PRELOAD_DEFAULT), *out = NULL;
        json_object *lists[] = { json_get(m->sandbox_info, "modules"), json_get(m->sandbox_info, "stdlib") };
        char *save = NULL;
        size_t len = 0;

        assert(m);

        if (!want)
                return NULL;
        for (char *mod = strtok_r(want, ",", &save); mod; mod = strtok_r(NULL, ",", &save)) {
                size_t top = strcspn(mod, ".");
                bool installed = false;

                for (size_t l = 0; l < ELEMENTSOF(lists) && !installed; l++)
                        for (size_t i = 0; json_object_is_type(lists[l], json_type_array) &&
                                           i < json_object_array_length(lists[l]); i++) {
                                const char *name = json_object_get_string(json_object_array_get_idx(lists[l], i));
                                if (name && strlen(name) == top && strneq(name, mod, top)) {
                                        installed = true;
                                        break;
                                }
                        }
                if (!installed) {
                        if (m->config.preload)
                                log_warning("MCP_EXEC_PRELOAD names %s, which is not installed; left out.", mod);
                        continue;
                }
                char *n = realloc(out, len + strlen(mod) + 2);
                if (!n)
                        return NULL;
                out = n;
                len += (size_t) sprintf(out + len, "%s%s", len ? "," : "", mod);
        }
        return TAKE_PTR(out);
}

/* Once the sandbox is known (discovered, or from the cache): the preload, the
 * font cache, and the pool. */
static void manager_sandbox_known(Manager *m, json_object *info) {
        const char *font;
        PoolConfig pc = {
                .size = (unsigned) m->config.pool_size,
                .idle_usec = m->config.pool_idle_s * USEC_PER_SEC,
                .memory_max = m->config.memory_max,
                .cpu_quota_percent = m->config.cpu_quota_percent,
        };
        int r;

        assert(m);

        json_object_put(m->sandbox_info);
        m->sandbox_info = json_object_get(info);
        font = json_get_string(info, "mpl_fontlist");
        free(m->mpl_cache);
        m->mpl_cache = NULL;
        if (font && asprintf(&m->mpl_cache, SANDBOX_CACHE_DIR "/%s", font) < 0)
                m->mpl_cache = NULL;
        free(m->preload);
        m->preload = manager_preload(m);
        free(m->stamp);
        m->stamp = discovery_stamp(m->python, json_get(info, "path"));

        if (m->pool) {
                pool_recycle(m->pool);
                return;
        }
        if (pc.size == 0)
                return;
        r = pool_new(m->event, m->bus, &pc, manager_fill_pool_spec, on_pool_ready, m, &m->pool);
        if (r < 0)
                log_warning_errno(r, "Cannot start the warm pool, runs take the cold path: %m");
        else {
                log_struct(LOG_INFO, "MESSAGE=Warm pool of %u units, preloading: %s", pc.size,
                           isempty(m->preload) ? "nothing" : m->preload,
                           "MCP_POOL=%s", "started",
                           "MCP_PRELOAD=%s", m->preload ?: "");
                manager_update_pool(m);
        }
}

static void on_discovery_done(json_object *info, void *userdata) {
        Manager *m = userdata;
        int r;

        m->discovering = false;
        m->discovery = discovery_free(m->discovery);
        if (info) {
                r = discovery_cache_store(SANDBOX_CACHE_DIR, m->python, info);
                if (r < 0)
                        log_warning_errno(r, "Cannot keep the module discovery in " SANDBOX_CACHE_DIR ", ignoring: %m");
        }
        /* A discovery again that failed (its unit was stopped, say) keeps
         * what the last one found. */
        if (info || !m->sandbox_info)
                manager_sandbox_known(m, info);
        manager_answer_pending_info(m);
        manager_update_idle(m);
}

static void on_probe_done(const char *failure, void *userdata) {
        Manager *m = userdata;

        m->probe = probe_free(m->probe);
        if (failure) {
                m->probe_state = SELF_CHECK_FAILED;
                m->probe_failure = strdup(failure);
                probe_cache_forget(SANDBOX_CACHE_DIR);
                log_struct(LOG_CRIT, "MESSAGE=Sandbox self-check failed, refusing to run code: %s", failure,
                           "MCP_PROBE=%s", "failed", "MCP_PROBE_FAILURE=%s", failure);
                /* Nothing was handed to a launcher yet: no code ran. */
                m->pool = pool_free(m->pool);
                manager_languages_done(m);
                LIST_FOREACH_SAFE(clients, c, n, m->clients)
                        if (c->run || c->state == CLIENT_WAITING || c->state == CLIENT_SESSION_CREATING) {
                                (void) client_send_error(c, BROKER_ERROR_SANDBOX_UNAVAILABLE, failure);
                                client_free(c);
                        }
        } else {
                /* (A kept verdict said so when it was read.) */
                if (m->probe_state != SELF_CHECK_PASSED)
                        log_struct(LOG_INFO, "MESSAGE=Sandbox self-check passed; serving.", "MCP_PROBE=%s", "passed");
                m->probe_state = SELF_CHECK_PASSED;
                if (m->probe_key) {
                        int r = probe_cache_store(SANDBOX_CACHE_DIR, m->probe_key);
                        if (r < 0)
                                log_warning_errno(r, "Cannot keep the self-check's verdict, ignoring: %m");
                }
                LIST_FOREACH_SAFE(clients, c, n, m->clients)
                        if (c->state == CLIENT_SESSION_CREATING)
                                client_answer_session(c);
                        else
                                client_try_handoff(c);
                if (!m->sandbox_info) {
                        SandboxSpec spec;

                        /* In parallel with serving: "info" answers without the module
                         * list until this is done. */
                        manager_fill_spec(m, 60, &spec);
                        spec.mpl_cache = NULL;  /* it builds one */
                        if (discovery_start(m->event, m->bus, &spec, on_discovery_done, m, &m->discovery) < 0)
                                log_warning("Cannot start module discovery, continuing without the list.");
                        else
                                m->discovering = true;
                }
        }
        (void) sd_notifyf(false, "STATUS=%s", failure ? "Refusing runs: sandbox self-check failed" : "Serving");
        manager_update_pool(m);
        manager_answer_pending_info(m);
        manager_update_idle(m);
}

/* The system bus went away (dbus restarted): every match and pending call of
 * the runs died with it, and systemd's answers can no longer reach us. Exit:
 * the runs stop with us (BindsTo=), their callers see the connection close,
 * and the socket starts a fresh broker, with a fresh connection, for the next
 * one. */
static int on_bus_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        log_struct(LOG_WARNING,
                   "MESSAGE=Lost the connection to the system bus; exiting, socket activation starts us again.",
                   "MCP_BUS=%s", "disconnected");
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(m->event, EXIT_FAILURE);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        while (m->clients)
                client_free(m->clients);
        /* Session units stop with their runs too. */
        sandbox_sessions_done(&m->sessions);
        /* The warm units stop with their runs; the stored ones not taken back too. */
        m->pool = pool_free(m->pool);
        manager_languages_done(m);
        pool_store_done(&m->store);
        sd_bus_slot_unref(m->slot_fdstore);
        sd_bus_slot_unref(m->slot_reload);
        sd_bus_slot_unref(m->slot_probe_key);
        sd_event_source_disable_unref(m->reload_timer);
        probe_free(m->probe);
        discovery_free(m->discovery);
        /* After every run: it sends the removals they asked for. */
        m->tmpfs = tmpfs_client_free(m->tmpfs);
        json_object_put(m->sandbox_info);
        sd_event_source_disable_unref(m->idle_timer);
        sd_event_source_disable_unref(m->listen_io);
        sd_event_source_disable_unref(m->dispatch);
        /* Flush StopUnit/Unref calls of runs cut short before leaving. */
        if (m->bus)
                (void) sd_bus_flush(m->bus);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        if (!m->socket_activated)
                safe_close(m->listen_fd);
        config_done(&m->config);
        egress_config_done(&m->egress);
        free(m->python);
        free(m->own_unit);
        free(m->probe_failure);
        free(m->probe_key);
        free(m->sd_version);
        free(m->preload);
        free(m->mpl_cache);
        free(m->stamp);
        free(m);
        return NULL;
}

int manager_new(const ManagerArgs *args, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *err = NULL, *unit = NULL;
        extern char **environ;
        struct passwd *pw;
        int r;

        assert(args);
        assert(ret);

        m = new0(Manager, 1);
        if (!m)
                return log_oom();
        m->args = *args;
        m->listen_fd = -EBADF;
        m->store = (PoolStore) POOL_STORE_INIT;

        m->egress_socket = EGRESS_SOCKET_PATH;
        m->tools_socket = TOOLS_SOCKET_PATH;
        m->tools_servers_dir = TOOLS_SERVERS_DIR;
        r = config_parse(environ, &m->config, &err);
        if (r >= 0)
                r = config_resolve_python(m->config.python, &m->python, &err);
        if (r >= 0) {
                err = mfree(err);
                r = egress_config_parse(environ, &m->egress, &err);
        }
        if (r < 0) {
                log_struct(LOG_ERR, "MESSAGE=Bad configuration: %s", err ?: "out of memory", "MCP_CONFIG_ERROR=%s",
                           err ?: "");
                return r;
        }
        for (char **e = environ; *e; e++)
                if (config_is_unknown_assignment(*e))
                        log_warning("Unknown setting %.*s in the environment, ignoring.", (int) strcspn(*e, "="), *e);
        /* With a pool, we stay (and the warm units with us) as long as a warm
         * unit is kept unused. */
        m->idle_usec =
                (m->config.pool_size > 0 ? MAX(m->args.idle_exit_sec, m->config.pool_idle_s) : m->args.idle_exit_sec) *
                USEC_PER_SEC;

        pw = getpwnam(FRONTEND_USER);
        if (pw) {
                m->frontend_uid = pw->pw_uid;
                m->have_frontend_uid = true;
        }

        /* Our own unit (when we are a service): runs bind to it, so they stop
         * when we do. */
        if (sd_pid_get_unit(0, &unit) >= 0 && strlen(unit) > 8 && streq(unit + strlen(unit) - 8, ".service"))
                m->own_unit = TAKE_PTR(unit);

        *ret = TAKE_PTR(m);
        return 0;
}

/* The socket systemd passes us; with --listen, or without systemd, our own. */
static int manager_listen(Manager *m) {
        int r;

        assert(m);

        /* Beside the socket, what our last idle exit left in the fd store. */
        r = pool_store_take(&m->store, &m->listen_fd);
        if (r < 0)
                return r;
        if (r > 0) {
                r = fd_nonblock(m->listen_fd, true);
                if (r < 0)
                        return log_error_errno(r, "Failed to make the listening socket non-blocking: %m");
                m->socket_activated = true;
                return 0;
        }
        r = daemon_listen_unix(m->args.listen ?: BROKER_SOCKET_PATH, 64, &m->listen_fd);
        if (r < 0)
                return r;
        m->socket_activated = r > 0;
        return 0;
}

static int manager_connect_bus(Manager *m) {
        int r;

        assert(m);

        r = sd_bus_open_system(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_attach_event(m->bus, m->event, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus: %m");
        r = sd_bus_match_signal(m->bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                "Disconnected", on_bus_disconnected, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the bus connection: %m");
        return 0;
}

/* After a daemon-reload or daemon-reexec the warm units are replaced: a unit
 * configuration, an interpreter or a library may have changed under them.
 * systemd announces a reload only to subscribers (Subscribe(), which would
 * have it send us every unit's changes), so we look at when it last loaded
 * its units instead, every few seconds while there is a pool. */
#define RELOAD_CHECK_USEC (5 * USEC_PER_SEC)

static int on_units_loaded(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        uint64_t t = 0;

        m->slot_reload = sd_bus_slot_unref(m->slot_reload);
        if (sd_bus_message_is_method_error(reply, NULL) || sd_bus_message_read(reply, "v", "t", &t) < 0)
                return 0;
        if (m->units_loaded != 0 && t != m->units_loaded && m->pool) {
                log_struct(LOG_INFO, "MESSAGE=systemd reloaded; replacing the warm units.", "MCP_POOL=%s", "recycled");
                pool_recycle(m->pool);
                manager_language_pools_recycle(m);
        }
        m->units_loaded = t;
        return 0;
}

static int on_reload_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (m->pool && !m->slot_reload)
                (void) sd_bus_call_method_async(m->bus, &m->slot_reload, "org.freedesktop.systemd1",
                                                "/org/freedesktop/systemd1", "org.freedesktop.DBus.Properties", "Get",
                                                on_units_loaded, m, "ss", "org.freedesktop.systemd1.Manager",
                                                "UnitsLoadTimestampMonotonic");
        (void) sd_event_source_set_time_relative(es, RELOAD_CHECK_USEC);
        (void) sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
        return 0;
}

typedef struct ProbeKeyProperties {
        char *version;                  /* Version */
        ProbeCacheSystemd sd;
} ProbeKeyProperties;

static int read_probe_key_property(sd_bus_message *m, const char *name, void *userdata) {
        ProbeKeyProperties *p = userdata;
        const char *v;
        int r;

        if (streq(name, "Version")) {
                r = sd_bus_message_read(m, "v", "s", &v);
                if (r < 0)
                        return r;
                free(p->version);
                p->version = strdup(v);
                return p->version ? 1 : -ENOMEM;
        }
        if (streq(name, "UnitsLoadTimestampMonotonic"))
                return sd_bus_message_read(m, "v", "t", &p->sd.units_load_usec) < 0 ? -EBADMSG : 1;
        if (streq(name, "UserspaceTimestamp"))
                return sd_bus_message_read(m, "v", "t", &p->sd.boot_usec) < 0 ? -EBADMSG : 1;
        return 0;
}

/* The self-check's spec: Python's, and JavaScript's units too (spec.jit,
 * probe.h) when it is on; its verdict's key says which. */
static void manager_fill_probe_spec(Manager *m, SandboxSpec *ret) {
        manager_fill_spec(m, 30, ret);
        ret->jit = manager_languages(m) & LANGUAGE_BIT(LANGUAGE_JAVASCRIPT);
}

/* With the key (m->probe_key, NULL: none), a kept verdict for it serves at
 * once, else the self-check unit starts. */
static void manager_check_sandbox(Manager *m) {
        SandboxSpec spec;
        int r;

        assert(m);

        if (m->probe_key && probe_cache_valid(SANDBOX_CACHE_DIR, m->probe_key)) {
                log_struct(LOG_INFO,
                           "MESSAGE=Sandbox self-check passed on this boot with the same systemd, binaries and limits; "
                           "serving.",
                           "MCP_PROBE=%s", "kept");
                m->probe_state = SELF_CHECK_PASSED;
                m->probe_key = mfree(m->probe_key);     /* nothing new to keep */
                on_probe_done(NULL, m);
                return;
        }
        manager_fill_probe_spec(m, &spec);
        r = probe_start(m->event, m->bus, &spec, on_probe_done, m, &m->probe);
        if (r < 0) {
                log_error_errno(r, "Failed to start the sandbox self-check: %m");
                on_probe_done("sandbox setup: the self-check could not be started", m);
        }
}

static void on_pool_restored(const unsigned *adopted, void *userdata) {
        Manager *m = userdata;

        manager_language_pools_restored(m, adopted);
        /* None of Python's came back: the spare serves the call that started us. */
        if (adopted[LANGUAGE_PYTHON] == 0)
                (void) pool_start_spare(m->pool);
        else
                on_pool_ready(m);
        m->restoring = false;
        manager_slot_freed(m);
        manager_check_sandbox(m);
}

/* The warm units our last idle exit kept, checked against what they would be
 * made from now (pool-store.h), before the self-check's verdict lets a run
 * take one. */
static void manager_restore_pool(Manager *m) {
        assert(m);

        if (pool_store_empty(&m->store)) {
                manager_check_sandbox(m);
                return;
        }
        manager_restore_pools(m, on_pool_restored);
}

/* The key is PID 1's version, its start (the boot) and the time it last
 * loaded units (asked once, at start: a daemon-reload later recycles the
 * pool, not the verdict), with the spec's binaries and limits. */
static int on_probe_key(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        ProbeKeyProperties p = {};
        Manager *m = userdata;
        SandboxSpec spec;
        int r;

        assert(m);

        m->slot_probe_key = sd_bus_slot_unref(m->slot_probe_key);
        if (sd_bus_message_is_method_error(reply, NULL))
                r = -(sd_bus_message_get_errno(reply) ?: EIO);
        else
                r = bus_read_properties(reply, read_probe_key_property, &p);
        if (r >= 0 && !p.version)
                r = -ENODATA;
        if (r >= 0) {
                /* Timestamps that were not there are 0, which it refuses. */
                p.sd.version = p.version;
                manager_fill_probe_spec(m, &spec);
                r = probe_cache_key(&spec, &p.sd, &m->probe_key);
        }
        if (r >= 0) {
                free(m->sd_version);
                m->sd = p.sd;
                m->sd.version = m->sd_version = TAKE_PTR(p.version);
        }
        free(p.version);
        if (r < 0)
                log_debug_errno(r, "No key for the self-check's verdict, checking: %m");
        manager_restore_pool(m);
        return 0;
}

/* The verdict of an earlier start on the same boot, systemd, binaries and
 * limits (probe-cache.h) spares the first call after an idle exit a
 * self-check unit. Its key is asked of PID 1 without blocking: meanwhile
 * the loop serves the call that started us and the spare's start. */
static void manager_start_probe(Manager *m) {
        int r;

        assert(m);

        r = sd_bus_call_method_async(m->bus, &m->slot_probe_key, "org.freedesktop.systemd1",
                                     "/org/freedesktop/systemd1", "org.freedesktop.DBus.Properties", "GetAll",
                                     on_probe_key, m, "s", "org.freedesktop.systemd1.Manager");
        if (r < 0) {
                log_debug_errno(r, "Cannot ask PID 1 for the self-check's key, checking: %m");
                manager_restore_pool(m);
        }
}

int manager_start(Manager *m) {
        int r;

        assert(m);

        r = manager_listen(m);
        if (r < 0)
                return r;
        r = event_new_daemon(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        r = manager_connect_bus(m);
        if (r < 0)
                return r;

        /* Before any unit is asked for: the property set depends on it. */
        r = probe_systemd_version(m->bus, &m->systemd_version);
        if (r < 0)
                log_error_errno(r, "Cannot tell the running systemd's version, the self-check will refuse runs: %m");

        r = tmpfs_client_new(m->event, TMPFS_SOCKET_PATH, &m->tmpfs);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the mount daemon's client: %m");
        m->restoring = !pool_store_empty(&m->store);
        m->store.bus = sd_bus_ref(m->bus);
        m->store.tmpfs = m->tmpfs;
        manager_ask_fdstore(m);
        /* The warm units in our fd store are checked once our key is known. */
        r = run_sweep_stale(m->bus, pool_store_has_unit, &m->store);
        if (r < 0)
                log_warning_errno(r, "Sweeping leftover runs failed, continuing: %m");
        /* And their /tmp, before any run of ours asks for its own. */
        (void) tmpfs_client_sweep(m->tmpfs);
        r = sd_event_add_time_relative(m->event, &m->reload_timer, CLOCK_MONOTONIC, 0, USEC_PER_SEC,
                                       on_reload_timer, m);
        if (r < 0)
                log_warning_errno(r, "Cannot watch for daemon-reload, ignoring: %m");

        /* The runs' own matplotlib directory is mounted here. */
        if (mkdir(SANDBOX_MPL_DIR, 0755) < 0 && errno != EEXIST)
                log_warning_errno(errno, "Cannot create " SANDBOX_MPL_DIR ", ignoring: %m");
        /* A discovery that is still valid makes the next start quick: the
         * pool starts now, beside the self-check, with its spare for the
         * call that (in practice) started us (pool.h). */
        {
                _cleanup_json_ json_object *info = discovery_cache_load(SANDBOX_CACHE_DIR, m->python);
                if (info) {
                        manager_sandbox_known(m, info);
                        if (pool_store_empty(&m->store))
                                (void) pool_start_spare(m->pool);
                }
        }

        /* Clients are taken at once; their units start beside the self-check,
         * and get their run only once it passed. */
        r = sd_event_add_defer(m->event, &m->dispatch, on_dispatch, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->dispatch, SD_EVENT_OFF);
        if (r >= 0)
                r = sd_event_add_io(m->event, &m->listen_io, m->listen_fd, EPOLLIN, on_accept, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the listening socket: %m");

        /* Ready before the self-check: the probe unit is ordered after us
         * (BindsTo=, After=), so waiting would deadlock. */
        (void) sd_notify(false, "READY=1\nSTATUS=Checking the sandbox");
        manager_start_probe(m);
        return 0;
}
