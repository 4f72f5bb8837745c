#!/usr/bin/env bash
# Cleanup: after 50 runs (4 at a time), after cancelled runs (mid-run, and right after the
# request), and after a client that vanished mid-run, no mcp-exec-run-* unit and no process of a
# dynamic uid is left.
. "$(dirname "$0")/../../lib/itest.sh"

# Room for 4 runs at once whatever the machine's size (the default is the number of CPUs).
set_config MCP_EXEC_MAX_CONCURRENT=4
assert_clean 10

out=$(call --timeout 30 --count 50 --parallel 4 -- 'import os; print("run", os.getuid() > 0)') ||
    fail "broker-call failed: $(grep -v '"exit_code":0' <<<"$out" | head -3) $(call_err)"
[[ $(grep -c . <<<"$out") -eq 50 ]] || fail "expected 50 results, got $(grep -c . <<<"$out")"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"] == "run True\n"' "a run failed"
jcheck "$out" 'len(set(x["run_id"] for x in rs)) == 50' "run ids are not unique"
assert_clean 10

# Cancelled while running.
out=$(call --timeout 60 --cancel-after-ms 500 -- 'import time; print("up", flush=True); time.sleep(60)')
log "cancelled run: $out"
jcheck "$out" '"error" not in r and r["cancelled"] is True and not r["timed_out"]' "the run was not cancelled"
jcheck "$out" 'r["duration_ms"] < 30000' "the cancelled run went on"
assert_clean 10

# Cancelled right after the request, before or while systemd starts the unit.
out=$(call --timeout 60 --count 6 --parallel 3 --cancel-after-ms 1 -- 'import time; time.sleep(60)')
log "runs cancelled at once: $(grep -c . <<<"$out") results"
[[ $(grep -c . <<<"$out") -eq 6 ]] || fail "expected 6 results, got: $out $(call_err)"
jcheck "$out" 'r["cancelled"] is True or r.get("error")' "a run cancelled at once went on"
jcheck "$out" 'r.get("duration_ms") is None or r["duration_ms"] < 30000' "a run cancelled at once went on"
assert_clean 10

# The client vanishes mid-run: the broker must stop the run.
f=$(printf 'import time\ntime.sleep(60)\n' | put sleep.py)
bx sh -c 'echo $$ >"$1"; exec mcp-exec-broker-call --timeout 60 "$2"' sh "$BDIR/client.pid" "$f" \
    >/dev/null 2>&1 &
client=$!
at_exit "kill $client 2>/dev/null"
wait_for 15 found active_run_units || fail "the run of the vanishing client never started"
cpid=$(cat "$HDIR/client.pid")
bx kill -KILL "$cpid" || fail "could not kill the client (pid $cpid in the box)"
wait "$client" 2>/dev/null
assert_clean 15
assert_runs_work
pass
