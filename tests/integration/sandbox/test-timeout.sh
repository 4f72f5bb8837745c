#!/usr/bin/env bash
# Timeout: code that sleeps forever with --timeout 3 ends with timed_out true, exit_code -1,
# duration about 3 s; a setsid()/double-forked grandchild dies with it: afterwards no run unit
# and no process of a dynamic uid is left in the box.
. "$(dirname "$0")/../../lib/itest.sh"

assert_clean 10   # start from a clean state, so whatever is found later is ours
code='import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        # The grandchild: own session, parent gone, ignores the polite
        # signals, and named in its argv so the test can find it.
        os.execv(sys.executable, [sys.executable, "-c",
            "import signal, time\n"
            "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
            "    signal.signal(s, signal.SIG_IGN)\n"
            "while True:\n"
            "    time.sleep(1)\n", "mcp-exec-test-grandchild"])
    os._exit(0)
os.wait()
print("SLEEPING", flush=True)
while True:
    time.sleep(1)
'
f=$(printf '%s' "$code" | put sleep.py)
bx mcp-exec-broker-call --timeout 3 "$f" >"$HDIR/out" 2>"$HDIR/err" &
client=$!
at_exit "kill $client 2>/dev/null"

# While it runs: the grandchild, a process of a dynamic uid, exists inside the run's unit. It is
# found by its argv and its unit read from its cgroup, not through systemctl's list filtered by
# description: a warm unit taken for this run may still be described as idle for a moment, and
# on a loaded machine a few samples are all the test gets.
grandchild() {
    bx ps -eo pid=,uid=,args= 2>/dev/null | awk -v lo="$DYN_UID_MIN" -v hi="$DYN_UID_MAX" \
        '$2 >= lo && $2 <= hi && /mcp-exec-test-grandchild/ { print $1; exit }'
}
no_grandchild() { [[ -z $(grandchild) ]]; }
saw_unit=0 saw_grandchild=0
while kill -0 "$client" 2>/dev/null; do
    pid=$(grandchild)
    if [[ -n $pid ]]; then
        saw_grandchild=1
        [[ $(bx cat "/proc/$pid/cgroup" 2>/dev/null) == */mcp-exec-run-*.service* ]] && saw_unit=1
    fi
    sleep 0.1
done
wait "$client"
rc=$?
out=$(cat "$HDIR/out")
log "result: $out"
((rc == 0)) || fail "broker-call failed ($rc): $out $(head -c 2000 "$HDIR/err")"
((saw_grandchild)) || fail "never saw the sleeping grandchild (a process of a dynamic uid)"
((saw_unit)) || fail "never saw the grandchild inside a run unit"
jcheck "$out" '"error" not in r' "the run produced no result"
jcheck "$out" '"SLEEPING" in r["stdout"]' "the code did not get to sleep"
jcheck "$out" 'r["timed_out"] is True' "timed_out is not true"
# And the grandchild is gone with the run, not merely hidden.
wait_for 10 no_grandchild || fail "the grandchild outlived the timeout"
jcheck "$out" 'r["exit_code"] == -1' "exit_code is not -1"
jcheck "$out" 'r["oom_killed"] is False and r["cancelled"] is False' "wrong oom_killed/cancelled"
# About 3 s: not before the timeout, and not long after it (generous, machines are noisy).
jcheck "$out" '2500 <= r["duration_ms"] <= 15000' "duration_ms is not about 3 s"
assert_clean 10
assert_runs_work
pass
