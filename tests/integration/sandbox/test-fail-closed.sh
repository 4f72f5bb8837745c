#!/usr/bin/env bash
# Fail closed: with MCP_EXEC_MEMORY_MAX=abc the broker refuses to start, says why in one journal
# line naming the variable, and a run gets an error, not a result (at once: the failing broker
# closes what waits on its socket). While it cannot start, clients keep knocking on its socket,
# three times more often than the socket's trigger limit (20 activations in 2 s) allows: the
# socket must still listen afterwards, and once the file is put back (nothing restarted, nothing
# reset-failed) runs work again. On the old units every failed start woke the socket at once
# while a connection waited, so the limit was hit within a second or two on a fast machine, the
# socket was left failed with its path gone, and every later run failed ("No such file or
# directory") until an admin restarted it. The front end (same file) closes what waits on its
# sockets the same way. (The file is restored at exit even on failure.)
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

# Knocking: three waves of 25 connections at once, each held until the failing broker closes it
# (or, on the old units, the failed socket did); a connection that finds no socket is refused.
KNOCK='import socket
counts = {"closed": 0, "refused": 0, "hung": 0}
for wave in range(3):
    held = []
    for i in range(25):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(20)
        try:
            s.connect("/run/mcp-exec/broker.sock")
            held.append(s)
        except OSError:
            counts["refused"] += 1
            s.close()
    for s in held:
        try:
            s.recv(1)
            counts["closed"] += 1
        except socket.timeout:
            counts["hung"] += 1
        except OSError:
            counts["closed"] += 1
        s.close()
print(" ".join("%s=%d" % kv for kv in sorted(counts.items())))'
knock=$(bx python3 -c "$KNOCK") || fail "the connections to the broker's socket failed: $knock"
state="$(bx systemctl show -P ActiveState mcp-exec-broker.socket) ($(bx systemctl show -P Result mcp-exec-broker.socket))"
log "75 connections while the broker cannot start: $knock; the socket: $state"
[[ $state == "active (success)" ]] || fail "the broker's socket is left $state after 75 activations"
[[ $knock == "closed=75 hung=0 refused=0" ]] || fail "not every connection was closed by the failing broker: $knock"

# The front end reads the same file and cannot start either. What waits on its sockets (stdio and
# HTTP) is closed at once by each failed start, not held while systemd starts it again once a
# second until each client's own timeout (before: every connection hung until its 15 s timeout here).
http_was=$(bx systemctl is-active mcp-exec.socket)
[[ $http_was == active ]] || at_exit "bx systemctl stop mcp-exec.socket mcp-exec.service >/dev/null 2>&1"
bx systemctl start mcp-exec.socket || fail "cannot start mcp-exec.socket"
bx systemctl stop mcp-exec.service mcp-exec-stdio.service >/dev/null 2>&1
FKNOCK='import socket
counts = {"answered": 0, "closed": 0, "refused": 0, "hung": 0}
for wave in range(2):
    held = []
    for i in range(4):
        for fam, addr in ((socket.AF_UNIX, "/run/mcp-exec/stdio.sock"), (socket.AF_INET, ("127.0.0.1", 8080))):
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.settimeout(15)
            try:
                s.connect(addr)
                held.append(s)
            except OSError:
                counts["refused"] += 1
                s.close()
    for s in held:
        http = s.family == socket.AF_INET
        try:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" if http else b"{}\n")
            counts["answered" if s.recv(4096) else "closed"] += 1
        except socket.timeout:
            counts["hung"] += 1
        except OSError:
            counts["closed"] += 1
        s.close()
print(" ".join("%s=%d" % kv for kv in sorted(counts.items())))'
knock=$(bx python3 -c "$FKNOCK") || fail "the connections to the front end's sockets failed: $knock"
for u in mcp-exec.socket mcp-exec-stdio.socket; do
    state="$(bx systemctl show -P ActiveState $u) ($(bx systemctl show -P Result $u))"
    [[ $state == "active (success)" ]] || fail "$u is left $state after the front end's failed starts"
done
log "16 connections while the front end cannot start: $knock"
[[ $knock == "answered=0 closed=16 hung=0 refused=0" ]] || fail "not every connection was closed by the failing front end: $knock"

# Fixed again, by the file alone: runs work, with no restart and no reset-failed of anything.
if [[ -e $HDIR/conf.saved ]]; then
    cp -a "$HDIR/conf.saved" "$BOXROOT$CONF"
else
    rm -f "$BOXROOT$CONF"
fi
# A broker that a failing front end's start woke may still be starting with the file it read
# before: it closes what comes to it and exits. The next one reads the fixed file. (On a loaded
# machine that start can be slow enough for the run below to meet it: Debian 13's pass, once.)
broker_settled() { [[ $(bx systemctl show -P ActiveState mcp-exec-broker.service) != *activating ]]; }
wait_for 30 broker_settled || fail "the broker is still starting (or stopping) 30 s after the fix"
assert_runs_work
[[ $(journal_since "$cursor" -u mcp-exec-broker.socket -o cat | grep -c "Trigger limit hit") == 0 ]] ||
    fail "the broker's socket hit its trigger limit: $(journal_since "$cursor" -u mcp-exec-broker.socket -o cat | tail -3)"

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
