#!/usr/bin/env bash
# Fault: a client vanishes in the middle of a run. Documented behaviour (src/http/http-session.c):
#   stateless  a 2026-07-28 tools/call POST whose response stream (SSE accepted) is dropped:
#              the closed stream is the cancellation; the run's unit goes, the broker logs the
#              run as cancelled.
#   session    a 2025-11-25 Streamable HTTP session whose tools/call POST is dropped: no
#              cancellation; the run completes ("finished: success"), nothing is left.
#   legacy     a legacy HTTP+SSE session (GET /sse) whose stream closes while its tools/call
#              runs: the session ends, the run is cancelled.
#   stdio      the `mcp-exec stdio` bridge of a v1 SDK client is SIGKILLed mid-call: the SDK's
#              call fails (connection closed), the run is cancelled.
# After each, a stateless call and an `mcp-exec run` are still served.
. "$(dirname "$0")/../../lib/itest.sh"

URL=http://127.0.0.1:8080
bx sh -c 'command -v curl' >/dev/null || skip "no curl in the box"
. "$ITEST_DIR/lib/http.sh"
. "$ITEST_DIR/lib/node-clients.sh"
at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
restart_http
assert_clean 15

JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
SLEEP='import time\nprint(\"up\", flush=True)\ntime.sleep(SECS)\nprint(\"slept\")'
callbody() { # callbody ID SECONDS [META]
    local code=${SLEEP/SECS/$2}
    printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"exec","arguments":{"code":"%s","timeout_s":60}%s}}' \
        "$1" "$code" "${3:+,$3}"
}
# bg_curl NAME ARGS...: curl in the box, in the background; its pid in the box in $HDIR/NAME.pid.
bg_curl() {
    local n=$1
    shift
    bx sh -c 'echo $$ >"$1/$2.pid"; shift 2; exec curl -sN --max-time 120 "$@"' sh "$BDIR" "$n" "$@" \
        >"$HDIR/$n.body" 2>/dev/null </dev/null &
    at_exit "kill $! 2>/dev/null"
    wait_for 10 test -s "$HDIR/$n.pid" || fail "$n: curl did not start"
}
kill_in_box() { bx kill -KILL "$1" || fail "cannot kill pid $1 in the box"; }
# run_logged UNIT WORD: the broker logged the run of UNIT as finished with WORD.
run_logged() {
    local id=${1#mcp-exec-run-}
    id=${id%.service}
    [[ $(journal_since "$CURSOR" | grep -c "Run $id finished: $2") != 0 ]]
}
others_served() {
    local st out
    st=$(bx curl -s --max-time 60 -o "$BDIR/other.b" -w '%{http_code}' "${JSON[@]}" \
        -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\",\"arguments\":{\"code\":\"print(6*7)\"},$META}}" \
        "$URL/mcp")
    [[ $st == 200 ]] && grep -qF '"stdout":"42\n"' "$HDIR/other.b" ||
        fail "$1: a stateless call afterwards failed: HTTP $st $(head -c 300 "$HDIR/other.b")"
    out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) || fail "$1: mcp-exec run afterwards failed: $out"
    [[ $out == 42 ]] || fail "$1: mcp-exec run afterwards printed: $out"
}
one_active_unit() {
    wait_for 30 found active_run_units || fail "$1: the run's unit never became active: $(head -c 300 "$HDIR/$1.body")"
    UNIT=$(active_run_units | head -1)
}

# --- stateless -----------------------------------------------------------------------------------
log "== stateless"
CURSOR=$(journal_cursor)
bg_curl stateless "${JSON[@]}" -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
    -d "$(callbody 1 60 "$META")" "$URL/mcp"
one_active_unit stateless
kill_in_box "$(cat "$HDIR/stateless.pid")"
wait_for 15 no_run_units || fail "stateless: the run went on after its stream closed: $(run_units --all)"
wait_for 10 run_logged "$UNIT" cancelled || fail "stateless: the broker did not log $UNIT as cancelled"
log "stateless: $UNIT cancelled when its stream closed"
assert_clean 15
others_served stateless

# --- session -------------------------------------------------------------------------------------
log "== session"
CURSOR=$(journal_cursor)
st=$(bx curl -s --max-time 30 -D "$BDIR/init.h" -o "$BDIR/init.b" -w '%{http_code}' "${JSON[@]}" \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"vanish","version":"1"}}}' \
    "$URL/mcp")
[[ $st == 200 ]] || fail "session: initialize: HTTP $st"
sid=$(sed -n 's/^mcp-session-id: *\([^\r]*\)\r*$/\1/Ip' "$HDIR/init.h" | head -1)
[[ -n $sid ]] || fail "session: no Mcp-Session-Id: $(cat "$HDIR/init.h")"
SH=(-H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25')
st=$(bx curl -s --max-time 30 -o /dev/null -w '%{http_code}' "${JSON[@]}" "${SH[@]}" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$URL/mcp")
[[ $st == 202 ]] || fail "session: notifications/initialized: HTTP $st"
bg_curl session "${JSON[@]}" "${SH[@]}" -d "$(callbody 2 6)" "$URL/mcp"
one_active_unit session
kill_in_box "$(cat "$HDIR/session.pid")"
# Not cancelled: the run ends on its own, as a success.
wait_for 40 run_logged "$UNIT" success ||
    fail "session: $UNIT did not complete after its POST was dropped: $(journal_since "$CURSOR" | grep 'finished' | tail -3)"
run_logged "$UNIT" cancelled && fail "session: $UNIT was cancelled"
log "session: $UNIT completed although its POST was dropped"
assert_clean 15
bx curl -s --max-time 10 -o /dev/null -X DELETE "${SH[@]}" "$URL/mcp"
others_served session

# --- legacy --------------------------------------------------------------------------------------
log "== legacy"
CURSOR=$(journal_cursor)
bg_curl legacy -H 'Accept: text/event-stream' "$URL/sse"
wait_for 15 grep -q '^data: /messages' "$HDIR/legacy.body" || fail "legacy: no endpoint event: $(cat "$HDIR/legacy.body")"
ep=$(sed -n 's/^data: \(\/messages[^\r]*\)\r*$/\1/p' "$HDIR/legacy.body" | head -1)
post() {
    local st
    st=$(bx curl -s --max-time 30 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "$1" "$URL$ep")
    [[ $st == 202 ]] || fail "legacy: POST to $ep: HTTP $st"
}
post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"vanish","version":"1"}}}'
wait_for 15 grep -q '"id":1' "$HDIR/legacy.body" || fail "legacy: no initialize result on the stream"
post '{"jsonrpc":"2.0","method":"notifications/initialized"}'
post "$(callbody 2 60)"
one_active_unit legacy
kill_in_box "$(cat "$HDIR/legacy.pid")"
wait_for 15 no_run_units || fail "legacy: the run went on after the SSE stream closed: $(run_units --all)"
wait_for 10 run_logged "$UNIT" cancelled || fail "legacy: the broker did not log $UNIT as cancelled"
log "legacy: $UNIT cancelled when the SSE stream closed"
assert_clean 15
others_served legacy

# --- stdio ---------------------------------------------------------------------------------------
log "== stdio"
CURSOR=$(journal_cursor)
rm -f "$HDIR"/sdk.*
cnode fault-sdk.mjs inflight sdk &
node=$!
at_exit "kill $node 2>/dev/null"
wait_for 30 test -e "$HDIR/sdk.sent" || fail "stdio: the client never sent its call"
one_active_unit stdio
bridge=$(bx ps -eo pid=,args= | awk '$2 == "mcp-exec" && $3 == "stdio" && NF == 3 { print $1 }')
[[ $(wc -w <<<"$bridge") == 1 ]] || fail "stdio: expected one mcp-exec stdio process, found: '$bridge'"
kill_in_box "$bridge"
wait_for 15 no_run_units || fail "stdio: the run went on after its bridge died: $(run_units --all)"
wait_for 10 run_logged "$UNIT" cancelled || fail "stdio: the broker did not log $UNIT as cancelled"
wait_for 20 test -s "$HDIR/sdk.outcome" || fail "stdio: the SDK's call still pending 20 s after its bridge died"
outcome=$(cat "$HDIR/sdk.outcome")
log "stdio: SDK outcome: $outcome"
jcheck "$outcome" 'r["kind"] == "error" and r["closed"]' "stdio: the SDK's call did not fail with a closed connection"
wait "$node" || fail "stdio: the client script failed"
assert_clean 15
others_served stdio
pass
