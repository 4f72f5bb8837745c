#!/usr/bin/env bash
# Nothing secret in the journal, end to end through a real MCP client: a canary in the code and
# one in stdin, sent with the v1 TypeScript SDK through `mcp-exec stdio` (tests/node-clients/v1-sdk.mjs
# privacy), appear nowhere in the box's journal (every field of every entry, -o export) and
# nowhere in `systemctl show` of any mcp-exec-run unit (queried while the run is going on).
# Controls show that both probes do find a canary where there is one.
# Plain pass only: what it checks is what the journal and unit properties hold, the same in both
# builds; its calls are test-mcp-sdk-v1's, and the ASan pass's post-check scans its boxes
# for canaries of every test.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

C_CODE=mcpcanarycode$RANDOM$RANDOM$RANDOM
C_STDIN=mcpcanarystdin$RANDOM$RANDOM$RANDOM
C_CTRL=mcpcanaryctrl$RANDOM$RANDOM$RANDOM
printf '%s\n%s\n' "$C_CODE" "$C_STDIN" | put canaries >/dev/null
printf '%s\n' "$C_CTRL" | put control >/dev/null

# scan_journal FILE: the canaries (one a line in FILE, in the box) found anywhere in the journal.
scan_journal() {
    bx journalctl --flush >/dev/null 2>&1
    bx sh -c 'journalctl -o export --no-pager | grep -a -o -F -f "$1" | sort -u' sh "$BDIR/$1"
}
# show_units: `systemctl show --all` of every mcp-exec-run unit there is.
show_units() {
    local u
    for u in $(run_units --all); do
        bx systemctl show --all "$u"
        bx systemctl cat "$u" 2>/dev/null
    done
}

# Controls.
bx logger -t mcp-test "control $C_CTRL"
wait_for 10 found scan_journal control || fail "control: the journal scan does not find a canary that was logged"
ctrl_unit=mcp-exec-run-control$RANDOM.service
bx systemd-run --quiet --unit="$ctrl_unit" --description="$C_CTRL" sleep 30 ||
    fail "control: cannot start a transient unit"
at_exit "bx systemctl stop $ctrl_unit >/dev/null 2>&1"
[[ $(show_units) == *"$C_CTRL"* ]] || fail "control: systemctl show of the run units does not show a canary in a property"
bx systemctl stop "$ctrl_unit"
wait_for 10 no_run_units || fail "control unit did not go away: $(run_units --all)"

# The call: runs ~6 s; meanwhile look at every run unit.
cnode v1-sdk.mjs privacy &
client=$!
at_exit "kill $client 2>/dev/null"
wait_for 20 test -e "$HDIR/call-sent" || fail "the client never sent its call"
wait_for 20 found active_run_units || fail "the run's unit never became active"
units=$(run_units --all)
log "run units while the call runs: $units"
show=$(show_units)
[[ $show == *"Id=mcp-exec-run-"* ]] || fail "systemctl show returned nothing useful: $(head -c 500 <<<"$show")"
for c in "$C_CODE" "$C_STDIN"; do
    [[ $show != *"$c"* ]] || fail "canary $c in systemctl show/cat of a run unit: $(grep -F "$c" <<<"$show" | head -c 1000)"
done
[[ -n $(active_run_units) ]] || fail "the run ended before the checks were done"
wait "$client" || fail "the client's call failed (see above)"

hits=$(scan_journal canaries)
[[ -z $hits ]] || fail "canaries found in the box journal: $hits"
# The output (which carries the stdin canary and the reversed code canary) is not logged either.
rev=$(rev <<<"$C_CODE")
n=$(bx sh -c 'journalctl -o export --no-pager | grep -a -c -F "$1"' sh "$rev")
[[ $n == 0 ]] || fail "the run's output reached the journal"
# And the call itself was logged (so the scan looked at the right journal).
n=$(bx sh -c 'journalctl -o export --no-pager | grep -a -c "^MCP_CLIENT_NAME=mcp-exec-v1-test$"')
((n > 0)) || fail "the v1 client's session is not in the journal at all"
assert_clean 15
pass
