#!/usr/bin/env bash
# Stateful sessions (issue 14) through real MCP clients against the real units:
#   clients    tests/node-clients/sessions.mjs with the v1 SDK over stdio, Streamable HTTP and SSE (it
#              validates structuredContent against the outputSchema), the v2 client in the
#              2026-07-28 era over stdio and Streamable HTTP (the handle mirrored into
#              Mcp-Param-Session; a call without it or with another is -32020): tools/list offers
#              session_create and session_close, x = 41 then print(x + 1) gives 42, a file in /tmp
#              and a pandas DataFrame survive from call to call, session_close ends the session
#              and its handle answers "session not found"
#   inspector  the MCP Inspector CLI, which makes one connection per invocation: over stdio
#              (the same uid, so the handle of one invocation serves the next) and over HTTP in
#              the 2026-07-28 era (the same token) create, x = 41, print(x + 1), close, gone; in
#              the 2025 era over HTTP each invocation is an MCP session of its own, so the next
#              invocation does not have the handle; the sandbox session ends with the front end
# After each part no session unit is left. (What a session costs: bench/bench.py session.)
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"
bx python3 -c 'import pandas' 2>/dev/null ||
    fail "python3 in the box has no pandas (python3-pandas; packaging/deps.sh --test installs it)"
# A broker of our own: no session of an earlier test, and the front ends learn its limits.
at_exit stop_frontend
restart_broker
stop_frontend
restart_http
assert_clean 15

failed=()

# --- clients -------------------------------------------------------------------------------------
for part in v1-stdio v1-http v1-sse v2-stdio v2-http; do
    log "== $part"
    cnode sessions.mjs "$part" "$URL" "$TOKEN" || failed+=("$part")
    wait_for 15 no_session_units || { log "FAIL $part: session units left: $(session_units --all)"; failed+=("$part-units"); }
done
assert_clean 15

# --- inspector -----------------------------------------------------------------------------------
# insp NAME ARGS...: one tools/call through the Inspector CLI (ARGS, then the server as $TARGET
# says); the CallToolResult in $out.
insp() {
    local name=$1
    shift
    if [[ ${TARGET[0]} == stdio ]]; then
        out=$(inspector "$@" --format json -q -- mcp-exec stdio 2>"$HDIR/insp.err")
    else
        out=$(inspector "${TARGET[@]}" "$@" --format json 2>"$HDIR/insp.err")
    fi
    out=$("$PY" -c '
import json, sys
s = sys.stdin.read()
try:
    r = json.loads(s[s.index("{"):])
except ValueError:
    sys.exit(1)
print(json.dumps(r.get("result", r)))' <<<"$out") || {
        log "FAIL inspector $name: no result; stderr: $(head -c 1500 "$HDIR/insp.err")"
        out='{}'
        failed+=("inspector-$name")
        return 1
    }
}
# icheck NAME EXPR: EXPR holds for r = $out.
icheck() {
    "$PY" -c 'import json, sys; r = json.loads(sys.stdin.read()); sys.exit(0 if eval(sys.argv[1]) else 1)' "$2" <<<"$out" && {
        log "ok inspector $1"
        return 0
    }
    log "FAIL inspector $1: $2 does not hold for: $(head -c 1500 <<<"$out")"
    failed+=("inspector-$1")
    return 1
}
GONE='r.get("isError") is True and r["content"][0]["text"].startswith("session not found")'
call_args() { printf '{"code":"%s","session":"%s"}' "$1" "$2"; }

# inspector_chain NAME: create, x = 41, print(x + 1), close, then the handle is gone, each with
# an invocation of its own.
inspector_chain() {
    local name=$1 h
    insp "$name-create" --method tools/call --tool-name session_create --tool-args-json '{}' &&
        icheck "$name-create" 'r.get("isError") is False and "." in r["structuredContent"]["session"]' || return
    h=$(jget "$out" 'r["structuredContent"]["session"]')
    insp "$name-set" --method tools/call --tool-name exec --tool-args-json "$(call_args 'x = 41' "$h")" &&
        icheck "$name-set" 'r["structuredContent"]["exit_code"] == 0 and r["structuredContent"]["session_lost"] is False'
    insp "$name-use" --method tools/call --tool-name exec --tool-args-json "$(call_args 'print(x + 1)' "$h")" &&
        icheck "$name-use" 'r["structuredContent"]["stdout"] == "42\n"'
    insp "$name-close" --method tools/call --tool-name session_close --tool-args-json "{\"session\":\"$h\"}" &&
        icheck "$name-close" 'r.get("isError") is False and r["structuredContent"]["closed"] is True'
    insp "$name-gone" --method tools/call --tool-name exec --tool-args-json "$(call_args 'print(x)' "$h")" &&
        icheck "$name-gone" "$GONE"
}
log "== inspector"
TARGET=(stdio)
inspector_chain stdio
TARGET=("$URL/mcp" --transport http --header "X-MCP-AUTH: $TOKEN" --protocol-era modern)
inspector_chain http-modern
wait_for 15 no_session_units || { log "FAIL inspector: session units left: $(session_units --all)"; failed+=(inspector-units); }

# The 2025 era over HTTP: each invocation is an MCP session of its own, and the CLI leaves it
# to expire (no DELETE): the next invocation's MCP session does not have the handle. The
# sandbox session ends with the front end at the latest.
TARGET=("$URL/mcp" --transport http --header "X-MCP-AUTH: $TOKEN" --protocol-era legacy)
if insp http-legacy-create --method tools/call --tool-name session_create --tool-args-json '{}' &&
    icheck http-legacy-create 'r.get("isError") is False'; then
    h=$(jget "$out" 'r["structuredContent"]["session"]')
    insp http-legacy-next --method tools/call --tool-name exec --tool-args-json "$(call_args 'pass' "$h")" &&
        icheck http-legacy-next "$GONE"
    restart_http
    if wait_for 15 no_session_units; then
        log "ok inspector http-legacy: the sandbox session ended with the front end"
    else
        log "FAIL inspector http-legacy: the unit outlived the front end: $(session_units --all)"
        failed+=(inspector-http-legacy-units)
    fi
fi
if out=$(inspector --method tools/list --strict -q -- mcp-exec stdio 2>&1); then
    log "ok inspector tools/list --strict"
else
    log "FAIL inspector tools/list --strict: $(head -c 1500 <<<"$out")"
    failed+=(inspector-strict)
fi
wait_for 15 no_session_units || { log "FAIL inspector: session units left: $(session_units --all)"; failed+=(inspector-units); }
assert_clean 15

((${#failed[@]} == 0)) || fail "failed parts: ${failed[*]}"
pass
