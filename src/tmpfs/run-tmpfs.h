/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One run's private /tmp: a size-capped tmpfs at ROOT/ID (ROOT is
 * /run/mcp-exec-tmp; a parameter so that unit tests can use a scratch
 * directory). Failures are told on stderr (the unit's journal) and returned
 * as -errno. */

#include <stdbool.h>
#include <stdint.h>

/* The run's 128-bit id in hex: nothing else names a path under ROOT. */
bool run_tmpfs_valid_id(const char *id);

/* Makes ROOT a directory only root may enter, or refuses (-EPERM). */
int run_tmpfs_prepare_root(const char *root);

int run_tmpfs_mount(const char *root, const char *id, uint64_t size);

/* Detaches the tmpfs and removes its mount point; absent is fine. */
int run_tmpfs_umount(const char *root, const char *id);

/* Removes the tmpfs of every run but own_id whose unit's cgroup is gone from
 * slice (the cgroup directory of mcp-exec.slice). Best effort. */
void run_tmpfs_sweep(const char *root, const char *slice, const char *own_id);
