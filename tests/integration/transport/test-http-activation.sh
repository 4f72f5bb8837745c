#!/usr/bin/env bash
# HTTP socket activation end to end, with the real units: mcp-exec.service is not running, a
# client connects to mcp-exec.socket and gets its answer; with nothing open (no connection, no
# session, no stream, no run) the service exits after MCP_EXEC_IDLE_EXIT_S, cleanly (Result=success)
# and the socket stays; the next client still gets its answer. A session or a run longer than
# the idle time keeps it up, and clients arriving around the moment it exits lose nothing.
. "$(dirname "$0")/../../lib/itest.sh"

URL=http://127.0.0.1:8080
IDLE=3
bx sh -c 'command -v curl' >/dev/null || skip "no curl in the box"

. "$ITEST_DIR/lib/http.sh"
service_active() { bx systemctl is-active -q mcp-exec.service; }
service_inactive() { ! service_active; }

req() {
    local n=$1
    shift
    bx curl -s --max-time 60 -o "$BDIR/$n.b" -D "$BDIR/$n.h" -w '%{http_code}' "$@"
}
header() { sed -n "s/^$2: *\\([^\\r]*\\)\\r*\$/\\1/Ip" "$HDIR/$1.h" | head -1; }

JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
# stateless_call NAME CODE: one tools/call of the stateless revision; fails unless it printed 42.
stateless_call() {
    local n=$1 code=$2 st
    st=$(req "$n" "${JSON[@]}" -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\",\"arguments\":{\"code\":\"$code\"},$META}}" \
        "$URL/mcp")
    [[ $st == 200 ]] || fail "$n: HTTP $st: $(head -c 500 "$HDIR/$n.b" 2>/dev/null)"
    grep -qF '"stdout":"42\n"' "$HDIR/$n.b" || fail "$n: no answer 42: $(head -c 500 "$HDIR/$n.b")"
}
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"activation","version":"1"}}}'

set_config MCP_EXEC_IDLE_EXIT_S=$IDLE
restart_http
service_inactive || fail "mcp-exec.service runs before any client came"

# 1. The first client starts the service and gets its answer.
cursor=$(journal_cursor)
stateless_call first 'print(6*7)'
service_active || fail "the service is not running right after answering"
pid1=$(bx systemctl show -p MainPID --value mcp-exec.service)

# 2. Idle: it exits, cleanly, and the socket stays.
t0=$SECONDS
wait_for $((IDLE + 15)) service_inactive || fail "the service did not exit within $((IDLE + 15))s of being idle"
log "exited $((SECONDS - t0))s after the last client (MCP_EXEC_IDLE_EXIT_S=$IDLE)"
[[ $(bx systemctl show -p Result --value mcp-exec.service) == success ]] ||
    fail "the idle exit was no clean exit: $(bx systemctl show -p Result -p ExecMainStatus mcp-exec.service)"
bx systemctl is-active -q mcp-exec.socket || fail "mcp-exec.socket stopped listening after the idle exit"
journal_since "$cursor" -u mcp-exec.service >"$HDIR/journal.txt"
grep -q 'Idle, exiting' "$HDIR/journal.txt" || fail "no idle exit in the journal: $(tail -20 "$HDIR/journal.txt")"

# 3. The next client still gets its answer, from a new instance.
st=$(req init "${JSON[@]}" -d "$INIT" "$URL/mcp")
[[ $st == 200 ]] || fail "initialize after the idle exit: HTTP $st"
pid2=$(bx systemctl show -p MainPID --value mcp-exec.service)
[[ $pid2 != 0 && $pid2 != "$pid1" ]] || fail "no new instance answered (MainPID $pid1, then $pid2)"
SID=$(header init Mcp-Session-Id)
st=$(req call "${JSON[@]}" -H "Mcp-Session-Id: $SID" \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6*7)"}}}' "$URL/mcp")
if [[ $st != 200 ]] || ! grep -qF '"stdout":"42\n"' "$HDIR/call.b"; then
    fail "a call in a new session: HTTP $st $(head -c 300 "$HDIR/call.b")"
fi

# 4. An open session keeps it running; ending it lets it go.
sleep $((IDLE + 2))
service_active || fail "the service exited while a session was open"
st=$(req delete -X DELETE -H "Mcp-Session-Id: $SID" "$URL/mcp")
[[ $st == 200 ]] || fail "DELETE: HTTP $st"
wait_for $((IDLE + 15)) service_inactive || fail "the service did not exit after the session ended"

# 5. A run longer than the idle time keeps it running, and its answer arrives.
stateless_call long "import time; time.sleep($((IDLE + 2))); print(6*7)"
wait_for $((IDLE + 15)) service_inactive || fail "the service did not exit after the long run"

# 6. Clients arriving around the moment it exits: the socket queues them for the next instance.
for i in 1 2 3 4 5; do
    stateless_call "edge$i" 'print(6*7)'
    # Around the exit: a little before, at, and after IDLE seconds.
    sleep "$(awk -v i="$i" -v t="$IDLE" 'BEGIN { printf "%.2f", t - 0.4 + 0.2 * i }')"
done
stateless_call last 'print(6*7)'
wait_for $((IDLE + 15)) service_inactive || fail "the service did not exit at the end"
[[ $(bx systemctl show -p Result --value mcp-exec.service) == success ]] || fail "the last exit was not clean"
if bx systemctl show -p NRestarts --value mcp-exec.service | grep -qv '^0$'; then
    fail "the service was restarted after failures"
fi
pass
