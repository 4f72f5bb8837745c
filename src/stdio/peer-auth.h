/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Who may open a local MCP session: polkit decides, for the action
 * org.mcp-exec.run (polkit/org.mcp-exec.policy), about the process on the
 * other end of the socket. The daemon is unprivileged; the action's
 * org.freedesktop.policykit.owner annotation lets it ask about other users'
 * processes. Root is always allowed by polkit itself. */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#define PEER_AUTH_ACTION "org.mcp-exec.run"

typedef struct PeerAuth PeerAuth;

/* allowed; reason is a short text for the journal and the refused client. */
typedef void (*peer_auth_done_t)(bool allowed, const char *reason, void *userdata);

/* Asks polkit about the process behind pidfd (taken, also on failure), whose
 * pid and uid SO_PEERCRED gave. An allowed answer counts only if that
 * process is still alive when it comes: its pid was not recycled meanwhile.
 * -ESRCH if it is gone already. */
int peer_auth_start(sd_bus *bus, int pidfd, pid_t pid, uid_t uid, peer_auth_done_t done, void *userdata,
                    PeerAuth **ret);
PeerAuth *peer_auth_free(PeerAuth *a);

/* A pidfd for the peer of the connected socket sock: SO_PEERPIDFD where the
 * kernel has it, else pidfd_open() of pid (from SO_PEERCRED). */
int peer_pidfd(int sock, pid_t pid, int *ret);

/* Field 22 of /proc/PID/stat: polkit uses it to make sure the pid was not
 * recycled. */
int pid_start_time(pid_t pid, uint64_t *ret);
