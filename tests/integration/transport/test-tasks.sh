#!/usr/bin/env bash
# MCP tasks (issue 21) through real clients against the real units (tests/node-clients/tasks.mjs),
# over HTTP with two named tokens (alice, bob) and over stdio:
#   v1         the v1 SDK (2025-11-25): capabilities and taskSupport, a task's result, a failed
#              task for invalid arguments, cancelTask mid-run ends the run unit, a second cancel
#              and guessed ids are -32602, listTasks shows only the caller's own, the other
#              token's ids are -32602
#   reconnect  a task outlives its MCP session: a new session of the same token fetches it,
#              the other token gets -32602
#   modern     raw 2026-07-28 requests: a slow call with the extension is a task, a quick one
#              and one without the extension are inline; tasks/get with the result inline,
#              Mcp-Name mismatch 400, tasks/update -32602, tasks/cancel an empty ack
#   v2         @modelcontextprotocol/client with ext-tasks, in both eras
#   stdio      the v1 SDK through `mcp-exec stdio`, and a new connection fetching a task
#   kill       with two live tasks the HTTP front end is SIGKILLed: no run unit is left, and the
#              socket-activated new one answers tasks/get of the old ids with -32602
#   caps       with MCP_EXEC_MAX_TASKS_PER_CALLER=3, three finished tasks held: the next task call
#              deletes the oldest; three running: the next is -32600 "too many tasks"; the other
#              token's works
#   budget     with MCP_EXEC_FRONTEND_BUDGET=16M, one token's unread 500 kB results fill its half:
#              its next task call gets "server busy", the other token's task still works
# The 65 s run is test-tasks-long.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/kill.sh"

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM
TOK_A=tka-$RANDOM$RANDOM$RANDOM$RANDOM
TOK_B=tkb-$RANDOM$RANDOM$RANDOM$RANDOM
TOKENS=/etc/mcp-exec/tokens

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"
at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
at_exit "bx systemctl reset-failed mcp-exec.service >/dev/null 2>&1"

# A call still running after 200 ms is a task (2026-07-28): the slow calls here sleep 3 s.
at_exit stop_frontend
set_config MCP_EXEC_TASK_AFTER_MS=200
stop_frontend
# Two named tokens (docs/several-hosts.md): two callers.
at_exit "bx rm -f $TOKENS"
printf '%s\n' "alice $TOK_A" "bob $TOK_B" |
    bx sh -c "umask 077; cat >$TOKENS && chown root:mcp-exec $TOKENS && chmod 0640 $TOKENS" ||
    fail "cannot write $TOKENS"
restart_http

failed=()
part() {
    local name=$1
    shift
    log "== $name"
    cnode tasks.mjs "$@" || failed+=("$name")
    assert_clean 15
}

part v1 v1 "$URL" "$TOK_A" "$TOK_B"
part reconnect reconnect "$URL" "$TOK_A" "$TOK_B"
part modern modern "$URL" "$TOK_A" "$TOK_B"
part v2 v2 "$URL" "$TOK_A"
part stdio stdio

# --- kill: the HTTP front end dies under live tasks ---------------------------------------------
log "== kill"
restart_http
rm -f "$HDIR/ids"
cnode tasks.mjs start "$URL" "$TOK_A" 2 || fail "kill: the tasks were not started"
n_active() { [[ $(active_run_units | wc -l) -ge 2 ]]; }
wait_for 30 n_active || fail "kill: the two tasks' runs never became active: $(run_units --all)"
sigkill_main kill mcp-exec.service mcp-execd mcp-execd
wait_for 15 no_run_units || fail "kill: run units left 15 s after the front end died: $(run_units --all)"
wait_for 15 no_dyn_procs || fail "kill: processes of dynamic uids left: $(dyn_procs)"
bx systemctl reset-failed mcp-exec.service >/dev/null 2>&1
cnode tasks.mjs gone "$URL" "$TOK_A" || failed+=(kill)
pid=$(bx systemctl show -P MainPID mcp-exec.service)
[[ -n $pid && $pid != 0 && $pid != "$KILLED_PID" ]] || fail "kill: no new front end answered (MainPID $pid)"
assert_clean 15

# --- caps: tasks per caller ----------------------------------------------------------------------
set_config MCP_EXEC_TASK_AFTER_MS=200 MCP_EXEC_MAX_TASKS_PER_CALLER=3
restart_http
part caps caps "$URL" "$TOK_A" "$TOK_B" 3

# --- budget: unread results of one token ---------------------------------------------------------
set_config MCP_EXEC_TASK_AFTER_MS=200 MCP_EXEC_FRONTEND_BUDGET=16M MCP_EXEC_MAX_TASKS_PER_CALLER=40
restart_http
part budget budget "$URL" "$TOK_A" "$TOK_B"
restart_http

((${#failed[@]} == 0)) || fail "failed parts: ${failed[*]}"
pass
