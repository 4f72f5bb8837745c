#!/usr/bin/env bash
# polkit decides who gets a local MCP session (action org.mcp-exec.run): two local users without
# an active session, mcpalice (member of mcp-exec-users, allowed by polkit/50-mcp-exec.rules) and
# mcpbob (not a member: auth_admin, which no agent can answer here, so denied).
#   - alice: `mcp-exec run` prints her program's output and exits with its exit code
#   - bob: `mcp-exec run` exits 125 with "access denied" on stderr and runs nothing;
#     `mcp-exec stdio` hands his client the JSON-RPC error -32001
#   - the journal records both decisions with MCP_CLIENT_UID and MCP_DECISION
. "$(dirname "$0")/../../lib/itest.sh"

bx systemctl start mcp-exec-stdio.socket || fail "cannot start mcp-exec-stdio.socket"
bx getent group mcp-exec-users >/dev/null || fail "the group mcp-exec-users does not exist (sysusers)"

# Users (idempotent; the box's /etc is its own).
bx sh -ec '
    id -u mcpalice >/dev/null 2>&1 || useradd --no-create-home --user-group --shell /usr/sbin/nologin mcpalice
    id -u mcpbob >/dev/null 2>&1 || useradd --no-create-home --user-group --shell /usr/sbin/nologin mcpbob
    usermod -a -G mcp-exec-users mcpalice
    gpasswd -d mcpbob mcp-exec-users >/dev/null 2>&1 || true' || fail "cannot create the test users"
alice=$(bx id -u mcpalice) || fail "no uid for mcpalice"
bob=$(bx id -u mcpbob) || fail "no uid for mcpbob"
bx id -nG mcpalice | grep -qw mcp-exec-users || fail "mcpalice is not in mcp-exec-users: $(bx id mcpalice)"
! bx id -nG mcpbob | grep -qw mcp-exec-users || fail "mcpbob is in mcp-exec-users: $(bx id mcpbob)"
log "alice uid $alice, bob uid $bob"

# as USER CMD...: run CMD in the box as USER (no PAM, no logind session: not an active session).
as() {
    local u=$1
    shift
    bx setpriv --reuid="$u" --regid="$u" --init-groups -- "$@"
}

code=$(printf 'import os, sys\nprint("hello from uid", os.getuid() >= 61184)\nprint("to stderr", file=sys.stderr)\n' | put hello.py)
printf 'import sys\nprint("seven")\nsys.exit(7)\n' | put exit7.py >/dev/null

cursor=$(journal_cursor)

# --- alice: allowed ------------------------------------------------------------------------------
out=$(as mcpalice mcp-exec run "$code" 2>"$HDIR/alice.err")
rc=$?
err=$(cat "$HDIR/alice.err")
((rc == 0)) || fail "alice: mcp-exec run exited $rc, expected 0; stdout: $out; stderr: $err"
[[ $out == "hello from uid True" ]] || fail "alice: wrong output: $out (stderr: $err)"
[[ $err == "to stderr" ]] || fail "alice: wrong stderr: $err"
out=$(as mcpalice mcp-exec run <"$HDIR/exit7.py" 2>"$HDIR/alice.err")
rc=$?
((rc == 7)) || fail "alice: a program exiting 7 gave exit $rc (stdout: $out; stderr: $(cat "$HDIR/alice.err"))"
[[ $out == seven ]] || fail "alice: wrong output from stdin: $out"
log "alice: allowed, output and exit codes right"

# --- bob: denied ---------------------------------------------------------------------------------
out=$(as mcpbob mcp-exec run "$code" 2>"$HDIR/bob.err")
rc=$?
err=$(cat "$HDIR/bob.err")
((rc == 125)) || fail "bob: mcp-exec run exited $rc, expected 125; stdout: $out; stderr: $err"
[[ -z $out ]] || fail "bob: output although denied: $out"
grep -q "access denied" <<<"$err" || fail "bob: no 'access denied' on stderr: $err"
log "bob: run denied: $err"

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bob","version":"1"}}}'
out=$(printf '%s\n' "$init" | as mcpbob timeout 20 mcp-exec stdio 2>"$HDIR/bob.err")
rc=$?
err=$(cat "$HDIR/bob.err")
"$PY" -c '
import json, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
assert len(lines) == 1, lines
m = json.loads(lines[0])
assert m["error"]["code"] == -32001 and "access denied" in m["error"]["message"] and "result" not in m, m
' <<<"$out" || fail "bob: mcp-exec stdio did not hand the client one -32001 error: $out (exit $rc, stderr: $err)"
grep -q "access denied" <<<"$err" || fail "bob: mcp-exec stdio said nothing on stderr: $err"
((rc != 124)) || fail "bob: mcp-exec stdio did not end after the denial"

# --- the journal ---------------------------------------------------------------------------------
journal_since "$cursor" -o json >"$HDIR/journal.json" || fail "cannot read the box journal"
# (Filtered in Python: journalctl field matches together with --after-cursor lose the first entry
# on systemd 252.)
"$PY" - "$alice" "$bob" "$HDIR/journal.json" <<'PYEOF' || fail "the journal does not record the decisions as it should"
import json, sys
alice, bob = sys.argv[1], sys.argv[2]
decisions, calls = [], []
for line in open(sys.argv[3]):
    if not line.strip():
        continue
    e = json.loads(line)
    if e.get("SYSLOG_IDENTIFIER") != "mcp-execd":
        continue
    if "MCP_DECISION" in e:
        decisions.append(e)
    if e.get("MESSAGE", "").startswith("exec call"):
        calls.append(e)
def show(es):
    return "\n".join("  %s %s %s: %s" % (e.get("MCP_CLIENT_UID"), e.get("MCP_DECISION"), e.get("_SYSTEMD_UNIT"), e.get("MESSAGE")) for e in es)
print("decisions:\n" + show(decisions), file=sys.stderr)
ok = True
for uid, want, n in ((alice, "allowed", 2), (bob, "denied", 2)):
    es = [e for e in decisions if e.get("MCP_CLIENT_UID") == uid]
    good = [e for e in es if e.get("MCP_DECISION") == want and e.get("MCP_POLKIT_ACTION") == "org.mcp-exec.run"
            and e.get("_SYSTEMD_UNIT") == "mcp-exec-stdio.service" and e.get("MCP_CLIENT_PID")]
    if len(good) < n or len(good) != len(es):
        print("uid %s: expected %d entries with MCP_DECISION=%s, got:\n%s" % (uid, n, want, show(es)), file=sys.stderr)
        ok = False
if [e for e in calls if e.get("MCP_CLIENT_UID") == bob]:
    print("a call of the denied uid %s was logged" % bob, file=sys.stderr)
    ok = False
if len([e for e in calls if e.get("MCP_CLIENT_UID") == alice]) < 2:
    print("alice's 2 calls are not in the journal:\n" + show(calls), file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
PYEOF
assert_clean 15
pass
