#!/usr/bin/env bash
# Code mode's upstream servers (issue 40) as systemd runs them: servers.d files for two real
# npm servers (server-everything, server-memory, pinned in tests/node-clients), a non-MCP one
# with hostile arguments and environment, a bad file and a file with a bad name; then
# daemon-reload (mcp-exec-servers-generator) and sockets.target. Checks: each good server's
# socket listens as root:mcp-exec-tools 0660 and speaks MCP (initialize, tools/list) to root and
# to a member of mcp-exec-tools, not to others; every connection is an instance of its own (a
# memory-server entity made on one is not on another); an instance runs as a dynamic user
# without network, gets its credential in the variable CREDENTIAL_ENV names (get-env shows it),
# and the canary is nowhere in `systemctl show`, the generated units or the journal; arguments
# and environment reach the server exactly as written (%, $, \, ;, quotes); the bad files are
# named with their line in the journal and only their servers are off. Then through the gateway
# (mcp-exec-toolsd, as the broker and runs speak to it): it reaches the sockets as its own dynamic
# user, lists the real servers' tools, calls them, and keeps one instance per caller: uid:1000's
# entity is there in its next run and not in uid:1001's. Last, NETWORK=egress:POLICY on the egress
# tests' test internet (tests/lib/egress-net.sh), with tests/lib/upstream-fetch.py as the server:
# allowed.test served, denied.test and a name of 127.0.0.1 refused by egressd; alone the instance
# has only lo, no route, no DNS, no AF_INET6, bind()/listen() EPERM, its supervisor unreadable; its
# run in egressd ends with it; through the gateway a policy's CALLERS narrow the server's; a policy
# egressd lacks, and an egressd that cannot start, keep the instance from starting (the journal,
# and the code's error, say why); egressd journals each connection, naming the server, no payload;
# the gateway keeps PrivateNetwork.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

SD=/etc/mcp-exec/servers.d
MCP="$ITEST_DIR/lib/upstream-mcp.py"
CANARY="mcp-canary-upstream-$RANDOM$RANDOM-credential"
NODE=$(upstream_node)
[[ $NODE == /* ]] || skip "MCP_TEST_NODE=$NODE is not an absolute path, which COMMAND= needs"
case $NODE in
/home/* | /root/*) skip "MCP_TEST_NODE=$NODE is under /home or /root, which ProtectHome= hides from the upstream units" ;;
esac
node_modules=$(upstream_clients_dir)/node_modules/@modelcontextprotocol
for s in server-everything server-memory; do
    bx test -f "$node_modules/$s/dist/index.js" || fail "no $node_modules/$s/dist/index.js"
done

cleanup() {
    bx sh -c 'systemctl stop "mcp-exec-upstream-*.socket" "mcp-exec-upstream-*@*.service"
              systemctl stop mcp-exec-tools.service
              rm -f /etc/mcp-exec/servers.d/everything.conf /etc/mcp-exec/servers.d/memory.conf \
                    /etc/mcp-exec/servers.d/argv.conf /etc/mcp-exec/servers.d/bad.conf \
                    /etc/mcp-exec/servers.d/Bad-Name.conf /etc/credstore/mcp-test-everything.token \
                    /etc/mcp-exec/servers.d/fetch.conf /etc/mcp-exec/servers.d/narrow.conf \
                    /etc/mcp-exec/servers.d/ghost.conf
              [ "$1" = 1 ] || rmdir /etc/mcp-exec/servers.d 2>/dev/null
              systemctl daemon-reload
              [ "$2" = active ] || systemctl stop mcp-exec-tools.socket
              systemctl reset-failed "mcp-exec-upstream-*"' sh "$had_sd" "$tools_socket" >/dev/null 2>&1
}
bx test -e "$SD" && had_sd=1 || had_sd=0
tools_socket=$(bx systemctl is-active mcp-exec-tools.socket 2>/dev/null)
at_exit cleanup

bx mkdir -p "$SD"
printf '%s\n' "$CANARY" >"$BOXROOT/etc/credstore/mcp-test-everything.token"
chmod 0600 "$BOXROOT/etc/credstore/mcp-test-everything.token"
cat >"$BOXROOT$SD/everything.conf" <<EOF2
# The reference server; its get-env tool shows the environment that reached it.
DESCRIPTION="The MCP reference server"
COMMAND="$NODE $node_modules/server-everything/dist/index.js stdio"
CREDENTIALS=tok:/etc/credstore/mcp-test-everything.token
CREDENTIAL_ENV=API_KEY=tok
EOF2
cat >"$BOXROOT$SD/memory.conf" <<EOF2
COMMAND="$NODE $node_modules/server-memory/dist/index.js"
# The graph in the instance's own /tmp (PrivateTmp=): state per connection.
ENVIRONMENT=MEMORY_FILE_PATH=/tmp/memory.jsonl
EOF2
# Not an MCP server: sh waits on its stdin (the connection), so that its argv and environment
# can be read; every word holds something unit files would otherwise interpret.
cat >"$BOXROOT$SD/argv.conf" <<'EOF2'
COMMAND="/bin/sh -c \"read x\" sh %n $HOME ; a\\b 'q' %% $$ \"two  words\" \"\""
ENVIRONMENT="\"HOSTILE=%n $HOME a\\b ; 'q' %%\""
CALLERS=""
EOF2
printf 'COMMAND=/bin/true\nDESCRIPTION=x\nNETWORK=wide\n' >"$BOXROOT$SD/bad.conf"
printf 'COMMAND=/bin/true\n' >"$BOXROOT$SD/Bad-Name.conf"
chmod 0644 "$BOXROOT$SD"/*.conf

cursor=$(journal_cursor)
bx systemctl daemon-reload || fail "daemon-reload failed"
# New wants of an active target start when it is started again.
bx systemctl start sockets.target || fail "cannot start sockets.target"

# --- the units: the good servers' sockets listen, root:mcp-exec-tools 0660; none for the bad files.
for s in everything memory argv; do
    bx systemctl is-active --quiet "mcp-exec-upstream-$s.socket" ||
        fail "mcp-exec-upstream-$s.socket is not active: $(bx systemctl status --no-pager "mcp-exec-upstream-$s.socket" 2>&1 | head -20)"
    st=$(bx stat -c '%U:%G %a %F' "/run/mcp-exec/upstream/$s.sock") || fail "no /run/mcp-exec/upstream/$s.sock"
    [[ $st == "root:mcp-exec-tools 660 socket" ]] || fail "$s.sock is $st, not root:mcp-exec-tools 660"
done
log "three sockets listen, root:mcp-exec-tools 0660"
for s in bad Bad-Name; do
    [[ $(bx systemctl show -P LoadState "mcp-exec-upstream-$s.socket") == not-found ]] ||
        fail "a unit for the refused $s.conf"
done
generator_said() {
    # Not -t: journalctl 252 with a match skips the first entry after the cursor.
    gen=$(journal_since "$cursor" -o short | grep -F ' mcp-exec-servers-generator[')
    grep -qF "2 refused" <<<"$gen" && grep -qF "Bad-Name.conf" <<<"$gen" && grep -qF "bad.conf" <<<"$gen"
}
wait_for 10 generator_said
grep -qF "$SD/bad.conf:3: NETWORK: expected none, host or egress:POLICY; that server is off" <<<"$gen" ||
    fail "the journal does not name bad.conf's line 3:"$'\n'"$gen"
grep -qF "$SD/Bad-Name.conf: 'Bad-Name' is not a server name" <<<"$gen" ||
    fail "the journal does not name Bad-Name.conf:"$'\n'"$gen"
log "refused, in the journal: $(grep -c 'that server is off' <<<"$gen") files, bad.conf by its line 3"

# --- MCP over the sockets: root, a member of mcp-exec-tools; not anyone else.
tools=$(bx "$PY" "$MCP" tools everything 2>"$HDIR/mcp.err") || fail "everything: $(cat "$HDIR/mcp.err")"
grep -qx echo <<<"$tools" && grep -qx get-env <<<"$tools" || fail "everything's tools: $tools"
log "everything: $(wc -l <<<"$tools") tools ($(cat "$HDIR/mcp.err"))"
gid=$(bx getent group mcp-exec-tools | cut -d: -f3)
[[ -n $gid ]] || fail "no group mcp-exec-tools"
tools=$(bx setpriv --reuid=65534 --regid=65534 --groups="$gid" "$PY" "$MCP" tools memory 2>"$HDIR/mcp.err") ||
    fail "a member of mcp-exec-tools: $(cat "$HDIR/mcp.err")"
grep -qx create_entities <<<"$tools" && grep -qx read_graph <<<"$tools" || fail "memory's tools: $tools"
log "memory, to a member of mcp-exec-tools: $(wc -l <<<"$tools") tools"
out=$(bx setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$MCP" tools memory 2>&1) &&
    fail "a user outside mcp-exec-tools spoke to the memory server: $out"
grep -q PermissionError <<<"$out" || fail "outside mcp-exec-tools: not refused by the socket's mode: $out"
log "outside mcp-exec-tools: $(grep -o 'PermissionError.*' <<<"$out" | head -1)"

# --- an instance per connection; a dynamic user without network; the credential.
out=$(bx "$PY" "$MCP" memory memory 2>&1) || fail "$out"
log "$out"
out=$(bx "$PY" "$MCP" env everything "$CANARY" 2>&1) || fail "$out"
log "$out"
out=$(bx "$PY" "$MCP" argv-env argv HOSTILE "%n \$HOME a\\b ; 'q' %%" \
    /bin/sh -c "read x" sh %n '$HOME' ';' 'a\b' "'q'" %% '$$' "two  words" "" 2>&1) || fail "$out"
log "$out"

# --- through the gateway (mcp-exec-toolsd, its own dynamic user in mcp-exec-tools), as the broker
# and runs use it: one upstream instance per caller, kept from run to run.
if bx systemctl cat mcp-exec-tools.socket >/dev/null 2>&1; then
    # Started again, it reads servers.d as written now.
    bx systemctl stop mcp-exec-tools.service
    bx systemctl start mcp-exec-tools.socket || fail "cannot start mcp-exec-tools.socket"
    out=$(bx "$PY" "$MCP" gateway "$CANARY" 2>&1) || fail "$out"$'\n'"$(bx journalctl -u mcp-exec-tools.service -n 20 --no-pager)"
    log "$out"
else
    log "no mcp-exec-tools.socket in this build: the gateway's part skipped"
fi

# --- NETWORK=egress:POLICY: upstreams (tests/lib/upstream-fetch.py, a tiny MCP server) that reach
# the egress tests' internet (tests/lib/egress-net.sh) through mcp-exec-egressd only. fetch: policy
# web (every caller); narrow: policy narrow (CALLERS uid:4242), per caller; ghost: a policy egressd
# does not have.
. "$ITEST_DIR/lib/egress-net.sh"
bx systemctl cat mcp-exec-egress.socket >/dev/null 2>&1 || fail "mcp-exec-egress.socket is not installed in the box"
egress_net_up
# The file has the HTTP token too (a secret the gateway, which reads the policies from it, must not hold).
TCANARY="mcp-canary-auth-token-$RANDOM$RANDOM"
set_config 'MCP_EXEC_EGRESS_POLICY_WEB="allowed.test loop.test :80"' 'MCP_EXEC_EGRESS_POLICY_NARROW="allowed.test :80"' \
    MCP_EXEC_EGRESS_CALLERS_NARROW=uid:4242 MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/24 "MCP_EXEC_AUTH_TOKEN=$TCANARY"
at_exit 'bx systemctl stop mcp-exec-egress.service >/dev/null 2>&1'
bx sh -c 'systemctl stop mcp-exec-egress.service mcp-exec-tools.service; systemctl reset-failed mcp-exec-egress.service' \
    >/dev/null 2>&1
fetch=$(put upstream-fetch.py <"$ITEST_DIR/lib/upstream-fetch.py")
ECANARY="mcp-canary-upstream-egress-$RANDOM$RANDOM"
for s in fetch:web narrow:narrow ghost:nope; do
    printf 'COMMAND="/usr/bin/python3 %s"\nNETWORK=egress:%s\n' "$fetch" "${s#*:}" >"$BOXROOT$SD/${s%%:*}.conf"
done
# ENVIRONMENT is the server's, never its unit's root ExecStartPre='s: there NOTIFY_SOCKET (or
# LD_PRELOAD) would redirect (or run) root's code; the fetch server sees both variables.
printf 'ENVIRONMENT="NOTIFY_SOCKET=/run/mcp-exec/egress.sock FETCH_TEST=ok"\n' >>"$BOXROOT$SD/fetch.conf"
chmod 0644 "$BOXROOT$SD"/*.conf
cursor=$(journal_cursor)
bx systemctl daemon-reload || fail "daemon-reload failed"
bx systemctl start sockets.target || fail "cannot start sockets.target"
out=$(bx "$PY" "$MCP" egress fetch "$ECANARY" 2>&1) ||
    fail "$out"$'\n'"$(journal_since "$cursor" -o short | grep -E 'upstream-fetch|upstream-exec|egressd|upstream-feed' | tail -20)"
log "$out"
# Its run in egressd ends with the instance (the fd store closed with the unit).
inst=$(sed -n 's/^fetch (mcp-exec-upstream-fetch@\([^ ]*\)\.service).*/\1/p' <<<"$out")
wait_for 10 found eval "journal_since '$cursor' -o cat | grep -F 'Upstream fetch, instance $inst: ended'" ||
    fail "egressd did not end the run of fetch's instance $inst with it: $(journal_since "$cursor" -o cat | grep -F "instance $inst")"
# A policy egressd does not have: the instance never starts, the journal says why.
out=$(bx "$PY" "$MCP" no-start ghost 2>&1) || fail "$out"
wait_for 10 found eval "journal_since '$cursor' -o cat | grep -F 'mcp-exec-upstream-feed: ghost: no network for this instance'" ||
    fail "the journal does not say why ghost's instance did not start: $(journal_since "$cursor" -o cat | grep -F ghost | tail -5)"
log "$out; journal: $(journal_since "$cursor" -o cat | grep -F 'mcp-exec-upstream-feed: ghost:' | head -1)"
# Through the gateway: the policies' CALLERS; it reads servers.d and the policies at its start.
bx systemctl stop mcp-exec-tools.service 2>/dev/null
out=$(bx "$PY" "$MCP" egress-gateway 2>&1) ||
    fail "$out"$'\n'"$(bx journalctl -u mcp-exec-tools.service -n 20 --no-pager)"
log "$out"
# (A wait, as above: the entry may reach the journal after the answer did, on busy cores.)
wait_for 10 found eval "journal_since '$cursor' -o cat | grep -F 'Server ghost (NETWORK=egress:nope): its egress policy is not configured'" ||
    fail "the gateway does not say why ghost is off: $(journal_since "$cursor" -o cat | grep -F ghost | tail -5)"
# It has the policies from the file, not the HTTP token.
tpid=$(bx systemctl show -P MainPID mcp-exec-tools.service)
[[ $tpid -gt 0 ]] && bx grep -qF MCP_EXEC_EGRESS_POLICY_WEB "/proc/$tpid/environ" ||
    fail "the gateway (pid $tpid) does not have the egress policies in its environment"
bx grep -qF "$TCANARY" "/proc/$tpid/environ" && fail "the gateway's environment has MCP_EXEC_AUTH_TOKEN"
# The gateway itself still has no network.
[[ $(bx systemctl show -P PrivateNetwork mcp-exec-tools.service) == yes &&
    $(bx systemctl show -P RestrictAddressFamilies mcp-exec-tools.service) == AF_UNIX ]] ||
    fail "the gateway has network: $(bx systemctl show -p PrivateNetwork -p RestrictAddressFamilies mcp-exec-tools.service)"
# egressd's journal: one entry per connection of the fetch instances, naming the server, no payload.
jl=$(journal_since "$cursor" -o json)
got=$("$PY" -c '
import json, sys
n = {}
for l in sys.stdin:
    e = json.loads(l)
    if e.get("SYSLOG_IDENTIFIER") == "mcp-exec-egressd" and e.get("MCP_UPSTREAM") == "fetch" and e.get("MCP_UPSTREAM_INSTANCE"):
        n[e["EGRESS_VERDICT"]] = n.get(e["EGRESS_VERDICT"], 0) + 1
print(json.dumps(n, sort_keys=True))' <<<"$jl")
[[ $got == '{"allowed": 3, "non-public": 1, "policy": 1}' ]] ||
    fail "egressd's entries for fetch by EGRESS_VERDICT: $got, want 3 allowed (2 direct, 1 through the gateway), 1 each refused"
grep -qF "$ECANARY" <<<"$jl" && fail "the body of an upstream's POST is in the journal"
log "egressd's journal: per connection of fetch's instances $got, no payload"
egress_assert_no_crash
# A server that outlives its connection (ignoring EOF and SIGTERM) does not keep its network.
out=$(bx "$PY" "$MCP" linger fetch 2>&1) || fail "$out"
log "$out"
# egressd stopped under a live instance: the instance ends with its feed (the journal says why).
out=$(bx "$PY" "$MCP" feed-end fetch 2>&1) || fail "$out"
wait_for 10 found eval "journal_since '$cursor' -o cat | grep -F 'the egress feed ended'" ||
    fail "the journal does not say why the instance ended: $(journal_since "$cursor" -o cat | tail -5)"
log "$out"
# Fail closed: egressd cannot start (a bad value in a drop-in only it reads), so a new instance gets
# no network and does not start; the code's call fails, naming why.
broken=/etc/systemd/system/mcp-exec-egress.service.d/51-mcp-test-broken.conf
mkdir -p "$(dirname "$BOXROOT$broken")"
printf '[Service]\nEnvironment=MCP_EXEC_EGRESS_MAX_CONNECTIONS=nope\n' >"$BOXROOT$broken"
at_exit "rm -f '$BOXROOT$broken'; bx systemctl daemon-reload"
bx sh -c 'systemctl daemon-reload; systemctl stop mcp-exec-egress.service' >/dev/null 2>&1
out=$(bx "$PY" "$MCP" egress-down 2>&1) || fail "$out"
log "$out"
rm -f "$BOXROOT$broken"
bx sh -c 'systemctl daemon-reload; systemctl stop mcp-exec-egress.service; systemctl reset-failed mcp-exec-egress.service' \
    >/dev/null 2>&1

# --- the canary: nowhere but in the server's own environment.
bx grep -rlF "$CANARY" /run/systemd/generator /run/systemd/transient /etc/systemd 2>/dev/null &&
    fail "the credential is in a unit file"
if journal_since "" -b -o verbose | grep -qF "$CANARY"; then
    fail "the credential is in the journal: $(journal_since "" -b -o verbose | grep -F "$CANARY" | head -3)"
fi
log "the canary is in no unit file and not in the journal"
pass
