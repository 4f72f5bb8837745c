#!/usr/bin/env bash
# Connection floods against the local socket (/run/mcp-exec/stdio.sock, mcp-exec-stdio.service),
# with tight limits: at most 16 sessions per uid, 48 in all, the first message within 4 s.
#   1. one user (mcpflood, allowed by polkit) opens 200 connections and never speaks: past its
#      16 it gets an error line at once; meanwhile another user (mcpcalm) is served; the
#      flooder's own next session is refused with a clear message; after 4 s its silent
#      connections are closed and it is served again although it still holds them open.
#   2. root (bounded only by the total) opens 100 silent connections: past 48 each gets an error
#      line at once, another user is refused quickly (not left hanging) while all are taken, and
#      served again once the silent ones are closed.
# Afterwards the front end's fds are back to their count after the warm-up.
# Heavy: it floods the front end on purpose and takes both cores while it does.
. "$(dirname "$0")/../../lib/itest.sh"

SOCK=/run/mcp-exec/stdio.sock
install -m0755 "$ITEST_DIR/lib/flood.py" "$HDIR/flood.py"
pid_of() { bx systemctl show -P MainPID "$1"; }
fd_count() { bx sh -c 'ls "/proc/$1/fd" | wc -l' sh "$1"; }
as() {
    local u=$1
    shift
    bx setpriv --reuid="$u" --regid="$u" --init-groups -- "$@"
}
check() {
    "$PY" -c '
import json, sys
r = json.loads(sys.argv[1])
sys.exit(0 if eval(sys.argv[2], {"r": r}) else 1)' "$1" "$2" || fail "$3: $1"
}
# run_as USER NAME: `mcp-exec run` of print(6*7) as USER, at most 20 s; sets RC, OUT and ERR.
run_as() {
    OUT=$(printf 'print(6*7)\n' | as "$1" timeout 20 mcp-exec run 2>"$HDIR/$2.err")
    RC=$?
    ERR=$(cat "$HDIR/$2.err")
}

bx sh -ec '
    for u in mcpflood mcpcalm; do
        id -u $u >/dev/null 2>&1 || useradd --no-create-home --user-group --shell /usr/sbin/nologin $u
        usermod -a -G mcp-exec-users $u
    done' || fail "cannot create the test users"

set_config MCP_EXEC_IDLE_EXIT_S=600 MCP_EXEC_STDIO_MAX_PER_UID=16 MCP_EXEC_STDIO_MAX_CONNECTIONS=48 \
    MCP_EXEC_STDIO_HELLO_TIMEOUT_S=4
bx sh -c 'systemctl stop mcp-exec-stdio.service; systemctl reset-failed mcp-exec-stdio.service 2>/dev/null
          systemctl restart mcp-exec-stdio.socket' >/dev/null 2>&1
run_as mcpcalm warm
((RC == 0)) && [[ $OUT == 42 ]] || fail "warm-up: mcpcalm not served (exit $RC): $OUT $ERR"
S_PID=$(pid_of mcp-exec-stdio.service)
S_FD0=$(fd_count "$S_PID")
cursor=$(journal_cursor)
log "after the warm-up: pid $S_PID, $S_FD0 fds"

# --- 1. one user's flood ----------------------------------------------------------------------------
as mcpflood "$PY" "$BDIR/flood.py" stdio "$SOCK" 200 8 >"$HDIR/flood1.out" 2>&1 &
flooder=$!
wait_for 10 found head -1 "$HDIR/flood1.out" || fail "the flood did not start: $(cat "$HDIR/flood1.out")"
first=$(head -1 "$HDIR/flood1.out")
log "mcpflood: $first"
check "$first" 'r["connected"] == 200 and r["after_1s"]["open"] == 16 and r["after_1s"]["line"] == 184' \
    "past 16 sessions of one uid, each connection was not refused at once with a line"
check "$first" 'any("uid" in t and "too many local sessions" in t for t in r["texts"])' \
    "the refusal does not say why"

run_as mcpcalm calm1
((RC == 0)) && [[ $OUT == 42 ]] || fail "another user was not served during the flood (exit $RC): $OUT $ERR"
run_as mcpflood own1
((RC == 125)) && grep -q 'too many local sessions' <<<"$ERR" ||
    fail "the flooder's own next session was not refused clearly (exit $RC): $OUT $ERR"
log "during: mcpcalm served, mcpflood refused: $ERR"

# Its silent connections are closed after 4 s; it is served again while still holding them.
sleep 4
run_as mcpflood own2
((RC == 0)) && [[ $OUT == 42 ]] || fail "the flooder was not served after its silent connections timed out (exit $RC): $OUT $ERR"
wait "$flooder" || fail "flood.py failed: $(cat "$HDIR/flood1.out")"
last=$(tail -1 "$HDIR/flood1.out")
check "$last" 'r["closed_by_server"] == 200' "not every connection of the flood was closed by the server: "

# --- 2. root fills every slot ------------------------------------------------------------------------
bx "$PY" "$BDIR/flood.py" stdio "$SOCK" 100 7 >"$HDIR/flood2.out" 2>&1 &
flooder=$!
wait_for 10 found head -1 "$HDIR/flood2.out" || fail "the root flood did not start: $(cat "$HDIR/flood2.out")"
first=$(head -1 "$HDIR/flood2.out")
log "root: $first"
check "$first" 'r["connected"] == 100 and r["after_1s"]["open"] == 48 and r["after_1s"]["line"] == 52' \
    "past 48 sessions, each connection was not refused at once with a line"
t0=$SECONDS
run_as mcpcalm calm2
((RC == 125)) && grep -q 'too many local sessions' <<<"$ERR" ||
    fail "with every slot taken, another user was not refused clearly (exit $RC): $OUT $ERR"
((SECONDS - t0 < 10)) || fail "the refusal took $((SECONDS - t0)) s"
sleep 4
run_as mcpcalm calm3
((RC == 0)) && [[ $OUT == 42 ]] || fail "not served again after the silent connections timed out (exit $RC): $OUT $ERR"
wait "$flooder" || fail "flood.py failed: $(cat "$HDIR/flood2.out")"

[[ $(pid_of mcp-exec-stdio.service) == "$S_PID" ]] || fail "the front end died or was restarted"
fds_back() { (($(fd_count "$S_PID") <= S_FD0)); }
wait_for 20 fds_back || fail "fds not back to the warm-up count: $S_FD0 -> $(fd_count "$S_PID")"
# Refusals are summarised every 10 s, not logged one by one.
summary() { journal_since "$cursor" -u mcp-exec-stdio.service -o cat | grep 'Refused [0-9]* local connections'; }
wait_for 15 found summary || fail "no summary of the refused connections in the journal"
log "journal: $(summary | tail -1)"
assert_clean 20
pass
