# shellcheck shell=bash
# tests/lib/itest.sh - common helpers for tests/integration/GROUP/test-*.sh.
#
# Source it at the top of a test:  . "$(dirname "$0")/../../lib/itest.sh"
# The test then runs against the box named by $BOX (already up, build installed).
# Exit codes: 0 pass, 1 fail, 77 skip.

set -uo pipefail

ITEST_NAME=$(basename "$0" .sh)
# tests/, found from this file (the tests sit one folder deeper, in their group).
ITEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BOXCMD=${BOXCMD:-$ITEST_DIR/box/box}
PY=/usr/bin/python3
# DynamicUser= range of systemd (61184..65519).
DYN_UID_MIN=61184
DYN_UID_MAX=65519

log() { printf '%s: %s\n' "$ITEST_NAME" "$*" >&2; }
fail() {
    printf '%s: FAIL: %s\n' "$ITEST_NAME" "$*" >&2
    exit 1
}
skip() {
    printf '%s: SKIP: %s\n' "$ITEST_NAME" "$*" >&2
    exit 77
}
pass() {
    printf '%s: ok\n' "$ITEST_NAME" >&2
    exit 0
}

[[ -n ${BOX-} ]] || skip "BOX is not set (run through tests/run, or BOX=name $0)"
[[ $(id -u) -eq 0 ]] || skip "needs root"
"$BOXCMD" pid "$BOX" >/dev/null 2>&1 || skip "box '$BOX' is not running"
BOXROOT=$("$BOXCMD" root "$BOX") || skip "box '$BOX' has no root"
[[ -x $PY ]] || PY=python3

# Scratch directory of this test, inside the box (the box's /tmp is a private tmpfs, so not there).
BDIR=/srv/mcp-tests/$ITEST_NAME.$$
HDIR=$BOXROOT$BDIR
mkdir -p "$HDIR"
chmod 0755 "$BOXROOT/srv/mcp-tests" "$HDIR"

# Cleanup handlers, run in reverse order at exit.
ITEST_CLEANUPS=()
at_exit() { ITEST_CLEANUPS=("$1" ${ITEST_CLEANUPS[@]+"${ITEST_CLEANUPS[@]}"}); }
itest_exit() {
    local rc=$? c
    trap - EXIT
    for c in ${ITEST_CLEANUPS[@]+"${ITEST_CLEANUPS[@]}"}; do
        eval "$c" || true
    done
    rm -rf -- "$HDIR"
    exit "$rc"
}
trap itest_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# bx CMD...: run CMD in the box.
bx() { "$BOXCMD" exec "$BOX" -- "$@"; }

# put NAME: write stdin to $BDIR/NAME in the box, print the in-box path.
put() {
    cat >"$HDIR/$1"
    chmod 0644 "$HDIR/$1"
    printf '%s\n' "$BDIR/$1"
}

# call [broker-call options...] -- CODE: run CODE (a string) through the broker.
# Prints broker-call's stdout (JSON lines); its stderr goes to $HDIR/call.err. Returns its status.
ITEST_CALL_WRAP=()
call() {
    local -a opts=()
    while (($# > 0)) && [[ $1 != -- ]]; do
        opts+=("$1")
        shift
    done
    [[ ${1-} == -- ]] && shift
    local f
    f=$(printf '%s' "$1" | put "code.$RANDOM$RANDOM.py")
    bx ${ITEST_CALL_WRAP[@]+"${ITEST_CALL_WRAP[@]}"} mcp-exec-broker-call ${opts[@]+"${opts[@]}"} "$f" 2>"$HDIR/call.err"
}

# call_nosigpipe ...: like call, with SIGPIPE ignored, as the real front end (mcp-execd) runs:
# where the broker refuses a run, the run's stdin pipe closes under the client writing the code.
call_nosigpipe() {
    local -a ITEST_CALL_WRAP=(sh -c 'trap "" PIPE; exec "$@"' sh)
    call "$@"
}

# call_err: stderr of the last call.
call_err() { cat "$HDIR/call.err" 2>/dev/null; }

# jget JSON EXPR: evaluate the Python expression EXPR with `r` bound to the parsed JSON
# object (the first JSON line); prints the value (strings raw, everything else as JSON).
# JSON goes through stdin: a result can be larger than one argument may be.
jget() {
    "$PY" -c '
import json, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
r = json.loads(lines[0]) if lines else None
v = eval(sys.argv[1], {"r": r, "json": json})
sys.stdout.write(v if isinstance(v, str) else json.dumps(v))
' "$2" <<<"$1"
}

# jcheck JSON EXPR [MESSAGE]: fail unless the Python expression EXPR is true for every JSON line
# (bound to `r`; `rs` is the list of all lines). On failure, print the offending JSON.
jcheck() {
    local out
    if ! out=$("$PY" -c '
import json, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
try:
    rs = [json.loads(l) for l in lines]
except ValueError as e:
    print("not JSON: %s: %r" % (e, "\n".join(lines)[:2000])); sys.exit(1)
if not rs:
    print("no result line"); sys.exit(1)
for r in rs:
    try:
        ok = eval(sys.argv[1], {"r": r, "rs": rs, "json": json})
    except Exception as e:
        ok = False
        print("%s: %r" % (type(e).__name__, e))
    if not ok:
        s = json.dumps(r)
        print(s if len(s) < 2000 else s[:2000] + "...")
        sys.exit(1)
' "$2" 2>&1 <<<"$1"); then
        fail "${3:-check failed}: $2"$'\n'"$out"$'\n'"broker-call stderr: $(call_err | head -c 2000)"
    fi
}

# The warm pool's units while they start or wait (MCP_EXEC_POOL_SIZE): no client's run yet, and
# always there while the broker runs; run_units, active_run_units and dyn_procs leave them out.
# ("(idle)" once ready, "(starting)" before; "(spare)": the cold unit a broker asks for as it
# starts, for the call that started it.)
WARM_IDLE='mcp-exec warm unit \((idle|starting|spare)\)'
# Descriptions of run units that hold no client's code: the broker's own runs and those above.
NOT_A_CLIENT_RUN="mcp-exec sandbox self-check|mcp-exec module discovery|$WARM_IDLE"
warm_idle_units() {
    bx systemctl list-units --all 'mcp-exec-run-*' --plain --no-legend --no-pager 2>/dev/null |
        awk -v re="$WARM_IDLE" '$1 ~ /^mcp-exec-run-/ && $0 ~ re { print $1 }'
}
# warm_pids: the processes of idle warm units (the launcher and its interpreter).
warm_pids() {
    local u p
    for u in $(warm_idle_units); do
        p=$(bx systemctl show -P MainPID "$u" 2>/dev/null)
        [[ $p =~ ^[1-9][0-9]*$ ]] || continue
        echo "$p"
        bx ps -o pid= --ppid "$p" 2>/dev/null | tr -d ' '
    done
}

# run_units [--all]: names of the run units in the box, one a line (idle warm units left out).
run_units() {
    bx systemctl list-units "$@" 'mcp-exec-run-*' --plain --no-legend --no-pager 2>/dev/null |
        awk -v re="$WARM_IDLE" '$1 ~ /^mcp-exec-run-/ && $0 !~ re { print $1 }'
}

# active_run_units: clients' run units that are active (running) right now. The broker's own
# runs (its self-check and module discovery at start) carry their own Description= and are left
# out, so a test that waits for "the" run does not take one of them for the client's.
active_run_units() {
    bx systemctl list-units --state=active 'mcp-exec-run-*' --plain --no-legend --no-pager 2>/dev/null |
        awk -v re="$NOT_A_CLIENT_RUN" '$1 ~ /^mcp-exec-run-/ && $0 !~ re { print $1 }'
}

# dyn_procs: "pid uid cmd" of processes in the box owned by a DynamicUser= uid (but those of
# idle warm units).
dyn_procs() {
    local skip
    skip=" $(warm_pids | tr '\n' ' ') "
    bx ps -eo pid=,uid=,args= 2>/dev/null |
        awk -v lo="$DYN_UID_MIN" -v hi="$DYN_UID_MAX" -v skip="$skip" \
            '$2 >= lo && $2 <= hi && index(skip, " " $1 " ") == 0'
}

# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds; fail status on timeout.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    while :; do
        "$@" && return 0
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

no_run_units() { [[ -z $(run_units --all) ]]; }

# session_units [--all]: names of the session units (session_create) in the box, one a line.
session_units() {
    bx systemctl list-units "$@" 'mcp-exec-session-*' --plain --no-legend --no-pager 2>/dev/null |
        awk '$1 ~ /^mcp-exec-session-/ { print $1 }'
}
no_session_units() { [[ -z $(session_units --all) ]]; }
no_dyn_procs() { [[ -z $(dyn_procs) ]]; }

# assert_clean [SECONDS]: fail unless, within SECONDS (default 10), no run or session unit (in
# any state) and no process of a dynamic uid is left in the box.
assert_clean() {
    local t=${1:-10}
    wait_for "$t" no_run_units || fail "run units left after ${t}s:"$'\n'"$(run_units --all)"
    wait_for "$t" no_session_units || fail "session units left after ${t}s:"$'\n'"$(session_units --all)"
    wait_for "$t" no_dyn_procs || fail "processes of dynamic uids left after ${t}s:"$'\n'"$(dyn_procs)"
}

# assert_runs_work: a trivial run must succeed (the broker and the sandbox still work).
assert_runs_work() {
    local out
    out=$(call -- 'print("still-alive", 6 * 7)') || fail "a trivial run failed afterwards: $out $(call_err)"
    jcheck "$out" 'r["exit_code"] == 0 and r["stdout"] == "still-alive 42\n" and "error" not in r' \
        "a trivial run does not work afterwards"
}

# Broker configuration (/etc/mcp-exec/mcp-exec.conf in the box). set_config LINE...: write the
# file (previous content restored at exit) and make the broker pick it up on the next connection.
CONF=/etc/mcp-exec/mcp-exec.conf
ITEST_CONF_SAVED=
set_config() {
    if [[ -z $ITEST_CONF_SAVED ]]; then
        ITEST_CONF_SAVED=1
        if [[ -e $BOXROOT$CONF ]]; then
            cp -a "$BOXROOT$CONF" "$HDIR/conf.saved"
        fi
        at_exit restore_config
    fi
    mkdir -p "$BOXROOT/etc/mcp-exec"
    printf '%s\n' "$@" >"$BOXROOT$CONF"
    chmod 0644 "$BOXROOT$CONF"
    restart_broker
}
restore_config() {
    if [[ -e $HDIR/conf.saved ]]; then
        cp -a "$HDIR/conf.saved" "$BOXROOT$CONF"
    else
        rm -f "$BOXROOT$CONF"
    fi
    restart_broker
}
# restart_broker: stop the broker and clear failure state; the socket activates it again.
restart_broker() {
    bx sh -c 'systemctl stop mcp-exec-broker.service
              systemctl reset-failed mcp-exec-broker.service mcp-exec-broker.socket 2>/dev/null
              systemctl restart mcp-exec-broker.socket' >/dev/null 2>&1
}

# journal_cursor: the box journal's current cursor (for journal_since).
journal_cursor() {
    bx journalctl --flush >/dev/null 2>&1
    bx journalctl -n 0 --show-cursor --no-pager 2>/dev/null | sed -n 's/^-- cursor: //p'
}
# journal_since CURSOR [journalctl options...]
journal_since() {
    local c=$1
    shift
    bx journalctl --flush >/dev/null 2>&1
    if [[ -n $c ]]; then
        bx journalctl --no-pager --after-cursor="$c" "$@"
    else
        bx journalctl --no-pager "$@"
    fi
}

# found CMD...: true if CMD prints something (for wait_for).
found() { [[ -n $("$@") ]]; }
