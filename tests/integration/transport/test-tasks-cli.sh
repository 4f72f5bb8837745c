#!/usr/bin/env bash
# MCP tasks from the command line (mcp-exec run --detach, mcp-exec task ...), over the local stdio
# socket, each command a new MCP session (2025-11-25):
#   - `run --detach` prints only a task id ("<node>.<32 hex>") and exits 0 at once
#   - `task get` of a task still working prints "working" and exits 75, without waiting
#   - `task wait` blocks until the end and prints the program's stdout and stderr with its exit
#     status; `task get` of the ended task prints the same again (the result is kept)
#   - a task's --timeout may exceed MCP_EXEC_MAX_TIMEOUT_S (300 s) up to the task maximum: the
#     broker logs the cancelled run with MCP_TIMEOUT_S=600
#   - another uid (mcptaskeve, allowed by polkit like the owner) gets "no such task" (125) from
#     get, wait and cancel of the owner's task, and its `task list` does not show it
#   - `task list` of the owner shows its tasks; `task cancel` prints "cancelled", exits 0, and
#     the run's unit goes; `task get` then says "cancelled" (125)
#   - a bogus id: 125 and "no such task" on stderr
# The owner is root; tasks belong to the uid, not to the session, so every command finds them.
. "$(dirname "$0")/../../lib/itest.sh"

bx systemctl start mcp-exec-stdio.socket || fail "cannot start mcp-exec-stdio.socket"
bx getent group mcp-exec-users >/dev/null || fail "the group mcp-exec-users does not exist (sysusers)"
bx sh -ec '
    id -u mcptaskeve >/dev/null 2>&1 || useradd --no-create-home --user-group --shell /usr/sbin/nologin mcptaskeve
    usermod -a -G mcp-exec-users mcptaskeve' || fail "cannot create the test user"
# eve CMD...: run CMD in the box as mcptaskeve (a member of mcp-exec-users: polkit lets it in).
eve() { bx setpriv --reuid=mcptaskeve --regid=mcptaskeve --init-groups -- "$@"; }

# mx ARGS...: mcp-exec in the box as root; stdout in $OUT, stderr in $ERR, status in $RC.
mx() {
    OUT=$(bx timeout 120 mcp-exec "$@" 2>"$HDIR/mx.err")
    RC=$?
    ERR=$(cat "$HDIR/mx.err")
}
# ex ARGS...: the same as mcptaskeve.
ex() {
    OUT=$(eve timeout 120 mcp-exec "$@" 2>"$HDIR/mx.err")
    RC=$?
    ERR=$(cat "$HDIR/mx.err")
}
show() { printf 'exit %s, stdout: %s, stderr: %s' "$RC" "$(head -c 1000 <<<"$OUT")" "$(head -c 1000 <<<"$ERR")"; }
no_active_run_units() { [[ -z $(active_run_units) ]]; }
ID_RE='^[A-Za-z0-9_-]+\.[0-9a-f]{32}$'

short=$(printf 'import sys, time\ntime.sleep(6)\nprint("out of the task")\nprint("err of the task", file=sys.stderr)\nsys.exit(3)\n' | put short.py)
long=$(printf 'import time\nprint("up", flush=True)\ntime.sleep(290)\n' | put long.py)

# --- detach, get while working, wait, get after the end ---------------------------------------
mx run --detach "$short"
((RC == 0)) || fail "run --detach: $(show)"
[[ $OUT =~ $ID_RE ]] || fail "run --detach did not print one task id: $(show)"
a=$OUT
log "task A: $a"
mx task get "$a"
((RC == 75)) || fail "task get of a task that sleeps 6 s did not exit 75 (working): $(show)"
[[ $OUT == working ]] || fail "task get of a working task: stdout is not 'working': $(show)"
mx task wait "$a"
((RC == 3)) || fail "task wait: not the program's exit status 3: $(show)"
[[ $OUT == "out of the task" ]] || fail "task wait: wrong stdout: $(show)"
[[ $ERR == "err of the task" ]] || fail "task wait: wrong stderr: $(show)"
mx task get "$a"
((RC == 3)) && [[ $OUT == "out of the task" && $ERR == "err of the task" ]] ||
    fail "task get of the completed task is not its result: $(show)"
log "detach, get (working, 75), wait and get (exit 3, output) as they should"

# --- a long task, beyond the plain call's timeout cap; another uid cannot reach it ---------------
cursor=$(journal_cursor)
mx run --detach --timeout 600 "$long"
((RC == 0)) && [[ $OUT =~ $ID_RE ]] || fail "run --detach --timeout 600: $(show)"
b=$OUT
at_exit "bx mcp-exec task cancel '$b' >/dev/null 2>&1"
wait_for 60 found active_run_units || fail "task B's run did not start"
mx task get "$b"
((RC == 75)) || fail "task B (timeout 600 s) is not working: $(show)"
for verb in get wait cancel; do
    ex task "$verb" "$b"
    ((RC == 125)) || fail "mcptaskeve: task $verb of root's task did not exit 125: $(show)"
    grep -q "no such task" <<<"$ERR" || fail "mcptaskeve: task $verb of root's task: no 'no such task': $(show)"
    [[ -z $OUT ]] || fail "mcptaskeve: task $verb printed something: $(show)"
done
ex task list
((RC == 0)) || fail "mcptaskeve: task list: $(show)"
! grep -qF "$b" <<<"$OUT" && ! grep -qF "$a" <<<"$OUT" || fail "mcptaskeve's task list shows root's tasks: $(show)"
mx task get "$b"
((RC == 75)) || fail "task B is not working any more after the other uid's cancel: $(show)"
log "another uid: no such task for get, wait, cancel; not in its list"

mx task list
((RC == 0)) || fail "task list: $(show)"
grep -qP "^\Q$a\E\tcompleted\t" <<<"$OUT" || fail "task list does not show A completed: $(show)"
grep -qP "^\Q$b\E\tworking\t" <<<"$OUT" || fail "task list does not show B working: $(show)"

# --- cancel ----------------------------------------------------------------------------------------
mx task cancel "$b"
((RC == 0)) && [[ $OUT == cancelled ]] || fail "task cancel: $(show)"
wait_for 15 no_active_run_units || fail "task B's unit is still active 15 s after the cancel: $(active_run_units)"
# The broker's record of the run: its timeout was the task's 600 s (a plain call's is clamped to
# 300), and it ended cancelled.
broker_saw() {
    journal_since "$cursor" -o json 2>/dev/null | "$PY" -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l) if l.strip() else {}
    if e.get("MCP_TIMEOUT_S") == "600" and e.get("MCP_CANCELLED") == "1":
        sys.exit(0)
sys.exit(1)'
}
wait_for 15 broker_saw || fail "the broker logged no cancelled run with MCP_TIMEOUT_S=600"
mx task get "$b"
((RC == 125)) && [[ $OUT == cancelled ]] || fail "task get of the cancelled task: $(show)"
mx task cancel "$b"
((RC == 125)) || fail "task cancel of a cancelled task did not exit 125: $(show)"
log "cancel: 'cancelled', the unit went, get says cancelled"

# --- a bogus id ------------------------------------------------------------------------------------
mx task get "nonode.0123456789abcdef0123456789abcdef"
((RC == 125)) && [[ -z $OUT ]] || fail "task get of a bogus id: $(show)"
grep -q "no such task" <<<"$ERR" || fail "task get of a bogus id: no 'no such task' on stderr: $(show)"
log "bogus id: $ERR"

assert_clean 15
pass
