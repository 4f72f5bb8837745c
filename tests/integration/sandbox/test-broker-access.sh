#!/usr/bin/env bash
# Broker access: root and the front end's user (mcp-exec) may run code; nobody else may: not a
# plain user (the socket's permissions), and not a user who is merely in group mcp-exec (the
# broker's own SO_PEERCRED check).
. "$(dirname "$0")/../../lib/itest.sh"

bx getent passwd mcp-exec >/dev/null || fail "no user mcp-exec in the box (systemd-sysusers?)"
bx getent passwd nobody >/dev/null || skip "no user nobody in the box"
nogroup=$(bx id -gn nobody)
f=$(printf 'print("ran as", __import__("os").getuid())\n' | put code.py)

# as SETPRIV-ARGS... -- : run the test code through the broker with those credentials (SIGPIPE
# ignored, as in the real front end: a refusal may close the run's stdin pipe under the client).
as() {
    local -a sp=()
    while [[ $1 != -- ]]; do sp+=("$1"); shift; done
    bx setpriv "${sp[@]}" -- sh -c 'trap "" PIPE; exec mcp-exec-broker-call "$@"' sh --timeout 10 "$f" 2>"$HDIR/as.err"
}
as_err() { cat "$HDIR/as.err"; }

# Allowed.
out=$(as --reuid=0 --regid=0 --clear-groups --) || fail "root cannot run code: $out $(as_err)"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"].startswith("ran as ")' "root's run failed"
out=$(as --reuid=mcp-exec --regid=mcp-exec --init-groups --) || fail "user mcp-exec cannot run code: $out $(as_err)"
jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"].startswith("ran as ")' "mcp-exec's run failed"

# Refused: a plain user.
out=$(as --reuid=nobody --regid="$nogroup" --clear-groups --)
rc=$?
log "nobody: exit $rc: $out $(as_err | head -2)"
((rc != 0)) || fail "user nobody could use the broker: $out"
[[ $out != *'"ran as'* ]] || fail "code of user nobody ran: $out"
if [[ -n $out ]]; then
    jcheck "$out" 'r.get("error") and r["stdout"] == ""' "nobody got a result"
else
    as_err | grep -qiE 'permission denied|access|denied' ||
        fail "nobody's refusal does not say why: $(as_err)"
fi

# Refused: a user in group mcp-exec (can open the socket) who is not mcp-exec itself.
out=$(as --reuid=nobody --regid="$nogroup" --groups=mcp-exec --)
rc=$?
log "nobody+mcp-exec group: exit $rc: $out $(as_err | head -2)"
((rc != 0)) || fail "a member of group mcp-exec could use the broker: $out"
[[ $out != *'"ran as'* ]] || fail "code of a member of group mcp-exec ran: $out"
if [[ -n $out ]]; then
    jcheck "$out" 'r.get("error") and r["stdout"] == ""' "a member of group mcp-exec got a result"
else
    as_err | grep -q 'cannot reach the broker' || fail "the refusal says nothing: $(as_err)"
fi
assert_clean 10
pass
