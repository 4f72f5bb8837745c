#!/usr/bin/env bash
# Fail closed: with MCP_EXEC_MEMORY_MAX=abc the broker refuses to start, says why in one journal
# line naming the variable, and a run gets an error, not a result. With the file gone again
# (restored at exit even on failure), runs work again.
# The same for each run's /tmp (mcp-exec-tmpfsd mounts it before the unit starts): with the mount
# daemon gone (its socket stopped), and with it refusing (/run/mcp-exec-tmp open to others), a run
# gets an error that says so, its code does not run, and no unit is started for it.
. "$(dirname "$0")/../../lib/itest.sh"

assert_runs_work
cursor=$(journal_cursor)
set_config MCP_EXEC_MEMORY_MAX=abc   # restored by an exit handler
if bx systemctl restart mcp-exec-broker.service >/dev/null 2>&1; then
    fail "the broker started with MCP_EXEC_MEMORY_MAX=abc"
fi
state=$(bx systemctl show -P ActiveState mcp-exec-broker.service)
[[ $state != active ]] || fail "the broker is active with a bad configuration"

# One journal line naming the variable, from the broker itself.
found_line() { journal_since "$cursor" -u mcp-exec-broker.service -o cat | grep -F MCP_EXEC_MEMORY_MAX; }
wait_for 10 found found_line || fail "no journal line names MCP_EXEC_MEMORY_MAX:"$'\n'"$(journal_since "$cursor" -u mcp-exec-broker.service -o short)"
log "journal: $(found_line | head -1)"
n2=$(journal_since "$cursor" -u mcp-exec-broker.service -o json --output-fields=MESSAGE,SYSLOG_IDENTIFIER,_PID |
    "$PY" -c '
import json, sys, collections
per_pid = collections.Counter()
for l in sys.stdin:
    m = json.loads(l)
    msg = m.get("MESSAGE")
    if isinstance(msg, list):
        msg = bytes(msg).decode(errors="replace")
    if m.get("SYSLOG_IDENTIFIER") == "mcp-exec-brokerd" and "MCP_EXEC_MEMORY_MAX" in (msg or ""):
        per_pid[m.get("_PID")] += 1
print(max(per_pid.values()) if per_pid else 0)')
[[ $n2 == 1 ]] || fail "expected exactly one line naming MCP_EXEC_MEMORY_MAX per broker start, got $n2"

# A run gets an error, not a result: an error result, or a clear refusal to connect. (SIGPIPE
# ignored as in the real front end: the dying broker closes the run's stdin pipe under the
# client; see test-stdin.)
out=$(call_nosigpipe --timeout 10 -- 'print("should not run")')
rc=$?
log "run with a broken broker: exit $rc: $out $(call_err | head -3)"
((rc != 0)) || fail "broker-call succeeded against a broker that cannot start"
[[ $out != *"should not run"* ]] || fail "the code ran"
if [[ -n $out ]]; then
    jcheck "$out" 'r.get("error") and r["stdout"] == "" and r["exit_code"] != 0' "a run produced a result"
else
    call_err | grep -q 'cannot reach the broker' ||
        fail "no error result and no error message (exit $rc): $(call_err)"
fi

# Fixed again: runs work.
restore_config   # (the exit handler does it again, harmlessly)
bx systemctl restart mcp-exec-broker.service >/dev/null 2>&1 ||
    fail "the broker does not start with the configuration restored: $(journal_since "$cursor" -u mcp-exec-broker.service -o cat | tail -5)"
assert_runs_work

# --- the run's /tmp ------------------------------------------------------------------------------
# No warm unit (its /tmp is mounted ahead): every run asks for its own.
set_config MCP_EXEC_POOL_SIZE=0
assert_runs_work
at_exit "bx systemctl start mcp-exec-tmpfs.socket >/dev/null 2>&1; bx chmod 0700 /run/mcp-exec-tmp"

# tmp_refused WHAT MESSAGE: a run gets an error naming its /tmp and MESSAGE; its code did not run
# and no unit was started for it.
tmp_refused() {
    local cursor out
    cursor=$(journal_cursor)
    out=$(call --timeout 10 -- 'print("should not run")')
    log "$1: $out $(call_err | head -3)"
    [[ $out != *"should not run"* ]] || fail "$1: the code ran"
    jcheck "$out" 'r.get("error") and r["exit_code"] != 0 and r["stdout"] == ""' "$1: a run produced a result"
    jcheck "$out" 'r["error"] == "start-failed" and "private /tmp could not be mounted" in r["error_message"]' "$1: the error does not name the run's /tmp"
    jcheck "$out" "'$2' in r['error_message']" "$1: the error does not say why ($2)"
    journal_since "$cursor" -o cat | grep -q 'Started mcp-exec-run-' && fail "$1: a run unit was started"
    return 0
}

# The mount daemon is gone: nothing listens on /run/mcp-exec/tmpfs.sock.
bx systemctl stop mcp-exec-tmpfs.socket mcp-exec-tmpfs.service || fail "cannot stop mcp-exec-tmpfs.socket"
tmp_refused "mount daemon stopped" "cannot reach mcp-exec-tmpfsd"
bx systemctl start mcp-exec-tmpfs.socket || fail "cannot start mcp-exec-tmpfs.socket"
assert_runs_work

# The mount daemon refuses: the mount points' parent is no longer root's alone.
bx chmod 0755 /run/mcp-exec-tmp
tmp_refused "mount daemon refusing" "/run/mcp-exec-tmp is not a directory only root may enter"
bx chmod 0700 /run/mcp-exec-tmp
assert_runs_work
pass
