# shellcheck shell=bash
# tests/lib/sessions.sh - what test-sessions-attacks.sh and test-sessions-faults.sh share. Source
# it after tests/lib/itest.sh and tests/lib/node-clients.sh. It writes an HTTP token into the box's
# credstore (removed at exit), sets up mcp-exec.socket (tests/lib/http.sh), stops every session
# unit at exit, and provides:
#   fresh [CONFIG...]        the broker with this configuration (none: the saved one) and front
#                            ends that learnt it; nothing of an earlier part left
#   scall stdio|http TOOL ARGS   one tools/call through sessions.mjs (v1 SDK over stdio as root,
#                            or the v2 client stateless over HTTP with the token); the
#                            CallToolResult (JSON) on stdout
#   exec_args CODE HANDLE, handle_of RESULT, stdout_is RESULT TEXT [MESSAGE], $GONE
#   broker_sessions          the number of sessions the broker counts ({"op":"info"})
#   after PART               no session unit, nothing of a dynamic uid, and the service answers
#                            (a stateless run over stdio and over HTTP)

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"
at_exit stop_frontend
at_exit "bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1"

fresh() {
    if (($#)); then
        set_config "$@"
    elif [[ -n $ITEST_CONF_SAVED ]]; then
        restore_config
    else
        restart_broker
    fi
    stop_frontend
    restart_http
}

scall() { cnode sessions.mjs call "$1" "$2" "$3" "$URL" "$TOKEN"; }
exec_args() { printf '{"code":"%s","session":"%s"}' "$1" "$2"; }
GONE='r.get("isError") is True and r["content"][0]["text"].startswith("session not found")'
handle_of() { jget "$1" 'r["structuredContent"]["session"]'; }
stdout_is() { jcheck "$1" "r.get(\"isError\") is False and r[\"structuredContent\"][\"stdout\"] == \"$2\\n\"" "${3:-stdout}"; }

broker_info() {
    bx python3 -c '
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect("/run/mcp-exec/broker.sock")
s.send(b"{\"op\":\"info\"}")
print(s.recv(65536).decode())'
}
broker_sessions() { jget "$(broker_info)" 'r["sessions"]'; }

# http_exec CODE: a stateless (2026-07-28) exec over HTTP with the token, by curl in the box (no
# client to start: this runs after every part); the response body on stdout.
http_exec() {
    local meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
    bx curl -s --max-time 60 -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' -H "X-MCP-AUTH: $TOKEN" \
        -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\",\"arguments\":{\"code\":\"$1\"},$meta}}" \
        "$URL/mcp"
}

after() {
    local out
    wait_for 15 no_session_units || fail "$1: session units left: $(session_units --all)"
    assert_clean 15
    out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) && [[ $out == 42 ]] ||
        fail "$1: mcp-exec run afterwards: $out"
    out=$(http_exec 'print(6*7)') && [[ $out == *'"stdout":"42\n"'* && $out != *'"isError":true'* ]] ||
        fail "$1: a stateless exec over HTTP afterwards: $(head -c 1500 <<<"$out")"
    log "$1: ok, no session unit left, the service answers"
}
