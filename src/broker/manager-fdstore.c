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

/* What the warm units are made from: the self-check's key of the pool's spec
 * (systemd, its loaded configuration, the boot, the binaries, the limits)
 * with the rest of that spec and the packages' stamp. */
int manager_pool_key(Manager *m, char **ret) {
        _cleanup_free_ char *base = NULL;
        SandboxSpec spec;
        int r;

        assert(m);
        assert(ret);

        if (!m->sd_version)
                return -ENODATA;
        manager_fill_pool_spec(m, false, &spec);
        r = probe_cache_key(&spec, &m->sd, &base);
        if (r < 0)
                return r;
        if (asprintf(ret, "%spool: timeout=%" PRIu64 " weight=%" PRIu64 " preload=%s mpl=%s stamp=%s\n", base,
                     spec.timeout_usec, spec.cpu_weight, spec.preload ?: "", spec.mpl_cache ?: "", m->stamp ?: "") < 0)
                return -ENOMEM;
        return 0;
}

/* Where systemd keeps our fd store across the exit, the ready warm units
 * stay for our next start (pool-store.h); the rest go with us. */
void manager_keep_pool(Manager *m) {
        _cleanup_free_ char *key = NULL;
        int r;

        assert(m);

        if (m->fdstore_max < 2 || !m->pool)
                return;
        r = manager_pool_key(m, &key);
        if (r >= 0)
                r = pool_keep(m->pool, key, m->fdstore_max - 1);
        if (r < 0)
                log_warning_errno(r, "Cannot keep the warm units across the idle exit, stopping them: %m");
        else if (r > 0)
                log_struct(LOG_INFO, "MESSAGE=%d warm unit(s) kept in the fd store for our next start.", r,
                           "MCP_POOL=%s", "kept");
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
