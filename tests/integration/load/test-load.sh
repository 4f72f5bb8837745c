#!/usr/bin/env bash
# Load: many real clients at once on every transport (tests/node-clients/load.mjs), against the real
# units with the HTTP socket on and a token:
#   busy     MCP_EXEC_MAX_CONCURRENT=1, MCP_EXEC_MAX_QUEUE=3: 8 calls at once from 4 HTTP clients
#            (Streamable and SSE: mcp-exec.service); exactly 4 run and print their own value, the
#            other 4 get the "server busy ... queue of 3 is full" result before any run finished.
#            Meanwhile 2 stdio clients (mcp-exec-stdio.service, the other front end, same broker)
#            send 4 calls, which all run: a front end whose call finds the broker full of the other
#            front end's runs waits for it, it does not fail the call and the queue behind it
#   runs     MAX_CONCURRENT=4, MAX_QUEUE=256: 4 stdio, 4 Streamable HTTP and 4 SSE clients at once
#            (v1 SDK Client), 2 calls in flight each; every result is checked exactly (a value only
#            that call prints; every 4th call echoes its own stdin reversed). Up to MCP_LOAD_RUNS
#            calls (2000; 300 under MCP_TEST_SANITIZE=1), stopped at a deadline (30 s; 20 s) so the
#            test fits its time on a slow machine: the summary says how many ran and whether the
#            deadline cut them short. A benchmark line: runs/s with 1 and with 4 calls in flight
#            (printed, not asserted).
#   streams  100 legacy /sse streams + 20 sessions with a GET stream + 3 calls with progress in
#            each (SSE response streams), one session filled to its 16 streams: ~190 streams at
#            once; new clients on every transport are served meanwhile; 409 for a second GET
#            stream, 429 past 16 streams in a session, 503 + Retry-After past 128 sessions (a
#            stateless request still answered); every held legacy stream still carries a reply;
#            cancelled calls end their streams without a result; afterwards a new session is
#            counted alone (the others went away)
#   after    mcp-execd and mcp-exec-brokerd: same main PID under load, no crash or failure in the
#            daemons' journal, fd counts back to the warm-up value (with a control: the probe sees
#            the held streams), VmRSS growth under 4 MiB over a warm-up that went through the same
#            peak once (plain pass; printed only under the sanitizers), no run unit and no
#            dynamic-uid process left.
# Plain pass only: throughput and results at scale; the ASan pass drives the same concurrent paths
# with test-concurrency and the test-flood-* tests.
# Heavy: many clients at once drive both cores; beside other tests it would slow them and itself.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

URL=http://127.0.0.1:8080
TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM
SAN=${MCP_TEST_SANITIZE:-0}
[[ $SAN == 1 ]] || SAN=0
T_START=$SECONDS

. "$ITEST_DIR/lib/http.sh"
set_http_token "$TOKEN"

# The front end reads its configuration at start: stop it now and after the restore (at_exit
# runs in reverse order, so this one runs after set_config's restore).
restart_frontend() {
    restart_http
    stop_frontend
    bx systemctl start mcp-exec-stdio.socket || fail "cannot start mcp-exec-stdio.socket"
}
at_exit stop_frontend


# lnode MODE [VAR=value...]: tests/node-clients/load.mjs MODE in the box.
lnode() {
    local mode=$1
    shift
    bx env HOME="$BDIR/home" MCP_TEST_STATE="$BDIR" NODE_OPTIONS=--unhandled-rejections=strict \
        LOAD_URL="$URL" LOAD_TOKEN="$TOKEN" "$@" "$NODE" "$CLIENTS/load.mjs" "$mode"
}

failed=()
cursor=$(journal_cursor)

# --- busy ----------------------------------------------------------------------------------------
log "== busy: a full queue answers at once (t=$((SECONDS - T_START))s)"
set_config MCP_EXEC_MAX_CONCURRENT=1 MCP_EXEC_MAX_QUEUE=3
restart_frontend
# The restarted broker's self-check runs in a unit of its own: let it come and go first, so that
# it does not hold the single slot.
out=$(printf 'print("warm")\n' | bx mcp-exec run 2>&1) || fail "a warm-up run failed: $out"
[[ $out == warm ]] || fail "the warm-up run printed: $out"
assert_clean 15
lnode busy LOAD_BUSY_CLIENTS=4 LOAD_BUSY_CALLS=8 LOAD_QUEUE=3 || failed+=(busy)
assert_clean 15

# --- warm-up -------------------------------------------------------------------------------------
pid_of() { bx systemctl show -P MainPID "$1"; }
rss_kib() { bx awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
fd_count() { bx sh -c 'ls "/proc/$1/fd" | wc -l' sh "$1"; }
# fd_kinds PID: what a process's fds are, counted by kind; and the box's TCP sockets by state.
fd_kinds() {
    bx sh -c 'for f in /proc/$1/fd/*; do readlink "$f"; done | sed "s/:\[[0-9]*\]//" | sort | uniq -c | tr -s " \n" " "
              echo; ss -tanH | cut -d" " -f1 | sort | uniq -c | tr -s " \n" " "' sh "$1"
}

# http_poke: one stateless request (tools/list, no session, no run).
http_poke() {
    bx curl -s -o /dev/null --max-time 10 -H "X-MCP-AUTH: $TOKEN" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
        -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' \
        "$URL/mcp"
}

# streams_round N: tests/node-clients/load.mjs streams; samples mcp-execd while the streams are held.
streams_round() {
    local client held_fds=
    rm -f "$HDIR"/{held,sampled,release}
    lnode streams LOAD_LEGACY=100 LOAD_SESSIONS=20 LOAD_POSTS=3 &
    client=$!
    if wait_for 150 test -e "$HDIR/held"; then
        held_fds=$(fd_count "$(pid_of mcp-exec.service)")
        log "round $1 (t=$((SECONDS - T_START))s): while $(cat "$HDIR/held") streams are held, mcp-execd has $held_fds fds," \
            "VmRSS $(rss_kib "$(pid_of mcp-exec.service)") KiB"
    fi
    touch "$HDIR/sampled"
    wait "$client" || failed+=("streams-$1")
    # Known (http-server.c): connections the clients closed keep their fds in mcp-execd until
    # libmicrohttpd runs again, at the next HTTP activity or its 30 s timeout. Logged here; one
    # request lets the cleanup happen before the fds are compared.
    sleep 2
    log "round $1: 2 s after the streams closed mcp-execd has $(fd_count "$(pid_of mcp-exec.service)") fds"
    http_poke
    # Control for the fd probe: it does see the held connections.
    if [[ -z $held_fds ]] || ((held_fds < 150)); then
        log "FAIL round $1: the fd count of mcp-execd did not show the held streams: '$held_fds' fds"
        failed+=("fd-probe-$1")
    fi
}

log "== warm-up (t=$((SECONDS - T_START))s)"
# No idle exit of the front end between the phases: the same process is measured throughout.
set_config MCP_EXEC_MAX_CONCURRENT=4 MCP_EXEC_MAX_QUEUE=256 MCP_EXEC_IDLE_EXIT_S=600
restart_frontend
out=$(printf 'print("warm")\n' | bx mcp-exec run 2>&1) || fail "a warm-up run failed: $out"
# A round on every transport and one round of streams bring each code path and library into
# memory, and the allocator to the streams' peak, once.
lnode runs LOAD_STDIO=1 LOAD_HTTP=1 LOAD_SSE=1 LOAD_RUNS=6 LOAD_INFLIGHT=2 >"$HDIR/warm.json" ||
    fail "the warm-up round failed: $(cat "$HDIR/warm.json")"
# Under the sanitizers RSS is not compared, and the time goes to the second round.
((SAN)) || streams_round 1
bench_n=8
((SAN)) && bench_n=4
lnode bench LOAD_BENCH=$bench_n >"$HDIR/bench.json" || fail "the benchmark round failed"
bench=$(cat "$HDIR/bench.json")
assert_clean 20

E_PID=$(pid_of mcp-exec.service)
R_PID=$(pid_of mcp-exec-broker.service)
[[ $E_PID =~ ^[1-9][0-9]*$ && $R_PID =~ ^[1-9][0-9]*$ ]] || fail "no main PIDs: mcp-execd '$E_PID', brokerd '$R_PID'"
E_RSS0=$(rss_kib "$E_PID") R_RSS0=$(rss_kib "$R_PID")
E_FD0=$(fd_count "$E_PID") R_FD0=$(fd_count "$R_PID")
log "after warm-up: mcp-execd (HTTP) pid $E_PID VmRSS $E_RSS0 KiB, $E_FD0 fds; mcp-exec-brokerd pid $R_PID VmRSS $R_RSS0 KiB, $R_FD0 fds"
# The local sessions' front end (mcp-exec-stdio.service), where the build has it.
S_PID=
if bx systemctl cat mcp-exec-stdio.service >/dev/null 2>&1; then
    S_PID=$(pid_of mcp-exec-stdio.service)
    [[ $S_PID =~ ^[1-9][0-9]*$ ]] || fail "no main PID of mcp-exec-stdio.service after the warm-up: '$S_PID'"
    S_RSS0=$(rss_kib "$S_PID") S_FD0=$(fd_count "$S_PID")
    log "after warm-up: mcp-execd (stdio) pid $S_PID VmRSS $S_RSS0 KiB, $S_FD0 fds"
fi

# --- runs ----------------------------------------------------------------------------------------
runs=${MCP_LOAD_RUNS:-2000}
nclients=4
deadline_ms=${MCP_LOAD_DEADLINE_MS:-30000}
if ((SAN)); then
    runs=${MCP_LOAD_RUNS:-300}
    nclients=2
    deadline_ms=${MCP_LOAD_DEADLINE_MS:-20000}
fi
log "== runs (t=$((SECONDS - T_START))s): up to $runs calls from $((3 * nclients)) clients ($nclients each on stdio, Streamable HTTP, SSE), 2 in flight each"
t0=$SECONDS
lnode runs LOAD_STDIO=$nclients LOAD_HTTP=$nclients LOAD_SSE=$nclients LOAD_RUNS="$runs" LOAD_INFLIGHT=2 \
    LOAD_DEADLINE_MS="$deadline_ms" >"$HDIR/runs.json"
rc=$?
summary=$(cat "$HDIR/runs.json")
log "runs: $summary"
((rc == 0)) || failed+=(runs)
runs_wall=$((SECONDS - t0))

# The broker is measured now: it exits by itself after 30 s without runs (a clean exit).
[[ $(pid_of mcp-exec-broker.service) == "$R_PID" ]] || { log "FAIL brokerd's main PID changed under load: $R_PID -> $(pid_of mcp-exec-broker.service)"; failed+=(brokerd-pid); }
wait_for 20 no_run_units
r_fds_back() { local n; n=$(fd_count "$R_PID"); [[ -n $n ]] && ((n <= R_FD0)); }
wait_for 20 r_fds_back || { log "FAIL brokerd's fds not back to the warm-up count: $R_FD0 -> $(fd_count "$R_PID"): $(fd_kinds "$R_PID")"; failed+=(brokerd-fds); }
R_RSS1=$(rss_kib "$R_PID") R_FD1=$(fd_count "$R_PID")
r_growth=$((R_RSS1 - R_RSS0))
log "brokerd after the runs: VmRSS $R_RSS0 -> $R_RSS1 KiB ($r_growth), fds $R_FD0 -> $R_FD1"

# --- streams -------------------------------------------------------------------------------------
# (Back to the warm-up count or below: a connection still open at the warm-up sample may be gone.)
log "== streams (t=$((SECONDS - T_START))s)"
streams_round 2
e_fds_back() { local n; n=$(fd_count "$E_PID"); [[ -n $n ]] && ((n <= E_FD0)); }
if ! wait_for 20 e_fds_back; then
    log "FAIL mcp-execd's fds not back to the warm-up count: $E_FD0 -> $(fd_count "$E_PID"): $(fd_kinds "$E_PID")"
    failed+=(execd-fds)
fi
[[ $(pid_of mcp-exec.service) == "$E_PID" ]] || { log "FAIL mcp-execd's main PID changed: $E_PID -> $(pid_of mcp-exec.service)"; failed+=(execd-pid); }
E_RSS2=$(rss_kib "$E_PID") E_FD2=$(fd_count "$E_PID")
e_growth=$((E_RSS2 - E_RSS0))
log "mcp-execd (HTTP) after the runs and the streams: VmRSS $E_RSS0 -> $E_RSS2 KiB ($e_growth), fds $E_FD0 -> $E_FD2"
s_growth=0
if [[ -n $S_PID ]]; then
    [[ $(pid_of mcp-exec-stdio.service) == "$S_PID" ]] || { log "FAIL the stdio mcp-execd's main PID changed: $S_PID -> $(pid_of mcp-exec-stdio.service)"; failed+=(stdio-execd-pid); }
    s_fds_back() { local n; n=$(fd_count "$S_PID"); [[ -n $n ]] && ((n <= S_FD0)); }
    wait_for 20 s_fds_back || { log "FAIL the stdio mcp-execd's fds not back to the warm-up count: $S_FD0 -> $(fd_count "$S_PID"): $(fd_kinds "$S_PID")"; failed+=(stdio-execd-fds); }
    S_RSS2=$(rss_kib "$S_PID") S_FD2=$(fd_count "$S_PID")
    s_growth=$((S_RSS2 - S_RSS0))
    log "mcp-execd (stdio) after the runs and the streams: VmRSS $S_RSS0 -> $S_RSS2 KiB ($s_growth), fds $S_FD0 -> $S_FD2"
fi

# Bound: 4 MiB over the warm-up, which already went through one round of streams at the same
# peak (~200 connections, libmicrohttpd's 32 KiB pool each), so what the allocator keeps of a
# peak is in the baseline. A leak of 2 KiB per call or per stream would cross it; the numbers
# are in the log. Under ASan the allocator's quarantine (256 MiB) keeps freed memory by design:
# RSS is printed only, the fd counts stand for the check.
RSS_BOUND_KIB=4096
if ((!SAN)); then
    ((e_growth < RSS_BOUND_KIB)) || { log "FAIL mcp-execd grew by $e_growth KiB (bound $RSS_BOUND_KIB)"; failed+=(execd-rss); }
    ((r_growth < RSS_BOUND_KIB)) || { log "FAIL brokerd grew by $r_growth KiB (bound $RSS_BOUND_KIB)"; failed+=(brokerd-rss); }
    ((s_growth < RSS_BOUND_KIB)) || { log "FAIL the stdio mcp-execd grew by $s_growth KiB (bound $RSS_BOUND_KIB)"; failed+=(stdio-execd-rss); }
fi
assert_clean 30

# The sessions went away: a new one is counted alone (the held ones were counted, 128 at the top).
bx curl -sN --max-time 3 -H "X-MCP-AUTH: $TOKEN" -H "Accept: text/event-stream" "$URL/sse" >"$HDIR/sse-after" 2>/dev/null
grep -q '^data: /messages?sessionId=' "$HDIR/sse-after" || fail "a new /sse stream after the load got: $(head -c 300 "$HDIR/sse-after")"
counts=$(journal_since "$cursor" -u mcp-exec.service -o cat | sed -n 's/^Legacy SSE session opened, \([0-9]*\) sessions in use\.$/\1/p')
top=$(sort -n <<<"$counts" | tail -1)
last=$(tail -1 <<<"$counts")
log "legacy sessions in use: at most $top, for the new one after the load: $last"
[[ $top == 128 ]] || { log "FAIL the session count never reached the limit of 128 (probe control): $top"; failed+=(session-count); }
[[ $last == 1 ]] || { log "FAIL a new session after the load is not the only one: $last in use"; failed+=(sessions-left); }

# --- after ---------------------------------------------------------------------------------------
log "== after (t=$((SECONDS - T_START))s)"
bad=$(journal_since "$cursor" -u mcp-exec.service -u mcp-exec-stdio.service -u mcp-exec-broker.service -o cat |
    grep -E 'code=(killed|dumped)|Failed with result|status=[0-9]+/(SEGV|ABRT|BUS|ILL|FPE)|Sanitizer|runtime error:|[Ww]atchdog')
[[ -z $bad ]] || { log "FAIL the daemons' journal shows a crash or failure:"$'\n'"$bad"; failed+=(journal); }
if journal_since "$cursor" -u mcp-exec.service -u mcp-exec-stdio.service | grep -qF "$TOKEN"; then
    log "FAIL the token is in the journal"
    failed+=(token)
fi
assert_clean 20

ok_runs=$(jget "$summary" 'r["ok"]' 2>/dev/null || echo '?')
wall_s=$(jget "$summary" 'r["wallMs"]/1000' 2>/dev/null || echo '?')
rps=$(jget "$summary" 'r["runsPerSec"]' 2>/dev/null || echo '?')
per=$(jget "$summary" '" ".join("%s=%s" % kv for kv in r["per"].items())' 2>/dev/null || echo '?')
early=$(jget "$summary" 'r["stoppedEarly"]' 2>/dev/null || echo '?')
log "SUMMARY: runs=$ok_runs of $runs (stopped early by the deadline: $early) transports: $per; wall ${wall_s}s" \
    "(phase ${runs_wall}s), $rps runs/s; bench runs/s $bench (c1 = 1 in flight, c4 = 4);" \
    "mcp-execd (HTTP) VmRSS ${E_RSS0}->${E_RSS2} KiB, mcp-execd (stdio) VmRSS ${S_RSS0:-?}->${S_RSS2:-?} KiB," \
    "brokerd VmRSS ${R_RSS0}->${R_RSS1} KiB; test took $((SECONDS - T_START))s"
((${#failed[@]} == 0)) || fail "failed parts: ${failed[*]}"
pass
