/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one fixed property set of every run's transient service. Nothing here
 * comes from the client except the already clamped timeout; the code itself
 * never appears in any property (it arrives on stdin). */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "language.h"
#include "tmpfs-client.h"
#include "tmpfs-proto.h"

typedef struct SandboxSpec {
        const char *launcher;           /* absolute path of mcp-exec-launch */
        const char *bootstrap;          /* absolute path of mcp-exec-bootstrap.py */
        const char *python;             /* resolved interpreter under /usr */
        /* Issue 42: not Python, the launcher runs interpreter (absolute,
         * under /usr) with bootstrap (that language's, launch-lang.h). */
        Language language;
        const char *interpreter;
        const char *preload;            /* modules the interpreter imports before the run, comma-separated, or NULL */
        const char *mpl_cache;          /* a prebuilt matplotlib font cache the launcher copies, or NULL */
        /* The prepared package store (MCP_EXEC_PACKAGE_STORE, issue 41) when
         * packages are on, else NULL: the launcher's --wheelhouse, what runs
         * install from. Runs see it read-only where it is
         * (ProtectSystem=strict): no property. */
        const char *package_store;
        /* The operator's raw wheelhouse (MCP_EXEC_WHEELHOUSE) when one is
         * configured, else NULL: InaccessiblePaths= for every unit (runs
         * never read a wheel the store did not verify), and what the
         * self-check proves it cannot read (the probe's --wheelhouse). */
        const char *wheelhouse;
        uint64_t max_code_bytes;
        uint64_t timeout_usec;          /* RuntimeMaxUSec: the run's timeout, or a warm unit's cap */
        uint64_t memory_max;
        uint64_t tasks_max;
        uint64_t cpu_quota_percent;
        uint64_t cpu_weight;            /* CPUWeight=, 0: systemd's default (a warm unit's preload:
                                         * SANDBOX_CPU_WEIGHT_IDLE) */
        uint64_t file_size_max;
        uint64_t tmp_size_max;
        const char *slice;              /* "mcp-exec.slice" */
        TmpfsClient *tmpfs;             /* mounts the run's /tmp before its unit starts (run.c) */
        const char *run_id;             /* 32 hex digits: names the run's tmpfs */
        const char *binds_to;           /* the broker's own unit, or NULL */
        /* With binds_to: PartOf= it instead of BindsTo=: a stop or restart
         * of that unit stops this one, its own exit does not (a warm unit
         * kept across the broker's idle exit, pool-store.h). */
        bool part_of;
        bool probe;                     /* run the launcher's self-check instead of code */
        bool session;                   /* a session: one interpreter for many calls (launch-session.h) */
        /* A run or session with a network by policy (issue 22): AF_INET for
         * the launcher's proxy listener on 127.0.0.1 in the run's own
         * namespace, an IP firewall that allows only localhost, IP
         * accounting (so the broker can see that the firewall is there)
         * and the launcher's --egress. PrivateNetwork= stays. */
        bool egress;
        /* The interpreter JIT-compiles (JavaScript: V8 makes its code
         * writable and executable at once): the launcher's --jit, no W^X
         * filter (syscall-filter.h). Every other unit has it; the
         * self-check proves which (probe.c). */
        bool jit;
        const char *description;        /* Description=, NULL: SANDBOX_DESCRIPTION_RUN */
        /* The running systemd's major version (its Version property, read
         * at start, probe.h), 0: unknown. What it has, the runs get and the
         * self-check proves (probe.c); unknown, the self-check refuses. */
        unsigned systemd_version;
} SandboxSpec;

/* PrivatePIDs=: every run PID 1 of a PID namespace of its own. */
#define SANDBOX_PRIVATE_PIDS_SINCE 257U

static inline bool sandbox_private_pids(const SandboxSpec *s) {
        return s->systemd_version >= SANDBOX_PRIVATE_PIDS_SINCE;
}

/* Appends the (sv) entries to an open "a(sv)" container of StartTransientUnit.
 * A run's stdin is control_fd, the broker's end of the launcher's control
 * socket (launch-run.h); its stdout and stderr, the launcher's own, go to the
 * journal: the program's come with the run, from the caller. The probe
 * (spec->probe) writes its report to control_fd instead. */
int sandbox_append_properties(sd_bus_message *m, const SandboxSpec *s, int control_fd);

/* Fixed texts only: the broker's own runs are told apart from clients' runs in `systemctl`. */
#define SANDBOX_DESCRIPTION_RUN "mcp-exec sandboxed run"
#define SANDBOX_DESCRIPTION_PROBE "mcp-exec sandbox self-check"
#define SANDBOX_DESCRIPTION_DISCOVERY "mcp-exec module discovery"
/* A warm unit of the pool while it starts, and once it is ready; a run's
 * once taken. */
#define SANDBOX_DESCRIPTION_WARM "mcp-exec warm unit (starting)"
#define SANDBOX_DESCRIPTION_WARM_READY "mcp-exec warm unit (idle)"
/* The pool's spare (pool.h): a cold run's unit, started ahead. */
#define SANDBOX_DESCRIPTION_SPARE "mcp-exec warm unit (spare)"
#define SANDBOX_DESCRIPTION_SESSION "mcp-exec session"

/* A warm unit imports its preload on CPU the runs leave over; taken, it
 * gets the default weight of every run. */
#define SANDBOX_CPU_WEIGHT_IDLE UINT64_C(1)
#define SANDBOX_CPU_WEIGHT_RUN UINT64_C(100)

/* CPUQuotaPerSecUSec= for a quota in percent of one CPU. */
static inline uint64_t sandbox_cpu_quota_usec(uint64_t percent) {
        return percent * UINT64_C(10000);
}

/* The broker's cache (CacheDirectory=): the matplotlib font cache and module
 * discovery; read-only for runs, which get their own empty, writable
 * matplotlib config directory inside it. */
#define SANDBOX_CACHE_DIR "/var/cache/mcp-exec"
#define SANDBOX_MPL_DIR SANDBOX_CACHE_DIR "/mpl"

/* Where mcp-exec-tmpfsd mounts each run's /tmp: SANDBOX_TMP_ROOT "/" run_id. */
#define SANDBOX_TMP_ROOT TMPFS_ROOT
