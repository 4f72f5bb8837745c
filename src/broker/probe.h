/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Fail closed: before serving, one run of the launcher's --probe mode with the
 * very same property set checks from inside that the sandbox is real. */

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "sandbox-properties.h"

typedef struct Probe Probe;

/* failure is NULL when every check passed, else names the failed check. */
typedef void (*probe_done_t)(const char *failure, void *userdata);

/* Probes spec's units (W^X: spec->jit is ignored for them), and when
 * spec->jit (JavaScript is on) a JIT's units after them, in a unit of their
 * own (--jit: no W^X, proven). failure names the first that failed. */
int probe_start(sd_event *e, sd_bus *bus, const SandboxSpec *spec, probe_done_t done, void *userdata, Probe **ret);
Probe *probe_free(Probe *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Probe *, probe_free);

/* The major version in systemd's Version property ("252.39-1~deb12u1",
 * "257.9-1~deb13u1": 252, 257), or -EINVAL. */
int probe_parse_systemd_version(const char *version, unsigned *ret);

/* Asks PID 1 for its version (a blocking call, once at start: every unit's
 * property set depends on it, the first run's too). */
int probe_systemd_version(sd_bus *bus, unsigned *ret);

/* Checks the launcher's "key=value" report against spec. Returns 0 if all
 * checks pass, else -EPERM with *ret_failure naming the first failed check. */
int probe_evaluate(const char *report, const SandboxSpec *spec, char **ret_failure);
