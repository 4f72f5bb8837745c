#!/usr/bin/env bash
# Fault: an administrator stops things while runs go (README: "Runs stop when the front end or
# the broker stops"; "systemctl stop mcp-exec.slice stops all of them").
#   frontend  `systemctl stop` of the front end (the service mcp-exec-stdio.socket starts) during
#             a `mcp-exec run` (60 s sleep): the run's unit goes, the client ends with 125 (no
#             hang), the next client is served.
#   broker    `systemctl stop mcp-exec-broker.service` during a run: the run goes, the client ends
#             (measured: 137, the broker reports the run killed by SIGKILL before it exits; or
#             125 naming the broker), the next run works (socket activation).
#   slice     `systemctl stop mcp-exec.slice` with 3 runs going at once (twice): all three units
#             go, every client ends (killed by SIGKILL: 137, or 125) well before its sleep would,
#             none is reported as an OOM kill, and runs work again.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
# In reverse: the front end restarts after the configuration is restored.
at_exit stop_frontend
set_config MCP_EXEC_MAX_CONCURRENT=4
stop_frontend
assert_clean 15

f=$(printf 'import time\nprint("up", flush=True)\ntime.sleep(60)\n' | put sleep.py)
# start_client NAME: a `mcp-exec run` of the 60 s sleep in the background; rc in $HDIR/NAME.rc.
start_client() {
    bx sh -c 'timeout 90 mcp-exec run --timeout 80 "$1" >"$2/$3.out" 2>"$2/$3.err"; echo $? >"$2/$3.rc"' \
        sh "$f" "$BDIR" "$1" </dev/null &
    at_exit "kill $! 2>/dev/null"
}
n_active() { active_run_units | grep -c .; }
active_at_least() { (($(n_active) >= $1)); }
# client_ended NAME WANT...: the client ended within 20 s with one of the WANT statuses.
client_ended() {
    local name=$1 rc
    shift
    wait_for 20 test -e "$HDIR/$name.rc" || fail "$name: mcp-exec run still waits 20 s after the stop"
    rc=$(cat "$HDIR/$name.rc")
    log "$name: mcp-exec run exited $rc: $(head -c 300 "$HDIR/$name.err")"
    [[ " $* " == *" $rc "* ]] || fail "$name: mcp-exec run exited $rc (want one of: $*): $(cat "$HDIR/$name.err")"
    CLIENT_ERR=$(cat "$HDIR/$name.err")
}
next_run_works() {
    local out
    out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) || fail "$1: the next mcp-exec run failed: $out"
    [[ $out == 42 ]] || fail "$1: the next mcp-exec run printed: $out"
}

FE=$(bx systemctl show -P Triggers mcp-exec-stdio.socket)
[[ $FE == *.service ]] || fail "mcp-exec-stdio.socket triggers no service: '$FE'"

# --- frontend ------------------------------------------------------------------------------------
log "== frontend"
start_client fe
# The client's run, not the broker's own self-check or module discovery (both run units, right
# after set_config restarted it): the front end is active only once the client is there.
fe_run_going() { [[ $(bx systemctl is-active "$FE") == active ]] && found active_run_units; }
wait_for 30 fe_run_going || fail "frontend: the run's unit never became active: $(cat "$HDIR/fe.err" 2>/dev/null)"
[[ ! -e $HDIR/fe.rc ]] || fail "frontend: the client ended before the stop"
[[ $(bx systemctl is-active "$FE") == active ]] || fail "frontend: $FE is not active during the run"
bx systemctl stop "$FE" || fail "frontend: systemctl stop $FE failed"
wait_for 15 no_run_units || fail "frontend: run units left after stopping the front end: $(run_units --all)"
wait_for 15 no_dyn_procs || fail "frontend: processes of dynamic uids left: $(dyn_procs)"
client_ended fe 125
sock=$(bx systemctl is-active mcp-exec-stdio.socket)
log "frontend: mcp-exec-stdio.socket after stopping the service: $sock"
# The socket may have gone down with the service (a Triggers= stop); an administrator starts it.
[[ $sock == active ]] || bx systemctl start mcp-exec-stdio.socket
next_run_works frontend
assert_clean 15

# --- broker --------------------------------------------------------------------------------------
log "== broker"
start_client br
wait_for 30 found active_run_units || fail "broker: the run's unit never became active: $(cat "$HDIR/br.err" 2>/dev/null)"
[[ ! -e $HDIR/br.rc ]] || fail "broker: the client ended before the stop"
bx systemctl stop mcp-exec-broker.service || fail "broker: systemctl stop mcp-exec-broker.service failed"
wait_for 15 no_run_units || fail "broker: run units left after stopping the broker: $(run_units --all)"
wait_for 15 no_dyn_procs || fail "broker: processes of dynamic uids left: $(dyn_procs)"
# systemd stops the runs first (After= the broker): the broker still reports each run, as killed
# by SIGKILL (137); if it is gone first, the front end reports it unreachable (125).
client_ended br 137 125
[[ $(cat "$HDIR/br.rc") == 137 ]] || grep -qi broker <<<"$CLIENT_ERR" ||
    fail "broker: the client's error does not name the broker: $CLIENT_ERR"
[[ $(bx systemctl is-active mcp-exec-broker.socket) == active ]] || fail "broker: the broker's socket went down too"
next_run_works broker
assert_clean 15

# --- slice ---------------------------------------------------------------------------------------
# Two rounds: the broker once reported such a stopped run as OOM-killed, now and then (its
# ambiguous-OOM rule took the stop's SIGKILL, Result=signal, for the OOM killer's).
for round in 1 2; do
    log "== slice (round $round)"
    for i in 1 2 3; do start_client "sl$round$i"; done
    wait_for 40 active_at_least 3 || fail "slice: 3 runs never ran at once (active: $(n_active))"
    for i in 1 2 3; do [[ ! -e $HDIR/sl$round$i.rc ]] || fail "slice: client sl$round$i ended before the stop"; done
    log "slice: $(n_active) runs active; stopping mcp-exec.slice"
    bx systemctl stop mcp-exec.slice || fail "slice: systemctl stop mcp-exec.slice failed"
    wait_for 15 no_run_units || fail "slice: run units left after stopping the slice: $(run_units --all)"
    wait_for 15 no_dyn_procs || fail "slice: processes of dynamic uids left: $(dyn_procs)"
    for i in 1 2 3; do
        client_ended "sl$round$i" 137 125
        [[ $CLIENT_ERR != *"out of memory"* ]] || fail "slice: a run stopped with the slice was reported as an OOM kill: $CLIENT_ERR"
    done
done
next_run_works slice
assert_runs_work
assert_clean 15
pass
