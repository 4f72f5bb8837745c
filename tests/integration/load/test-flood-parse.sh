#!/usr/bin/env bash
# Messages cheap to send and once dear to parse (issue 19, item 1): one 4 MB JSON-RPC message
# whose params hold 1.4 million {} made json-c take over a gigabyte, and the kernel killed the
# front end with every call and sandbox session of every client. tests/lib/parse-flood.py sends
# each variant (objects, numbers, keys, deep, string, number, and long, a string as long as the
# largest message allowed: see there) 6 times back to back
# to each transport of each front end: mcp-exec.service over Streamable HTTP in a session, stateless
# (2026-07-28) and to a legacy SSE session's /messages; mcp-exec-stdio.service as one line on a
# connection to /run/mcp-exec/stdio.sock. Checked after each:
#   - the answers: too many values is 413 with a -32600 error (id null), too deep 400 with -32700,
#     over stdio the same codes on an error line; the long strings and the long number are
#     answered as any ping (200, 202 then the reply on the legacy stream, a result line);
#   - a witness with a sandbox session in which x = 41, made through that front end before, is
#     served while the attack lasts (print(x) calls, one in flight most of the time) and after it
#     still has x == 41;
#   - the front end's peak RSS (VmHWM, reset before each attack) stays under half its MemoryMax=;
#     printed per front end and attack;
#   - the same MainPID and NRestarts=0; at the end no "killed" or oom line about either unit.
# Heavy: it floods the front end with messages dear to parse and takes both cores while it does.
. "$(dirname "$0")/../../lib/itest.sh"

PORT=8080
SOCK=/run/mcp-exec/stdio.sock
N=6
. "$ITEST_DIR/lib/http.sh"

install -m0755 "$ITEST_DIR/lib/parse-flood.py" "$HDIR/parse-flood.py"
pf() { bx "$PY" "$BDIR/parse-flood.py" "$@"; }
show() { bx systemctl show -P "$1" "$2"; }
hwm_kib() { bx awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# check JSON EXPR MESSAGE: EXPR (Python, r = the JSON) must hold.
check() {
    "$PY" -c '
import json, sys
r = json.loads(sys.argv[1])
sys.exit(0 if eval(sys.argv[2], {"r": r}) else 1)' "$1" "$2" || fail "$3: $1"
}
stop_frontends() {
    bx sh -c 'systemctl stop mcp-exec.service mcp-exec-stdio.service
              systemctl reset-failed mcp-exec.service mcp-exec-stdio.service 2>/dev/null
              systemctl start mcp-exec-stdio.socket' >/dev/null 2>&1
}
at_exit stop_frontends
at_exit "bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1"

set_config MCP_EXEC_IDLE_EXIT_S=600
stop_frontends
restart_http

# The witnesses: a sandbox session through each front end, with x = 41 in it.
w=$(pf http-witness "$PORT") || fail "the HTTP witness could not set up its session: $w"
SID=$("$PY" -c 'import json, sys; print(json.loads(sys.argv[1])["sid"])' "$w")
H_HTTP=$("$PY" -c 'import json, sys; print(json.loads(sys.argv[1])["handle"])' "$w")
w=$(pf stdio-witness "$SOCK") || fail "the stdio witness could not set up its session: $w"
H_STDIO=$("$PY" -c 'import json, sys; print(json.loads(sys.argv[1])["handle"])' "$w")

declare -A PID HALF
for u in mcp-exec.service mcp-exec-stdio.service; do
    PID[$u]=$(show MainPID "$u")
    [[ ${PID[$u]} =~ ^[1-9][0-9]*$ ]] || fail "$u is not running"
    max=$(show MemoryMax "$u")
    [[ $max =~ ^[0-9]+$ ]] || fail "$u has no MemoryMax= ($max)"
    HALF[$u]=$((max / 2 / 1024))
    [[ $(show NRestarts "$u") == 0 ]] || fail "$u restarted before the attacks"
    log "$u: pid ${PID[$u]}, MemoryMax=$max, bound $((HALF[$u])) KiB, VmHWM $(hwm_kib "${PID[$u]}") KiB so far"
done
cursor=$(journal_cursor)

# What each variant must get: every one of the N attempts on every transport.
declare -A HTTP_WANT=(
    [objects]='[[413, -32600, None]] * '$N [numbers]='[[413, -32600, None]] * '$N [keys]='[[413, -32600, None]] * '$N
    [deep]='[[400, -32700, None]] * '$N [string]='[[200, "result", 7]] * '$N [number]='[[200, "result", 7]] * '$N
    [long]='[[200, "result", 7]] * '$N)
declare -A LEGACY_WANT=([string]='[[202, "result", 7]] * '$N [number]='[[202, "result", 7]] * '$N
    [long]='[[202, "result", 7]] * '$N)
declare -A STDIO_WANT=(
    [objects]='[["line", -32600, None]] * '$N [numbers]='[["line", -32600, None]] * '$N
    [keys]='[["line", -32600, None]] * '$N [deep]='[["line", -32700, None]] * '$N
    [string]='[["line", "result", 7]] * '$N [number]='[["line", "result", 7]] * '$N
    [long]='[["line", "result", 7]] * '$N)

peaks=()
for v in objects numbers keys deep string number long; do
    for u in mcp-exec.service mcp-exec-stdio.service; do
        p=${PID[$u]}
        # Peak RSS of this attack alone: "5" to clear_refs resets VmHWM to the current RSS.
        bx sh -c "echo 5 >/proc/$p/clear_refs" || fail "cannot reset VmHWM of $u"
        t0=$SECONDS
        if [[ $u == mcp-exec.service ]]; then
            out=$(pf http "$v" "$PORT" "$SID" "$H_HTTP" "$N") || fail "$v over HTTP: parse-flood.py failed: $out"
            want=${HTTP_WANT[$v]}
            check "$out" "r['answers']['session'] == $want and r['answers']['stateless'] == $want" \
                "$v over HTTP: not the answers wanted ($want)"
            want=${LEGACY_WANT[$v]:-$want}
            check "$out" "r['answers']['legacy'] == $want" "$v over legacy SSE: not the answers wanted ($want)"
        else
            out=$(pf stdio "$v" "$SOCK" "$H_STDIO" "$N") || fail "$v over stdio: parse-flood.py failed: $out"
            want=${STDIO_WANT[$v]}
            check "$out" "r['answers']['stdio'] == $want" "$v over stdio: not the answers wanted ($want)"
        fi
        dt=$((SECONDS - t0))
        peak=$(hwm_kib "$p") || fail "$u ($v): no VmHWM: the front end is gone"
        peaks+=("$u $v: $peak KiB")
        log "$u $v: peak RSS $peak KiB, $N attempts per transport in about $dt s, witness $(
            "$PY" -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["witness"], "x =", r["x"])' "$out")"
        check "$out" 'r["witness"]["ok"] >= 1 and r["witness"]["bad"] == [] and r["x"] == "41"' \
            "$u $v: the witness was not served throughout, or lost its x"
        ((peak < HALF[$u])) || fail "$u $v: peak RSS $peak KiB, not under half of MemoryMax= (${HALF[$u]} KiB)"
        [[ $(show MainPID "$u") == "$p" && $(show NRestarts "$u") == 0 ]] ||
            fail "$u $v: the front end was replaced (MainPID $p -> $(show MainPID "$u"), NRestarts $(show NRestarts "$u"))"
    done
done

killed=$(journal_since "$cursor" -u mcp-exec.service -u mcp-exec-stdio.service -o cat | grep -Ei 'killed|oom')
[[ -z $killed ]] || fail "the journal says a front end was killed: $killed"
log "peak RSS per front end and attack: $(printf '%s; ' "${peaks[@]}")"

# The sandbox sessions end with their front ends; nothing may be left.
stop_frontends
assert_clean 20
pass
