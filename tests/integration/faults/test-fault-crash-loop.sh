#!/usr/bin/env bash
# Fault: each daemon crashes again and again, faster than systemd's default start limit allows
# (5 starts in 10 s). A crash must never be a lasting outage: after 8 crashes within a few seconds,
# with no admin action (no reset-failed, no start), its socket still listens and the next
# request is served by a new instance.
#   http    mcp-exec.service: a GET /healthz starts it, SIGKILL, 8 times; then a stateless
#           tools/call over HTTP works.
#   stdio   mcp-exec-stdio.service: a connection to its socket starts it, SIGKILL, 8 times; then
#           `mcp-exec run` works.
#   broker  mcp-exec-broker.service: the same with the broker's socket (each SIGKILL announced as
#           tests/run's crash check wants: MCP_TEST_DELIBERATE_KILL).
# On the default start limit the sixth start in ten seconds is refused and the socket is left
# failed ("service-start-limit-hit"): the units set StartLimitIntervalSec=0.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/http.sh"

ROUNDS=8
at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
# Whatever happens, leave the sockets listening for the tests after this one.
at_exit "bx sh -c 'systemctl reset-failed mcp-exec.service mcp-exec-stdio.service mcp-exec-broker.service \
    mcp-exec.socket mcp-exec-stdio.socket mcp-exec-broker.socket; systemctl start mcp-exec-stdio.socket \
    mcp-exec-broker.socket' >/dev/null 2>&1"
restart_http

# crash_loop SERVICE SOCKET TRIGGER...: ROUNDS times, TRIGGER (a command in the box) makes the
# socket start SERVICE, whose main process is then SIGKILLed; the socket must never be failed.
# The loop runs inside the box in one script: a round takes well under a second, so the default
# start limit (5 in 10 s) would be passed several times over.
CRASH_LOOP='svc=$1 rounds=$2 prev=; shift 2
for i in $(seq "$rounds"); do
    "$@" >/dev/null 2>&1 &
    trig=$!
    for t in $(seq 100); do
        pid=$(systemctl show -P MainPID "$svc")
        [ "$pid" != 0 ] && [ -n "$pid" ] && [ "$pid" != "$prev" ] && break
        sleep 0.1
    done
    if [ "$pid" = 0 ] || [ -z "$pid" ] || [ "$pid" = "$prev" ]; then
        echo "round $i: not started"; kill $trig 2>/dev/null; exit 1
    fi
    prev=$pid
    echo "MCP_TEST_DELIBERATE_KILL=$svc pid $pid (test-fault-crash-loop)" | systemd-cat -t mcp-exec-tests
    kill -KILL "$pid"
    for t in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill $trig 2>/dev/null; wait $trig 2>/dev/null
done
exit 0'
crash_loop() {
    local svc=$1 sock=$2 t0=$SECONDS out
    shift 2
    out=$(bx sh -c "$CRASH_LOOP" sh "$svc" "$ROUNDS" "$@" 2>&1) ||
        fail "$svc: $out ($sock: $(bx systemctl show -P ActiveState,Result "$sock" | tr '\n' ' '))"
    log "$svc: $ROUNDS crashes in $((SECONDS - t0)) s; $(bx systemctl show -P NRestarts "$svc") restarts by systemd"
    local state result
    state=$(bx systemctl show -P ActiveState "$sock")
    result=$(bx systemctl show -P Result "$sock")
    log "$sock after the crashes: $state ($result)"
    [[ $state == active ]] || fail "$sock is $state ($result) after $ROUNDS crashes: an outage until an admin acts"
}

HTTP_CALL='curl -s -m 60 http://127.0.0.1:8080/mcp -H "Content-Type: application/json"
    -H "Accept: application/json, text/event-stream" -H "MCP-Protocol-Version: 2026-07-28"
    -H "Mcp-Method: tools/call" -H "Mcp-Name: exec"'
http_call() {
    bx sh -c "$(tr '\n' ' ' <<<"$HTTP_CALL")"' -d "$1"' sh \
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6*7)"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
}

log "== http"
crash_loop mcp-exec.service mcp-exec.socket curl -s -m 20 http://127.0.0.1:8080/healthz
out=$(http_call) || fail "http: the call after the crashes failed: $out"
jcheck "$out" 'r["result"]["structuredContent"]["stdout"] == "42\n"' "http: the call after the crashes"

# CONNECT PATH TYPE (python): a connection held for a few seconds, which starts the service.
CONNECT='import socket, sys, time
s = socket.socket(socket.AF_UNIX, getattr(socket, sys.argv[2]))
s.connect(sys.argv[1])
time.sleep(5)'

log "== stdio"
crash_loop mcp-exec-stdio.service mcp-exec-stdio.socket timeout 10 python3 -c "$CONNECT" /run/mcp-exec/stdio.sock SOCK_STREAM
assert_clean 20
out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) || fail "stdio: the run after the crashes failed: $out"
[[ $out == 42 ]] || fail "stdio: the run after the crashes printed: $out"

log "== broker"
crash_loop mcp-exec-broker.service mcp-exec-broker.socket timeout 10 python3 -c "$CONNECT" /run/mcp-exec/broker.sock SOCK_SEQPACKET
assert_clean 20
out=$(printf 'print(6*7)\n' | bx timeout 60 mcp-exec run 2>&1) || fail "broker: the run after the crashes failed: $out"
[[ $out == 42 ]] || fail "broker: the run after the crashes printed: $out"

pass
