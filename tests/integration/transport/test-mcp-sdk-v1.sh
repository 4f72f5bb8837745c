#!/usr/bin/env bash
# The v1 TypeScript SDK (@modelcontextprotocol/sdk Client + StdioClientTransport spawning
# `mcp-exec stdio`), a real MCP client, against the installed server (tests/node-clients/v1-sdk.mjs):
#   basic   negotiated version, tools/list (one tool, annotations, schemas), calls with
#           structuredContent the SDK validates itself, non-zero exit is no isError, invalid
#           arguments are isError, progress during a 3 s run, 4 parallel calls
#   cancel  an AbortSignal ends a time.sleep(60) call at once; within a few seconds no
#           mcp-exec-run-* unit is left, while the session stays open and usable
#   busy    with MCP_EXEC_MAX_CONCURRENT=1 and MCP_EXEC_MAX_QUEUE=1, 4 calls at once: the ones
#           past the queue are refused at once as busy, the others succeed
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

failed=()

# --- basic ---------------------------------------------------------------------------------------
log "== basic"
cnode v1-sdk.mjs basic || failed+=(basic)
assert_clean 15

# --- cancel --------------------------------------------------------------------------------------
log "== cancel"
rm -f "$HDIR"/{call-sent,abort,aborted,units-checked}
cnode v1-sdk.mjs cancel &
client=$!
at_exit "kill $client 2>/dev/null"
cancel_ok=1
if ! wait_for 20 test -e "$HDIR/call-sent"; then
    log "FAIL cancel: the client never sent its call"
    cancel_ok=0
elif ! wait_for 20 found active_run_units; then
    log "FAIL cancel: the run's unit never became active"
    cancel_ok=0
else
    unit=$(active_run_units | head -1)
    log "run unit before the cancellation: $unit"
    touch "$HDIR/abort"
    if ! wait_for 10 test -e "$HDIR/aborted"; then
        log "FAIL cancel: the client did not report the abort"
        cancel_ok=0
    else
        t0=$SECONDS
        if wait_for 5 no_run_units; then
            log "no run unit left $((SECONDS - t0))s after the abort"
            echo clean >"$HDIR/units-checked"
        else
            left=$(run_units --all)
            log "FAIL cancel: run units left 5s after the abort: $left"
            # shellcheck disable=SC2086 # one argument per unit
            bx systemctl status --no-pager $left 2>&1 | head -20 >&2
            echo "left: $left" >"$HDIR/units-checked"
            cancel_ok=0
        fi
    fi
fi
[[ -e $HDIR/units-checked ]] || echo "not checked" >"$HDIR/units-checked"
[[ -e $HDIR/abort ]] || touch "$HDIR/abort"
wait "$client" || cancel_ok=0
((cancel_ok)) || failed+=(cancel)
assert_clean 15

# --- busy ----------------------------------------------------------------------------------------
log "== busy"
# The front end reads the configuration at start: stop it now and after the restore (at_exit runs
# in reverse order, so this one runs after set_config's restore).
at_exit stop_frontend
set_config MCP_EXEC_MAX_CONCURRENT=1 MCP_EXEC_MAX_QUEUE=1
stop_frontend
# The restarted broker's self-check runs in a unit of its own: let it come and go, so that it does
# not take the single slot.
out=$(printf 'print("warm")\n' | bx mcp-exec run 2>&1) || fail "a warm-up run failed: $out"
[[ $out == warm ]] || fail "the warm-up run printed: $out"
assert_clean 15
cnode v1-sdk.mjs busy || failed+=(busy)
assert_clean 15

((${#failed[@]} == 0)) || fail "failed parts: ${failed[*]}"
pass
