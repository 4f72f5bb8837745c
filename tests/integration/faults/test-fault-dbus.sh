#!/usr/bin/env bash
# Fault: the system bus and polkit restart under a running mcp-exec.
#   between  `systemctl restart dbus` while the front end and the broker idle between runs: the
#            next runs work (root, and mcpalice whom polkit allows), mcpbob is still denied.
#            The front end stays the same process (it reconnects to the bus for polkit); the
#            broker, whose bus connection held every run's matches, exits and the socket starts
#            a new one. Before the fixes: every later session was denied ("polkit could not be
#            asked") and every run failed, until the processes went idle.
#   during   `systemctl restart dbus` while a run sleeps: the run ends, the client gets an answer
#            (an error naming the broker, 125) within a bound, nothing is left, the next run works.
#   polkit   `systemctl restart polkit`: mcpalice is still allowed, mcpbob still denied.
. "$(dirname "$0")/../../lib/itest.sh"

FE=$(bx systemctl show -P Triggers mcp-exec-stdio.socket)
[[ $FE == *.service ]] || fail "mcp-exec-stdio.socket triggers no service: '$FE'"
bx systemctl is-active -q dbus.service || skip "dbus.service is not active in the box"

at_exit "bx systemctl stop 'mcp-exec-run-*' >/dev/null 2>&1"
at_exit "bx systemctl reset-failed mcp-exec-broker.service $FE >/dev/null 2>&1; bx systemctl start mcp-exec-stdio.socket mcp-exec-broker.socket >/dev/null 2>&1"

# Users as in test-mcp-polkit.sh (removed at exit if this test made them).
for u in mcpalice mcpbob; do
    if ! bx id -u "$u" >/dev/null 2>&1; then
        bx useradd --no-create-home --user-group --shell /usr/sbin/nologin "$u" || fail "cannot create $u"
        at_exit "bx userdel $u >/dev/null 2>&1; bx groupdel $u >/dev/null 2>&1"
    fi
done
if ! bx id -nG mcpalice | grep -qw mcp-exec-users; then
    bx usermod -a -G mcp-exec-users mcpalice || fail "cannot add mcpalice to mcp-exec-users"
    at_exit "bx gpasswd -d mcpalice mcp-exec-users >/dev/null 2>&1"
fi
! bx id -nG mcpbob | grep -qw mcp-exec-users || fail "mcpbob is in mcp-exec-users"
bob=$(bx id -u mcpbob)
as() {
    local u=$1
    shift
    bx setpriv --reuid="$u" --regid="$u" --init-groups -- "$@"
}
code=$(printf 'import os\nprint("uid-dynamic", os.getuid() >= 61184)\n' | put hello.py)

# (grep -q under pipefail would fail the pipeline by ending journalctl early: grep -c.)
since_has() { [[ $(journal_since "$1" | grep -c -- "$2") != 0 ]]; }
bob_denied_since() { since_has "$1" "session for uid $bob denied"; }
# sessions WHAT: root and alice run, bob is denied.
sessions() {
    local out rc
    out=$(bx timeout 60 mcp-exec run "$code" 2>&1) || fail "$1: a run as root failed: $out"
    [[ $out == "uid-dynamic True" ]] || fail "$1: a run as root printed: $out"
    out=$(as mcpalice timeout 60 mcp-exec run "$code" 2>&1) || fail "$1: a run as mcpalice failed: $out"
    [[ $out == "uid-dynamic True" ]] || fail "$1: a run as mcpalice printed: $out"
    local c
    c=$(journal_cursor)
    out=$(as mcpbob timeout 60 mcp-exec run "$code" 2>&1)
    rc=$?
    # `mcp-exec run` loses the denial's message now and then (about 1 in 3 here: "the server did
    # not accept the session"; a bug of the command, reported): the front end's decision counts.
    ((rc == 125)) && [[ $out != *uid-dynamic* ]] || fail "$1: mcpbob was not denied (exit $rc): $out"
    wait_for 10 bob_denied_since "$c" ||
        fail "$1: the front end logged no denial for mcpbob (uid $bob): $out"
    log "$1: root and mcpalice ran, mcpbob denied"
}
main_pid() { bx systemctl show -P MainPID "$1" 2>/dev/null; }
# restart_dbus: restart the bus and wait until systemd is on it again.
systemd_on_bus() {
    bx busctl --system call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.DBus.Peer Ping >/dev/null 2>&1
}
restart_dbus() {
    local old
    old=$(main_pid dbus.service)
    bx systemctl restart dbus.service || fail "systemctl restart dbus failed"
    wait_for 30 bx systemctl is-active -q dbus.service || fail "dbus did not come back"
    [[ $(main_pid dbus.service) != "$old" ]] || fail "dbus-daemon (pid $old) was not restarted"
    wait_for 30 systemd_on_bus || fail "systemd is not back on the bus 30 s after the restart"
}

assert_clean 15
root_run() {
    local out
    out=$(bx timeout 60 mcp-exec run "$code" 2>&1) || fail "$1: a run as root failed: $out"
    [[ $out == "uid-dynamic True" ]] || fail "$1: a run as root printed: $out"
}
# Front end and broker up (and polkit answering) before the faults.
root_run before

# --- between -------------------------------------------------------------------------------------
log "== between"
fe_pid=$(main_pid "$FE")
br_pid=$(main_pid mcp-exec-broker.service)
[[ $fe_pid != 0 && $br_pid != 0 ]] || fail "between: front end ($fe_pid) or broker ($br_pid) not running"
cursor=$(journal_cursor)
restart_dbus
log "between: dbus restarted; front end pid $fe_pid, broker pid $br_pid before"
sessions between
[[ $(main_pid "$FE") == "$fe_pid" ]] ||
    fail "between: the front end did not live through the bus restart (pid $fe_pid, now $(main_pid "$FE")): the reconnect went untested"
wait_for 10 since_has "$cursor" "system bus connection was lost; reconnected" ||
    fail "between: the front end did not say it reconnected to the bus"
wait_for 10 since_has "$cursor" "Lost the connection to the system bus" ||
    fail "between: the broker did not notice the bus going away"
log "between: front end reconnected (pid $fe_pid), broker pid now $(main_pid mcp-exec-broker.service)"
assert_clean 15

# --- during --------------------------------------------------------------------------------------
log "== during"
f=$(printf 'import time\nprint("up", flush=True)\ntime.sleep(30)\nprint("slept")\n' | put sleep.py)
bx sh -c 'timeout 90 mcp-exec run --timeout 60 "$1" >"$2/d.out" 2>"$2/d.err"; echo $? >"$2/d.rc"' \
    sh "$f" "$BDIR" </dev/null &
at_exit "kill $! 2>/dev/null"
wait_for 30 found active_run_units || fail "during: the run's unit never became active: $(cat "$HDIR/d.err" 2>/dev/null)"
[[ ! -e $HDIR/d.rc ]] || fail "during: the client ended before the restart"
t0=$SECONDS
restart_dbus
wait_for 30 test -e "$HDIR/d.rc" || fail "during: mcp-exec run still waits 30 s after the bus restart"
rc=$(cat "$HDIR/d.rc")
log "during: mcp-exec run exited $rc after $((SECONDS - t0)) s: $(head -c 300 "$HDIR/d.err")"
((rc == 125)) && grep -qi broker "$HDIR/d.err" || fail "during: the client got no error naming the broker (exit $rc): $(cat "$HDIR/d.err")"
assert_clean 15
root_run during

# --- polkit --------------------------------------------------------------------------------------
log "== polkit"
if bx systemctl cat polkit.service >/dev/null 2>&1; then
    bx systemctl restart polkit.service || fail "systemctl restart polkit failed"
    wait_for 30 bx systemctl is-active -q polkit.service || fail "polkit did not come back"
    sessions polkit
else
    log "polkit: no polkit.service in the box; skipped"
fi
assert_runs_work
assert_clean 15
pass
