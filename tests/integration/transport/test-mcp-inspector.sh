#!/usr/bin/env bash
# The MCP Inspector CLI (@modelcontextprotocol/inspector, `mcp-inspector --cli ... -- mcp-exec
# stdio`), a real MCP client, against the installed server: tools/list, tools/call with
# --tool-args-json (a result, a tool error: exit 5), the --strict tool-schema lint (exit 0),
# a load run (--load --load-requests 20 --load-concurrency 4) without errors, and the modern
# (2026-07-28) and auto protocol eras.
# Plain pass only: its calls (tools/list, tools/call, argument errors, 4 at once, both eras) are
# those test-mcp-sdk-v1, test-mcp-client-v2 and test-mcp-revisions make to the sanitized build;
# the --strict lint reads the same tools/list in both builds.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

failed=()

# check NAME JSON EXPR: the Python expression EXPR holds for r = the parsed JSON.
check() {
    local name=$1 json=$2 expr=$3 out
    if out=$("$PY" -c '
import json, sys
r = json.loads(sys.stdin.read())
ok = eval(sys.argv[1], {"r": r, "json": json})
sys.exit(0 if ok else 1)' "$expr" 2>&1 <<<"$json"); then
        return 0
    fi
    log "FAIL $name: $expr does not hold${out:+ ($out)} for: $(head -c 2000 <<<"$json")"
    failed+=("$name")
    return 1
}

# insp NAME WANT-EXIT ARGS...: run the inspector, stdout to $out, stderr to $err; check its exit.
insp() {
    local name=$1 want=$2 rc
    shift 2
    out=$(inspector "$@" -- mcp-exec stdio 2>"$HDIR/err")
    rc=$?
    err=$(cat "$HDIR/err")
    if ((rc != want)); then
        log "FAIL $name: mcp-inspector exited $rc, expected $want; stdout: $(head -c 1500 <<<"$out"); stderr: $(head -c 1500 <<<"$err")"
        failed+=("$name")
        return 1
    fi
    log "ok $name (exit $rc)"
}

if insp tools/list 0 --method tools/list --format json -q; then
    check tools/list "$out" '[t["name"] for t in r["result"]["tools"]] == ["exec", "session_create", "session_close"]'
    check tools/list-annotations "$out" 'r["result"]["tools"][0]["annotations"] == {**r["result"]["tools"][0]["annotations"], "readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}'
    check tools/list-schemas "$out" 'r["result"]["tools"][0]["inputSchema"]["required"] == ["code"] and r["result"]["tools"][0]["outputSchema"]["type"] == "object"'
fi

if insp tools/call 0 --method tools/call --tool-name exec --tool-args-json '{"code":"print(6*7)"}' --format json -q; then
    check tools/call "$out" 'r["result"]["isError"] is False and r["result"]["structuredContent"]["stdout"] == "42\n" and r["result"]["structuredContent"]["exit_code"] == 0'
    check tools/call-text "$out" 'json.loads(r["result"]["content"][0]["text"]) == r["result"]["structuredContent"]'
fi

if insp tools/call-stdin 0 --method tools/call --tool-name exec \
    --tool-args-json '{"code":"import sys; print(sys.stdin.read()[::-1])","stdin":"olleh","timeout_s":10}' --format json -q; then
    check tools/call-stdin "$out" 'r["result"]["structuredContent"]["stdout"] == "hello\n"'
fi

# A non-zero exit is a result (exit 0); invalid arguments are a tool error (exit 5).
if insp tools/call-exit-3 0 --method tools/call --tool-name exec --tool-args-json '{"code":"raise SystemExit(3)"}' --format json -q; then
    check tools/call-exit-3 "$out" 'r["result"]["isError"] is False and r["result"]["structuredContent"]["exit_code"] == 3'
fi
insp tools/call-empty-code 5 --method tools/call --tool-name exec --tool-args-json '{"code":""}' --format json -q
insp tools/call-unknown-arg 5 --method tools/call --tool-name exec --tool-args-json '{"code":"pass","bogus":true}' --format json -q

# The tool-schema portability lint: no error-severity findings (it would exit 6).
if insp strict-lint 0 --method tools/list --strict; then
    if grep -qi error <<<"$err"; then
        log "FAIL strict-lint: the lint reported problems: $(head -c 2000 <<<"$err")"
        failed+=(strict-lint)
    fi
fi

# Load: 20 calls, 4 at a time (more than the machine's cores, so some queue), all correct.
if insp load 0 --method tools/call --tool-name exec --tool-args-json '{"code":"print(1)"}' \
    --load --load-requests 20 --load-concurrency 4 --format json; then
    log "load: $(head -c 600 <<<"$out")"
    check load "$out" 'r["result"]["requests"] == 20 and r["result"]["ok"] == 20 and r["result"]["errors"] == 0 and r["result"]["toolErrors"] == 0 and r["result"]["errorRate"] == 0'
fi

# The 2026-07-28 era (no initialize; _meta on every request), and the auto probe.
if insp modern-call 0 --protocol-era modern --method tools/call --tool-name exec --tool-args-json '{"code":"print(6*7)"}' --format json -q; then
    check modern-call "$out" 'r["result"]["structuredContent"]["stdout"] == "42\n" and r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-exec"'
fi
if insp auto-list 0 --protocol-era auto --method tools/list --format json -q; then
    check auto-list "$out" 'r["result"]["tools"][0]["name"] == "exec"'
fi

assert_clean 15
((${#failed[@]} == 0)) || fail "failed: ${failed[*]}"
pass
