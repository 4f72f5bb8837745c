#!/usr/bin/env bash
# Concurrency: two runs started together (--parallel 2 --count 2) both give correct results, and
# while they run, two run units are active at the same time; more than MCP_EXEC_MAX_CONCURRENT
# wait in line at the broker and all run, never more at once than allowed; a caller that hangs
# up while waiting never runs. (No timing assertions.)
. "$(dirname "$0")/../../lib/itest.sh"

# Room for 2 runs at once whatever the machine's size (the default is the number of CPUs).
set_config MCP_EXEC_MAX_CONCURRENT=2
# The restarted broker's self-check runs in a unit of its own: let it come and go first.
assert_runs_work
assert_clean 10

# parallel_runs N FILE: FILE run N times, N at once, through the broker; while they go, the
# number of active run units is sampled. Sets rc (broker-call's status), out (its results) and
# max_active (the most run units active at once).
parallel_runs() {
    local client n
    bx mcp-exec-broker-call --timeout 60 --parallel "$1" --count "$1" "$2" >"$HDIR/out" 2>"$HDIR/err" &
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
}

code='import os, time
time.sleep(3)
print("done", os.getuid())
'
f=$(printf '%s' "$code" | put code.py)
parallel_runs 2 "$f"
log "most run units active at once: $max_active"
((rc == 0)) || fail "broker-call failed ($rc): $out $(cat "$HDIR/err")"
[[ $(grep -c . <<<"$out") -eq 2 ]] || fail "expected 2 results: $out"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"].startswith("done ")' "a run failed"
jcheck "$out" 'rs[0]["run_id"] != rs[1]["run_id"] and rs[0]["stdout"] != rs[1]["stdout"]' "the two runs are not distinct"
((max_active == 2)) || fail "expected 2 run units active at the same time, saw at most $max_active"

# Four at once with room for 2: none is refused; they wait in line at the broker (both front ends
# share its slots, so refusing would let one starve the other), and never more than 2 run at once.
f=$(printf 'import time\ntime.sleep(2)\nprint("ok")\n' | put wait.py)
parallel_runs 4 "$f"
log "4 at once with room for 2: exit $rc, most active at once: $max_active"
((rc == 0)) || fail "broker-call failed ($rc): $out $(cat "$HDIR/err")"
[[ $(grep -c . <<<"$out") -eq 4 ]] || fail "expected 4 results: $out"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"] == "ok\n"' "a run that waited for a slot did not run"
((max_active >= 1 && max_active <= 2)) || fail "saw $max_active run units active at once with MCP_EXEC_MAX_CONCURRENT=2"
assert_clean 10

# A caller that hangs up while waiting leaves the line: it never runs and leaves nothing.
cur=$(journal_cursor)
printf 'import time\ntime.sleep(4)\n' | put hold.py >/dev/null
bx mcp-exec-broker-call --timeout 60 --parallel 2 --count 2 "$BDIR/hold.py" >/dev/null 2>&1 &
holders=$!
at_exit "kill $holders 2>/dev/null"
wait_for 15 eval '[[ $(active_run_units | grep -c .) -eq 2 ]]' || fail "the two holding runs did not start"
out=$(call --timeout 60 --cancel-after-ms 500 -- 'print("mcpwaitedrun")')
log "cancelled while waiting: $out"
jcheck "$out" 'r.get("cancelled") is True or r.get("error")' "a run cancelled while waiting for a slot did not report so"
wait "$holders"
# (Not journalctl -u with --after-cursor: on systemd 252 that pair loses the first entry.)
requested() { journal_since "$cur" -o short-monotonic | grep -E 'mcp-exec-brokerd\[[0-9]+\]: Run [0-9a-f]+ requested$'; }
started=$(requested | grep -c .)
((started == 2)) || fail "the cancelled waiting run was started anyway (or a holder was not): $(requested)"
assert_clean 10
pass
