/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Manager's side of the warm units kept across its idle exit
 * (pool-store.h): whether systemd keeps our fd store, the key of what the
 * warm units are made from, and what the idle exit keeps. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "bus-properties.h"
#include "log.h"
#include "manager.h"
#include "util.h"

/* What l's warm units are made from: the self-check's key of the pool's
 * spec (systemd, its loaded configuration, the boot, the binaries with the
 * language's interpreter and bootstrap, the limits, the JIT's filter) with
 * the rest of that spec; Python's with its packages' stamp. */
int manager_pool_key(Manager *m, Language l, char **ret) {
        _cleanup_free_ char *base = NULL;
        SandboxSpec spec;
        int r;

        assert(m);
        assert(ret);

        if (!m->sd_version)
                return -ENODATA;
        if (l != LANGUAGE_PYTHON) {
                if (!(manager_languages(m) & LANGUAGE_BIT(l)))
                        return -EOPNOTSUPP;
                manager_fill_language_pool_spec(m, l, false, &spec);
        } else
                manager_fill_pool_spec(m, false, &spec);
        r = probe_cache_key(&spec, &m->sd, &base);
        if (r < 0)
                return r;
        if (l != LANGUAGE_PYTHON)
                r = asprintf(ret, "%spool: language=%s timeout=%" PRIu64 " weight=%" PRIu64 "\n", base,
                             language_to_string(l), spec.timeout_usec, spec.cpu_weight);
        else
                r = asprintf(ret, "%spool: timeout=%" PRIu64 " weight=%" PRIu64 " preload=%s mpl=%s stamp=%s\n", base,
                             spec.timeout_usec, spec.cpu_weight, spec.preload ?: "", spec.mpl_cache ?: "",
                             m->stamp ?: "");
        return r < 0 ? -ENOMEM : 0;
}

/* l's ready units, up to max: how many were kept. */
static int keep_language(Manager *m, Language l, unsigned max) {
        _cleanup_free_ char *key = NULL;
        char prefix[POOL_STORE_NAME_MAX], state[POOL_STORE_NAME_MAX];
        int r;

        r = pool_store_names(l, prefix, state);
        if (r >= 0)
                r = manager_pool_key(m, l, &key);
        if (r >= 0)
                r = pool_keep(manager_language_pool(m, l, false), prefix, state, key, max);
        if (r < 0)
                log_warning_errno(r, "Cannot keep the warm units of %s across the idle exit, stopping them: %m",
                                  language_to_string(l));
        else if (r > 0 && l == LANGUAGE_PYTHON)
                log_struct(LOG_INFO, "MESSAGE=%d warm unit(s) kept in the fd store for our next start.", r,
                           "MCP_POOL=%s", "kept");
        else if (r > 0)
                log_struct(LOG_INFO, "MESSAGE=%d warm unit(s) of %s kept in the fd store for our next start.", r,
                           language_to_string(l),
                           "MCP_POOL=%s", "kept",
                           "MCP_LANGUAGE=%s", language_to_string(l));
        return r;
}

/* Where systemd keeps our fd store across the exit, the ready warm units of
 * every pool stay for our next start (pool-store.h); the rest go with us.
 * The store holds FileDescriptorStoreMax= fds: Python's pool first, as
 * ever, then each language's in what is left, a state and its units each. */
void manager_keep_pool(Manager *m) {
        unsigned room;

        assert(m);

        if (m->fdstore_max < 2)
                return;
        room = m->fdstore_max;
        for (Language l = LANGUAGE_PYTHON; l < _LANGUAGE_MAX && room >= 2; l++) {
                int r;

                if (!manager_language_pool(m, l, false))
                        continue;
                r = keep_language(m, l, room - 1);
                if (r > 0)
                        room -= (unsigned) r + 1;
        }
}

void manager_restore_pools(Manager *m, void (*done)(const unsigned *adopted, void *userdata)) {
        Pool *pools[_LANGUAGE_MAX] = {};
        char *keys[_LANGUAGE_MAX] = {};

        assert(m);

        for (Language l = LANGUAGE_PYTHON; l < _LANGUAGE_MAX; l++) {
                /* A language's pool only if a unit of it was kept: it was
                 * called before; if none comes back it is dropped again. */
                if (l == LANGUAGE_PYTHON)
                        pools[l] = m->pool;
                else if (pool_store_has_language(&m->store, l))
                        pools[l] = manager_language_pool_restore(m, l);
                if (pools[l] && manager_pool_key(m, l, &keys[l]) < 0)
                        keys[l] = NULL;
        }
        pool_store_restore(&m->store, pools, keys, m->config.pool_idle_s * USEC_PER_SEC, done, m);
        for (Language l = LANGUAGE_PYTHON; l < _LANGUAGE_MAX; l++)
                free(keys[l]);
}

typedef struct FdStoreProperties {
        uint32_t max;
        bool preserve;
} FdStoreProperties;

static int read_fdstore_property(sd_bus_message *m, const char *name, void *userdata) {
        FdStoreProperties *p = userdata;
        const char *v;

        if (streq(name, "FileDescriptorStoreMax"))
                return sd_bus_message_read(m, "v", "u", &p->max) < 0 ? -EBADMSG : 1;
        if (streq(name, "FileDescriptorStorePreserve")) {
                if (sd_bus_message_read(m, "v", "s", &v) < 0)
                        return -EBADMSG;
                p->preserve = streq(v, "yes");
                return 1;
        }
        return 0;
}

static int on_fdstore(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        FdStoreProperties p = {};
        Manager *m = userdata;

        m->slot_fdstore = sd_bus_slot_unref(m->slot_fdstore);
        /* systemd 252 has no FileDescriptorStorePreserve= (and empties the
         * store when we exit): warm units stay bound to us, as ever. */
        if (sd_bus_message_is_method_error(reply, NULL) || bus_read_properties(reply, read_fdstore_property, &p) < 0 ||
            !p.preserve || p.max < 2) {
                log_struct(LOG_DEBUG,
                           "MESSAGE=systemd does not keep our fd store across an exit; warm units stop with us.",
                           "MCP_POOL=%s", "fdstore-off");
                return 0;
        }
        m->fdstore_max = p.max;
        /* We need not stay for the warm units: they outlive us. */
        if (m->args.idle_exit_sec > 0)
                m->idle_usec = m->args.idle_exit_sec * USEC_PER_SEC;
        log_struct(LOG_INFO,
                   "MESSAGE=systemd keeps our fd store across an exit: ready warm units outlive the idle exit.",
                   "MCP_POOL=%s", "fdstore-on");
        manager_update_idle(m);
        return 0;
}

/* Whether systemd keeps our fd store across an exit: asked of our own unit,
 * without blocking the start. */
void manager_ask_fdstore(Manager *m) {
        _cleanup_free_ char *path = NULL;

        assert(m);

        if (!m->own_unit || !m->socket_activated || m->config.pool_size == 0 ||
            sd_bus_path_encode("/org/freedesktop/systemd1/unit", m->own_unit, &path) < 0)
                return;
        (void) sd_bus_call_method_async(m->bus, &m->slot_fdstore, "org.freedesktop.systemd1", path,
                                        "org.freedesktop.DBus.Properties", "GetAll", on_fdstore, m, "s",
                                        "org.freedesktop.systemd1.Service");
}
