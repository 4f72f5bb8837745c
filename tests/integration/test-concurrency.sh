#!/usr/bin/env bash
# Concurrency: two runs started together (--parallel 2 --count 2) both give correct results, and
# while they run, two run units are active at the same time. (No timing assertions.)
. "$(dirname "$0")/../lib/itest.sh"

# Room for 2 runs at once whatever the machine's size (the default is the number of CPUs).
set_config MCP_EXEC_MAX_CONCURRENT=2
# The restarted broker's self-check runs in a unit of its own: let it come and go first.
assert_runs_work
assert_clean 10
code='import os, time
time.sleep(3)
print("done", os.getuid())
'
f=$(printf '%s' "$code" | put code.py)
bx mcp-exec-runner-call --timeout 60 --parallel 2 --count 2 "$f" >"$HDIR/out" 2>"$HDIR/err" &
client=$!
at_exit "kill $client 2>/dev/null"
max_active=0
while kill -0 "$client" 2>/dev/null; do
    n=$(active_run_units | grep -c .)
    ((n > max_active)) && max_active=$n
    sleep 0.1
done
wait "$client"
rc=$?
out=$(cat "$HDIR/out")
log "most run units active at once: $max_active"
((rc == 0)) || fail "runner-call failed ($rc): $out $(cat "$HDIR/err")"
[[ $(grep -c . <<<"$out") -eq 2 ]] || fail "expected 2 results: $out"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"].startswith("done ")' "a run failed"
jcheck "$out" 'rs[0]["run_id"] != rs[1]["run_id"] and rs[0]["stdout"] != rs[1]["stdout"]' "the two runs are not distinct"
((max_active == 2)) || fail "expected 2 run units active at the same time, saw at most $max_active"

# One more than MCP_EXEC_MAX_CONCURRENT at once: the extra one is refused as busy, not queued
# forever or run anyway. (SIGPIPE ignored, as the real front end mcp-execd does: a busy refusal
# closes the run's stdin pipe, and a client writing the code into it must not die of SIGPIPE.
# That a plain runner-call does is covered by test-stdin.)
out=$(call_nosigpipe --timeout 60 --parallel 3 --count 3 -- 'import time; time.sleep(3); print("ok")')
rc=$?
log "3 at once with room for 2: exit $rc: $(grep -o '"error":"[^"]*"' <<<"$out" | tr '\n' ' ')"
[[ $(grep -c . <<<"$out") -eq 3 ]] || fail "expected 3 results (runner-call exit $rc): $out $(call_err)"
jcheck "$out" '(r.get("error") == "busy") or (r["exit_code"] == 0 and r["stdout"] == "ok\n")' "a run neither ran nor was refused as busy"
jcheck "$out" 'sum(1 for x in rs if "error" not in x) == 2' "not exactly 2 of 3 runs ran"
assert_clean 10
pass
