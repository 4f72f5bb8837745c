# shellcheck shell=bash
# tests/lib/tmp-isolation.sh - body of test-tmp-isolation.sh and test-shm-isolation.sh.
# Set DIRS (space-separated directories that every run may write to) and source it after
# itest.sh: while run A holds DIR/secret-* in each of DIRS, a concurrent run B does not see it;
# a later run C does not see files of the earlier runs either.

SECRET=secret-$RANDOM$RANDOM
pydirs="($(printf "'%s', " $DIRS))"
FIRST=${DIRS%% *}
code_a="import os, time
DIRS = $pydirs
for d in DIRS:
    try:
        with open(os.path.join(d, '$SECRET'), 'w') as f:
            f.write('hush')
        print('WROTE', d)
    except OSError as e:
        print('NOWRITE', d, e.errno)
print('A sees', sorted(os.listdir('$FIRST')))
time.sleep(8)
"
code_look="import os
for d in $pydirs:
    try:
        names = sorted(os.listdir(d))
    except OSError as e:
        names = 'error %d' % e.errno
    print(d, names, os.path.exists(os.path.join(d, '$SECRET')))
"
fa=$(printf '%s' "$code_a" | put a.py)
bx mcp-exec-broker-call --timeout 30 "$fa" >"$HDIR/a.out" 2>"$HDIR/a.err" &
client=$!
at_exit "kill $client 2>/dev/null"

# Wait until A's secret exists: look into A's mount namespace through its main process.
a_has_secret() {
    local u pid
    for u in $(active_run_units); do
        pid=$(bx systemctl show -P MainPID "$u" 2>/dev/null)
        [[ $pid =~ ^[1-9][0-9]*$ ]] || continue
        if bx test -e "/proc/$pid/root$FIRST/$SECRET"; then
            echo "$u"
            return 0
        fi
    done
    return 1
}
wait_for 20 found a_has_secret || fail "run A never wrote $FIRST/$SECRET (as seen through /proc/PID/root)"
unit_a=$(a_has_secret)
log "run A ($unit_a) holds $FIRST/$SECRET; starting B"

out_b=$(call --timeout 20 -- "$code_look") || fail "run B failed: $out_b $(call_err)"
[[ -n $(active_run_units | grep -Fx "$unit_a") ]] || fail "run A ended before run B finished; no concurrency was tested"
jcheck "$out_b" '"error" not in r and r["exit_code"] == 0' "run B failed"
log "B: $(jget "$out_b" 'r["stdout"]' | tr '\n' ';')"
if jget "$out_b" 'r["stdout"]' | grep -q -e "$SECRET" -e ' True$'; then
    fail "run B sees run A's files: $(jget "$out_b" 'r["stdout"]')"
fi

wait "$client"
rc=$?
out_a=$(cat "$HDIR/a.out")
((rc == 0)) || fail "run A failed ($rc): $out_a $(cat "$HDIR/a.err")"
jcheck "$out_a" '"error" not in r and r["exit_code"] == 0' "run A failed"
log "A: $(jget "$out_a" 'r["stdout"]' | tr '\n' ';')"
jcheck "$out_a" "all('WROTE ' + d in r['stdout'] for d in '$DIRS'.split()) and '$SECRET' in r['stdout'].split('A sees')[1]" "run A could not write to each of $DIRS"

out_c=$(call --timeout 20 -- "$code_look") || fail "run C failed: $out_c $(call_err)"
jcheck "$out_c" '"error" not in r and r["exit_code"] == 0' "run C failed"
log "C: $(jget "$out_c" 'r["stdout"]' | tr '\n' ';')"
if jget "$out_c" 'r["stdout"]' | grep -q -e "$SECRET" -e ' True$'; then
    fail "a later run sees an earlier run's files: $(jget "$out_c" 'r["stdout"]')"
fi
# Nor is it left anywhere in the box's own directories.
if bx sh -c "find $DIRS -name '$SECRET' 2>/dev/null | grep -q ."; then
    fail "the secret is left in the box's own $DIRS"
fi
pass
