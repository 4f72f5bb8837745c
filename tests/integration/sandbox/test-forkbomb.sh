#!/usr/bin/env bash
# Task limit: a fork bomb is contained by TasksMax (fork fails with EAGAIN, the task count of the
# run never exceeds the limit), the run ends by its timeout, everything of it is gone afterwards,
# and the next run works. A thread bomb hits the same limit and the run ends by itself.
# Plain pass only: TasksMax= is the kernel's pids controller, set by systemd.
. "$(dirname "$0")/../../lib/itest.sh"

# The shipped default (MCP_EXEC_TASKS_MAX); the unit's own TasksMax= is checked below too.
TASKS_MAX=128

code='import os, sys, time
os.write(1, b"START\n")
hit = False
while True:
    try:
        os.fork()
    except OSError as e:
        if not hit:
            hit = True
            os.write(1, b"LIMIT %d\n" % e.errno)
        time.sleep(0.05)
'
f=$(printf '%s' "$code" | put bomb.py)
bx mcp-exec-broker-call --timeout 8 "$f" >"$HDIR/bomb.out" 2>"$HDIR/bomb.err" &
client=$!
at_exit "kill $client 2>/dev/null"

# Watch the run's task count while it runs.
max_tasks=0 seen=0 unit_max=
deadline=$((SECONDS + 40))
while kill -0 "$client" 2>/dev/null && ((SECONDS < deadline)); do
    for u in $(active_run_units); do
        # One query, and only while the unit is still loaded: `systemctl show` of a unit that
        # has just gone answers with the manager's defaults (TasksMax=DefaultTasksMax).
        props=$(bx systemctl show -p LoadState -p TasksCurrent -p TasksMax "$u" 2>/dev/null)
        [[ $props == *LoadState=loaded* ]] || continue
        n=$(sed -n 's/^TasksCurrent=//p' <<<"$props")
        if [[ $n =~ ^[0-9]+$ ]]; then
            seen=1
            ((n > max_tasks)) && max_tasks=$n
            [[ -n $unit_max ]] || unit_max=$(sed -n 's/^TasksMax=//p' <<<"$props")
        fi
    done
    sleep 0.3
done
wait "$client"
rc=$?
out=$(cat "$HDIR/bomb.out")
log "max tasks seen: $max_tasks (limit $TASKS_MAX); client exit $rc"
((rc == 0)) || fail "broker-call failed ($rc): $out $(head -c 2000 "$HDIR/bomb.err")"
jcheck "$out" '"error" not in r' "the run produced no result"
jcheck "$out" '"START" in r["stdout"]' "the code did not start"
jcheck "$out" '"LIMIT 11" in r["stdout"]' "fork never failed with EAGAIN: the task limit was not hit"
jcheck "$out" 'r["timed_out"] is True and r["exit_code"] == -1' "the run did not end by its timeout"
((seen)) || fail "could not observe the run's TasksCurrent"
[[ $unit_max == "$TASKS_MAX" ]] || fail "the run unit has TasksMax=$unit_max, expected $TASKS_MAX"
((max_tasks <= TASKS_MAX)) || fail "the run had $max_tasks tasks, more than TasksMax=$TASKS_MAX"
((max_tasks >= TASKS_MAX / 2)) || fail "the fork bomb only reached $max_tasks tasks; did it run?"
assert_clean 15
assert_runs_work

# Threads count against the same limit.
code='import threading, time
ev = threading.Event()
n = 0
try:
    while n < 100000:
        threading.Thread(target=ev.wait, daemon=True).start()
        n += 1
except RuntimeError as e:
    print("THREADS", n, e)
ev.set()
'
out=$(call --timeout 30 -- "$code") || fail "thread run failed: $out $(call_err)"
log "thread bomb: $(jget "$out" 'r["stdout"]')"
jcheck "$out" 'r["exit_code"] == 0 and r["stdout"].startswith("THREADS ")' "thread bomb was not stopped by the limit"
jcheck "$out" "0 < int(r['stdout'].split()[1]) < $TASKS_MAX" "more threads than TasksMax"
assert_clean 10
assert_runs_work
pass
