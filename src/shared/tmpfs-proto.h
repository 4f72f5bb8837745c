/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The protocol of mcp-exec-tmpfsd, which mounts and removes each run's
 * private /tmp for the broker: on a SOCK_SEQPACKET unix socket that only root
 * may use, one JSON object per packet (packet_send()/packet_recv(), no fds),
 * answered one by one, in order:
 *
 *   {"op":"mount","id":"<32 hex>","size":N}  tmpfs of N bytes on /run/mcp-exec-tmp/ID
 *   {"op":"umount","id":"<32 hex>"}          unmount it, remove the mount point
 *   {"op":"sweep"}                           the same for every run whose unit is gone
 *
 *   →  {"ok":true}  or  {"ok":false,"error":"…"}
 *
 * A mount is the daemon's promise to the connection that asked: no sweep
 * removes it while that connection is open and has not asked for its umount
 * (the run's unit, started after the answer, has no cgroup yet). */

#include <json-c/json.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#define TMPFS_SOCKET_PATH "/run/mcp-exec/tmpfs.sock"

/* Where each run's tmpfs is mounted: TMPFS_ROOT "/" id. */
#define TMPFS_ROOT "/run/mcp-exec-tmp"
#define TMPFS_ID_LEN 32

/* MCP_EXEC_TMP_SIZE_MAX's own bounds (config.c). */
#define TMPFS_SIZE_MIN (UINT64_C(1) << 20)
#define TMPFS_SIZE_MAX (UINT64_C(1) << 40)

typedef enum TmpfsOp {
        TMPFS_OP_MOUNT,
        TMPFS_OP_UMOUNT,
        TMPFS_OP_SWEEP,
        _TMPFS_OP_MAX,
        _TMPFS_OP_INVALID = -EINVAL,
} TmpfsOp;

const char *tmpfs_op_to_string(TmpfsOp op);
TmpfsOp tmpfs_op_from_string(const char *s);

typedef struct TmpfsRequest {
        TmpfsOp op;
        char id[TMPFS_ID_LEN + 1];      /* mount, umount */
        uint64_t size;                  /* mount */
} TmpfsRequest;

/* The run's 128-bit id in lowercase hex: nothing else names a path under
 * TMPFS_ROOT. */
bool tmpfs_valid_id(const char *id);

/* Reads one request. On a bad one returns -EINVAL and, in *ret_error, a fixed
 * text for the answer. */
int tmpfs_request_parse(json_object *j, TmpfsRequest *ret, const char **ret_error);

/* The packet of a request (which must be valid). */
int tmpfs_request_build(const TmpfsRequest *req, json_object **ret);
