#!/usr/bin/env bash
# Unit hardening, measured against the installed units in the box:
#  - `systemd-analyze security` of the front ends (mcp-exec.service for HTTP, mcp-exec-stdio.service
#    for local sessions), of a live per-run unit and of
#    the broker (mcp-exec-broker.service) stay at or below the committed bounds below;
#  - `systemd-analyze verify` of every installed mcp-exec unit prints nothing and succeeds;
#  - the mount daemon (mcp-exec-tmpfs.service) stays at or below its bound too, runs in PID 1's
#    mount namespace (where the runs' units must find its mounts) with CAP_SYS_ADMIN alone;
#  - mcp-exec.slice carries the aggregate caps (MemoryMax=, TasksMax= set, not infinity);
#  - `systemctl stop mcp-exec.slice` stops a running run, and runs work again afterwards.
# Plain pass only: it reads the installed units' properties, the same in both builds.
. "$(dirname "$0")/../../lib/itest.sh"

# Committed bounds (exposure levels, lower is better; a rise above one fails the test).
# Measured with systemd 252 (Debian 12) on 2026-12-02:
#   mcp-exec.service        0.4  (issue 5: at most 1.0; 0.5 before the HTTP front end lost polkit:
#                                 ProtectProc=invisible, ProcSubset=pid)
#   mcp-exec-stdio.service  0.5  (issue 5: at most 1.0; reads /proc of its polkit-checked peers)
#   per-run unit            2.3  as systemd-analyze sees it; 0.8 with the system call filter, which
#                                 the launcher loads itself since issue 24 (docs/architecture.md, "Who enforces
#                                 what"): systemd-analyze cannot see that filter, so its items
#                                 (SystemCallFilter=~@..., SystemCallArchitectures=) count against
#                                 the unit. Below, the items that fail must be those and the ones
#                                 that failed at 0.8, nothing else.
#   mcp-exec-broker.service 1.1  (root, for the system bus: User= 0.4, no ProtectControlGroups= 0.2
#                                 (cgroup v1 OOM notifications), @privileged/@resources allowed 0.4;
#                                 1.3 before ProtectProc=invisible + ProcSubset=pid)
#   mcp-exec-tmpfs.service  2.9  (root with CAP_SYS_ADMIN, to mount in PID 1's mount namespace:
#                                 it can have none of the options that would give it a namespace
#                                 of its own, ProtectSystem=, PrivateTmp=, ProtectKernel*= ...)
BOUND_FRONTEND=1.0
BOUND_RUN=2.3
BOUND_BROKER=1.1
BOUND_TMPFSD=2.9

UNITS=(mcp-exec.service mcp-exec-stdio.service mcp-exec-broker.service mcp-exec-tmpfs.service mcp-exec.socket
    mcp-exec-stdio.socket mcp-exec-broker.socket mcp-exec-tmpfs.socket mcp-exec.slice)

bx systemd-analyze --version >/dev/null 2>&1 || skip "no systemd-analyze in the box"
for u in "${UNITS[@]}"; do
    [[ $(bx systemctl show -P LoadState "$u" 2>/dev/null) == loaded ]] || skip "$u is not installed in the box"
done

# score UNIT: the overall exposure level systemd-analyze security prints for UNIT.
score() {
    bx systemd-analyze security --no-pager "$1" 2>&1 |
        sed -n 's/^→ Overall exposure level for .*: \([0-9][0-9.]*\) .*/\1/p'
}
# check_score UNIT BOUND
check_score() {
    local s
    s=$(score "$1")
    [[ -n $s ]] || fail "no exposure level for $1:"$'\n'"$(bx systemd-analyze security --no-pager "$1" 2>&1 | tail -20)"
    log "$1: exposure $s (bound $2)"
    if ! awk -v s="$s" -v b="$2" 'BEGIN { exit !(s + 0 <= b + 0) }'; then
        fail "$1 scores $s, above its bound $2:"$'\n'"$(bx systemd-analyze security --no-pager "$1" 2>&1 | grep -v '✓')"
    fi
}

# 1. verify: clean (no output at all, success).
vout=$(bx sh -c 'cd /usr/lib/systemd/system && systemd-analyze verify "$@" 2>&1' sh "${UNITS[@]}")
vrc=$?
((vrc == 0)) || fail "systemd-analyze verify failed ($vrc):"$'\n'"$vout"
[[ -z $vout ]] || fail "systemd-analyze verify is not clean:"$'\n'"$vout"
log "systemd-analyze verify: clean (${UNITS[*]})"

# 2. scores of the static units.
check_score mcp-exec.service "$BOUND_FRONTEND"
check_score mcp-exec-stdio.service "$BOUND_FRONTEND"
check_score mcp-exec-broker.service "$BOUND_BROKER"
check_score mcp-exec-tmpfs.service "$BOUND_TMPFSD"

# The mount daemon, as a run leaves it (the broker keeps its connection a while): in PID 1's
# mount namespace, CAP_SYS_ADMIN and nothing else.
assert_runs_work
pid=$(bx systemctl show -P MainPID mcp-exec-tmpfs.service)
[[ $pid =~ ^[1-9][0-9]*$ ]] || fail "mcp-exec-tmpfs.service has no main process right after a run"
ns1=$(bx readlink /proc/1/ns/mnt) nsd=$(bx readlink "/proc/$pid/ns/mnt")
[[ -n $ns1 && $ns1 == "$nsd" ]] || fail "mcp-exec-tmpfsd is not in PID 1's mount namespace ($nsd, PID 1: $ns1)"
caps=$(bx sh -c "grep -E '^Cap(Eff|Bnd):' /proc/$pid/status" | awk '{ print $2 }' | sort -u)
[[ $caps == 0000000000200000 ]] || fail "mcp-exec-tmpfsd's capabilities are not CAP_SYS_ADMIN alone: $caps"
log "mcp-exec-tmpfsd (pid $pid): PID 1's mount namespace ($nsd), capabilities $caps"

# 3. a live per-run unit, then stop it through the slice.
assert_clean 10
f=$(printf 'import time\ntime.sleep(30)\n' | put sleep.py)
bx mcp-exec-broker-call --timeout 60 "$f" >"$HDIR/sleep.out" 2>"$HDIR/sleep.err" &
callpid=$!
at_exit "kill $callpid 2>/dev/null; bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
wait_for 15 found active_run_units || fail "no active run unit while a run sleeps: $(cat "$HDIR/sleep.err")"
unit=$(active_run_units | head -1)
check_score "$unit" "$BOUND_RUN"
# What the run unit fails, by name: the launcher's filter (the self-check proves it is loaded, and
# test-attacks tries it), and what it failed before (no PrivateUsers=, DeviceAllow=,
# MemoryDenyWriteExecute= (the launcher's W^X filter instead, but for JavaScript's units: issue 42),
# ProcSubset=, RootDirectory=, IP list, AF_UNIX allowed; @resources is in @system-service).
failing=$(bx systemd-analyze security --no-pager "$unit" 2>&1 | awk '$1 == "✗" { print $2 }')
unexpected=$(grep -Ev '^(SystemCallFilter=~@(swap|resources|reboot|raw-io|privileged|obsolete|mount|module|debug|cpu-emulation|clock)|SystemCallArchitectures=|RootDirectory=/RootImage=|RestrictAddressFamilies=~AF_UNIX|ProcSubset=|PrivateUsers=|MemoryDenyWriteExecute=|IPAddressDeny=|DeviceAllow=)$' <<<"$failing" || true)
[[ -n $failing ]] || fail "no failing items read from systemd-analyze security $unit"
[[ -z $unexpected ]] || fail "$unit fails items it did not fail before:"$'\n'"$unexpected"

# 4. aggregate caps of the slice.
caps=$(bx systemctl show mcp-exec.slice -p MemoryMax,TasksMax)
log "mcp-exec.slice: ${caps//$'\n'/ }"
mm=$(sed -n 's/^MemoryMax=//p' <<<"$caps")
tm=$(sed -n 's/^TasksMax=//p' <<<"$caps")
[[ $mm =~ ^[0-9]+$ ]] || fail "mcp-exec.slice has no MemoryMax= cap: $mm"
[[ $tm =~ ^[0-9]+$ ]] || fail "mcp-exec.slice has no TasksMax= cap: $tm"
[[ $(bx systemctl show -P Slice "$unit") == mcp-exec.slice ]] ||
    fail "$unit is not in mcp-exec.slice: $(bx systemctl show -P Slice "$unit")"

# 5. stopping the slice stops the run (well before its 30 s sleep ends).
t0=$SECONDS
bx systemctl stop mcp-exec.slice || fail "systemctl stop mcp-exec.slice failed"
gone() { [[ $(bx systemctl show -P ActiveState "$unit" 2>/dev/null) != active ]]; }
wait_for 10 gone || fail "$unit still active after systemctl stop mcp-exec.slice"
wait_for 15 sh -c "! kill -0 $callpid 2>/dev/null" || fail "broker-call still waits after the slice stopped"
wait $callpid
log "slice stopped the run in $((SECONDS - t0))s; broker-call: $(head -c 300 "$HDIR/sleep.out")"
((SECONDS - t0 < 20)) || fail "stopping the slice took $((SECONDS - t0))s"
assert_clean 10

# Runs work again (the next run pulls the slice in again).
assert_runs_work
pass
