#!/usr/bin/env bash
# Attacks on stateful sessions (issue 14), with real clients against the real units
# (tests/clients/sessions.mjs). After each part: no session unit is left and the service answers.
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
#   broker     SIGKILL of the broker with live sessions (stdio and HTTP): no session unit is
#              left, the old handles are "not found", new sessions work
#   frontend   SIGKILL of the stdio front end, and of the HTTP front end, with a live session:
#              the same
#   reload     systemctl daemon-reload with a live session: it keeps its state, and no unit is
#              left after session_close
#   idle       MCP_EXEC_SESSION_IDLE_S=10: a call resets the clock; 10 s after the last call the
#              unit is gone and the handle "not found"
# Note: the deliberate SIGKILL of the broker is announced in the journal first
# (MCP_TEST_DELIBERATE_KILL), as test-fault-broker-kill does, for tests/run's crash check.
. "$(dirname "$0")/../lib/itest.sh"
. "$ITEST_DIR/clients/lib.sh"

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM

. "$ITEST_DIR/lib/http.sh"
at_exit 'bx rm -f /etc/credstore/mcp-exec.auth-token'
bx sh -c "mkdir -p /etc/credstore && umask 077 && printf '%s\n' '$TOKEN' >/etc/credstore/mcp-exec.auth-token"
at_exit stop_frontend
at_exit "bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1"

# fresh [CONFIG...]: the broker with this configuration and front ends that learnt it; nothing
# of an earlier part left.
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

# scall stdio|http TOOL ARGS: one tools/call through sessions.mjs (v1 SDK over stdio as root, or
# the v2 client stateless over HTTP with the token); the CallToolResult (JSON) on stdout.
scall() { cnode sessions.mjs call "$1" "$2" "$3" "$URL" "$TOKEN"; }
# as_alice CMD...: CMD in the box as mcpalice.
as_alice() { bx setpriv --reuid=mcpalice --regid=mcpalice --init-groups -- "$@"; }
acall() {
    as_alice env HOME="$BDIR/alice" MCP_TEST_STATE="$BDIR/alice" NODE_OPTIONS=--unhandled-rejections=strict \
        "$NODE" "$CLIENTS/sessions.mjs" call stdio "$1" "$2"
}
exec_args() { printf '{"code":"%s","session":"%s"}' "$1" "$2"; }
GONE='r.get("isError") is True and r["content"][0]["text"].startswith("session not found")'
handle_of() { jget "$1" 'r["structuredContent"]["session"]'; }
# stdout_is JSON TEXT: the exec result's stdout is TEXT (and it is no error).
stdout_is() { jcheck "$1" "r.get(\"isError\") is False and r[\"structuredContent\"][\"stdout\"] == \"$2\\n\"" "${3:-stdout}"; }

# broker_info: the broker's {"op":"info"} reply (JSON).
broker_info() {
    bx python3 -c '
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect("/run/mcp-exec/broker.sock")
s.send(b"{\"op\":\"info\"}")
print(s.recv(65536).decode())'
}
broker_sessions() { jget "$(broker_info)" 'r["sessions"]'; }

# after PART: no session unit, nothing of a dynamic uid, and the service answers (stdio and HTTP).
after() {
    local out
    wait_for 15 no_session_units || fail "$1: session units left: $(session_units --all)"
    assert_clean 15
    out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) && [[ $out == 42 ]] ||
        fail "$1: mcp-exec run afterwards: $out"
    out=$(scall http exec '{"code":"print(6*7)"}') || fail "$1: a stateless exec over HTTP failed: $out"
    stdout_is "$out" 42 "$1: a stateless exec over HTTP afterwards"
    log "$1: ok, no session unit left, the service answers"
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
out=$(acall exec "$(exec_args 'x = 41' "$ha")") && jcheck "$out" 'r.get("isError") is False' "uid: alice's x = 41"
out=$(scall stdio exec "$(exec_args 'print(x)' "$ha")") && jcheck "$out" "$GONE" "uid: root over stdio with alice's handle"
out=$(scall stdio session_close "{\"session\":\"$ha\"}") && jcheck "$out" "$GONE" "uid: root closing alice's handle"
out=$(scall http exec "$(exec_args 'print(x)' "$ha")") && jcheck "$out" "$GONE" "uid: HTTP with alice's handle"
out=$(scall stdio session_create '{}') || fail "uid: root's session_create: $out"
hr=$(handle_of "$out")
out=$(acall exec "$(exec_args 'print(1)' "$hr")") && jcheck "$out" "$GONE" "uid: alice with root's handle"
out=$(acall exec "$(exec_args 'print(x + 1)' "$ha")") && stdout_is "$out" 42 "uid: alice's session after the others tried it"
out=$(acall session_close "{\"session\":\"$ha\"}") && jcheck "$out" 'r["structuredContent"]["closed"] is True' "uid: alice closes"
out=$(scall stdio session_close "{\"session\":\"$hr\"}") && jcheck "$out" 'r["structuredContent"]["closed"] is True' "uid: root closes"
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
out=$(acall session_create '{}') && jcheck "$out" 'r.get("isError") is True and r["content"][0]["text"].startswith("no new session") and "(MCP_EXEC_MAX_SESSIONS)" in r["content"][0]["text"]' \
    "flood: a third caller at the global cap"
cnode sessions.mjs close-flood "$URL" "$TOKEN" || fail "flood: closing"
wait_for 15 no_session_units || fail "flood: session units left after closing: $(session_units --all)"
[[ $(broker_sessions) == 0 ]] || fail "flood: the broker counts $(broker_sessions) sessions after closing, want 0"
out=$(scall stdio session_create '{}') || fail "flood: a session after the flood: $out"
h=$(handle_of "$out")
out=$(scall stdio session_close "{\"session\":\"$h\"}") && jcheck "$out" 'r["structuredContent"]["closed"] is True' "flood: close"
log "flood: broker RSS ${rss0} kB before, $(broker_rss) kB after"
after flood

# --- cases ---------------------------------------------------------------------------------------
log "== cases"
fresh
cnode sessions.mjs cases || fail "cases"
after cases

# --- broker --------------------------------------------------------------------------------------
log "== broker"
broker_pid() { bx systemctl show -P MainPID mcp-exec-broker.service 2>/dev/null; }
gone_in_box() { ! bx kill -0 "$1" 2>/dev/null; }
# live_sessions: two over stdio, one over HTTP, each with x = 41; the handles in H_STDIO, H_HTTP.
live_sessions() {
    local out h
    H_STDIO=() H_HTTP=()
    for t in stdio stdio http; do
        out=$(scall $t session_create '{}') || fail "$1: session_create over $t: $out"
        h=$(handle_of "$out")
        out=$(scall $t exec "$(exec_args 'x = 41' "$h")") && jcheck "$out" 'r.get("isError") is False' "$1: x = 41"
        if [[ $t == stdio ]]; then H_STDIO+=("$h"); else H_HTTP+=("$h"); fi
    done
    n=$(session_units --state=active | wc -l)
    ((n == 3)) || fail "$1: $n active session units, want 3: $(session_units --all)"
}
old_handles_gone() {
    local h out
    for h in "${H_STDIO[@]}"; do
        out=$(scall stdio exec "$(exec_args 'print(x)' "$h")") && jcheck "$out" "$GONE" "$1: an old stdio handle"
    done
    for h in ${H_HTTP[@]+"${H_HTTP[@]}"}; do
        out=$(scall http exec "$(exec_args 'print(x)' "$h")") && jcheck "$out" "$GONE" "$1: an old HTTP handle"
    done
}
new_session_works() {
    local out h
    out=$(scall stdio session_create '{}') || fail "$1: a new session: $out"
    h=$(handle_of "$out")
    out=$(scall stdio exec "$(exec_args 'x = 41; print(x + 1)' "$h")") && stdout_is "$out" 42 "$1: a new session"
    out=$(scall stdio session_close "{\"session\":\"$h\"}") && jcheck "$out" 'r["structuredContent"]["closed"] is True' "$1: close"
}
live_sessions broker
unit=$(session_units | head -1)
bt=$(bx systemctl show -P BindsTo "$unit")
[[ $bt == *mcp-exec-broker.service* ]] || fail "broker: $unit is not bound to the broker: BindsTo=$bt"
pid=$(broker_pid)
[[ -n $pid && $pid != 0 ]] || fail "broker: no broker process"
bx systemd-cat -t mcp-exec-tests sh -c "echo 'MCP_TEST_DELIBERATE_KILL=mcp-exec-broker.service pid $pid ($ITEST_NAME)'" 2>/dev/null
log "broker: SIGKILL to the broker (pid $pid) with 3 live sessions"
bx kill -KILL "$pid" || fail "broker: cannot kill the broker"
wait_for 10 gone_in_box "$pid" || fail "broker: the broker survived SIGKILL"
wait_for 15 no_session_units || fail "broker: session units left 15 s after the broker died: $(session_units --all)"
old_handles_gone broker
new_session_works broker
after broker

# --- frontend ------------------------------------------------------------------------------------
log "== frontend"
# kill_service UNIT: SIGKILL its main process (mcp-execd).
kill_service() {
    local pid
    pid=$(bx systemctl show -P MainPID "$1")
    [[ -n $pid && $pid != 0 && $(bx cat "/proc/$pid/comm" 2>/dev/null) == mcp-execd ]] ||
        fail "frontend: $1 has no mcp-execd main process ($pid)"
    log "frontend: SIGKILL to $1 (pid $pid)"
    bx kill -KILL "$pid" || fail "frontend: cannot kill $1"
    wait_for 10 gone_in_box "$pid" || fail "frontend: $1 survived SIGKILL"
    bx sh -c 'systemctl reset-failed "$1" 2>/dev/null; systemctl start mcp-exec-stdio.socket mcp-exec.socket' sh "$1"
}
live_sessions frontend-stdio
kill_service mcp-exec-stdio.service
# The HTTP session lives on: only the stdio ones go.
one_session_unit() { [[ $(session_units | wc -l) -eq 1 ]]; }
wait_for 15 one_session_unit ||
    fail "frontend-stdio: the stdio sessions outlived their front end: $(session_units --all)"
old_stdio=("${H_STDIO[@]}")
H_HTTP_LIVE=("${H_HTTP[@]}")
H_HTTP=()
old_handles_gone frontend-stdio
out=$(scall http exec "$(exec_args 'print(x + 1)' "${H_HTTP_LIVE[0]}")") && stdout_is "$out" 42 "frontend-stdio: the HTTP session"
kill_service mcp-exec.service
wait_for 15 no_session_units || fail "frontend-http: the HTTP session outlived its front end: $(session_units --all)"
H_STDIO=() H_HTTP=("${H_HTTP_LIVE[@]}")
old_handles_gone frontend-http
new_session_works frontend
after frontend

# --- reload --------------------------------------------------------------------------------------
log "== reload"
out=$(scall stdio session_create '{}') || fail "reload: session_create: $out"
h=$(handle_of "$out")
out=$(scall stdio exec "$(exec_args 'x = 41' "$h")") && jcheck "$out" 'r.get("isError") is False' "reload: x = 41"
bx systemctl daemon-reload || fail "reload: daemon-reload failed"
out=$(scall stdio exec "$(exec_args 'print(x + 1)' "$h")")
if jget "$out" 'r.get("isError") is True' | grep -q true; then
    jcheck "$out" "$GONE" "reload: after daemon-reload the session works or is gone"
    log "reload: the session is gone after daemon-reload"
else
    stdout_is "$out" 42 "reload: the session after daemon-reload"
    log "reload: the session kept its state across daemon-reload"
    out=$(scall stdio session_close "{\"session\":\"$h\"}") && jcheck "$out" 'r["structuredContent"]["closed"] is True' "reload: close"
fi
after reload

# --- idle ----------------------------------------------------------------------------------------
log "== idle"
fresh MCP_EXEC_SESSION_IDLE_S=10
out=$(scall stdio session_create '{}') || fail "idle: session_create: $out"
jcheck "$out" 'r["structuredContent"]["idle_timeout_s"] == 10' "idle: idle_timeout_s"
h=$(handle_of "$out")
out=$(scall stdio exec "$(exec_args 'x = 41' "$h")") && jcheck "$out" 'r.get("isError") is False' "idle: x = 41"
sleep 6
out=$(scall stdio exec "$(exec_args 'print(x + 1)' "$h")") && stdout_is "$out" 42 "idle: a call 6 s later"
t0=$SECONDS
[[ -n $(session_units) ]] || fail "idle: the unit went before its idle time"
wait_for 30 no_session_units || fail "idle: the unit is still there $((SECONDS - t0)) s after the last call"
((SECONDS - t0 >= 8)) || fail "idle: the unit went $((SECONDS - t0)) s after the last call, before its idle time"
log "idle: the unit went $((SECONDS - t0)) s after the last call"
out=$(scall stdio exec "$(exec_args 'print(x)' "$h")") && jcheck "$out" "$GONE" "idle: the handle after expiry"
after idle

pass
