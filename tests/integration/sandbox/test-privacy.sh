#!/usr/bin/env bash
# Privacy: a canary in the code and one in stdin appear nowhere in the run unit's properties or
# transient unit file (queried while it runs), in any process's cmdline or environment, or in
# the box's journal (all fields, -o export). Controls show each probe does find a canary.
. "$(dirname "$0")/../../lib/itest.sh"

C_CODE=mcpcanarycode$RANDOM$RANDOM$RANDOM
C_STDIN=mcpcanarystdin$RANDOM$RANDOM$RANDOM
C_CTRL=mcpcanaryctrl$RANDOM$RANDOM$RANDOM
printf '%s\n%s\n' "$C_CODE" "$C_STDIN" | put canaries >/dev/null
printf '%s\n' "$C_CTRL" | put control >/dev/null
printf 'some input %s\n' "$C_STDIN" | put stdin >/dev/null

# In-box scanner: which canaries (one a line in the file argv[1]) occur in any /proc/*/cmdline
# or /proc/*/environ. Its own argv holds none of them.
put scan.py >/dev/null <<'PYEOF'
import os, sys
canaries = [c.encode() for c in open(sys.argv[1]).read().split()]
hits = set()
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for what in ("cmdline", "environ"):
        try:
            data = open("/proc/%s/%s" % (pid, what), "rb").read()
        except OSError:
            continue
        for c in canaries:
            if c in data:
                hits.add("%s in /proc/%s/%s" % (c.decode(), pid, what))
print("\n".join(sorted(hits)))
PYEOF
scan_procs() { bx python3 "$BDIR/scan.py" "$BDIR/$1"; }
scan_journal() {
    bx journalctl --flush >/dev/null 2>&1
    bx sh -c 'journalctl -o export --no-pager | grep -a -o -F -f "$1" | sort -u' sh "$BDIR/$1"
}

# Controls: the probes find a canary where there is one.
bx bash -c 'exec -a "$1" sleep 30' sh "sleep-$C_CTRL" &
ctrl=$!
at_exit "kill $ctrl 2>/dev/null"
wait_for 10 found scan_procs control ||
    fail "control: the process scan does not find a canary in a cmdline"
kill "$ctrl" 2>/dev/null
bx logger -t mcp-test "control $C_CTRL"
wait_for 10 found scan_journal control ||
    fail "control: the journal scan does not find a canary that was logged"

code="# $C_CODE
import sys, time
data = sys.stdin.read()
sys.stdout.write(data)
sys.stdout.flush()
print('$C_CODE'[::-1])   # the code canary, reversed, so output carries a trace of the code
time.sleep(6)
"
f=$(printf '%s' "$code" | put code.py)
bx mcp-exec-broker-call --timeout 30 --stdin-file "$BDIR/stdin" "$f" >"$HDIR/out" 2>"$HDIR/err" &
client=$!
at_exit "kill $client 2>/dev/null"

unit=
wait_for 15 found active_run_units ||
    fail "the run's unit never became active"
unit=$(active_run_units | head -1)
log "unit: $unit"
show=$(bx systemctl show --all "$unit") || fail "systemctl show $unit failed"
[[ $show == *"Id=$unit"* ]] || fail "systemctl show returned nothing useful: $(head -c 500 <<<"$show")"
for c in "$C_CODE" "$C_STDIN"; do
    [[ $show != *"$c"* ]] || fail "canary $c found in systemctl show $unit: $(grep -F "$c" <<<"$show" | head -c 1000)"
done
transient=$(bx cat "/run/systemd/transient/$unit" 2>/dev/null) || transient=
[[ -n $transient ]] || log "note: no transient unit file /run/systemd/transient/$unit"
for c in "$C_CODE" "$C_STDIN"; do
    [[ $transient != *"$c"* ]] || fail "canary $c found in the transient unit file of $unit"
done
hits=$(scan_procs canaries)
[[ -z $hits ]] || fail "canaries found in process command lines or environments:"$'\n'"$hits"
# Still running when we looked (otherwise the checks above proved little).
[[ -n $(active_run_units) ]] || fail "the run ended before the checks were done"

wait "$client"
rc=$?
out=$(cat "$HDIR/out")
((rc == 0)) || fail "broker-call failed ($rc): $out $(cat "$HDIR/err")"
jcheck "$out" '"error" not in r and r["exit_code"] == 0' "the run failed"
rev=$(rev <<<"$C_CODE")
jcheck "$out" "r['stdout'] == 'some input $C_STDIN\n$rev\n'" "the run's output is wrong"
hits=$(scan_journal canaries)
[[ -z $hits ]] || fail "canaries found in the box journal: $hits"
# The reversed code canary came out through stdout only.
hits=$(bx sh -c 'journalctl -o export --no-pager | grep -a -c -F "$1"' sh "$rev")
[[ $hits == 0 ]] || fail "the run's stdout reached the journal"
pass
