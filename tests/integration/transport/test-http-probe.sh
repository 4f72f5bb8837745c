#!/usr/bin/env bash
# HTTP transport, raw: one curl probe per status rule against the real units (mcp-exec.socket,
# 127.0.0.1:8080 in the box's own network namespace), then the token from the systemd credential
# (LoadCredential=, /etc/credstore/mcp-exec.auth-token) and from MCP_EXEC_AUTH_TOKEN.
#   406 Accept, 415 Content-Type, 400 missing session, 404 unknown session, 400 bad
#   MCP-Protocol-Version, 403 bad Origin alone (good Host), 403 bad Host, 413 body, 431 headers,
#   405 method, 404 path, 409 second GET stream, DELETE, the stateless revision and a newer
#   client's probe (4xx, never 5xx), the legacy /sse endpoint event (relative URL), and 401 with
#   WWW-Authenticate on /mcp, /sse and /messages; the token never reaches the journal.
. "$(dirname "$0")/../../lib/itest.sh"

URL=http://127.0.0.1:8080
bx sh -c 'command -v curl' >/dev/null || skip "no curl in the box"

. "$ITEST_DIR/lib/http.sh"

# req NAME CURL-ARGS...: prints the status; headers and body land in $HDIR/NAME.h and NAME.b.
req() {
    local n=$1
    shift
    bx curl -s --max-time 20 -o "$BDIR/$n.b" -D "$BDIR/$n.h" -w '%{http_code}' "$@"
}
# expect STATUS NAME CURL-ARGS...
expect() {
    local want=$1 n=$2 got
    shift 2
    got=$(req "$n" "$@")
    [[ $got == "$want" ]] || fail "$n: HTTP $got, want $want"$'\n'"$(cat "$HDIR/$n.h" 2>/dev/null)$(head -c 600 "$HDIR/$n.b" 2>/dev/null)"
    log "$n: $got"
}
header() { sed -n "s/^$2: *\\([^\\r]*\\)\\r*\$/\\1/Ip" "$HDIR/$1.h" | head -1; }
body_has() { grep -qF -- "$2" "$HDIR/$1.b" || fail "$1: no '$2' in the body: $(head -c 600 "$HDIR/$1.b")"; }

JSON=(-H 'Content-Type: application/json')
BOTH=(-H 'Accept: application/json, text/event-stream')
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
LIST='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'

# Small code and stdin limits make a small body limit: 6 * (1K + 1K) + 64K, escaped JSON included.
set_config MCP_EXEC_MAX_CODE_BYTES=1K MCP_EXEC_MAX_STDIN_BYTES=1K
at_exit restart_http
restart_http

# --- Streamable HTTP, no token (loopback) ------------------------------------------------------
expect 200 init "${JSON[@]}" "${BOTH[@]}" -d "$INIT" "$URL/mcp"
SID=$(header init Mcp-Session-Id)
# <node>.<128 random bits in hex>: a load balancer routes by the node prefix.
[[ $SID =~ ^[a-z0-9-]{1,32}\.[0-9a-f]{32}$ ]] || fail "Mcp-Session-Id is not <node>.<128 random bits in hex>: '$SID'"
S=(-H "Mcp-Session-Id: $SID")
expect 202 initialized "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$URL/mcp"
expect 200 list "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -H 'MCP-Protocol-Version: 2025-06-18' -d "$LIST" "$URL/mcp"
body_has list '"name":"exec"'
expect 200 call "${JSON[@]}" "${BOTH[@]}" "${S[@]}" \
    -d '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6*7)"}}}' "$URL/mcp"
body_has call '"stdout":"42\n"'
[[ $(header call Content-Type) == application/json ]] || fail "a call without progress is not answered as JSON"
expect 200 progress "${JSON[@]}" "${BOTH[@]}" "${S[@]}" \
    -d '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"exec","arguments":{"code":"import time; time.sleep(1.5); print(7)"},"_meta":{"progressToken":"p"}}}' "$URL/mcp"
[[ $(header progress Content-Type) == text/event-stream ]] || fail "a call with a progress token is not answered by SSE"
body_has progress '"method":"notifications/progress"'
body_has progress '"stdout":"7\n"'

expect 406 accept-json-only "${JSON[@]}" -H 'Accept: application/json' "${S[@]}" -d "$LIST" "$URL/mcp"
expect 406 accept-sse-only "${JSON[@]}" -H 'Accept: text/event-stream' "${S[@]}" -d "$LIST" "$URL/mcp"
expect 415 content-type "${BOTH[@]}" -H 'Content-Type: text/plain' "${S[@]}" -d "$LIST" "$URL/mcp"
expect 400 no-session "${JSON[@]}" "${BOTH[@]}" -d "$LIST" "$URL/mcp"
expect 404 unknown-session "${JSON[@]}" "${BOTH[@]}" -H 'Mcp-Session-Id: 00000000000000000000000000000000' -d "$LIST" "$URL/mcp"
# A live session's random part under another node's prefix: not ours.
expect 404 other-node-session "${JSON[@]}" "${BOTH[@]}" -H "Mcp-Session-Id: other-node.${SID#*.}" -d "$LIST" "$URL/mcp"
expect 400 bad-version "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -H 'MCP-Protocol-Version: 1999-01-01' -d "$LIST" "$URL/mcp"
body_has bad-version '"supported"'
expect 400 bad-json "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -d '{"jsonrpc":' "$URL/mcp"
# Origin alone: the Host is right, so only the Origin check can refuse it.
expect 403 bad-origin "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -H 'Origin: http://evil.example' -d "$LIST" "$URL/mcp"
expect 403 bad-origin-get -H 'Accept: text/event-stream' "${S[@]}" -H 'Origin: http://localhost:9999' "$URL/mcp"
# DNS rebinding: another name for our address.
expect 403 bad-host "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -H 'Host: rebind.example:8080' -d "$LIST" "$URL/mcp"
expect 403 bad-host-port "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -H 'Host: 127.0.0.1:9999' -d "$LIST" "$URL/mcp"
expect 200 host-localhost "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -H 'Host: localhost:8080' -d "$LIST" "$URL/mcp"
# Past the largest body a call may send: twice code, stdin and input files, about
# 12 MiB with the defaults.
head -c 48M /dev/zero | tr '\0' ' ' >"$HDIR/big.json"
chmod 0644 "$HDIR/big.json"
expect 413 body-too-large "${JSON[@]}" "${BOTH[@]}" "${S[@]}" --data-binary "@$BDIR/big.json" "$URL/mcp"
expect 413 body-too-large-chunked "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -H 'Transfer-Encoding: chunked' \
    --data-binary "@$BDIR/big.json" "$URL/mcp"
expect 431 header-too-large "${S[@]}" -H "X-Filler: $(head -c 70000 /dev/zero | tr '\0' a)" "$URL/mcp"
expect 405 put -X PUT "$URL/mcp"
[[ $(header put Allow) == 'GET, POST, DELETE' ]] || fail "405 without Allow: $(cat "$HDIR/put.h")"
expect 405 get-messages "$URL/messages"
expect 404 no-such-path "$URL/nope"

# The GET stream: one per session, ended with the session.
bx sh -c "curl -s -N --max-time 20 -D '$BDIR/stream.h' -H 'Accept: text/event-stream' -H 'Mcp-Session-Id: $SID' '$URL/mcp' >'$BDIR/stream.b'" &
stream=$!
wait_for 10 grep -qs '^HTTP/1.1 200' "$HDIR/stream.h" || fail "no GET stream: $(cat "$HDIR/stream.h")"
grep -qi '^Content-Type: text/event-stream' "$HDIR/stream.h" || fail "the GET stream is no event stream"
expect 409 second-stream -H 'Accept: text/event-stream' "${S[@]}" "$URL/mcp"
expect 200 delete -X DELETE "${S[@]}" "$URL/mcp"
wait "$stream" || fail "the GET stream did not end cleanly with its session"
expect 404 after-delete "${JSON[@]}" "${BOTH[@]}" "${S[@]}" -d "$LIST" "$URL/mcp"
expect 404 delete-again -X DELETE "${S[@]}" "$URL/mcp"
expect 400 delete-no-session -X DELETE "$URL/mcp"
expect 400 get-no-session -H 'Accept: text/event-stream' "$URL/mcp"

# --- the stateless revision on the same endpoint -----------------------------------------------
ST=(-H 'MCP-Protocol-Version: 2026-07-28')
expect 200 discover "${JSON[@]}" "${BOTH[@]}" "${ST[@]}" -H 'Mcp-Method: server/discover' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$META}}" "$URL/mcp"
body_has discover '"supportedVersions"'
[[ -z $(header discover Mcp-Session-Id) ]] || fail "a stateless answer carries a session id"
expect 200 stateless-call "${JSON[@]}" "${BOTH[@]}" "${ST[@]}" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\",\"arguments\":{\"code\":\"print(5*5)\"},$META}}" "$URL/mcp"
body_has stateless-call '"stdout":"25\n"'
expect 400 stateless-mismatch "${JSON[@]}" "${BOTH[@]}" "${ST[@]}" -H 'Mcp-Method: tools/list' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"server/discover\",\"params\":{$META}}" "$URL/mcp"
body_has stateless-mismatch '-32020'
expect 405 stateless-get -H 'Accept: text/event-stream' "${ST[@]}" "$URL/mcp"
# A newer client's probe: a 4xx it can read (the supported versions), never 401/403 or 5xx.
expect 400 newer-probe "${JSON[@]}" "${BOTH[@]}" -H 'MCP-Protocol-Version: 2099-01-01' -H 'Mcp-Method: server/discover' \
    -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}' "$URL/mcp"
body_has newer-probe '"2026-07-28"'

# --- legacy HTTP+SSE ----------------------------------------------------------------------------
bx sh -c "curl -s -N --max-time 4 -H 'Accept: text/event-stream' '$URL/sse' >'$BDIR/sse.b'" &
sse=$!
wait_for 10 grep -qs '^data: ' "$HDIR/sse.b" || fail "no endpoint event: $(cat "$HDIR/sse.b")"
grep -q '^event: endpoint$' "$HDIR/sse.b" || fail "the first event is not 'endpoint': $(cat "$HDIR/sse.b")"
EP=$(sed -n 's/^data: //p' "$HDIR/sse.b" | head -1 | tr -d '\r')
[[ $EP =~ ^/messages\?sessionId=${SID%%.*}\.[0-9a-f]{32}$ ]] || fail "the endpoint is not a relative /messages URL: '$EP'"
expect 202 legacy-init "${JSON[@]}" -d "$INIT" "$URL$EP"
wait_for 10 grep -qs '"protocolVersion"' "$HDIR/sse.b" || fail "no reply on the stream: $(cat "$HDIR/sse.b")"
grep -q '^event: message$' "$HDIR/sse.b" || fail "the reply is no 'message' event: $(cat "$HDIR/sse.b")"
expect 404 legacy-unknown "${JSON[@]}" -d "$LIST" "$URL/messages?sessionId=00000000000000000000000000000000"
expect 400 legacy-no-id "${JSON[@]}" -d "$LIST" "$URL/messages"
wait "$sse"
# The stream was the session.
legacy_gone() { [[ $(req legacy-after-close "${JSON[@]}" -d "$LIST" "$URL$EP") == 404 ]]; }
wait_for 5 legacy_gone || fail "the legacy session outlived its stream: $(cat "$HDIR/legacy-after-close.h")"

# --- the token: a systemd credential ----------------------------------------------------------
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM
set_http_token "$TOKEN"
cursor=$(journal_cursor)
restart_http

expect 401 auth-none "${JSON[@]}" "${BOTH[@]}" -d "$INIT" "$URL/mcp"
[[ $(header auth-none WWW-Authenticate) == 'Bearer realm="mcp-exec"' ]] || fail "401 without WWW-Authenticate: $(cat "$HDIR/auth-none.h")"
expect 401 auth-wrong "${JSON[@]}" "${BOTH[@]}" -H 'X-MCP-AUTH: wrong' -d "$INIT" "$URL/mcp"
expect 401 auth-wrong-bearer "${JSON[@]}" "${BOTH[@]}" -H "Authorization: Bearer ${TOKEN}x" -d "$INIT" "$URL/mcp"
expect 401 auth-sse "$URL/sse"
grep -qi '^WWW-Authenticate: Bearer realm="mcp-exec"' "$HDIR/auth-sse.h" || fail "401 on /sse without WWW-Authenticate"
expect 401 auth-messages "${JSON[@]}" -d "$LIST" "$URL/messages?sessionId=00000000000000000000000000000000"
grep -qi '^WWW-Authenticate: Bearer realm="mcp-exec"' "$HDIR/auth-messages.h" || fail "401 on /messages without WWW-Authenticate"
# Before any session lookup: an unknown session without the token is 401, not 404.
expect 401 auth-before-session "${JSON[@]}" "${BOTH[@]}" -H 'Mcp-Session-Id: 00000000000000000000000000000000' -d "$LIST" "$URL/mcp"
expect 200 auth-header "${JSON[@]}" "${BOTH[@]}" -H "X-MCP-AUTH: $TOKEN" -d "$INIT" "$URL/mcp"
SID=$(header auth-header Mcp-Session-Id)
expect 200 auth-bearer "${JSON[@]}" "${BOTH[@]}" -H "Authorization: Bearer $TOKEN" -H "Mcp-Session-Id: $SID" -d "$LIST" "$URL/mcp"
expect 200 auth-delete -X DELETE -H "X-MCP-AUTH: $TOKEN" -H "Mcp-Session-Id: $SID" "$URL/mcp"
journal_since "$cursor" -u mcp-exec.service >"$HDIR/journal.txt"
grep -q 'token: credential' "$HDIR/journal.txt" || fail "the service did not take the token from the credential:"$'\n'"$(tail -20 "$HDIR/journal.txt")"
grep -q 'refused (401)' "$HDIR/journal.txt" || fail "refusals are not in the journal"

# --- the token: MCP_EXEC_AUTH_TOKEN -------------------------------------------------------------
bx rm -f /etc/credstore/mcp-exec.auth-token
TOKEN2=env-$RANDOM$RANDOM$RANDOM
set_config MCP_EXEC_AUTH_TOKEN="$TOKEN2"
restart_http
expect 401 env-none "${JSON[@]}" "${BOTH[@]}" -d "$INIT" "$URL/mcp"
expect 401 env-old-token "${JSON[@]}" "${BOTH[@]}" -H "X-MCP-AUTH: $TOKEN" -d "$INIT" "$URL/mcp"
expect 200 env-token "${JSON[@]}" "${BOTH[@]}" -H "X-MCP-AUTH: $TOKEN2" -d "$INIT" "$URL/mcp"
SID=$(header env-token Mcp-Session-Id)
expect 200 env-delete -X DELETE -H "X-MCP-AUTH: $TOKEN2" -H "Mcp-Session-Id: $SID" "$URL/mcp"
journal_since "$cursor" >"$HDIR/journal-all.txt"
grep -q 'token: environment' "$HDIR/journal-all.txt" || fail "the service did not take the token from the environment"
if grep -qF -e "$TOKEN" -e "$TOKEN2" "$HDIR/journal-all.txt"; then
    fail "a token is in the journal"
fi
pass
