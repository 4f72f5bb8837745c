#!/usr/bin/env bash
# The front ends' memory as a property (issue 37): random sequences of every client operation
# (tests/lib/stress.py attack: plain calls read or never read, calls that become tasks with
# results of several MiB, tasks/get, tasks/result and subscriptions/listen on them never read,
# progress tokens of up to 2.5 MiB on streams never read, 2025-11-25 sessions with GET streams
# never read, sandbox sessions, cancels), from four HTTP callers (named tokens) and the local one
# over stdio, for MCP_EXEC_STRESS_S seconds (default 60; bench/run's stress mode runs it long)
# with a seed printed for a rerun (MCP_EXEC_STRESS_SEED). Throughout:
#   - neither front end is killed or restarted (same MainPID, NRestarts 0, no kill in the journal),
#   - the peak RSS (VmHWM) of each stays under half of its MemoryMax= (256M: 128 MiB),
#   - a witness caller over HTTP (its own token) and one over stdio (another uid) are served: each
#     got answers all along, never more than WITNESS_GAP_S without one.
# Before issue 37 the front end was SIGKILLed within seconds (task results copied per reader,
# progress tokens echoed into unread streams).
# Plain pass only: its measure is the front ends' peak RSS, which the ASan pass cannot check
# (shadow memory and quarantine); the paths it drives run sanitized in test-flood-* and the unit
# tests of the tasks, the streams and the budget.
# Heavy: it drives both front ends hard and takes both cores while it does.
. "$(dirname "$0")/../../lib/itest.sh"

PORT=8080
SOCK=/run/mcp-exec/stdio.sock
SECONDS_RUN=${MCP_EXEC_STRESS_S:-60}
SEED=${MCP_EXEC_STRESS_SEED:-$RANDOM}
HALF_MAX_KIB=$((128 * 1024))
WITNESS_GAP_S=90
TOKENS=/etc/mcp-exec/tokens
. "$ITEST_DIR/lib/http.sh"

install -m0755 "$ITEST_DIR/lib/stress.py" "$HDIR/stress.py"
pid_of() { bx systemctl show -P MainPID "$1"; }
restarts_of() { bx systemctl show -P NRestarts "$1"; }
hwm_kib() { bx awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
stop_frontend() {
    bx sh -c 'systemctl stop mcp-exec-stdio.service
              systemctl reset-failed mcp-exec-stdio.service 2>/dev/null
              systemctl start mcp-exec-stdio.socket' >/dev/null 2>&1
}

names=() toks=()
for n in alice bob carol dave wit; do
    names+=("$n") toks+=("tk$n-$RANDOM$RANDOM$RANDOM$RANDOM")
done
lines=()
for i in "${!names[@]}"; do lines+=("${names[$i]} ${toks[$i]}"); done
at_exit "bx rm -f $TOKENS"
printf '%s\n' "${lines[@]}" | bx sh -c "umask 077; cat >$TOKENS && chown root:mcp-exec $TOKENS && chmod 0640 $TOKENS" ||
    fail "cannot write $TOKENS"
bx sh -ec '
    id -u mcpwit >/dev/null 2>&1 || useradd --no-create-home --user-group --shell /usr/sbin/nologin mcpwit
    usermod -a -G mcp-exec-users mcpwit' || fail "cannot create the witness user"
at_exit stop_frontend
at_exit "bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1"
set_config MCP_EXEC_TASK_AFTER_MS=300 MCP_EXEC_IDLE_EXIT_S=600
restart_http
stop_frontend

out=$(bx "$PY" "$BDIR/stress.py" witness "$PORT" "${toks[4]}" 1) || fail "warm-up: $out"
jcheck "$out" 'r["ok"] >= 1' "warm-up: the HTTP front end does not serve the witness"
out=$(bx setpriv --reuid=mcpwit --regid=mcpwit --init-groups -- "$PY" "$BDIR/stress.py" witness-stdio "$SOCK" 1) ||
    fail "warm-up: $out"
jcheck "$out" 'r["ok"] >= 1' "warm-up: the local front end does not serve the witness"
E_PID=$(pid_of mcp-exec.service) S_PID=$(pid_of mcp-exec-stdio.service)
((E_PID > 0 && S_PID > 0)) || fail "the front ends do not run ($E_PID, $S_PID)"
cursor=$(journal_cursor)
log "seed $SEED, $SECONDS_RUN s; front ends: mcp-exec.service $E_PID, mcp-exec-stdio.service $S_PID"

bx "$PY" "$BDIR/stress.py" witness "$PORT" "${toks[4]}" "$SECONDS_RUN" >"$HDIR/wh.out" 2>&1 &
wh=$!
bx setpriv --reuid=mcpwit --regid=mcpwit --init-groups -- "$PY" "$BDIR/stress.py" witness-stdio "$SOCK" "$SECONDS_RUN" \
    >"$HDIR/ws.out" 2>&1 &
ws=$!
bx "$PY" "$BDIR/stress.py" attack "$SEED" "$SECONDS_RUN" "$PORT" "$SOCK" "${toks[@]:0:4}" >"$HDIR/attack.out" 2>&1
wait "$wh" "$ws"
log "attack: $(tail -1 "$HDIR/attack.out")"
log "witness over HTTP: $(tail -1 "$HDIR/wh.out")"
log "witness over stdio: $(tail -1 "$HDIR/ws.out")"

# The front ends: never killed, peak RSS under half of MemoryMax=.
for u in "mcp-exec.service $E_PID" "mcp-exec-stdio.service $S_PID"; do
    set -- $u
    now=$(pid_of "$1")
    [[ $now == "$2" && $(restarts_of "$1") == 0 ]] ||
        fail "$1 was killed or restarted (MainPID $2 -> $now, NRestarts $(restarts_of "$1")):"$'\n'"$(journal_since "$cursor" -u "$1" -o cat | tail -20)"
    hwm=$(hwm_kib "$2")
    log "$1: peak RSS ${hwm} KiB (half of MemoryMax: $HALF_MAX_KIB KiB)"
    ((hwm < HALF_MAX_KIB)) || fail "$1 peaked at ${hwm} KiB, over half of its MemoryMax= (seed $SEED)"
done
j=$(journal_since "$cursor" -o cat)
! grep -Eq 'mcp-exec(-stdio)?\.service: (Main process exited, code=killed|A process of this unit has been killed by the OOM killer|Failed with result .oom-kill)' <<<"$j" ||
    fail "a front end was killed (seed $SEED):"$'\n'"$(grep -E 'killed|oom' <<<"$j" | head)"

# The witnesses: served throughout.
for w in wh ws; do
    r=$(tail -1 "$HDIR/$w.out")
    jcheck "$r" "r['ok'] >= 3 and r['longest_gap_s'] <= $WITNESS_GAP_S" \
        "the witness ($w) was not served throughout (seed $SEED)"
done
jcheck "$(tail -1 "$HDIR/attack.out")" 'sum(r["ops"].values()) >= 50 and len(r["ops"]) >= 8' \
    "the attack did not run its mix of operations (seed $SEED)"
stop_frontend
bx systemctl stop 'mcp-exec-session-*' >/dev/null 2>&1
assert_clean 60
pass
