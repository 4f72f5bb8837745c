#!/usr/bin/env bash
# Tasks against the real units over raw HTTP (2026-07-28, the io.modelcontextprotocol/tasks
# extension), with a call maximum of 5 s (MCP_EXEC_MAX_TIMEOUT_S) and a task maximum of 60 s:
#   call   a plain call asking for 30 s is cut at 5 s (timed_out), as before tasks
#   task   the same code as a task runs its 8 s to the end: it became a task after
#          MCP_EXEC_TASK_AFTER_MS, ran on a unit of its own whose RuntimeMaxSec= is its timeout
#          (a warm unit's backstop is sized for the call maximum), /metrics counted it working
#          then completed, tasks/get (Mcp-Name = the task id) returned the output inline
#   idle   the front end, with an idle exit of 2 s, stays while it holds the unread result
#   log    the journal has the task's start and end with its id prefix, never its output
#   fair   with MCP_EXEC_MAX_CONCURRENT=3 and two named tokens, alice starts three 45 s tasks;
#          bob's print(6*7) then gets its 42 while all three are still working (issue 37: they
#          held every slot, first come first served, and bob's call waited for them): runs past
#          the call maximum hold at most 2 of the 3 slots, the free one goes to the caller with
#          the fewest; and root's print(6*7) over the local socket runs past root's own task there,
#          which the broker (shared by both front ends) keeps from its last slot
# and, with two named tokens (mallory attacks, walt is the witness), issue 37:
#   listen 40 subscriptions/listen, each its own request, left unread while a task with a result of
#          several MiB ends (item 2); each on a fresh front end:
#   get    40 tasks/get of that result, left unread (item 3): the front end is not killed (MainPID
#          and NRestarts unchanged, no SIGKILL in the journal), its peak RSS (VmHWM, logged) stays
#          under half its MemoryMax=, and walt's print(6*7) is served meanwhile
#   cap    with MCP_EXEC_MAX_TASKS=4 and 4 per caller (item 9): mallory's share is 3 of the 4, its
#          oldest ended task makes room for its next, walt still gets a task, and mallory deletes an
#          ended task with tasks/cancel
. "$(dirname "$0")/../../lib/itest.sh"

URL=http://127.0.0.1:8080
bx sh -c 'command -v curl' >/dev/null || skip "no curl in the box"
. "$ITEST_DIR/lib/http.sh"

set_config MCP_EXEC_MAX_TIMEOUT_S=5 MCP_EXEC_DEFAULT_TIMEOUT_S=5 MCP_EXEC_TASK_MAX_TIMEOUT_S=60 \
    MCP_EXEC_TASK_AFTER_MS=300 MCP_EXEC_IDLE_EXIT_S=2
at_exit restart_http
restart_http

EXT='"extensions":{"io.modelcontextprotocol/tasks":{}}'
meta() { printf '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{%s}}' "$1"; }
# post METHOD NAME BODY: the stateless POST with its mirrored headers (and $AUTH's token, if
# set); prints the body.
post() {
    bx curl -s --max-time 60 -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        ${AUTH:+-H "X-MCP-AUTH: $AUTH"} \
        -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $1" -H "Mcp-Name: $2" -d "$3" "$URL/mcp"
}
call_body() { # CODE CAPS
    printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"%s","timeout_s":30},%s}}' \
        "$1" "$(meta "$2")"
}
CODE='import time\ntime.sleep(8)\nprint(\"long-done\")'

# --- call: the call maximum holds ------------------------------------------------------------------
out=$(post tools/call exec "$(call_body "$CODE" "")")
jcheck "$out" 'r["result"]["resultType"] == "complete" and r["result"]["structuredContent"]["timed_out"] is True' \
    "call: a plain call asking for 30 s was not cut at the 5 s maximum"
log "call: cut at the call maximum (timed_out)"
assert_clean 15

# --- task: the task maximum ----------------------------------------------------------------------------
cursor=$(journal_cursor)
out=$(post tools/call exec "$(call_body "$CODE" "$EXT")")
jcheck "$out" 'r["result"]["resultType"] == "task" and r["result"]["status"] == "working" and r["result"]["ttlMs"] >= 90000' \
    "task: the slow call with the extension did not become a task"
TID=$(jget "$out" 'r["result"]["taskId"]')
[[ $TID =~ ^[a-z0-9-]{1,32}\.[0-9a-f]{32}$ ]] || fail "task: the id is not <node>.<128 random bits in hex>: '$TID'"
log "task: became task ${TID:0:20}..."

wait_for 10 found active_run_units || fail "task: no active run unit"
unit=$(active_run_units | head -1)
rt=$(bx systemctl show -P RuntimeMaxUSec "$unit")
[[ $rt == 30s ]] || fail "task: its unit $unit has RuntimeMaxSec=$rt, not the task's 30 s"
log "task: runs on $unit with RuntimeMaxSec=$rt"
metrics=$(bx curl -s --max-time 10 "$URL/metrics")
grep -qx 'mcp_exec_tasks{status="working"} 1' <<<"$metrics" ||
    fail "task: /metrics does not count one working task:"$'\n'"$(grep mcp_exec_tasks <<<"$metrics")"

get_body() { printf '{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"%s",%s}}' "$1" "$(meta "")"; }
status=working
for _ in $(seq 1 40); do
    out=$(post tasks/get "$TID" "$(get_body "$TID")")
    status=$(jget "$out" 'r["result"]["status"]')
    [[ $status == working ]] || break
    sleep 0.5
done
jcheck "$out" 'r["result"]["status"] == "completed" and r["result"]["result"]["structuredContent"]["exit_code"] == 0 and r["result"]["result"]["structuredContent"]["stdout"] == "long-done\n" and r["result"]["result"]["structuredContent"]["timed_out"] is False' \
    "task: tasks/get did not return the whole run's output inline"
log "task: completed past the call maximum, output inline"
metrics=$(bx curl -s --max-time 10 "$URL/metrics")
grep -qx 'mcp_exec_tasks{status="completed"} 1' <<<"$metrics" ||
    fail "task: /metrics does not count the completed task:"$'\n'"$(grep mcp_exec_tasks <<<"$metrics")"

# --- idle: the result keeps the front end -----------------------------------------------------------
pid=$(bx systemctl show -P MainPID mcp-exec.service)
sleep 5
[[ $(bx systemctl show -P MainPID mcp-exec.service) == "$pid" && $pid != 0 ]] ||
    fail "idle: the front end exited idle while it held an unread task result"
out=$(post tasks/get "$TID" "$(get_body "$TID")")
jcheck "$out" 'r["result"]["status"] == "completed"' "idle: the result is gone after 5 s"
log "idle: the front end (pid $pid) stays while it holds the result"

# --- log: start and end, metadata only ----------------------------------------------------------------
# By the entries' own field (the prefix is 48 random bits), not by unit and cursor: under load an
# entry may reach the journal after the query, so it is asked again for a while.
prefix=${TID#*.}
prefix=${prefix:0:12}
task_entries() { bx journalctl --no-pager -o cat "MCP_TASK=$prefix" 2>/dev/null; }
task_logged() { task_entries | grep -q "task $prefix: became a task" && task_entries | grep -q "task $prefix: completed"; }
bx journalctl --flush >/dev/null 2>&1
wait_for 15 task_logged || fail "log: the task's start and end are not both in the journal:"$'\n'"$(task_entries)"
j=$(journal_since "$cursor" -o verbose)
! grep -q "long-done" <<<"$j" || fail "log: the run's output reached the journal"
! grep -q "$TID" <<<"$j" || fail "log: the whole task id (the key to its result) reached the journal"
log "log: start and end logged with the id prefix only"
assert_clean 15

# --- fair: one caller's tasks leave a slot to another caller ----------------------------------------
TOKENS=/etc/mcp-exec/tokens
TOK_A=tka-$RANDOM$RANDOM$RANDOM$RANDOM TOK_B=tkb-$RANDOM$RANDOM$RANDOM$RANDOM
at_exit "bx rm -f $TOKENS"
at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
printf '%s\n' "alice $TOK_A" "bob $TOK_B" |
    bx sh -c "umask 077; cat >$TOKENS && chown root:mcp-exec $TOKENS && chmod 0640 $TOKENS" ||
    fail "fair: cannot write $TOKENS"
set_config MCP_EXEC_MAX_TIMEOUT_S=5 MCP_EXEC_DEFAULT_TIMEOUT_S=5 MCP_EXEC_TASK_MAX_TIMEOUT_S=60 \
    MCP_EXEC_TASK_AFTER_MS=300 MCP_EXEC_IDLE_EXIT_S=60 MCP_EXEC_MAX_CONCURRENT=3
restart_http
SLEEP='import time\ntime.sleep(45)\nprint(\"a-done\")'
long_body() {
    printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":%s,%s}}' \
        "{\"code\":\"$SLEEP\",\"timeout_s\":50}" "$(meta "$EXT")"
}
tids=()
for i in 1 2 3; do
    out=$(AUTH=$TOK_A post tools/call exec "$(long_body)")
    jcheck "$out" 'r["result"]["resultType"] == "task" and r["result"]["status"] == "working"' \
        "fair: alice's task $i did not become a task"
    tids+=("$(jget "$out" 'r["result"]["taskId"]')")
done
two_active() { (($(active_run_units | wc -l) >= 2)); }
wait_for 30 two_active || fail "fair: alice's tasks did not start: $(active_run_units)"
log "fair: alice holds $(active_run_units | wc -l) runs of 3 slots with three tasks"
out=$(AUTH=$TOK_B post tools/call exec "$(call_body 'print(6*7)' "")")
jcheck "$out" 'r["result"]["structuredContent"]["stdout"] == "42\n"' "fair: bob's print(6*7) did not run"
# The point: bob's call was served while alice's tasks all still ran (or waited), not after.
for t in "${tids[@]}"; do
    out=$(AUTH=$TOK_A post tasks/get "$t" "$(get_body "$t")")
    jcheck "$out" 'r["result"]["status"] == "working"' \
        "fair: bob's print(6*7) was only served once alice's tasks had ended"
done
log "fair: bob's print(6*7) got 42 while alice's three tasks were working"
# The broker's share, through the other front end: root's task over the local socket (a queue of
# its own, empty) may not take the broker's last slot, so root's print(6*7) still runs at once.
# The local front end starts again with this configuration on the next connection.
restart_stdio() {
    bx sh -c 'systemctl stop mcp-exec-stdio.service
              systemctl reset-failed mcp-exec-stdio.service 2>/dev/null
              systemctl start mcp-exec-stdio.socket' >/dev/null 2>&1
}
at_exit restart_stdio
restart_stdio
rt=$(printf 'import time\ntime.sleep(45)\n' | bx timeout 30 mcp-exec run --detach --timeout 50 2>&1)
[[ $rt =~ ^[A-Za-z0-9_-]+\.[0-9a-f]{32}$ ]] || fail "fair: root's task did not start: $rt"
at_exit "bx mcp-exec task cancel '$rt' >/dev/null 2>&1"
out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1)
[[ $out == 42 ]] || fail "fair: root's print(6*7) did not run: $out"
rc=0
bx timeout 30 mcp-exec task get "$rt" >/dev/null 2>&1 || rc=$?
((rc == 75)) || fail "fair: root's print(6*7) was only served once its task had ended"
for t in "${tids[@]}"; do
    out=$(AUTH=$TOK_A post tasks/get "$t" "$(get_body "$t")")
    jcheck "$out" 'r["result"]["status"] == "working"' \
        "fair: root's print(6*7) was only served once alice's tasks had ended"
done
bx timeout 30 mcp-exec task cancel "$rt" >/dev/null 2>&1
log "fair: root's print(6*7) got 42 past its own task and alice's, at the broker"
cancel_body() {
    printf '{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"%s",%s}}' "$1" "$(meta "")"
}
for t in "${tids[@]}"; do
    AUTH=$TOK_A post tasks/cancel "$t" "$(cancel_body "$t")" >/dev/null
done
assert_clean 30

# --- issue 37: many readers of a large result, and the task cap ---------------------------------------
TOKENS=/etc/mcp-exec/tokens
TOK_M=tkm-$RANDOM$RANDOM$RANDOM$RANDOM
TOK_W=tkw-$RANDOM$RANDOM$RANDOM$RANDOM
set_http_token "tok-$RANDOM$RANDOM$RANDOM$RANDOM"
at_exit "bx rm -f $TOKENS"
printf '%s\n' "mallory $TOK_M" "walt $TOK_W" |
    bx sh -c "umask 077; cat >$TOKENS && chown root:mcp-exec $TOKENS && chmod 0640 $TOKENS" ||
    fail "cannot write $TOKENS"
install -m0755 "$ITEST_DIR/lib/flood-tasks.py" "$HDIR/flood-tasks.py"
ft() { bx "$PY" "$BDIR/flood-tasks.py" "$1" 8080 "${@:2}"; }
max_kib=$(( $(bx systemctl show -P MemoryMax mcp-exec.service) / 1024 ))
opened() { grep -q '"open"' "$HDIR/$1.out" 2>/dev/null; }

# attack NAME: a fresh front end and a task of mallory's whose result is several MiB; then 40
# unread readers of it (NAME: listen, before it ends; get, after); the front end must live on.
attack() {
    local name=$1 out tid pid restarts cursor hwm wit
    restart_http
    cursor=$(journal_cursor)
    out=$(ft big "$TOK_M") || fail "$name: the big task did not start: $out"
    tid=$(jget "$out" 'r["task"]')
    pid=$(bx systemctl show -P MainPID mcp-exec.service)
    restarts=$(bx systemctl show -P NRestarts mcp-exec.service)
    rm -f "$HDIR/stop"
    if [[ $name == listen ]]; then
        ft listen "$TOK_M" "$tid" 40 "$BDIR/stop" >"$HDIR/$name.out" 2>&1 &
        wait_for 30 opened "$name" || fail "$name: the subscriptions were not sent: $(cat "$HDIR/$name.out")"
        out=$(ft wait "$TOK_M" "$tid")
    else
        out=$(ft wait "$TOK_M" "$tid")
        jcheck "$out" 'r["status"] == "completed" and r["bytes"] > 5 * 2**20' \
            "$name: the task did not end with a result of several MiB"
        log "$name: the result is $(jget "$out" 'r["bytes"]') bytes"
        ft get "$TOK_M" "$tid" 40 "$BDIR/stop" >"$HDIR/$name.out" 2>&1 &
        wait_for 30 opened "$name" || fail "$name: the requests were not sent: $(cat "$HDIR/$name.out")"
    fi
    sleep 3
    wit=$(ft witness "$TOK_W")
    hwm=$(bx awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    touch "$HDIR/stop"
    wait
    counts=n/a
    [[ $name != get ]] || counts=$(tail -1 "$HDIR/$name.out")
    [[ $pid != 0 && $(bx systemctl show -P MainPID mcp-exec.service) == "$pid" &&
        $(bx systemctl show -P NRestarts mcp-exec.service) == "$restarts" ]] ||
        fail "$name: the front end (pid $pid) was killed or restarted:"$'\n'"$(journal_since "$cursor" -u mcp-exec.service | tail -5)"
    ! journal_since "$cursor" -u mcp-exec.service | grep -Eiq 'SIGKILL|oom|status=9' ||
        fail "$name: the journal has a kill of the front end:"$'\n'"$(journal_since "$cursor" -u mcp-exec.service | tail -5)"
    jcheck "$wit" 'r["stdout"] == "42\n"' "$name: the witness was not served: $wit"
    [[ -n $hwm ]] || fail "$name: no VmHWM for the front end"
    log "$name: the front end lived on, peak RSS $((hwm / 1024)) MiB (MemoryMax $((max_kib / 1024)) MiB), witness in $(jget "$wit" 'r["seconds"]') s; readers: $counts"
    # tasks/get answered as JSON is sent from the result's one copy: every one is served.
    [[ $name != get ]] || jcheck "$counts" 'r["served"] == 40' "$name: not every tasks/get was served: $counts"
    (( hwm < max_kib / 2 )) || fail "$name: peak RSS $hwm KiB is past half of MemoryMax= ($max_kib KiB)"
}
attack listen
attack get

# --- cap: shares of the task cap, and deleting -------------------------------------------------------
set_config MCP_EXEC_MAX_TIMEOUT_S=5 MCP_EXEC_DEFAULT_TIMEOUT_S=5 MCP_EXEC_TASK_MAX_TIMEOUT_S=60 \
    MCP_EXEC_TASK_AFTER_MS=300 MCP_EXEC_IDLE_EXIT_S=600 MCP_EXEC_MAX_TASKS=4 MCP_EXEC_MAX_TASKS_PER_CALLER=4
restart_http
ids=()
for i in 1 2 3; do
    out=$(ft task "$TOK_M" 1)
    jcheck "$out" 'r["resultType"] == "task"' "cap: mallory's task $i was not a task: $out"
    ids+=("$(jget "$out" 'r["taskId"]')")
done
for id in "${ids[@]}"; do
    jcheck "$(ft wait "$TOK_M" "$id")" 'r["status"] == "completed"' "cap: mallory's task ${id:0:20} did not end"
done
# Its share (3 of 4) is full of ended tasks: the oldest goes for the next.
out=$(ft task "$TOK_M" 1)
jcheck "$out" 'r["resultType"] == "task"' "cap: mallory's fourth task was not a task: $out"
jcheck "$(ft do "$TOK_M" tasks/get "${ids[0]}")" 'r["reply"]["error"]["code"] == -32602' \
    "cap: mallory's oldest ended task was not deleted for its next"
# Walt is not shut out by mallory's tasks.
out=$(ft task "$TOK_W" 1)
jcheck "$out" 'r["resultType"] == "task"' "cap: walt got no task beside mallory's share: $out"
# Mallory deletes an ended task of its own: tasks/cancel.
jcheck "$(ft do "$TOK_M" tasks/cancel "${ids[1]}")" 'r["reply"]["result"]["resultType"] == "complete"' \
    "cap: tasks/cancel of an ended task was not acknowledged"
jcheck "$(ft do "$TOK_M" tasks/get "${ids[1]}")" 'r["reply"]["error"]["code"] == -32602' \
    "cap: the ended task mallory cancelled is still there"
log "cap: the oldest ended task made room, walt got a task, tasks/cancel deleted an ended task"
assert_clean 15
pass
