/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Whom systemd supervises as a run's main process.
 *
 * With PrivatePIDs= (systemd 257), systemd's executor unshares a PID
 * namespace and forks the unit's PID 1 into it; it hands that child to PID 1
 * over a socket (exec-invoke.c, setup_private_pids()) and exits. Until PID 1
 * reads that message its MainPID is the executor. PID 1 does not keep the
 * socket across daemon-reexec (manager-serialize.c serializes notify-fd, not
 * pidref_transport_fds; the new manager makes a new pair): a hand-over in
 * flight then is lost, the executor's exit counts as the main process's, and
 * KillMode=control-group kills the launcher with it. So a run goes to its
 * launcher only once systemd's MainPID is the launcher (run.c), and one whose
 * unit ended before that is started again (client.c): nothing of it ran. */

#include <stdint.h>
#include <systemd/sd-bus.h>

/* From the Service interface's GetProcesses() reply, a(sus) (cgroup, PID,
 * command line): 1 if pid is there and runs launcher (the whole first word of
 * its command line), 0 if not, -errno if the reply is malformed. */
int main_pid_runs(sd_bus_message *reply, uint32_t pid, const char *launcher);
