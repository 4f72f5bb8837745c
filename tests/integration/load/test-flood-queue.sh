#!/usr/bin/env bash
# Queued calls and unread replies against the front ends' memory budget (issue 19, item 2), with
# MCP_EXEC_MAX_CONCURRENT=2 and tests/lib/flood-queue.py in the box:
#   two calls of time.sleep(75) over HTTP hold every run slot; then 60 calls with maximal code
#   (1 MiB), stdin (1 MiB) and one base64 input file (4 MiB) are sent over HTTP, each on its own
#   connection, and 60 more over one local (stdio) connection as root, none of them ever read
#   while the attack lasts. Before the budget every such call stayed in the queue with its
#   arguments, the base64 text and the decoded file (~12 MiB each): the front end passed its
#   MemoryMax= (256M) and was OOM-killed. Now:
#   - neither front end is killed or restarted (same MainPID, NRestarts 0, no OOM or kill in the
#     journal), and their peak RSS (VmHWM) stays under half of MemoryMax (128 MiB);
#   - past the budget the calls get the "server busy" tool error at once: most of them;
#   - a witness of another uid, holding a sandbox session over the local socket, is served during
#     the attack (tools/list at once; print(x) in its session once the held slots free) and its
#     session kept its state (x == 41);
#   - the held calls end normally, and nothing is left once the attackers are gone.
# Plain pass only: its measure is the front ends' peak RSS, which the ASan pass cannot check
# (shadow memory and quarantine; it skipped that check there); the queue and the budget it drives
# run sanitized in the unit tests (mcp-call-queue, basic-mem-budget) and the ASan pass of
# test-flood-http and test-flood-parse floods the same front ends. (CI's hour: 85 s.)
# Heavy: it floods the front end on purpose and measures its peak RSS; both cores while it does.
. "$(dirname "$0")/../../lib/itest.sh"

PORT=8080
SOCK=/run/mcp-exec/stdio.sock
N=60
HOLD_S=75
HALF_MAX_KIB=$((128 * 1024))
. "$ITEST_DIR/lib/http.sh"

install -m0755 "$ITEST_DIR/lib/flood-queue.py" "$HDIR/flood-queue.py"
install -m0755 "$ITEST_DIR/lib/flood.py" "$HDIR/flood.py"
# stop_frontend: the local front end starts again, with the current configuration, on the next
# connection (it is socket-activated).
stop_frontend() {
    bx sh -c 'systemctl stop mcp-exec-stdio.service
              systemctl reset-failed mcp-exec-stdio.service 2>/dev/null
              systemctl start mcp-exec-stdio.socket' >/dev/null 2>&1
}
pid_of() { bx systemctl show -P MainPID "$1"; }
restarts_of() { bx systemctl show -P NRestarts "$1"; }
hwm_kib() { bx awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
check() {
    "$PY" -c '
import json, sys
r = json.loads(sys.argv[1])
sys.exit(0 if eval(sys.argv[2], {"r": r}) else 1)' "$1" "$2" || fail "$3: $1"
}
# first_line FILE: wait (bounded) until FILE has a line; print it.
first_line() {
    wait_for "$2" found head -1 "$1" || fail "nothing from ${1##*/} within $2 s: $(cat "$1" "$1.err" 2>/dev/null | head -c 2000)"
    head -1 "$1"
}
two_held() { (($(active_run_units | wc -l) >= 2)); }

bx sh -ec '
    id -u mcpwit >/dev/null 2>&1 || useradd --no-create-home --user-group --shell /usr/sbin/nologin mcpwit
    usermod -a -G mcp-exec-users mcpwit' || fail "cannot create the witness user"
at_exit stop_frontend
set_config MCP_EXEC_MAX_CONCURRENT=2 MCP_EXEC_IDLE_EXIT_S=600
restart_http
stop_frontend
bx "$PY" "$BDIR/flood.py" http-probe "$PORT" >/dev/null 2>&1 || fail "warm-up: the HTTP front end does not serve"
out=$(printf 'print(6*7)\n' | bx setpriv --reuid=mcpwit --regid=mcpwit --init-groups -- timeout 60 mcp-exec run 2>&1)
[[ $out == 42 ]] || fail "warm-up: the local front end does not serve mcpwit: $out"
E_PID=$(pid_of mcp-exec.service) S_PID=$(pid_of mcp-exec-stdio.service)
((E_PID > 0 && S_PID > 0)) || fail "the front ends do not run ($E_PID, $S_PID)"
cursor=$(journal_cursor)
log "front ends: mcp-exec.service $E_PID, mcp-exec-stdio.service $S_PID"

# The witness: a sandbox session with x = 41, over the local socket, as another uid.
bx setpriv --reuid=mcpwit --regid=mcpwit --init-groups -- "$PY" "$BDIR/flood-queue.py" witness "$SOCK" "$BDIR/go-witness" \
    >"$HDIR/witness.out" 2>"$HDIR/witness.out.err" &
witness=$!
check "$(first_line "$HDIR/witness.out" 150)" 'r.get("ready") is True' "the witness did not get its session"

# Every run slot held.
bx "$PY" "$BDIR/flood-queue.py" hold "$PORT" 2 "$HOLD_S" >"$HDIR/hold.out" 2>"$HDIR/hold.out.err" &
holder=$!
first_line "$HDIR/hold.out" 20 >/dev/null
wait_for 30 two_held || fail "the two sleeping calls did not start: $(active_run_units)"

# The attack, over HTTP and over the local socket at once; nothing is read.
bx "$PY" "$BDIR/flood-queue.py" http "$PORT" "$N" "$BDIR/go" >"$HDIR/http.out" 2>"$HDIR/http.out.err" &
http_attacker=$!
bx "$PY" "$BDIR/flood-queue.py" stdio "$SOCK" "$N" "$BDIR/go" >"$HDIR/stdio.out" 2>"$HDIR/stdio.out.err" &
stdio_attacker=$!
has_line() { [[ -s $HDIR/$1.out || -s $HDIR/$1.out.err ]]; }
wait_for "$HOLD_S" has_line http
wait_for "$HOLD_S" has_line stdio
log "HTTP attack: $(cat "$HDIR/http.out" "$HDIR/http.out.err" | head -c 2000)"
log "stdio attack: $(cat "$HDIR/stdio.out" "$HDIR/stdio.out.err" | head -c 2000)"

[[ $(pid_of mcp-exec.service) == "$E_PID" ]] || fail "the HTTP front end died under the attack ($E_PID -> $(pid_of mcp-exec.service))"
[[ $(pid_of mcp-exec-stdio.service) == "$S_PID" ]] || fail "the local front end died under the attack ($S_PID -> $(pid_of mcp-exec-stdio.service))"
[[ -s $HDIR/http.out && -s $HDIR/stdio.out ]] || fail "an attacker failed (see above)"
# The premise: the slots were held all along, so that the calls could only queue.
(($(active_run_units | wc -l) >= 2)) || fail "the held calls ended before the attack was sent; it took too long"

# The witness is served while the attackers' calls wait and their replies lie unread.
touch "$HDIR/go-witness"
touch "$HDIR/go"
wait "$http_attacker" || fail "the HTTP attacker failed: $(cat "$HDIR/http.out" "$HDIR/http.out.err" | head -c 3000)"
http_res=$(sed -n 2p "$HDIR/http.out")
log "HTTP attack, what came: $http_res"
check "$http_res" 'r["classes"].get("other", 0) == 0 and r["classes"].get("reset", 0) == 0' \
    "an HTTP call of the attack got something else than a result or server busy"
check "$http_res" 'r["classes"].get("busy", 0) >= '"$((N / 2))" "the HTTP calls past the budget were not told server busy"
wait "$stdio_attacker" || fail "the stdio attacker failed: $(cat "$HDIR/stdio.out" "$HDIR/stdio.out.err" | head -c 3000)"
stdio_res=$(sed -n 2p "$HDIR/stdio.out")
log "stdio attack, what came: $stdio_res"
check "$stdio_res" 'r["classes"].get("other", 0) == 0' "a local call of the attack got something else than a result or server busy"
check "$stdio_res" 'r["classes"].get("busy", 0) >= '"$((N / 2))" "the local calls past the budget were not told server busy"

wait "$witness" || fail "the witness failed: $(cat "$HDIR/witness.out" "$HDIR/witness.out.err" | head -c 3000)"
w=$(sed -n 2p "$HDIR/witness.out")
log "witness: $w"
check "$w" 'r["list_s"] < 10 and "exec" in r["tools"]' "the witness was not served during the attack"
check "$w" 'r["get"].get("stdout") == "41\n" and r["closed"]' "the witness's session lost its state"
wait "$holder" || fail "the holder failed: $(cat "$HDIR/hold.out.err" | head -c 2000)"
check "$(sed -n 2p "$HDIR/hold.out")" 'r["results"] == ["ok", "ok"]' "the held calls did not end normally"

# Neither front end was killed, restarted or pushed near its MemoryMax=.
for unit in mcp-exec.service:$E_PID mcp-exec-stdio.service:$S_PID; do
    u=${unit%%:*} pid=${unit##*:}
    [[ $(pid_of "$u") == "$pid" ]] || fail "$u was restarted ($pid -> $(pid_of "$u"))"
    [[ $(restarts_of "$u") == 0 ]] || fail "$u: NRestarts $(restarts_of "$u")"
    hwm=$(hwm_kib "$pid")
    log "$u: peak RSS (VmHWM) $hwm KiB during the attack (MemoryMax=256M)"
    if [[ -z ${MCP_TEST_SANITIZE-} ]]; then
        ((hwm < HALF_MAX_KIB)) || fail "$u: peak RSS $hwm KiB, not under half of MemoryMax ($HALF_MAX_KIB KiB)"
    fi
done
killed=$(journal_since "$cursor" -u mcp-exec.service -u mcp-exec-stdio.service -o cat |
    grep -iE '\boom\b|oom-kill|out of memory|\bkilled\b|Main process exited|Failed with result' | head -5)
[[ -z $killed ]] || fail "the journal says a front end was killed: $killed"
assert_clean 120
pass
