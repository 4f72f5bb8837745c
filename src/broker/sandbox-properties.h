/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one fixed property set of every run's transient service. Nothing here
 * comes from the client except the already clamped timeout; the code itself
 * never appears in any property (it arrives on stdin). */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

typedef struct SandboxSpec {
        const char *launcher;           /* absolute path of mcp-exec-launch */
        const char *python;             /* resolved interpreter under /usr */
        uint64_t max_code_bytes;
        uint64_t timeout_usec;          /* RuntimeMaxUSec */
        uint64_t memory_max;
        uint64_t tasks_max;
        uint64_t cpu_quota_percent;
        uint64_t file_size_max;
        uint64_t tmp_size_max;
        const char *slice;              /* "mcp-exec.slice" */
        const char *tmpfs_helper;       /* absolute path of mcp-exec-tmpfs */
        const char *run_id;             /* 32 hex digits: names the run's tmpfs */
        const char *binds_to;           /* the broker's own unit, or NULL */
        bool probe;                     /* run the launcher's self-check instead of code */
        const char *description;        /* Description=, NULL: SANDBOX_DESCRIPTION_RUN */
} SandboxSpec;

/* Appends the (sv) entries to an open "a(sv)" container of StartTransientUnit. */
int sandbox_append_properties(sd_bus_message *m, const SandboxSpec *s, int stdin_fd, int stdout_fd, int stderr_fd);

/* Fixed texts only: the broker's own runs are told apart from clients' runs in `systemctl`. */
#define SANDBOX_DESCRIPTION_RUN "mcp-exec sandboxed run"
#define SANDBOX_DESCRIPTION_PROBE "mcp-exec sandbox self-check"
#define SANDBOX_DESCRIPTION_DISCOVERY "mcp-exec module discovery"

/* Where mcp-exec-tmpfs mounts each run's /tmp: SANDBOX_TMP_ROOT "/" run_id. */
#define SANDBOX_TMP_ROOT "/run/mcp-exec-tmp"
