/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The broker's side of mcp-exec-tmpfsd (tmpfs-proto.h): asks it to mount a
 * run's /tmp before the run's unit starts and to remove it once the unit is
 * gone. One non-blocking connection, made when there is something to ask and
 * made again if the daemon closed it (idle, restarted); requests go out and
 * are answered in order, so a removal never overtakes its mount. Knows
 * neither systemd nor runs. */

#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"

typedef struct TmpfsClient TmpfsClient;
typedef struct TmpfsCall TmpfsCall;

/* error is 0 if it was done; else -errno, and message says why (the daemon's
 * words, or what went wrong on the way). */
typedef void (*tmpfs_call_done_t)(int error, const char *message, void *userdata);

int tmpfs_client_new(sd_event *e, const char *path, TmpfsClient **ret);

/* Sends what is still queued without waiting (removals of runs cut short by
 * the broker's exit), then frees; no callback fires any more. */
TmpfsClient *tmpfs_client_free(TmpfsClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(TmpfsClient *, tmpfs_client_free);

/* Asks for the tmpfs of run id, size bytes. done fires exactly once, from the
 * event loop, unless the call is cancelled first; *ret_call (may be NULL) is
 * valid until then. */
int tmpfs_client_mount(TmpfsClient *c, const char *id, uint64_t size, tmpfs_call_done_t done, void *userdata,
                       TmpfsCall **ret_call);

/* No answer wanted: a failure is logged. */
int tmpfs_client_umount(TmpfsClient *c, const char *id);
int tmpfs_client_sweep(TmpfsClient *c);

/* done will not fire. The request still goes out: a mount that was asked for
 * needs its tmpfs_client_umount() all the same. Returns NULL. */
TmpfsCall *tmpfs_call_cancel(TmpfsCall *call);
