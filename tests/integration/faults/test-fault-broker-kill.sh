#!/usr/bin/env bash
# Fault: the broker (mcp-exec-brokerd, main process of mcp-exec-broker.service) is SIGKILLed
# while runs are going.
#   run    `mcp-exec run` with a 60 s sleep: once its unit is active, SIGKILL the broker. The run
#          stops (BindsTo= the broker's unit), no process of a dynamic uid is left, the front end
#          answers the call with an error (mcp-exec run exits 125, naming the broker) instead of
#          waiting, and the next run works (the socket starts a new broker).
#   sdk    the same with the v1 TypeScript SDK: its pending tools/call gets an error result
#          (isError) from the front end, while the session stays up; a new session works.
#   sweep  a leftover mcp-exec-run-*.service (not bound to any broker, as after a crash of an
#          older version) is stopped by the next broker when it starts ("Stopped leftover run
#          unit" in the journal).
#   tmpfs  the runs' /tmp (tmpfs under /run/mcp-exec-tmp, mcp-exec-tmpfsd) outlive no unit when
#          the broker dies with a run and warm units live: with the mount daemon up, it removes
#          them itself once their units are gone; with it stopped too, the next broker's sweep at
#          start removes them. Either way every tmpfs left belongs to a live unit.
# Note: the deliberate SIGKILLs leave "mcp-exec-broker.service: Main process exited,
# code=killed, status=9/KILL" in the box's journal; each is announced first with a journal line
# MCP_TEST_DELIBERATE_KILL=mcp-exec-broker.service (tests/run's crash check should skip those).
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/kill.sh"

at_exit restart_broker
at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"

broker_pid() { bx systemctl show -P MainPID mcp-exec-broker.service 2>/dev/null; }
kill_broker() { sigkill_main "$1" mcp-exec-broker.service 'mcp-exec-broker*' "the broker" announce; }

assert_clean 15

# --- run -----------------------------------------------------------------------------------------
log "== run"
sleeping_run
bt=$(bx systemctl show -P BindsTo "$RUN_UNIT")
log "run: active unit $RUN_UNIT (BindsTo=$bt)"
[[ $bt == *mcp-exec-broker.service* ]] || fail "run: $RUN_UNIT is not bound to the broker: BindsTo=$bt"
sleeping_run_killed "the broker" kill_broker run
grep -qi broker "$HDIR/run.err" || fail "run: the error does not name the broker: $(cat "$HDIR/run.err")"
next_run_works run
pid=$(broker_pid)
[[ -n $pid && $pid != 0 && $pid != "$KILLED_PID" ]] || fail "run: no new broker (MainPID $pid)"
log "run: the next run went through a new broker (pid $pid)"
assert_runs_work
assert_clean 15

# --- sdk -----------------------------------------------------------------------------------------
log "== sdk"
sdk_kill_midcall "the broker" kill_broker sdk
jcheck "$SDK_OUTCOME" 'r["kind"] == "result" and r["isError"] and "broker" in r["text"]' \
    "sdk: the pending call did not get an error result naming the broker"
jcheck "$SDK_OUTCOME" 'not r["closed"]' "sdk: the session closed (the front end should have stayed)"
cnode fault-sdk.mjs call || fail "sdk: a new SDK session did not work after the broker died"
assert_clean 15

# --- tmpfs ---------------------------------------------------------------------------------------
# run_tmpfs: the run ids whose tmpfs is mounted under /run/mcp-exec-tmp (PID 1's namespace).
run_tmpfs() { bx awk '$5 ~ "^/run/mcp-exec-tmp/" { sub(".*/", "", $5); print $5 }' /proc/1/mountinfo | sort; }
# tmpfs_of_dead_units: the ids with a tmpfs or a mount point whose unit is not running.
tmpfs_of_dead_units() {
    local id
    for id in $( (run_tmpfs; bx ls /run/mcp-exec-tmp 2>/dev/null) | sort -u); do
        bx systemctl is-active -q "mcp-exec-run-$id.service" 2>/dev/null ||
            bx systemctl is-active -q "mcp-exec-session-$id.service" 2>/dev/null || echo "$id"
    done
}
# left_of IDS: those of IDS that still have a tmpfs or a mount point.
left_of() { comm -12 <(printf '%s\n' $1 | sort) <( (run_tmpfs; bx ls /run/mcp-exec-tmp 2>/dev/null) | sort -u); }
none_left_of() { [[ -z $(left_of "$1") ]]; }
no_units() { [[ -z $(bx systemctl list-units --all 'mcp-exec-run-*' --plain --no-legend --no-pager) ]]; }

# tmpfs_kill WHAT [stop]: a sleeping run and the warm units live, each on a tmpfs of its own;
# (with "stop", mcp-exec-tmpfs.service is stopped first: its memory of who held what goes);
# SIGKILL to the broker; their units go. Leaves their ids in KILLED_TMPFS.
tmpfs_kill() {
    local f client
    wait_for 30 found warm_idle_units || fail "$1: no warm unit (MCP_EXEC_POOL_SIZE)"
    f=$(printf 'import time\nprint("up", flush=True)\ntime.sleep(60)\n' | put sleep-tmpfs.py)
    bx mcp-exec-broker-call --timeout 80 "$f" >"$HDIR/tmpfs.out" 2>&1 </dev/null &
    client=$!
    at_exit "kill $client 2>/dev/null"
    wait_for 30 found active_run_units || fail "$1: the run's unit never became active: $(cat "$HDIR/tmpfs.out")"
    KILLED_TMPFS=$(run_tmpfs)
    log "$1: tmpfs of live units: $(tr '\n' ' ' <<<"$KILLED_TMPFS")"
    (($(grep -c . <<<"$KILLED_TMPFS") >= 2)) || fail "$1: fewer than 2 tmpfs (a run, warm units): $KILLED_TMPFS"
    [[ -z $(tmpfs_of_dead_units) ]] || fail "$1: a tmpfs without a unit before the kill: $(tmpfs_of_dead_units)"
    if [[ ${2-} == stop ]]; then
        bx systemctl stop mcp-exec-tmpfs.service 2>/dev/null || fail "$1: cannot stop mcp-exec-tmpfs.service"
    fi
    kill_broker "$1"
    wait_for 15 no_units || fail "$1: run and warm units left 15 s after the broker died"
    wait "$client" 2>/dev/null
}

log "== tmpfs"
# 1. The mount daemon stays up: it removes what the dead broker's connection held once the units
#    are gone, without a new run.
tmpfs_kill "tmpfs (daemon up)"
t0=$SECONDS
wait_for 30 none_left_of "$KILLED_TMPFS" ||
    fail "tmpfs (daemon up): left 30 s after their units went: $(left_of "$KILLED_TMPFS")"
log "tmpfs (daemon up): all removed $((SECONDS - t0)) s after their units went, without a new run"
assert_runs_work

# 2. The mount daemon was stopped too: a new daemon knows nothing of them, so the tmpfs stay
#    until the next broker sweeps as it starts. systemd starts that broker by itself a second
#    after the crash (Restart=on-failure), with no run asking.
cursor=$(journal_cursor)
tmpfs_kill "tmpfs (daemon stopped)" stop
new_broker() { local p; p=$(broker_pid); [[ -n $p && $p != 0 && $p != "$KILLED_PID" ]]; }
wait_for 15 new_broker || fail "tmpfs (daemon stopped): no new broker 15 s after the crash"
log "tmpfs (daemon stopped): systemd started a new broker by itself (pid $(broker_pid))"
wait_for 15 none_left_of "$KILLED_TMPFS" ||
    fail "tmpfs (daemon stopped): the next broker's sweep left: $(left_of "$KILLED_TMPFS")"
for id in $KILLED_TMPFS; do
    journal_since "$cursor" -u mcp-exec-tmpfs.service -o cat | grep -qF "Removed the /tmp of finished run $id" ||
        fail "tmpfs (daemon stopped): the daemon's journal does not say the /tmp of $id was removed"
done
log "tmpfs (daemon stopped): the next broker's sweep removed them"
assert_runs_work
[[ -z $(tmpfs_of_dead_units) ]] || fail "tmpfs: a tmpfs without a unit: $(tmpfs_of_dead_units)"
assert_clean 15

# --- sweep ---------------------------------------------------------------------------------------
log "== sweep"
stale=mcp-exec-run-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n').service
bx systemctl stop mcp-exec-broker.service >/dev/null 2>&1
bx systemd-run --quiet --unit="$stale" --slice=mcp-exec.slice -p CollectMode=inactive-or-failed \
    sleep 300 || fail "sweep: cannot create $stale"
at_exit "bx systemctl stop $stale >/dev/null 2>&1"
[[ $(bx systemctl show -P ActiveState "$stale") == active ]] || fail "sweep: $stale is not active"
cursor=$(journal_cursor)
out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) || fail "sweep: a run failed: $out"
[[ $out == 42 ]] || fail "sweep: a run printed: $out"
stale_gone() { [[ $(bx systemctl show -P ActiveState "$stale" 2>/dev/null) != active ]]; }
wait_for 15 stale_gone || fail "sweep: the new broker left $stale running"
wait_for 10 found journal_since "$cursor" -u mcp-exec-broker.service -g "Stopped leftover run unit $stale" ||
    fail "sweep: the broker did not say it stopped $stale"
log "sweep: the new broker stopped $stale"
assert_clean 15
pass
