#!/usr/bin/env bash
# Attacks on stateful sessions (issue 14), with real clients against the real units
# (tests/node-clients/sessions.mjs). After each part: no session unit is left and the service answers.
# (Faults, restarts and expiry with live sessions: test-sessions-faults.)
#   guess      guessed and malformed handles (random hex of our node, another node's prefix, the
#              live id in other shapes, garbage) answer "session not found", never the live
#              session of the same caller
#   uid        a second uid over stdio (mcpalice, allowed by polkit): her handle is "not found"
#              for root over stdio and over HTTP, and root's for her; her session is untouched
#   scopes     another MCP session's handle over HTTP (a second Mcp-Session-Id, SSE, stateless) is
#              "not found"; DELETE and the end of an SSE stream close their sandbox sessions
#   flood      1,000 session_create calls from two callers (uid 0 over stdio, the token over
#              HTTP) with MCP_EXEC_MAX_SESSIONS=6: at most 4 per caller, 6 in all, a third caller
#              is refused too; the broker counts 6; after closing them no unit is left, the
#              broker counts 0 and a new session starts
#   cases      memory growth to OOM, a fork bomb, a thread printing forever, os.close(1),
#              os._exit mid-call and from a thread, a timeout, SIGINT ignored, a busy session, a
#              forked child that returns into the session
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/sessions.sh"

# as_alice CMD...: CMD in the box as mcpalice; acall TOOL ARGS: her tools/call over stdio.
as_alice() { bx setpriv --reuid=mcpalice --regid=mcpalice --init-groups -- "$@"; }
acall() {
    as_alice env HOME="$BDIR/alice" MCP_TEST_STATE="$BDIR/alice" NODE_OPTIONS=--unhandled-rejections=strict \
        "$NODE" "$CLIENTS/sessions.mjs" call stdio "$1" "$2"
}

fresh
after setup

# --- guess ---------------------------------------------------------------------------------------
log "== guess"
cnode sessions.mjs guess || fail "guess"
after guess

# --- uid -----------------------------------------------------------------------------------------
log "== uid"
bx sh -ec '
    id -u mcpalice >/dev/null 2>&1 || useradd --no-create-home --user-group --shell /usr/sbin/nologin mcpalice
    usermod -a -G mcp-exec-users mcpalice' || fail "uid: cannot create mcpalice"
mkdir -p "$HDIR/alice" && chmod 0777 "$HDIR/alice"
out=$(acall session_create '{}') || fail "uid: alice's session_create: $out"
ha=$(handle_of "$out")
out=$(acall exec "$(exec_args 'x = 41' "$ha")") || fail "the client failed: $out"
jcheck "$out" 'r.get("isError") is False' "uid: alice's x = 41"
out=$(scall stdio exec "$(exec_args 'print(x)' "$ha")") || fail "the client failed: $out"
jcheck "$out" "$GONE" "uid: root over stdio with alice's handle"
out=$(scall stdio session_close "{\"session\":\"$ha\"}") || fail "the client failed: $out"
jcheck "$out" "$GONE" "uid: root closing alice's handle"
out=$(scall http exec "$(exec_args 'print(x)' "$ha")") || fail "the client failed: $out"
jcheck "$out" "$GONE" "uid: HTTP with alice's handle"
out=$(scall stdio session_create '{}') || fail "uid: root's session_create: $out"
hr=$(handle_of "$out")
out=$(acall exec "$(exec_args 'print(1)' "$hr")") || fail "the client failed: $out"
jcheck "$out" "$GONE" "uid: alice with root's handle"
out=$(acall exec "$(exec_args 'print(x + 1)' "$ha")") || fail "the client failed: $out"
stdout_is "$out" 42 "uid: alice's session after the others tried it"
out=$(acall session_close "{\"session\":\"$ha\"}") || fail "the client failed: $out"
jcheck "$out" 'r["structuredContent"]["closed"] is True' "uid: alice closes"
out=$(scall stdio session_close "{\"session\":\"$hr\"}") || fail "the client failed: $out"
jcheck "$out" 'r["structuredContent"]["closed"] is True' "uid: root closes"
after uid

# --- scopes --------------------------------------------------------------------------------------
log "== scopes"
cnode sessions.mjs scopes "$URL" "$TOKEN" || fail "scopes"
after scopes

# --- flood ---------------------------------------------------------------------------------------
log "== flood"
fresh MCP_EXEC_MAX_SESSIONS=6 MCP_EXEC_MAX_SESSIONS_PER_CALLER=4
broker_rss() { bx ps -o rss= -p "$(bx systemctl show -P MainPID mcp-exec-broker.service)" | tr -d ' '; }
scall stdio exec '{"code":"pass"}' >/dev/null # the broker is up
rss0=$(broker_rss)
cnode sessions.mjs flood 1000 "$URL" "$TOKEN" || fail "flood"
flood=$(cat "$HDIR/flood.json")
log "flood: $flood"
jcheck "$flood" 'len(r["made"]["stdio"]) <= 4 and len(r["made"]["http"]) <= 4 and len(r["made"]["stdio"]) + len(r["made"]["http"]) == 6' \
    "flood: the caps (4 per caller, 6 in all) do not hold"
jcheck "$flood" 'all("MCP_EXEC_MAX_SESSIONS" in t for t in r["texts"]) and r["texts"]' "flood: the refusals do not name the cap"
n=$(session_units | wc -l)
((n == 6)) || fail "flood: $n session units at the cap, want 6: $(session_units --all)"
[[ $(broker_sessions) == 6 ]] || fail "flood: the broker counts $(broker_sessions) sessions, want 6"
out=$(acall session_create '{}') || fail "the client failed: $out"
jcheck "$out" 'r.get("isError") is True and r["content"][0]["text"].startswith("no new session") and "(MCP_EXEC_MAX_SESSIONS)" in r["content"][0]["text"]' \
    "flood: a third caller at the global cap"
cnode sessions.mjs close-flood "$URL" "$TOKEN" || fail "flood: closing"
wait_for 15 no_session_units || fail "flood: session units left after closing: $(session_units --all)"
[[ $(broker_sessions) == 0 ]] || fail "flood: the broker counts $(broker_sessions) sessions after closing, want 0"
out=$(scall stdio session_create '{}') || fail "flood: a session after the flood: $out"
h=$(handle_of "$out")
out=$(scall stdio session_close "{\"session\":\"$h\"}") || fail "the client failed: $out"
jcheck "$out" 'r["structuredContent"]["closed"] is True' "flood: close"
log "flood: broker RSS ${rss0} kB before, $(broker_rss) kB after"
after flood

# --- cases ---------------------------------------------------------------------------------------
log "== cases"
fresh
cnode sessions.mjs cases || fail "cases"
after cases

pass
