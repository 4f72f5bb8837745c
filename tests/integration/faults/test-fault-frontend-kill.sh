#!/usr/bin/env bash
# Fault: the front end of local sessions (mcp-execd, main process of the service
# mcp-exec-stdio.socket triggers: mcp-exec-stdio.service) is SIGKILLed while a run started
# through a real client is running.
#   run   `mcp-exec run` with a 60 s sleep: once its unit is active, SIGKILL mcp-execd. The run's
#         unit goes (the broker sees its caller's connection close), no process of a dynamic uid
#         is left, `mcp-exec run` exits 125 (mcp-exec failed) well before the sleep would end,
#         and the next `mcp-exec run` is served by a new mcp-execd (socket activation).
#   sdk   the same with the v1 TypeScript SDK (StdioClientTransport on `mcp-exec stdio`): the
#         pending tools/call is rejected (connection closed), it does not hang; a new SDK session
#         works afterwards.
#   http  the HTTP front end (mcp-exec.service, from mcp-exec.socket) is SIGKILLed during a
#         stateless tools/call: curl gets no answer but an end (no hang), the run goes, and the
#         next HTTP call is answered by a new instance.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/kill.sh"

# The front end's unit: the one the stdio socket starts.
FE=$(bx systemctl show -P Triggers mcp-exec-stdio.socket)
[[ $FE == *.service ]] || fail "mcp-exec-stdio.socket triggers no service: '$FE'"
log "front end of local sessions: $FE"
# Whatever happens: the front end's unit may not stay failed, and its socket must listen.
restore_frontend() {
    bx sh -c 'systemctl reset-failed "$1" 2>/dev/null
              systemctl start mcp-exec-stdio.socket' sh "$FE" >/dev/null 2>&1
}
at_exit restore_frontend
at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"

frontend_pid() { bx systemctl show -P MainPID "$FE" 2>/dev/null; }
frontend_up() { local p; p=$(frontend_pid); [[ -n $p && $p != 0 ]]; }
kill_frontend() { sigkill_main "$1" "$FE" mcp-execd mcp-execd; }

assert_clean 15

# --- run: mcp-exec run ---------------------------------------------------------------------------
log "== run"
sleeping_run
log "run: active unit $RUN_UNIT"
sleeping_run_killed "the front end" kill_frontend run
[[ -s $HDIR/run.err ]] || fail "run: mcp-exec run said nothing on stderr"
log "run: $FE after the kill: $(bx systemctl show -P ActiveState "$FE") ($(bx systemctl show -P Result "$FE"))"

next_run_works run
frontend_up && [[ $(frontend_pid) != "$KILLED_PID" ]] || fail "run: no new mcp-execd serves (MainPID $(frontend_pid))"
log "run: the next client was served by mcp-execd pid $(frontend_pid)"
assert_clean 15

# --- sdk: the TypeScript SDK's pending call ------------------------------------------------------
log "== sdk"
sdk_kill_midcall "the front end" kill_frontend sdk
jcheck "$SDK_OUTCOME" 'r["kind"] == "error" or (r["kind"] == "result" and r["isError"])' \
    "sdk: the pending call did not end in an error"
jcheck "$SDK_OUTCOME" 'r["ms"] < 55000' "sdk: the call ended only when the sleep would have"
cnode fault-sdk.mjs call || fail "sdk: a new SDK session did not work after the kill"
assert_clean 15

# --- http: the HTTP front end ---------------------------------------------------------------------
log "== http"
bx sh -c 'command -v curl' >/dev/null || skip "no curl in the box (the stdio parts passed)"
. "$ITEST_DIR/lib/http.sh"
restart_http
at_exit "bx systemctl reset-failed mcp-exec.service >/dev/null 2>&1"
JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec')
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
body() { printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"%s"},%s}}' "$1" "$META"; }
bx sh -c 'curl -sN --max-time 90 "$@" >"$0/http.out" 2>&1; echo $? >"$0/http.rc"' "$BDIR" "${JSON[@]}" \
    -d "$(body 'import time\nprint(1, flush=True)\ntime.sleep(60)')" http://127.0.0.1:8080/mcp </dev/null &
at_exit "kill $! 2>/dev/null"
wait_for 30 found active_run_units || fail "http: the run's unit never became active: $(cat "$HDIR/http.out" 2>/dev/null)"
[[ ! -e $HDIR/http.rc ]] || fail "http: curl ended before the kill: $(cat "$HDIR/http.out")"
FE=mcp-exec.service
t0=$SECONDS
kill_frontend http
wait_for 15 no_run_units || fail "http: run units left 15 s after the front end died: $(run_units --all)"
wait_for 15 no_dyn_procs || fail "http: processes of dynamic uids left: $(dyn_procs)"
wait_for 20 test -e "$HDIR/http.rc" || fail "http: curl still waits 20 s after the front end died"
log "http: curl ended with $(cat "$HDIR/http.rc") after $((SECONDS - t0)) s; got: $(head -c 200 "$HDIR/http.out")"
! grep -q '"stdout"' "$HDIR/http.out" || fail "http: a result although the front end died: $(cat "$HDIR/http.out")"
st=$(bx curl -s --max-time 60 -o "$BDIR/next.b" -w '%{http_code}' "${JSON[@]}" -d "$(body 'print(6*7)')" \
    http://127.0.0.1:8080/mcp)
[[ $st == 200 ]] && grep -qF '"stdout":"42\n"' "$HDIR/next.b" ||
    fail "http: the next call was not answered: HTTP $st $(head -c 300 "$HDIR/next.b")"
frontend_up && [[ $(frontend_pid) != "$KILLED_PID" ]] || fail "http: no new mcp-execd serves HTTP"
log "http: the next call was answered by mcp-execd pid $(frontend_pid)"
assert_clean 15
pass
