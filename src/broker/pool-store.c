/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pool-store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "bus-properties.h"
#include "json-util.h"
#include "log.h"
#include "sandbox-properties.h"
#include "strv.h"
#include "unit-names.h"
#include "util.h"

#define SYSTEMD_SERVICE "org.freedesktop.systemd1"

static bool has_prefix(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool valid_id(const char *id) {
        return strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}

int pool_store_names(Language l, char *ret_prefix, char *ret_state) {
        assert(ret_prefix);
        assert(ret_state);

        if (l == LANGUAGE_PYTHON) {
                (void) snprintf(ret_prefix, POOL_STORE_NAME_MAX, "%s", POOL_STORE_WARM_PREFIX);
                (void) snprintf(ret_state, POOL_STORE_NAME_MAX, "%s", POOL_STORE_STATE_NAME);
                return 0;
        }
        if (!language_to_string(l))
                return -EINVAL;
        (void) snprintf(ret_prefix, POOL_STORE_NAME_MAX, POOL_STORE_WARM_PREFIX "%s-", language_to_string(l));
        (void) snprintf(ret_state, POOL_STORE_NAME_MAX, POOL_STORE_WARM_PREFIX "%s-" POOL_STORE_LANGUAGE_STATE,
                        language_to_string(l));
        return 0;
}

int pool_store_parse_name(const char *name, Language *ret_language, const char **ret_id) {
        const char *rest;

        assert(name);
        assert(ret_language);
        assert(ret_id);

        if (streq(name, POOL_STORE_STATE_NAME)) {
                *ret_language = LANGUAGE_PYTHON;
                *ret_id = NULL;
                return POOL_STORE_NAME_STATE;
        }
        if (!has_prefix(name, POOL_STORE_WARM_PREFIX))
                return 0;
        rest = name + strlen(POOL_STORE_WARM_PREFIX);
        if (valid_id(rest)) {
                *ret_language = LANGUAGE_PYTHON;
                *ret_id = rest;
                return POOL_STORE_NAME_UNIT;
        }
        /* Python's are the names above only: "warm-python-..." is none. */
        for (Language l = LANGUAGE_PYTHON + 1; l < _LANGUAGE_MAX; l++) {
                size_t k = strlen(language_to_string(l));

                if (!strneq(rest, language_to_string(l), k) || rest[k] != '-')
                        continue;
                if (streq(rest + k + 1, POOL_STORE_LANGUAGE_STATE)) {
                        *ret_language = l;
                        *ret_id = NULL;
                        return POOL_STORE_NAME_STATE;
                }
                if (!valid_id(rest + k + 1))
                        return -EINVAL;
                *ret_language = l;
                *ret_id = rest + k + 1;
                return POOL_STORE_NAME_UNIT;
        }
        return -EINVAL;
}

static int store_add_unit(PoolStore *s, Language l, const char *id, int fd) {
        PoolStoreUnit *n;

        if (!valid_id(id))
                return -EINVAL;
        for (size_t i = 0; i < s->n_units; i++)
                if (streq(s->units[i].id, id))
                        return -EEXIST;
        n = reallocarray(s->units, s->n_units + 1, sizeof *n);
        if (!n)
                return -ENOMEM;
        s->units = n;
        memcpy(n[s->n_units].id, id, 33);
        n[s->n_units].language = l;
        n[s->n_units++].fd = fd;
        return 0;
}

/* Out of the store, so that it holds nothing of ours while we run: a broker
 * that dies does not leave a unit's socket open there. */
static void store_remove(const char *name) {
        char msg[sizeof "FDSTOREREMOVE=1\nFDNAME=" + 256];

        (void) snprintf(msg, sizeof msg, "FDSTOREREMOVE=1\nFDNAME=%s", name);
        (void) sd_notify(false, msg);
}

int pool_store_take(PoolStore *s, int *ret_listen_fd) {
        char **names = NULL;
        int n, listen_fd = -EBADF, r = 0;

        assert(s);
        assert(ret_listen_fd);

        n = sd_listen_fds_with_names(true, &names);
        if (n < 0)
                return log_error_errno(n, "Cannot read the fds systemd passed: %m");
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                const char *name = names && names[i] ? names[i] : "", *id = NULL;
                Language l = LANGUAGE_PYTHON;
                int kind = pool_store_parse_name(name, &l, &id);

                if (kind != 0) {
                        store_remove(name);
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        if (kind == POOL_STORE_NAME_STATE && s->state_fd[l] < 0)
                                s->state_fd[l] = fd;
                        else if (kind != POOL_STORE_NAME_UNIT || store_add_unit(s, l, id, fd) < 0)
                                safe_close(fd);
                        continue;
                }
                if (listen_fd >= 0) {
                        r = log_error_errno(EINVAL, "Expected one listening socket, got more.");
                        safe_close(fd);
                        continue;
                }
                listen_fd = fd;
        }
        strv_free(names);
        if (r < 0) {
                safe_close(listen_fd);
                return r;
        }
        if (s->n_units > 0)
                log_struct(LOG_INFO, "MESSAGE=%zu warm unit(s) in the fd store from before the idle exit.", s->n_units,
                           "MCP_POOL=%s", "stored");
        if (listen_fd < 0)
                return 0;
        *ret_listen_fd = listen_fd;
        return 1;
}

bool pool_store_empty(const PoolStore *s) {
        return !s || s->n_units == 0;
}

bool pool_store_has_language(const PoolStore *s, Language l) {
        for (size_t i = 0; s && i < s->n_units; i++)
                if (s->units[i].fd >= 0 && s->units[i].language == l)
                        return true;
        return false;
}

bool pool_store_has_unit(const char *unit, void *userdata) {
        const PoolStore *s = userdata;
        size_t l = strlen(UNIT_PREFIX_RUN);

        if (!s || !has_prefix(unit, UNIT_PREFIX_RUN) || strlen(unit) != l + 32 + strlen(".service"))
                return false;
        for (size_t i = 0; i < s->n_units; i++)
                if (s->units[i].fd >= 0 && strneq(unit + l, s->units[i].id, 32))
                        return true;
        return false;
}

/* Fail closed: the unit stopped, its /tmp removed, its socket closed. */
static void store_drop(PoolStore *s, PoolStoreUnit *u, const char *why) {
        char unit[sizeof UNIT_PREFIX_RUN + 32 + sizeof ".service"];

        if (u->fd < 0)
                return;
        (void) snprintf(unit, sizeof unit, UNIT_PREFIX_RUN "%s.service", u->id);
        log_struct(LOG_NOTICE, "MESSAGE=Stored warm unit %s not used: %s; stopping it.", unit, why,
                   "MCP_UNIT=%s", unit,
                   "MCP_LANGUAGE=%s", language_to_string(u->language),
                   "MCP_POOL=%s", "stored-dropped");
        if (s->bus)
                (void) sd_bus_call_method_async(s->bus, NULL, SYSTEMD_SERVICE, "/org/freedesktop/systemd1",
                                                "org.freedesktop.systemd1.Manager", "StopUnit", NULL, NULL, "ss",
                                                unit, "replace");
        if (s->tmpfs)
                (void) tmpfs_client_umount(s->tmpfs, u->id);
        u->fd = safe_close(u->fd);
}

/* The state pool_keep() wrote for l, if its key is key: its "units". */
static json_object *store_read_state(PoolStore *s, Language l, const char *key) {
        _cleanup_json_ json_object *j = NULL;
        _cleanup_free_ char *buf = malloc(POOL_STORE_STATE_MAX + 1);
        const char *error = NULL;
        size_t len = 0, end = 0;
        ssize_t k;

        if (!buf || s->state_fd[l] < 0 || !key || fd_nonblock(s->state_fd[l], true) < 0)
                return NULL;
        while (len < POOL_STORE_STATE_MAX && (k = read(s->state_fd[l], buf + len, POOL_STORE_STATE_MAX - len)) > 0)
                len += (size_t) k;
        buf[len] = 0;
        if (len == 0 || len >= POOL_STORE_STATE_MAX ||
            json_parse_strict(buf, len, 8, 0, &j, &end, &error) < 0 || end != len ||
            !json_object_is_type(j, json_type_object) ||
            !streq_ptr(json_get_string(j, "key"), key) || !json_object_is_type(json_get(j, "units"), json_type_array))
                return NULL;
        return json_object_get(json_get(j, "units"));
}

static json_object *state_unit(json_object *units, const char *id) {
        for (size_t i = 0; units && i < json_object_array_length(units); i++) {
                json_object *u = json_object_array_get_idx(units, i);
                if (streq_ptr(json_get_string(u, "id"), id))
                        return u;
        }
        return NULL;
}

/* A live socket of the kind the pool makes, with nothing unread: a launcher
 * that still waits for its run. */
static bool socket_waits(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int type = 0;
        socklen_t l = sizeof type;

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_SEQPACKET)
                return false;
        return poll(&p, 1, 0) == 0;
}

typedef struct UnitState {
        char *active, *sub, *description;
        bool job;
} UnitState;

static int read_unit_state(sd_bus_message *m, const char *name, void *userdata) {
        UnitState *st = userdata;
        char **dst = streq(name, "ActiveState") ? &st->active : streq(name, "SubState") ? &st->sub :
                     streq(name, "Description") ? &st->description : NULL;
        const char *v;
        uint32_t id;
        int r;

        if (streq(name, "Job")) {
                r = sd_bus_message_read(m, "v", "(uo)", &id, &v);
                st->job = r >= 0 && id != 0;
                return r < 0 ? r : 1;
        }
        if (!dst)
                return 0;
        r = sd_bus_message_read(m, "v", "s", &v);
        if (r < 0)
                return r;
        free(*dst);
        *dst = strdup(v);
        return *dst ? 1 : -ENOMEM;
}

static void store_unit_checked(PoolStore *s, size_t i, sd_bus_message *reply) {
        PoolStoreUnit *u = &s->units[i];
        UnitState st = {};
        json_object *su = state_unit(s->state_units[u->language], u->id);
        const char *why = NULL;
        int r;

        if (sd_bus_message_is_method_error(reply, NULL))
                why = "systemd does not know it";
        else if (bus_read_properties(reply, read_unit_state, &st) < 0)
                why = "its state is unreadable";
        else if (!streq_ptr(st.active, "active") || !streq_ptr(st.sub, "running") || st.job)
                why = "it is not running, or a job is queued on it";
        /* Each language's ready units say which they are: never one of
         * another language into this pool, whatever its name said. */
        else if (!streq_ptr(st.description, pool_ready_description(s->pools[u->language])))
                why = "it is not a ready warm unit of its language";
        else if (!socket_waits(u->fd))
                why = "its launcher no longer waits";
        if (!why) {
                r = pool_adopt(s->pools[u->language], u->id, u->fd,
                               (uint64_t) json_object_get_int64(json_get(su, "created")), json_get(su, "preloaded"),
                               json_get(su, "failed"));
                if (r >= 0) {
                        u->fd = -EBADF;         /* the pool's now */
                        s->adopted[u->language]++;
                } else
                        why = "it cannot be watched";
        }
        if (why)
                store_drop(s, u, why);
        free(st.active);
        free(st.sub);
        free(st.description);
}

static void store_finish(PoolStore *s) {
        void (*done)(const unsigned *, void *) = s->done;

        /* Ours no more: done may drop a pool that took none back. */
        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                s->pools[l] = NULL;
        s->done = NULL;
        if (done)
                done(s->adopted, s->userdata);
}

static int on_unit_state(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PoolStore *s = userdata;
        sd_bus_slot *slot = sd_bus_get_current_slot(sd_bus_message_get_bus(reply));

        for (size_t i = 0; i < s->n_units; i++)
                if (s->slots[i] && s->slots[i] == slot) {
                        s->slots[i] = sd_bus_slot_unref(s->slots[i]);
                        store_unit_checked(s, i, reply);
                        break;
                }
        assert(s->pending > 0);
        if (--s->pending == 0)
                store_finish(s);
        return 0;
}

/* Is it still what was stored, and young enough to serve a run? Then its
 * state, asked of PID 1. */
static int store_check_unit(PoolStore *s, size_t i) {
        PoolStoreUnit *u = &s->units[i];
        json_object *su = state_unit(s->state_units[u->language], u->id);
        _cleanup_free_ char *unit = NULL, *path = NULL;
        int64_t created = json_object_get_int64(json_get(su, "created"));
        uint64_t now = now_usec();

        if (!s->pools[u->language]) {
                store_drop(s, u, u->language == LANGUAGE_PYTHON ? "no pool" :
                                 "no pool of its language (turned off, not installed, or no pool at all)");
                return 0;
        }
        if (!su) {
                store_drop(s, u, "its state is missing, or was made for another configuration");
                return 0;
        }
        if (created <= 0 || (uint64_t) created > now || now - (uint64_t) created >= s->idle_usec) {
                store_drop(s, u, "it waited longer than the pool's idle limit");
                return 0;
        }
        if (asprintf(&unit, UNIT_PREFIX_RUN "%s.service", u->id) < 0 ||
            sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path) < 0 ||
            sd_bus_call_method_async(s->bus, &s->slots[i], SYSTEMD_SERVICE, path, "org.freedesktop.DBus.Properties",
                                     "GetAll", on_unit_state, s, "s", "org.freedesktop.systemd1.Unit") < 0) {
                store_drop(s, u, "cannot ask systemd about it");
                return 0;
        }
        s->pending++;
        return 0;
}

void pool_store_restore(PoolStore *s, Pool *const *pools, char *const *keys, uint64_t idle_usec,
                        void (*done)(const unsigned *adopted, void *userdata), void *userdata) {
        assert(s);

        s->idle_usec = idle_usec;
        s->done = done;
        s->userdata = userdata;
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                s->pools[l] = pools ? pools[l] : NULL;
                assert(s->bus || !s->pools[l]);
                s->state_units[l] = store_read_state(s, l, keys ? keys[l] : NULL);
                s->state_fd[l] = safe_close(s->state_fd[l]);
        }
        s->slots = s->n_units > 0 ? calloc(s->n_units, sizeof *s->slots) : NULL;
        for (size_t i = 0; i < s->n_units; i++)
                if (!s->slots)
                        store_drop(s, &s->units[i], "out of memory");
                else
                        (void) store_check_unit(s, i);
        if (s->pending == 0)
                store_finish(s);
}

void pool_store_done(PoolStore *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_units; i++) {
                if (s->slots)
                        sd_bus_slot_unref(s->slots[i]);
                store_drop(s, &s->units[i], "the broker is stopping");
        }
        s->units = mfree(s->units);
        s->slots = mfree(s->slots);
        s->n_units = 0;
        s->pending = 0;
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                s->state_fd[l] = safe_close(s->state_fd[l]);
                json_object_put(s->state_units[l]);
                s->state_units[l] = NULL;
                s->pools[l] = NULL;
        }
        s->bus = sd_bus_unref(s->bus);
}
