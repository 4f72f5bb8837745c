/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Languages beside Python (issue 42): which this broker has, their units'
 * spec, and a warm pool each, made at the language's first run, so that a
 * language nobody calls costs nothing. */
#include "manager.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "util.h"

/* The bootstrap of l next to Python's (the launcher's directory). */
static int language_resolve(Manager *m, Language l) {
        ManagerLanguage *ml = &m->languages[l];
        const char *slash;

        if (ml->interpreter && ml->bootstrap)
                return 0;
        if (language_find_interpreter(l, &ml->interpreter) < 0)
                return -ENOENT;
        slash = strrchr(m->args.bootstrap, '/');
        if (!slash)
                return -ENOENT;
        free(ml->bootstrap);
        if (asprintf(&ml->bootstrap, "%.*s/%s", (int) (slash - m->args.bootstrap), m->args.bootstrap,
                     language_bootstrap(l)) < 0) {
                ml->bootstrap = NULL;
                return -ENOMEM;
        }
        if (access(ml->bootstrap, R_OK) < 0) {
                ml->bootstrap = mfree(ml->bootstrap);
                return -ENOENT;
        }
        return 0;
}

uint32_t manager_languages(Manager *m) {
        uint32_t set = LANGUAGE_BIT(LANGUAGE_PYTHON);

        for (Language l = LANGUAGE_PYTHON + 1; l < _LANGUAGE_MAX; l++)
                if ((m->config.languages & LANGUAGE_BIT(l)) && language_resolve(m, l) >= 0)
                        set |= LANGUAGE_BIT(l);
        return set;
}

int manager_language_check(Manager *m, Language l, char *message, size_t size) {
        char have[64];
        uint32_t set = manager_languages(m);

        if (set & LANGUAGE_BIT(l))
                return 0;
        (void) snprintf(message, size, "language: %s is %s on this server; it has %s", language_to_string(l),
                        (m->config.languages & LANGUAGE_BIT(l)) ? "not installed" : "turned off (MCP_EXEC_LANGUAGES)",
                        language_set_to_string(set, have, sizeof have));
        return -EOPNOTSUPP;
}

void manager_spec_language(Manager *m, Language l, SandboxSpec *spec) {
        if (l == LANGUAGE_PYTHON)
                return;
        assert(m->languages[l].interpreter && m->languages[l].bootstrap);
        spec->language = l;
        /* Node's JIT writes code then runs it: no W^X filter (syscall-filter.h). */
        spec->jit = l == LANGUAGE_JAVASCRIPT;
        spec->interpreter = m->languages[l].interpreter;
        spec->bootstrap = m->languages[l].bootstrap;
        /* Python's: nothing to import, no font cache, no packages. */
        spec->preload = NULL;
        spec->mpl_cache = NULL;
        spec->package_store = NULL;
}

/* A warm unit of a language's pool: a Python warm unit's limits, started
 * and waiting, nothing imported; kept across our idle exit as Python's are
 * (PartOf= us where systemd keeps our fd store, manager_keep_pool()). */
void manager_fill_language_pool_spec(Manager *m, Language l, bool spare, SandboxSpec *ret) {
        manager_fill_pool_spec(m, spare, ret);
        manager_spec_language(m, l, ret);
        ret->memory_max = m->config.memory_max + (UINT64_C(64) << 20);
}

static void fill_lang_pool_spec(void *userdata, bool spare, SandboxSpec *ret) {
        ManagerLanguage *ml = userdata;

        manager_fill_language_pool_spec(ml->manager, ml->language, spare, ret);
}

/* What systemctl shows for a ready unit of l's pool: Python's words, and
 * the language (Python's own units say none: what tests and operators
 * have matched on so far). */
static const char *ready_description(Language l) {
        switch (l) {
        case LANGUAGE_BASH:
                return SANDBOX_DESCRIPTION_WARM_READY " bash";
        case LANGUAGE_JAVASCRIPT:
                return SANDBOX_DESCRIPTION_WARM_READY " javascript";
        default:
                return NULL;
        }
}

static void on_lang_pool_ready(void *userdata) {
        (void) userdata;
}

static Pool *language_pool_new(Manager *m, Language l) {
        ManagerLanguage *ml = &m->languages[l];
        PoolConfig pc = {
                .size = (unsigned) m->config.pool_size,
                .idle_usec = m->config.pool_idle_s * USEC_PER_SEC,
                .memory_max = m->config.memory_max,
                .cpu_quota_percent = m->config.cpu_quota_percent,
                .ready_description = ready_description(l),
        };
        int r;

        if (ml->pool || pc.size == 0 || language_resolve(m, l) < 0)
                return ml->pool;
        ml->manager = m;
        ml->language = l;
        r = pool_new(m->event, m->bus, &pc, fill_lang_pool_spec, on_lang_pool_ready, ml, &ml->pool);
        if (r < 0) {
                log_warning_errno(r, "Cannot start the warm pool of %s, its runs take the cold path: %m",
                                  language_to_string(l));
                return NULL;
        }
        log_struct(LOG_INFO, "MESSAGE=Warm pool of %u %s units", pc.size, language_to_string(l),
                   "MCP_POOL=%s", "started", "MCP_LANGUAGE=%s", language_to_string(l));
        return ml->pool;
}

Pool *manager_language_pool(Manager *m, Language l, bool create) {
        if (l == LANGUAGE_PYTHON)
                return m->pool;
        if (m->languages[l].pool || !create || m->probe_state != SELF_CHECK_PASSED)
                return m->languages[l].pool;
        return language_pool_new(m, l);
}

/* Before the self-check's verdict, as Python's pool is made from a kept
 * discovery: the verdict it was made under had the same key (the units'
 * own, checked by pool_store_restore()), and runs wait for this one. */
Pool *manager_language_pool_restore(Manager *m, Language l) {
        Pool *p;

        assert(l != LANGUAGE_PYTHON);

        if (m->languages[l].pool || m->probe_state == SELF_CHECK_FAILED || !(manager_languages(m) & LANGUAGE_BIT(l)))
                return m->languages[l].pool;
        p = language_pool_new(m, l);
        m->languages[l].restored = p != NULL;
        manager_update_pool(m);
        return p;
}

void manager_language_pools_restored(Manager *m, const unsigned *adopted) {
        for (Language l = LANGUAGE_PYTHON + 1; l < _LANGUAGE_MAX; l++) {
                /* None came back: the language costs nothing until it is called again. */
                if (m->languages[l].restored && adopted[l] == 0)
                        m->languages[l].pool = pool_free(m->languages[l].pool);
                m->languages[l].restored = false;
        }
}

unsigned manager_pools_starting(Manager *m) {
        unsigned n = pool_n_starting(m->pool);

        for (Language l = LANGUAGE_PYTHON + 1; l < _LANGUAGE_MAX; l++)
                n += pool_n_starting(m->languages[l].pool);
        return n;
}

void manager_language_pools_update(Manager *m, bool busy) {
        for (Language l = LANGUAGE_PYTHON + 1; l < _LANGUAGE_MAX; l++)
                if (m->languages[l].pool) {
                        pool_set_busy(m->languages[l].pool, busy);
                        pool_set_runs(m->languages[l].pool, m->n_runs);
                }
}

void manager_language_pools_recycle(Manager *m) {
        for (Language l = LANGUAGE_PYTHON + 1; l < _LANGUAGE_MAX; l++)
                if (m->languages[l].pool)
                        pool_recycle(m->languages[l].pool);
}

void manager_languages_done(Manager *m) {
        for (Language l = LANGUAGE_PYTHON + 1; l < _LANGUAGE_MAX; l++) {
                m->languages[l].pool = pool_free(m->languages[l].pool);
                m->languages[l].bootstrap = mfree(m->languages[l].bootstrap);
                m->languages[l].interpreter = NULL;
        }
}
