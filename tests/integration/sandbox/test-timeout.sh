#!/usr/bin/env bash
# Timeout: code that sleeps forever with --timeout 2 ends with timed_out true, exit_code -1,
# duration about 2 s; a setsid()/double-forked grandchild dies with it: afterwards no run unit
# and no process of a dynamic uid is left in the box.
. "$(dirname "$0")/../../lib/itest.sh"

assert_clean 10   # start from a clean state, so whatever is found later is ours
code='import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        # The grandchild: own session, parent gone, ignores the polite signals.
        import signal
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        while True:
            time.sleep(1)
    os._exit(0)
os.wait()
print("SLEEPING", flush=True)
while True:
    time.sleep(1)
'
f=$(printf '%s' "$code" | put sleep.py)
bx mcp-exec-broker-call --timeout 2 "$f" >"$HDIR/out" 2>"$HDIR/err" &
client=$!
at_exit "kill $client 2>/dev/null"

# While it runs: the run's unit and two processes (main and grandchild) of a dynamic uid exist.
saw_unit=0 max_procs=0
while kill -0 "$client" 2>/dev/null; do
    [[ -n $(active_run_units) ]] && saw_unit=1
    n=$(dyn_procs | grep -c python)
    ((n > max_procs)) && max_procs=$n
    sleep 0.2
done
wait "$client"
rc=$?
out=$(cat "$HDIR/out")
log "result: $out"
((rc == 0)) || fail "broker-call failed ($rc): $out $(head -c 2000 "$HDIR/err")"
((saw_unit)) || fail "never saw the run's unit active"
((max_procs >= 2)) || fail "never saw the sleeping grandchild (max $max_procs python processes of dynamic uids)"
jcheck "$out" '"error" not in r' "the run produced no result"
jcheck "$out" '"SLEEPING" in r["stdout"]' "the code did not get to sleep"
jcheck "$out" 'r["timed_out"] is True' "timed_out is not true"
jcheck "$out" 'r["exit_code"] == -1' "exit_code is not -1"
jcheck "$out" 'r["oom_killed"] is False and r["cancelled"] is False' "wrong oom_killed/cancelled"
# About 2 s: not before the timeout, and not long after it (generous, machines are noisy).
jcheck "$out" '1500 <= r["duration_ms"] <= 15000' "duration_ms is not about 2 s"
assert_clean 10
assert_runs_work
pass
