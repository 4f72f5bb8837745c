#!/usr/bin/env bash
# Stateful sessions (issue 14) through faults, restarts and expiry, with real clients against the
# real units (tests/node-clients/sessions.mjs). After each part: no session unit is left and the
# service answers. (Attacks by callers: test-sessions-attacks.)
#   broker     SIGKILL of the broker with live sessions (stdio and HTTP): no session unit is
#              left, the old handles are "not found", new sessions work
#   frontend   SIGKILL of the stdio front end, and of the HTTP front end, with a live session:
#              the same
#   reload     systemctl daemon-reload, then daemon-reexec, with a live session: it keeps its
#              state (systemd keeps transient units across both), and no unit is left after
#              session_close
#   idle       MCP_EXEC_SESSION_IDLE_S=10: a call resets the clock; 10 s after the last call the
#              unit is gone and the handle "not found"
# Note: the deliberate SIGKILL of the broker is announced in the journal first
# (MCP_TEST_DELIBERATE_KILL), as test-fault-broker-kill does, for tests/run's crash check.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/sessions.sh"

fresh
after setup

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
        out=$(scall $t exec "$(exec_args 'x = 41' "$h")") || fail "the client failed: $out"
        jcheck "$out" 'r.get("isError") is False' "$1: x = 41"
        if [[ $t == stdio ]]; then H_STDIO+=("$h"); else H_HTTP+=("$h"); fi
    done
    n=$(session_units --state=active | wc -l)
    ((n == 3)) || fail "$1: $n active session units, want 3: $(session_units --all)"
}
old_handles_gone() {
    local h out
    for h in "${H_STDIO[@]}"; do
        out=$(scall stdio exec "$(exec_args 'print(x)' "$h")") || fail "the client failed: $out"
        jcheck "$out" "$GONE" "$1: an old stdio handle"
    done
    for h in ${H_HTTP[@]+"${H_HTTP[@]}"}; do
        out=$(scall http exec "$(exec_args 'print(x)' "$h")") || fail "the client failed: $out"
        jcheck "$out" "$GONE" "$1: an old HTTP handle"
    done
}
new_session_works() {
    local out h
    out=$(scall stdio session_create '{}') || fail "$1: a new session: $out"
    h=$(handle_of "$out")
    out=$(scall stdio exec "$(exec_args 'x = 41; print(x + 1)' "$h")") || fail "the client failed: $out"
    stdout_is "$out" 42 "$1: a new session"
    out=$(scall stdio session_close "{\"session\":\"$h\"}") || fail "the client failed: $out"
    jcheck "$out" 'r["structuredContent"]["closed"] is True' "$1: close"
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
out=$(scall http exec "$(exec_args 'print(x + 1)' "${H_HTTP_LIVE[0]}")") || fail "the client failed: $out"
stdout_is "$out" 42 "frontend-stdio: the HTTP session"
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
out=$(scall stdio exec "$(exec_args 'x = 41' "$h")") || fail "the client failed: $out"
jcheck "$out" 'r.get("isError") is False' "reload: x = 41"
bx systemctl daemon-reload || fail "reload: daemon-reload failed"
# systemd keeps a transient unit across a reload, and the broker its record: the session goes on.
out=$(scall stdio exec "$(exec_args 'print(x + 1)' "$h")") || fail "the client failed: $out"
stdout_is "$out" 42 "reload: the session after daemon-reload"
# The same across a re-execution of systemd (its transient units are serialized with it).
bx systemctl daemon-reexec || fail "reload: daemon-reexec failed"
wait_for 30 bx systemctl is-system-running --quiet || true
out=$(scall stdio exec "$(exec_args 'x += 1\nprint(x + 1)' "$h")") || fail "the client failed: $out"
stdout_is "$out" 43 "reload: the session after daemon-reexec"
out=$(scall stdio session_close "{\"session\":\"$h\"}") || fail "the client failed: $out"
jcheck "$out" 'r["structuredContent"]["closed"] is True' "reload: close"
after reload

# --- idle ----------------------------------------------------------------------------------------
log "== idle"
fresh MCP_EXEC_SESSION_IDLE_S=10
out=$(scall stdio session_create '{}') || fail "idle: session_create: $out"
jcheck "$out" 'r["structuredContent"]["idle_timeout_s"] == 10' "idle: idle_timeout_s"
h=$(handle_of "$out")
out=$(scall stdio exec "$(exec_args 'x = 41' "$h")") || fail "the client failed: $out"
jcheck "$out" 'r.get("isError") is False' "idle: x = 41"
sleep 6
out=$(scall stdio exec "$(exec_args 'print(x + 1)' "$h")") || fail "the client failed: $out"
stdout_is "$out" 42 "idle: a call 6 s later"
t0=$SECONDS
[[ -n $(session_units) ]] || fail "idle: the unit went before its idle time"
wait_for 30 no_session_units || fail "idle: the unit is still there $((SECONDS - t0)) s after the last call"
((SECONDS - t0 >= 8)) || fail "idle: the unit went $((SECONDS - t0)) s after the last call, before its idle time"
log "idle: the unit went $((SECONDS - t0)) s after the last call"
out=$(scall stdio exec "$(exec_args 'print(x)' "$h")") || fail "the client failed: $out"
jcheck "$out" "$GONE" "idle: the handle after expiry"
after idle

pass
