#!/usr/bin/env bash
# No HTTP client can destroy another's state, and callers are really distinct (issue 19), with raw
# clients (tests/lib/isolation.py: http.client, no SDK, no GET stream) against the real units:
#   evict     a witness initializes, creates a sandbox session and sets x = 41; then 330 other
#             initializes (cap 8 sessions here): each gets 200 (an empty session made room) or 503
#             with Retry-After, and the witness still reads 41 (before the fix it was evicted
#             after 8 and got 404)
#   sse       GET /sse without an Accept that admits text/event-stream is 406; 20 held
#             GET /sse streams fill the table: the rest, and an initialize, get 503 with
#             Retry-After, and the witness still reads 41
#   scope     one MCP session creates its share of sandbox sessions (2 of the caller's 4), the
#             third is refused with MCP_EXEC_MAX_SESSIONS_PER_SCOPE; another MCP session of the
#             same caller still creates its own, up to the caller's cap
#   names     /etc/mcp-exec/tokens with three names: 10 clients over 3 names are all served (with
#             the one shared token, the 5th is refused: 4 per caller); a wrong token is 401; one
#             name's sandbox session cannot be used or closed with another name's token, nor its
#             MCP session (404);
#             systemctl reload picks up an added name and drops a removed one with the same
#             MainPID, ending what the removed one made (its task, sandbox sessions, MCP sessions and
#             stream; issue 37, item 8), which the name given again later does not see; a
#             world-readable file on reload is refused and the old set stays; at the cap
#             one name's flood of initializes ends its own empty sessions, not another's; with more
#             than one name, one name's held streams get at most half of the sessions; /metrics
#             shows the names; no token text is in /metrics, the journal or systemctl show
. "$(dirname "$0")/../../lib/itest.sh"

PORT=8080
URL=http://127.0.0.1:$PORT
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM
TOK_A=tka-$RANDOM$RANDOM$RANDOM$RANDOM
TOK_B=tkb-$RANDOM$RANDOM$RANDOM$RANDOM
TOK_C=tkc-$RANDOM$RANDOM$RANDOM$RANDOM
TOK_D=tkd-$RANDOM$RANDOM$RANDOM$RANDOM
TOKENS=/etc/mcp-exec/tokens

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"
at_exit "bx rm -f $TOKENS"
at_exit "bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1"
install -m0755 "$ITEST_DIR/lib/isolation.py" "$HDIR/isolation.py"
iso() { bx "$PY" "$BDIR/isolation.py" "$1" "$PORT" "${@:2}"; }
pid_of() { bx systemctl show -P MainPID mcp-exec.service; }
cursor=$(journal_cursor)

# fresh [CONNECTIONS]: 16 connections (the default here) make a cap of 8 HTTP sessions; no idle
# exit while the test compares PIDs.
fresh() {
    set_config "MCP_EXEC_HTTP_MAX_CONNECTIONS=${1:-16}" MCP_EXEC_IDLE_EXIT_S=600
    restart_http
    bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1
}
fresh

# --- evict ---------------------------------------------------------------------------------------
w=$(iso witness "$TOKEN") || fail "evict: the witness could not set up: $w"
SID=$(jget "$w" 'r["sid"]')
HANDLE=$(jget "$w" 'r["handle"]')
out=$(iso init-flood "$TOKEN" 330) || fail "evict: the flood failed: $out"
log "evict: 330 initializes: $out"
jcheck "$out" 'r["200"] + r["503"] == 330 and r["503_no_retry"] == 0 and not r["other"]' \
    "evict: an initialize got something else than 200 or 503 with Retry-After"
out=$(iso read "$TOKEN" "$SID" "$HANDLE")
jcheck "$out" 'r["status"] == 200 and r["stdout"] == "41\n"' "evict: the witness lost its state to the flood"
log "evict: ok, the witness still reads x == 41"

# --- sse -----------------------------------------------------------------------------------------
# (curl sends Accept: */* unless told otherwise; -H 'Accept:' drops it.)
st=$(bx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "X-MCP-AUTH: $TOKEN" -H 'Accept:' "$URL/sse")
[[ $st == 406 ]] || fail "sse: GET /sse without Accept got $st, want 406"
st=$(bx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "X-MCP-AUTH: $TOKEN" -H 'Accept: application/json' "$URL/sse")
[[ $st == 406 ]] || fail "sse: GET /sse with Accept: application/json got $st, want 406"
out=$(iso sse-flood "$TOKEN" 20 "$SID" "$HANDLE") || fail "sse: the flood failed: $out"
log "sse: 20 held streams: $out"
jcheck "$out" 'r["200"] >= 1 and r["503"] >= 1 and r["200"] + r["503"] == 20 and r["503_no_retry"] == 0 and not r["other"]' \
    "sse: held streams did not fill the table, or a refusal lacked Retry-After"
jcheck "$out" 'r["init_status"] == 503 and r["init_retry_after"]' "sse: an initialize at the cap was not 503 with Retry-After"
jcheck "$out" 'r["witness"]["status"] == 200 and r["witness"]["stdout"] == "41\n"' "sse: the witness lost its state"
log "sse: ok"

# --- scope ---------------------------------------------------------------------------------------
fresh
s1=$(iso witness "$TOKEN") || fail "scope: first MCP session: $s1"
SID1=$(jget "$s1" 'r["sid"]')
out=$(iso create "$TOKEN" "$SID1")
jcheck "$out" 'r["handle"]' "scope: the second sandbox session of one MCP session was refused"
out=$(iso create "$TOKEN" "$SID1")
jcheck "$out" 'not r["handle"] and "MCP_EXEC_MAX_SESSIONS_PER_SCOPE" in (r["text"] or "")' \
    "scope: one MCP session got more than its share (2 of 4)"
out=$(iso clients 1 "$TOKEN")
jcheck "$out" 'r["ok"] == 1' "scope: another MCP session of the same caller was refused"
SID2=$(jget "$out" 'r["handles"][0][1]')
out=$(iso create "$TOKEN" "$SID2")
jcheck "$out" 'r["handle"]' "scope: the caller's fourth sandbox session was refused"
out=$(iso clients 1 "$TOKEN")
jcheck "$out" 'r["ok"] == 0 and "MCP_EXEC_MAX_SESSIONS_PER_CALLER" in r["refused"][0]' \
    "scope: the caller got more than 4 sandbox sessions"
log "scope: ok"

# --- names ---------------------------------------------------------------------------------------
# write_tokens MODE LINE...: the tokens file as docs/several-hosts.md says (root:mcp-exec, MODE).
write_tokens() {
    local mode=$1
    shift
    printf '%s\n' "# who may use mcp-exec" "$@" | bx sh -c "umask 077; cat >$TOKENS.new && chown root:mcp-exec $TOKENS.new && chmod $mode $TOKENS.new && mv $TOKENS.new $TOKENS" ||
        fail "names: cannot write $TOKENS"
}
# Baseline: with the one shared token, 10 clients are one caller, and the 5th is refused. (64
# connections: room for 10 MCP sessions that hold sandbox sessions.)
fresh 64
out=$(iso clients 10 "$TOKEN")
jcheck "$out" 'r["ok"] == 4' "names: the baseline (one token, 10 clients) is not 4 served"
write_tokens 0640 "alice $TOK_A" "bob $TOK_B" "carol $TOK_C"
fresh 64
out=$(iso clients 10 "$TOK_A" "$TOK_B" "$TOK_C")
log "names: 10 clients over 3 names: ok $(jget "$out" 'r["ok"]'), refused $(jget "$out" 'r["refused"]')"
jcheck "$out" 'r["ok"] == 10' "names: 10 clients over 3 names were refused"
A_SID=$(jget "$out" '[h for h in r["handles"] if h[0] == 0][0][1]')
A_HANDLE=$(jget "$out" '[h for h in r["handles"] if h[0] == 0][0][2]')
B_SID=$(jget "$out" '[h for h in r["handles"] if h[0] == 1][0][1]')
out=$(iso call "$TOK_A" "$A_SID" exec "{\"code\":\"y = 7\",\"session\":\"$A_HANDLE\"}")
jcheck "$out" 'r["status"] == 200 and not r["result"]["isError"]' "names: alice cannot use her own sandbox session"
# Bob has an MCP session of his own, and alice's handle is not his.
out=$(iso call "$TOK_B" "$B_SID" exec "{\"code\":\"print(y)\",\"session\":\"$A_HANDLE\"}")
jcheck "$out" 'r["status"] == 200 and r["result"]["isError"] and r["result"]["content"][0]["text"].startswith("session not found")' \
    "names: bob used alice's sandbox session"
out=$(iso call "$TOK_B" "$B_SID" session_close "{\"session\":\"$A_HANDLE\"}")
jcheck "$out" 'r["status"] == 200 and r["result"]["isError"] and r["result"]["content"][0]["text"].startswith("session not found")' \
    "names: bob closed alice's sandbox session"
out=$(iso call "$TOK_A" "$A_SID" exec "{\"code\":\"print(y)\",\"session\":\"$A_HANDLE\"}")
jcheck "$out" 'r["status"] == 200 and r["result"]["structuredContent"]["stdout"] == "7\n"' \
    "names: alice's sandbox session did not survive bob's attempts"
out=$(iso call "$TOK_B" "$A_SID" exec '{"code":"print(1)"}')
jcheck "$out" 'r["status"] == 404' "names: alice's MCP session answered bob's token"
st=$(bx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "X-MCP-AUTH: ${TOK_A}x" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d '{}' "$URL/mcp")
[[ $st == 401 ]] || fail "names: a wrong token got $st, want 401"
metrics=$(bx curl -s --max-time 10 -H "X-MCP-AUTH: $TOK_C" "$URL/metrics")
for n in default alice bob carol; do
    grep -q "^mcp_exec_http_caller_sandbox_sessions{caller=\"$n\"}" <<<"$metrics" || fail "names: /metrics has no caller=\"$n\": $metrics"
done
grep -q '^mcp_exec_http_caller_sandbox_sessions{caller="alice"} 4$' <<<"$metrics" ||
    fail "names: /metrics does not count alice's 4 sandbox sessions: $(grep caller <<<"$metrics")"

# Alice also has a task running (2026-07-28, the tasks extension) and a legacy stream open.
stateless() { # TOKEN METHOD NAME BODY
    bx curl -s --max-time 30 -H "X-MCP-AUTH: $1" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
        -H "Mcp-Method: $2" -H "Mcp-Name: $3" -d "$4" "$URL/mcp"
}
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
META+='"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}'
out=$(stateless "$TOK_A" tools/call exec \
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"import time\ntime.sleep(300)","timeout_s":300},'"$META"'}}')
jcheck "$out" 'r["result"]["resultType"] == "task" and r["result"]["status"] == "working"' "names: alice's task did not start"
A_TASK=$(jget "$out" 'r["result"]["taskId"]')
task_of() { # TOKEN: tasks/get of alice's task
    stateless "$1" tasks/get "$A_TASK" '{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"'"$A_TASK"'",'"$META"'}}'
}
jcheck "$(task_of "$TOK_A")" 'r["result"]["status"] == "working"' "names: alice cannot see her task"
wait_for 15 found active_run_units || fail "names: alice's task has no run unit"
bx rm -f /run/alice-sse.rc
bx sh -c "curl -sN --max-time 120 -H 'X-MCP-AUTH: $TOK_A' -H 'Accept: text/event-stream' $URL/sse >/dev/null 2>&1; echo \$? >/run/alice-sse.rc" &
SSE_PID=$!
at_exit "kill $SSE_PID 2>/dev/null"
sse_open() { local o; o=$(bx curl -s --max-time 10 -H "X-MCP-AUTH: $TOK_C" "$URL/metrics") && grep -q '^mcp_exec_http_streams [1-9]' <<<"$o"; }
wait_for 10 sse_open || fail "names: alice's /sse stream did not open"
n_sessions=$(session_units --state=active | wc -l)

# Reload: dave is added, alice removed, without a restart; whatever alice's token made ends
# (issue 37, item 8): her task (its run stopped), her 4 sandbox sessions, her MCP sessions and
# her stream, and the journal says so by name, never by token.
PID=$(pid_of)
[[ -n $PID && $PID != 0 ]] || fail "names: mcp-exec.service does not run"
dave_ok() { local o; o=$(iso clients 1 "$TOK_D") && [[ $(jget "$o" 'r["ok"]') == 1 ]]; }
dave_ok && fail "names: dave was served before he was added"
rcursor=$(journal_cursor)
write_tokens 0640 "bob $TOK_B" "carol $TOK_C" "dave $TOK_D"
bx systemctl reload mcp-exec.service || fail "names: systemctl reload mcp-exec.service failed"
wait_for 15 dave_ok || fail "names: an added token does not work after the reload"
[[ $(pid_of) == "$PID" ]] || fail "names: the reload restarted the service ($PID -> $(pid_of))"
st=$(bx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "X-MCP-AUTH: $TOK_A" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d '{}' "$URL/mcp")
[[ $st == 401 ]] || fail "names: a removed token got $st after the reload, want 401"
ended() {
    journal_since "$rcursor" -u mcp-exec.service -o verbose |
        awk '/MCP_HTTP_TOKEN_NAME=alice$/ { a = 1 } /MCP_ENDED_TASKS=1$/ { t = 1 } /MCP_ENDED_SANDBOX_SESSIONS=4$/ { s = 1 }
             /MCP_ENDED_STREAMS=[1-9]/ { st = 1 } END { exit !(a && t && s && st) }'
}
wait_for 10 ended || fail "names: the journal does not say what alice's revoked token ended:
$(journal_since "$rcursor" -u mcp-exec.service -o cat | tail -5)"
wait_for 30 bx test -s /run/alice-sse.rc || fail "names: alice's /sse stream is still open after the reload"
no_active_runs() { [[ -z $(active_run_units) ]]; }
wait_for 30 no_active_runs || fail "names: alice's task still runs after the reload: $(active_run_units)"
# Alice's 4 end; dave_ok made one of dave's.
fewer_sessions() { (($(session_units --state=active | wc -l) <= n_sessions - 4 + 1)); }
wait_for 30 fewer_sessions || fail "names: alice's sandbox sessions live on after the reload ($n_sessions before)"
# The name given again, with a new token, finds nothing of hers.
TOK_A2=tka2-$RANDOM$RANDOM$RANDOM$RANDOM
write_tokens 0640 "bob $TOK_B" "carol $TOK_C" "dave $TOK_D" "alice $TOK_A2"
bx systemctl reload mcp-exec.service || fail "names: the reload adding alice again failed"
alice2_ok() { local o; o=$(iso clients 1 "$TOK_A2") && [[ $(jget "$o" 'r["ok"]') == 1 ]]; }
wait_for 15 alice2_ok || fail "names: alice's new token does not work"
jcheck "$(task_of "$TOK_A2")" '"error" in r' "names: the name given again sees the old task"
out=$(iso call "$TOK_A2" "$A_SID" exec '{"code":"print(1)"}')
jcheck "$out" 'r["status"] == 404' "names: the name given again reached the old MCP session"
out=$(iso call "$TOK_A2" "$(jget "$(iso init "$TOK_A2")" 'r["sid"]')" exec "{\"code\":\"print(y)\",\"session\":\"$A_HANDLE\"}")
jcheck "$out" 'r["status"] == 200 and r["result"]["isError"]' "names: the name given again used the old sandbox session"
log "names: a revoked token's task, sandbox sessions, MCP sessions and stream ended; the name anew sees none"
# A file others may read is refused on reload; the old set stays.
write_tokens 0644 "bob $TOK_B"
bx systemctl reload mcp-exec.service || fail "names: the second reload failed"
refused() { journal_since "$cursor" -u mcp-exec.service -o cat | grep -q 'MCP_EXEC_AUTH_TOKENS_FILE=.*others may read'; }
wait_for 15 refused || fail "names: a world-readable tokens file was not refused on reload"
dave_ok || fail "names: a refused reload dropped the old tokens"
[[ $(pid_of) == "$PID" ]] || fail "names: the refused reload restarted the service"

# At the cap a caller's flood recycles its own empty sessions, not another name's.
write_tokens 0640 "bob $TOK_B" "dave $TOK_D"
fresh
out=$(iso init "$TOK_B")
jcheck "$out" 'r["status"] == 200' "names: bob cannot initialize"
B1=$(jget "$out" 'r["sid"]')
out=$(iso init-flood "$TOK_D" 20)
jcheck "$out" 'r["200"] == 20' "names: dave's initializes at the cap were not served"
out=$(iso call "$TOK_B" "$B1" exec '{"code":"print(1)"}')
jcheck "$out" 'r["status"] == 200' "names: dave's flood ended bob's session instead of one of dave's"
# Streams cannot be recycled: with more than one name, one name holds at most half of the
# sessions (4 of 8), so its held streams leave bob room.
fresh
out=$(iso hold-sse "$TOK_D" 8 "$TOK_B")
log "names: dave holding streams: $out"
jcheck "$out" 'r["200"] == 4 and r["503"] == 4 and r["503_no_retry"] == 0' \
    "names: one name held more than half of the sessions with streams"
jcheck "$out" 'r["other_status"] == 200' "names: dave's held streams locked bob out"

# Names, never tokens.
metrics=$(bx curl -s --max-time 10 -H "X-MCP-AUTH: $TOK_D" "$URL/metrics")
grep -q 'caller="dave"' <<<"$metrics" || fail "names: /metrics has no caller=\"dave\" after the reload"
show=$(bx systemctl show mcp-exec.service)
journal=$(journal_since "$cursor" -o verbose)
for t in "$TOKEN" "$TOK_A" "$TOK_B" "$TOK_C" "$TOK_D"; do
    for where in metrics show journal; do
        grep -qF -- "$t" <<<"${!where}" && fail "names: a token is in $where"
    done
done
log "names: ok"

bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1
pass
