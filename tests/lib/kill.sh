# shellcheck shell=bash
# tests/lib/kill.sh - the shared set-up of test-fault-broker-kill and test-fault-frontend-kill:
# a daemon's main process SIGKILLed under a running `mcp-exec run`. Source it after itest.sh.

gone_in_box() { ! bx kill -0 "$1" 2>/dev/null; }

# sigkill_main PART UNIT COMM NAME [announce]: SIGKILL the main process of UNIT, which must be
# running a command called COMM (a glob: /proc/PID/comm is cut at 15 characters), and wait until
# it is gone; NAME says who it is in messages. Sets KILLED_PID. With "announce", a journal line
# MCP_TEST_DELIBERATE_KILL=UNIT comes first, so that tests/run's crash check skips the kill.
sigkill_main() {
    local part=$1 unit=$2 comm=$3 name=$4 pid
    pid=$(bx systemctl show -P MainPID "$unit" 2>/dev/null)
    [[ -n $pid && $pid != 0 ]] || fail "$part: $unit has no main process while a run is going"
    # shellcheck disable=SC2053 # COMM is a glob
    [[ $(bx cat "/proc/$pid/comm" 2>/dev/null) == $comm ]] || fail "$part: MainPID $pid is not $name"
    if [[ ${5-} == announce ]]; then
        bx systemd-cat -t mcp-exec-tests sh -c \
            "echo 'MCP_TEST_DELIBERATE_KILL=$unit pid $pid ($ITEST_NAME)'" 2>/dev/null
    fi
    log "$part: SIGKILL to $name (pid $pid)"
    bx kill -KILL "$pid" || fail "$part: cannot kill $name (pid $pid)"
    wait_for 10 gone_in_box "$pid" || fail "$part: $name (pid $pid) survived SIGKILL"
    KILLED_PID=$pid
}

# sleeping_run: `mcp-exec run` of a 60 s sleep in the background (its output in $HDIR/run.out and
# run.err, its exit status in run.rc); returns once the run's unit is active, with the unit's
# name in RUN_UNIT and the client's pid in RUN_CLIENT.
sleeping_run() {
    local f
    f=$(printf 'import time\nprint("up", flush=True)\ntime.sleep(60)\n' | put sleep.py)
    # timeout 90: a hang of the client shows as 124 rather than blocking the test.
    bx sh -c 'timeout 90 mcp-exec run --timeout 80 "$1" >"$2/run.out" 2>"$2/run.err"; echo $? >"$2/run.rc"' \
        sh "$f" "$BDIR" </dev/null &
    RUN_CLIENT=$!
    at_exit "kill $RUN_CLIENT 2>/dev/null"
    wait_for 30 found active_run_units ||
        fail "run: the run's unit never became active: $(cat "$HDIR/run.err" 2>/dev/null)"
    RUN_UNIT=$(active_run_units | head -1)
}

# sleeping_run_killed WHAT KILL_CMD...: the run of sleeping_run, still going, loses WHAT to
# KILL_CMD: within 15 s no run unit and no process of a dynamic uid is left, and within 20 s
# `mcp-exec run` exits 125 (mcp-exec failed) instead of waiting for the sleep. Its stderr is in
# $HDIR/run.err for the caller to judge.
sleeping_run_killed() {
    local what=$1 t0 rc
    shift
    [[ ! -e $HDIR/run.rc ]] ||
        fail "run: mcp-exec run ended before the kill: $(cat "$HDIR/run.rc") $(cat "$HDIR/run.err")"
    t0=$SECONDS
    "$@"
    wait_for 15 no_run_units || fail "run: run units left 15 s after $what died: $(run_units --all)"
    log "run: no run unit left $((SECONDS - t0)) s after the kill"
    wait_for 15 no_dyn_procs || fail "run: processes of dynamic uids left: $(dyn_procs)"
    wait_for 20 test -e "$HDIR/run.rc" || fail "run: mcp-exec run still waits 20 s after $what died"
    rc=$(cat "$HDIR/run.rc")
    log "run: mcp-exec run exited $rc after $((SECONDS - t0)) s: $(head -c 300 "$HDIR/run.err")"
    [[ $rc == 125 ]] || fail "run: mcp-exec run exited $rc (want 125, mcp-exec failed): $(cat "$HDIR/run.err")"
    wait "$RUN_CLIENT" 2>/dev/null
}

# next_run_works PART: a plain `mcp-exec run` afterwards prints 42.
next_run_works() {
    local out
    out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) || fail "$1: the next mcp-exec run failed: $out"
    [[ $out == 42 ]] || fail "$1: the next mcp-exec run printed: $out"
}
