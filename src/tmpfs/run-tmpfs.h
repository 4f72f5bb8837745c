/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One run's private /tmp: a size-capped tmpfs at ROOT/ID (ROOT is TMPFS_ROOT;
 * a parameter so that tests can use a scratch directory). Failures are
 * logged and returned as -errno. */

#include <stdbool.h>
#include <stdint.h>

#include "tmpfs-proto.h"

/* Makes ROOT a directory only root may enter, or refuses (-EPERM). */
int run_tmpfs_prepare_root(const char *root);

int run_tmpfs_mount(const char *root, const char *id, uint64_t size);

/* Detaches the tmpfs and removes its mount point; absent is fine. */
int run_tmpfs_umount(const char *root, const char *id);

/* The cgroup directory of mcp-exec.slice, where each run's unit has its
 * cgroup while it has processes; -ENOENT if there is none (no run yet). */
int run_tmpfs_slice_dir(char **ret);

/* Removes the tmpfs of every run whose unit's cgroup is gone from slice (all,
 * if slice is NULL), but those keep() claims. Returns how many it removed,
 * and in *ret_live (may be NULL) how many it left for a unit still there. */
int run_tmpfs_sweep(const char *root, const char *slice, bool (*keep)(const char *id, void *userdata),
                    void *userdata, unsigned *ret_live);
