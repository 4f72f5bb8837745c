/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The sandbox self-check's verdict, kept across the broker's idle exits.
 * The verdict says that systemd enforces our property set on this machine;
 * it holds as long as nothing it depends on changed: the boot and kernel,
 * the running systemd and its loaded configuration (a daemon-reload may
 * bring drop-ins), the binaries that build and judge the sandbox (the
 * broker, the launcher, the bootstrap, the interpreter), mcp-exec's
 * version, and the limits the probe judges. All of that is the key; a
 * verdict is kept only with its whole key and only when it passed, so any
 * change, or a file that is not ours, means a new self-check. */

#include <stdbool.h>

#include "sandbox-properties.h"

#define PROBE_CACHE_FILE "self-check.json"

/* What the verdict depends on and the broker cannot read from its own
 * binaries: PID 1's word over the bus. */
typedef struct ProbeCacheSystemd {
        const char *version;            /* org.freedesktop.systemd1.Manager Version */
        uint64_t units_load_usec;       /* ... UnitsLoadTimestampMonotonic: changes with daemon-reload */
        /* ... UserspaceTimestamp: when PID 1 started, in wall-clock usec,
         * recorded once per boot. (The boot id is out of our reach:
         * ProcSubset=pid hides /proc/sys.) */
        uint64_t boot_usec;
} ProbeCacheSystemd;

/* The key for spec on this machine, or -errno (never a partial key). */
int probe_cache_key(const SandboxSpec *spec, const ProbeCacheSystemd *sd, char **ret);

/* Whether dir holds a passed verdict for key. */
bool probe_cache_valid(const char *dir, const char *key);

/* Keeps a passed verdict for key in dir (root-only, replaced atomically). */
int probe_cache_store(const char *dir, const char *key);

/* Removes a kept verdict: after a failed self-check. */
void probe_cache_forget(const char *dir);
