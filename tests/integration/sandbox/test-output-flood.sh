#!/usr/bin/env bash
# Output flood: 50 MB on stdout ends with truncated true and at most the limit kept; the broker
# (and the client, which does the capturing) stay small while it happens.
. "$(dirname "$0")/../../lib/itest.sh"

BROKER_MAX=$((64 << 20))
CLIENT_MAX=$((64 << 20))
if [[ -n ${MCP_TEST_SANITIZE-} ]]; then
    # ASan's shadow memory and quarantine inflate RSS; still bounded, far below 50 MB + copies.
    BROKER_MAX=$((128 << 20))
    CLIENT_MAX=$((192 << 20))
fi

# The code stays alive a little after the flood, so the peaks (VmHWM) can be read.
code='import sys, time
chunk = "x" * (1 << 20)
for i in range(50):
    sys.stdout.write(chunk)
sys.stdout.flush()
time.sleep(2)
'
check() { # LIMIT_OPT EXPECTED_LIMIT
    local opt=$1 limit=$2 f client rc out broker_rss=0 broker_mem=0 client_hwm=0 pid v
    f=$(printf '%s' "$code" | put "flood.py")
    bx mcp-exec-broker-call --timeout 60 $opt "$f" >"$HDIR/out" 2>"$HDIR/err" &
    client=$!
    while kill -0 "$client" 2>/dev/null; do
        v=$(bx systemctl show -P MemoryCurrent mcp-exec-broker.service 2>/dev/null)
        [[ $v =~ ^[0-9]+$ ]] && ((v > broker_mem)) && broker_mem=$v
        pid=$(bx systemctl show -P MainPID mcp-exec-broker.service 2>/dev/null)
        if [[ $pid =~ ^[1-9][0-9]*$ ]]; then
            v=$(bx awk '/^VmHWM:/ { print $2 * 1024 }' "/proc/$pid/status" 2>/dev/null)
            [[ $v =~ ^[0-9]+$ ]] && ((v > broker_rss)) && broker_rss=$v
        fi
        v=$(bx sh -c 'for p in $(pidof mcp-exec-broker-call); do awk "/^VmHWM:/ { print \$2 * 1024 }" /proc/$p/status; done' 2>/dev/null | sort -n | tail -1)
        [[ $v =~ ^[0-9]+$ ]] && ((v > client_hwm)) && client_hwm=$v
        sleep 0.1
    done
    wait "$client"
    rc=$?
    out=$(cat "$HDIR/out")
    log "limit $limit: broker MemoryCurrent max $broker_mem, broker VmHWM $broker_rss, client VmHWM $client_hwm"
    ((rc == 0)) || fail "broker-call failed ($rc): $(head -c 1000 <<<"$out") $(head -c 2000 "$HDIR/err")"
    jcheck "$out" '"error" not in r and not r["timed_out"]' "the run produced no result"
    jcheck "$out" 'r["truncated"] is True' "truncated is not true"
    jcheck "$out" "0 < len(r['stdout'].encode()) + len(r['stderr'].encode()) <= $limit" "more output kept than the limit $limit"
    jcheck "$out" "set(r['stdout']) == {'x'}" "stdout is not what was written"
    ((broker_rss > 0 || broker_mem > 0)) || fail "could not measure the broker's memory"
    ((broker_rss < BROKER_MAX)) || fail "broker peak RSS $broker_rss >= $BROKER_MAX"
    ((broker_mem < BROKER_MAX)) || fail "broker MemoryCurrent $broker_mem >= $BROKER_MAX"
    ((client_hwm < CLIENT_MAX)) || fail "client peak RSS $client_hwm >= $CLIENT_MAX"
}
check "" $((1 << 20))        # broker-call's default, 1 MiB
check "--max-output 100000" 100000
assert_clean 10
assert_runs_work
pass
