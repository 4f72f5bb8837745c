#!/usr/bin/env bash
# The README's quick start, verbatim (tests/run gives every test-packaging-* test a box of its own,
# with no meson install in it):
#   - README.md's "Quick start" section holds exactly two commands (indented code lines), the
#     second is exactly what .ci/run execs (CI runs it as root on a fresh clone; it cannot run
#     here, where it would boot boxes inside this test);
#   - every ```json block in README.md and docs/*.md parses, and each client configuration in them
#     points at what the install provides (`mcp-exec stdio`, http://127.0.0.1:8080/mcp);
#   - on this test's host, whose PID 1 is not systemd, the first command (plus --box and --port,
#     so that it collides with nothing) says so and falls back to a systemd box: it exits 0,
#     installs nothing on the host, the README's curl call (on that port) gets 42 with the token
#     it made in /etc/credstore and 401 without; the stdio command it prints serves an MCP
#     session; the box's PID 1, the HTTP front end and a run each have a network namespace other
#     than the host's; the stop command it prints removes the box and frees the port;
#   - in the fresh box (systemd as PID 1) the first command runs verbatim in a copy of the
#     checkout's tracked files (working-tree content), typed by a user who may use sudo: it
#     re-runs itself through sudo (the journal shows sudo's COMMAND=), exits 0 and prints how to
#     connect a client; the broker and stdio sockets are enabled and active, mcp-exec.socket (HTTP)
#     is not; /etc/credstore is 0700 root:root; `mcp-exec run` prints 42 and passes an exit status
#     through;
#   - with a raw newline-delimited JSON-RPC session open through `mcp-exec stdio` (python3; the
#     enable used to be refused while the stdio session's service ran), the README's HTTP steps
#     run as written, read from README.md at test time, by that user: token, `systemctl enable
#     --now mcp-exec.socket`, the curl call, which gets 42; the token is 0600 root:root and a
#     call without it gets 401; then the open session's exec call gets 42;
#   - README.md's "First configuration" steps, read from it at test time, typed by that user (in
#     the group mcp-exec-users, whom polkit lets run code): the settings land in
#     /etc/mcp-exec/mcp-exec.conf, the services read them on their next start, and the example run
#     ends as the README says (exit 124: the new default timeout, not the old one); the file is
#     put back after;
#   - the pinned v1 TypeScript SDK (tests/node-clients, Node >= 20) runs its basic suite through
#     `mcp-exec stdio` (calls, structuredContent it validates, progress, parallel calls);
#   - with sudo gone, both commands typed by the user say they need root and sudo is missing,
#     and the first one typed by root runs again (a re-install) and exits 0;
#   - `./tests/run` typed by the user re-runs itself through sudo (an unknown option then ends
#     it at once as root, and the journal shows sudo's COMMAND=).
# Beside other tests: its fallback writes the HTTP token into this host's /etc/credstore, as the README says it does;
# no box sees it (tests/box/box gives each an empty /etc/credstore of its own), and the part that
# makes and removes it holds a lock, so that another run of this test (the other release's pass)
# never removes the token this one's fallback is about to copy.
. "$(dirname "$0")/../../lib/itest.sh"

TOP=$(cd "$ITEST_DIR/.." && pwd)
README=$TOP/README.md
QSUSER=qsuser
SRC=/home/$QSUSER/mcp-exec
TOKEN=/etc/credstore/mcp-exec.auth-token

# --- README: the quick start's commands, the HTTP steps, the JSON blocks (no box needed) ---------
mapfile -t cmds < <(awk '
    /^## / { q = ($0 == "## Quick start"); next }
    q && /^    [^ ]/ { sub(/^    /, ""); sub(/[[:space:]]+#.*$/, ""); print }' "$README")
((${#cmds[@]} == 2)) || fail "README.md's Quick start has ${#cmds[@]} commands, not 2:"$'\n'"$(printf '  %s\n' "${cmds[@]}")"
log "quick start: '${cmds[0]}' and '${cmds[1]}'"

mapfile -t ci_exec < <(sed -n 's/^exec[[:space:]]\{1,\}//p' "$TOP/.ci/run")
((${#ci_exec[@]} == 1)) || fail ".ci/run has ${#ci_exec[@]} exec lines, expected 1"
[[ ${cmds[1]} == "${ci_exec[0]}" ]] ||
    fail "README's second command '${cmds[1]}' is not what .ci/run runs ('${ci_exec[0]}')"
grep -q '^cd "$(dirname "$(readlink -f "$0")")/.."' "$TOP/.ci/run" ||
    fail ".ci/run does not run from the top of the checkout, as the README's command does"
log "the second command is what .ci/run execs (${ci_exec[0]}, as root)"

# The HTTP steps: the indented block after the paragraph that begins "Over HTTP (".
http_steps=$(awk '
    /^Over HTTP \(/ { h = 1; next }
    h && /^    / { sub(/^    /, ""); print; b = 1; next }
    h && b && /^[^ ]/ { exit }' "$README")
grep -q 'systemctl enable --now mcp-exec.socket' <<<"$http_steps" && grep -q "^curl .*$TOKEN" <<<"$http_steps" ||
    fail "README.md's HTTP steps (after \"Over HTTP (\") lack the enable or the curl call with the token:"$'\n'"$http_steps"
# The curl call alone (from its line to the end of the block), for the fallback's host.
http_curl=$(sed -n '/^curl /,$p' <<<"$http_steps")
log "README's HTTP steps: $(wc -l <<<"$http_steps") lines"

jout=$("$PY" - "$README" "$TOP"/docs/*.md <<'EOF'
import json, re, sys
blocks = []
for doc in sys.argv[1:]:
    blocks += re.findall(r"^```json\n(.*?)^```$", open(doc).read(), re.S | re.M)
if not blocks:
    sys.exit("no ```json block in README.md")
servers = 0
for i, b in enumerate(blocks, 1):
    try:
        doc = json.loads(b)
    except ValueError as e:
        sys.exit("```json block %d does not parse: %s\n%s" % (i, e, b))
    # Every server entry in a client configuration: a command must be `mcp-exec stdio`, a URL
    # the HTTP endpoint the units listen on.
    def walk(o):
        global servers
        if isinstance(o, dict):
            if "command" in o:
                servers += 1
                if o["command"] != "mcp-exec" or o.get("args") != ["stdio"]:
                    sys.exit("block %d: a command that is not `mcp-exec stdio`: %s" % (i, json.dumps(o)))
            if "url" in o:
                servers += 1
                if o["url"] not in ("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/sse"):
                    sys.exit("block %d: a URL that is not mcp-exec.socket's: %s" % (i, o["url"]))
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(doc)
print("%d json blocks parse, %d server entries" % (len(blocks), servers))
EOF
) || fail "README.md or docs/: $jout"
log "README.md and docs/: $jout"

# The first configuration: the indented block of README.md's "First configuration" section.
conf_steps=$(awk '
    /^## / { c = ($0 == "## First configuration"); next }
    c && /^    / { sub(/^    /, ""); print; b = 1; next }
    c && b && /^[^ ]/ { exit }' "$README")
grep -q '^printf .*MCP_EXEC_DEFAULT_TIMEOUT_S=10.* | sudo tee -a /etc/mcp-exec/mcp-exec.conf$' <<<"$conf_steps" &&
    grep -q '^sudo systemctl stop mcp-exec-broker.service' <<<"$conf_steps" &&
    grep -q '^echo .*| mcp-exec run; echo "exit \$?" *# exit 124' <<<"$conf_steps" ||
    fail "README.md's First configuration lacks the setting, the stop or the run that shows it:"$'\n'"$conf_steps"
log "README's first configuration: $(wc -l <<<"$conf_steps") lines"

# A raw newline-delimited JSON-RPC client: starts the command ARGV[2] (JSON list, default
# `mcp-exec stdio`), initializes, lists the tools, marks ARGV[1]/session-open, waits for
# ARGV[1]/go, then makes one exec call that must print 42.
client_py=$(cat <<'EOF'
import json, os, queue, subprocess, sys, threading, time
state = sys.argv[1]
cmd = json.loads(sys.argv[2]) if len(sys.argv) > 2 else ["mcp-exec", "stdio"]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=open(os.path.join(state, "raw.err"), "wb"))
q = queue.Queue()
threading.Thread(target=lambda: [q.put(l) for l in p.stdout] + [q.put(None)], daemon=True).start()
def rpc(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    while True:
        line = q.get(timeout=60)
        if line is None:
            sys.exit("connection closed waiting for %s" % method)
        m = json.loads(line)
        if m.get("id") == i:
            if "error" in m:
                sys.exit("%s: error %s" % (method, json.dumps(m["error"])))
            return m["result"]
init = rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "quickstart-raw", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
tools = [t["name"] for t in rpc(2, "tools/list", {})["tools"]]
if tools != ["exec", "session_create", "session_close"]:
    sys.exit("tools/list: %s" % tools)
open(os.path.join(state, "session-open"), "w").close()
deadline = time.time() + 120
while not os.path.exists(os.path.join(state, "go")):
    if time.time() > deadline:
        sys.exit("never told to go on")
    time.sleep(0.2)
res = rpc(3, "tools/call", {"name": "exec", "arguments": {"code": "print(6*7)"}})
sc = res.get("structuredContent") or json.loads(res["content"][0]["text"])
if res.get("isError") or sc.get("stdout") != "42\n" or sc.get("exit_code") != 0:
    sys.exit("tools/call: %s" % json.dumps(res))
print(json.dumps({"protocolVersion": init["protocolVersion"], "tools": tools, "stdout": sc["stdout"]}))
p.stdin.close()
p.wait(timeout=30)
EOF
)
client=$(put raw-client.py <<<"$client_py")

# http_status URL: the HTTP status of the README's stateless call without a token.
http_status() {
    curl -s --max-time 30 -o /dev/null -w '%{http_code}' "$1" \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
        -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(1)"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
}

# --- this host, whose PID 1 is not systemd: the first command falls back to a box ----------------
if [[ $(cat /proc/1/comm) == systemd && -d /run/systemd/system ]]; then
    log "this host runs systemd: the fallback is not tried here (the first command would install on it)"
else
    fbox=qsfb$$
    exec {host_lock}>/run/mcp-exec-tests-host-credstore.lock
    flock "$host_lock"
    fport=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # What the fallback may change on this host, to put back: the token (and its directory).
    had_credstore=0 had_token=0
    [[ -d /etc/credstore ]] && had_credstore=1
    [[ -e $TOKEN ]] && had_token=1
    at_exit "'$BOXCMD' down $fbox >/dev/null 2>&1; (($had_token)) || rm -f $TOKEN; (($had_credstore)) || rmdir /etc/credstore 2>/dev/null"
    host_usr_before=$(ls -d /usr/bin/mcp-exec /usr/libexec/mcp-exec 2>/dev/null)

    log "on this host (PID 1: $(cat /proc/1/comm)): '${cmds[0]} --box $fbox --port $fport'"
    rc=0
    t0=$SECONDS
    (cd "$TOP" && timeout 250 bash -c "${cmds[0]} --box $fbox --port $fport") \
        >"$HDIR/host.out" 2>"$HDIR/host.err" </dev/null || rc=$?
    ((rc == 0)) || fail "the first command on this host exited $rc:"$'\n'"$(tail -n 30 "$HDIR/host.out" "$HDIR/host.err")"
    grep -q "^PID 1 on this machine is not systemd (it is $(cat /proc/1/comm))" "$HDIR/host.out" ||
        fail "the fallback does not say that PID 1 is not systemd:"$'\n'"$(cat "$HDIR/host.out")"
    log "fallback: exit 0 after $((SECONDS - t0))s, printed: $(tr '\n' '|' <"$HDIR/host.out")"
    "$BOXCMD" list | grep -xF "$fbox" >/dev/null || fail "no box $fbox after the fallback"
    [[ $(ls -d /usr/bin/mcp-exec /usr/libexec/mcp-exec 2>/dev/null) == "$host_usr_before" ]] ||
        fail "the fallback installed into this host's /usr: $(ls -d /usr/bin/mcp-exec /usr/libexec/mcp-exec 2>&1)"
    [[ $(stat -c '%U:%G %a' "$TOKEN") == 'root:root 600' ]] || fail "$TOKEN: $(stat -c '%U:%G %a' "$TOKEN" 2>&1)"

    # The README's curl call, as written but for the port.
    out=$(bash -c "${http_curl//127.0.0.1:8080/127.0.0.1:$fport}" 2>&1) || fail "the README's curl call on port $fport failed: $out"
    grep -qF '"stdout":"42\n"' <<<"$out" || fail "the README's curl call on port $fport did not get 42: ${out:0:500}"
    st=$(http_status "http://127.0.0.1:$fport/mcp")
    [[ $st == 401 ]] || fail "a call without the token on port $fport got HTTP $st, not 401"
    log "host 127.0.0.1:$fport: the README's curl call gets 42, without the token 401"

    # The stdio command it printed (a JSON client configuration), through a raw MCP session.
    stdio_cmd=$(sed -n 's/^ *\({"command": "sudo".*\)$/\1/p' "$HDIR/host.out")
    [[ -n $stdio_cmd ]] || fail "the fallback printed no stdio command:"$'\n'"$(cat "$HDIR/host.out")"
    rm -f "$HDIR/session-open" "$HDIR/go" && touch "$HDIR/go"
    out=$(timeout 120 "$PY" "$HDIR/raw-client.py" "$HDIR" "$(jget "$stdio_cmd" 'json.dumps([r["command"]] + r["args"])')" 2>&1) ||
        fail "the printed stdio command does not serve MCP: $out $(cat "$HDIR/raw.err" 2>/dev/null)"
    log "the printed stdio command ($stdio_cmd): $out"
    run_cmd=$(sed -n 's/^Run code: *//p' "$HDIR/host.out")
    out=$(bash -c "$run_cmd" 2>&1) && [[ $out == 42 ]] || fail "the printed run command '$run_cmd' gave: $out"

    # Only the HTTP socket is in the host's network namespace.
    fb() { "$BOXCMD" exec "$fbox" -- "$@"; }
    host_ns=$(readlink /proc/self/ns/net)
    box_ns=$(fb readlink /proc/1/ns/net)
    fe_pid=$(fb systemctl show -P MainPID mcp-exec.service)
    fe_ns=$(fb readlink "/proc/$fe_pid/ns/net")
    run_ns=$(printf 'import os\nprint(os.readlink("/proc/self/ns/net"))\n' | fb mcp-exec run)
    for ns in "box PID 1:$box_ns" "HTTP front end (pid $fe_pid):$fe_ns" "a run:$run_ns"; do
        [[ ${ns#*:} == net:* && ${ns#*:} != "$host_ns" ]] || fail "network namespace of the ${ns%%:*}: '${ns#*:}' (host: $host_ns)"
    done
    log "network namespaces: host $host_ns; box $box_ns, front end $fe_ns, run $run_ns"

    # The stop command it printed.
    stop_cmd=$(sed -n 's/^ *\(sudo [^ ]* down [^ ]*\)$/\1/p' "$HDIR/host.out")
    [[ -n $stop_cmd ]] || fail "the fallback printed no stop command:"$'\n'"$(cat "$HDIR/host.out")"
    bash -c "$stop_cmd" >"$HDIR/stop.out" 2>&1 || fail "'$stop_cmd' failed: $(cat "$HDIR/stop.out")"
    "$BOXCMD" list | grep -xF "$fbox" >/dev/null && fail "box $fbox still listed after '$stop_cmd'"
    (exec 3<>"/dev/tcp/127.0.0.1/$fport") 2>/dev/null && fail "127.0.0.1:$fport still answers after '$stop_cmd'"
    log "'$stop_cmd': the box is gone and the port closed"
    ((had_token)) || rm -f "$TOKEN"
    ((had_credstore)) || rmdir /etc/credstore 2>/dev/null
    exec {host_lock}>&-
fi

# --- the box: fresh, and as a fresh machine would be ----------------------------------------------
if bx test -e /usr/libexec/mcp-exec || bx test -e /usr/bin/mcp-exec; then
    skip "mcp-exec is installed in the box already; this test needs a fresh box of its own"
fi
bx test -x /usr/bin/sudo ||
    fail "no sudo in the box (it sees the host's packages): install it on the host (packaging/deps.sh does)"
[[ $(bx ps -o comm= -p 1) == systemd ]] || fail "PID 1 in the box is not systemd"
# The box's /etc/credstore is its own and empty (tests/box/box): away with it, so that the check
# below proves the install makes it.
bx rmdir /etc/credstore 2>/dev/null || :
credstore_before=$(bx stat -c '%U:%G %a' /etc/credstore 2>/dev/null) &&
    log "/etc/credstore exists in the box before the install ($credstore_before, not empty): its check proves less"

# A user who may use sudo, with the checkout in their home: tracked files with their working-tree
# content (what a clone of this tree holds).
bx useradd -m -s /bin/bash "$QSUSER" || fail "cannot add the user $QSUSER"
printf '%s ALL=(ALL) NOPASSWD: ALL\n' "$QSUSER" >"$BOXROOT/etc/sudoers.d/$QSUSER"
chmod 0440 "$BOXROOT/etc/sudoers.d/$QSUSER"
mkdir -p "$BOXROOT$SRC"
(cd "$TOP" && git ls-files -z | while IFS= read -r -d '' f; do
    [[ -e $f || -L $f ]] && printf '%s\0' "$f"
done | xargs -0 cp --parents -a -t "$BOXROOT$SRC") || fail "cannot copy the checkout into the box"
bx chown -R "$QSUSER:" "$SRC" || fail "cannot give $SRC to $QSUSER"
log "copied $(cd "$TOP" && git ls-files | wc -l) tracked files to $SRC in the box"
# as_user CMD: CMD (a shell command line) typed by the user in the checkout.
as_user() { bx runuser -u "$QSUSER" -- bash -c "cd $SRC && $1"; }

# The host is a Docker image whose /usr/sbin/policy-rc.d forbids starting services from package
# scripts; a fresh machine has none (and install.sh uses none, but deps.sh might run apt-get).
if bx test -e /usr/sbin/policy-rc.d; then
    bx mv /usr/sbin/policy-rc.d /usr/sbin/policy-rc.d.itest || fail "cannot move policy-rc.d aside"
    at_exit 'bx mv /usr/sbin/policy-rc.d.itest /usr/sbin/policy-rc.d'
fi

# no_network_wanted OUT ERR: deps.sh found everything installed (the box has no network).
no_network_wanted() {
    if grep -q '^Installing: ' "$1" "$2"; then
        fail "install.sh wanted packages from the network ($(grep -h '^Installing: ' "$1" "$2")); the box has none: install them on the host (packaging/deps.sh)"
    fi
}

# --- the first command, verbatim, typed by the sudo user ---------------------------------------------
log "running '${cmds[0]}' in $SRC as $QSUSER"
rc=0
t0=$SECONDS
as_user "timeout 250 ${cmds[0]}" >"$HDIR/install.out" 2>"$HDIR/install.err" </dev/null || rc=$?
no_network_wanted "$HDIR/install.out" "$HDIR/install.err"
((rc == 0)) || fail "'${cmds[0]}' exited $rc:"$'\n'"$(tail -n 30 "$HDIR/install.out" "$HDIR/install.err")"
grep -qF '{"command": "mcp-exec", "args": ["stdio"]}' "$HDIR/install.out" ||
    fail "install.sh did not print how to connect a client:"$'\n'"$(cat "$HDIR/install.out")"
log "install.sh: exit 0 after $((SECONDS - t0))s, printed: $(tr '\n' '|' <"$HDIR/install.out")"
bx journalctl --flush >/dev/null 2>&1
bx journalctl --no-pager -o cat -t sudo | grep -qF "$QSUSER : PWD=$SRC ; USER=root ; COMMAND=$SRC/packaging/install.sh" ||
    fail "install.sh did not re-run through sudo; sudo's journal: $(bx journalctl --no-pager -o cat -t sudo | tail -5)"
log "install.sh re-ran itself through sudo"

for u in mcp-exec-broker.socket mcp-exec-tmpfs.socket mcp-exec-stdio.socket; do
    [[ $(bx systemctl is-enabled "$u") == enabled ]] || fail "$u is $(bx systemctl is-enabled "$u") after install.sh, not enabled"
    bx systemctl is-active -q "$u" || fail "$u is not active after install.sh"
done
[[ $(bx systemctl is-enabled mcp-exec.socket) == disabled ]] ||
    fail "mcp-exec.socket (HTTP) is $(bx systemctl is-enabled mcp-exec.socket) after install.sh, not disabled"
bx systemctl is-active -q mcp-exec.socket && fail "mcp-exec.socket (HTTP) listens right after install.sh"
bx getent passwd mcp-exec >/dev/null || fail "no user mcp-exec after install.sh"
[[ $(bx stat -c '%U:%G %a' /etc/credstore) == 'root:root 700' ]] ||
    fail "/etc/credstore after install.sh: $(bx stat -c '%U:%G %a' /etc/credstore 2>&1)"
log "enabled and active: mcp-exec-broker.socket mcp-exec-stdio.socket; mcp-exec.socket disabled; /etc/credstore 0700"

# --- mcp-exec run ---------------------------------------------------------------------------------
out=$(printf 'print(6*7)\n' | bx mcp-exec run 2>"$HDIR/run.err") || fail "mcp-exec run failed: $out $(cat "$HDIR/run.err")"
[[ $out == 42 ]] || fail "mcp-exec run printed '$out', not 42: $(cat "$HDIR/run.err")"
rc=0
printf 'import sys\nsys.exit(3)\n' | bx mcp-exec run >/dev/null 2>"$HDIR/run.err" || rc=$?
((rc == 3)) || fail "mcp-exec run of sys.exit(3) exited $rc: $(cat "$HDIR/run.err")"
log "mcp-exec run: 42; sys.exit(3) exits 3"

# --- a raw MCP session through `mcp-exec stdio`, held open while the README's HTTP steps run ------
rm -f "$HDIR/session-open" "$HDIR/go"
bx python3 "$client" "$BDIR" >"$HDIR/raw.out" 2>"$HDIR/raw.py.err" &
rawpid=$!
at_exit "touch '$HDIR/go'; kill $rawpid 2>/dev/null"
wait_for 60 test -e "$HDIR/session-open" ||
    fail "the raw client never opened a session: $(cat "$HDIR/raw.py.err" "$HDIR/raw.err" 2>/dev/null)"
# The control: a front end serves that session right now (the one fed by mcp-exec-stdio.socket).
stdio_service=$(bx systemctl show -P Triggers mcp-exec-stdio.socket)
bx systemctl is-active -q "$stdio_service" || fail "$stdio_service (the stdio front end) is not active during a session"
log "a stdio session is open; $stdio_service is active"

# The credential systemd mounts for the service shows only if / is a shared mount, as on a host.
bx findmnt -no PROPAGATION / | grep -q shared || bx mount --make-rshared / || fail "cannot make / a shared mount in the box"
rc=0
bx runuser -u "$QSUSER" -- bash -e -c "cd && $http_steps" >"$HDIR/http.out" 2>"$HDIR/http.err" || rc=$?
((rc == 0)) || fail "the README's HTTP steps exited $rc (with a stdio session open):"$'\n'"$(tail -n 20 "$HDIR/http.out" "$HDIR/http.err")"
grep -qF '"stdout":"42\n"' "$HDIR/http.out" || fail "the README's curl call did not get 42: $(head -c 500 "$HDIR/http.out") $(cat "$HDIR/http.err")"
bx systemctl is-active -q mcp-exec.socket || fail "mcp-exec.socket is not active after the README's steps"
[[ $(bx stat -c '%U:%G %a' "$TOKEN") == 'root:root 600' ]] || fail "$TOKEN: $(bx stat -c '%U:%G %a' "$TOKEN" 2>&1)"
st=$(bx bash -c "$(declare -f http_status); http_status http://127.0.0.1:8080/mcp")
[[ $st == 401 ]] || fail "a call without the token got HTTP $st, not 401"
log "the README's HTTP steps, as $QSUSER with a stdio session open: the curl call gets 42; the token is 0600; without it 401"

touch "$HDIR/go"
wait "$rawpid" || fail "the raw stdio client failed: $(cat "$HDIR/raw.py.err" "$HDIR/raw.err" 2>/dev/null)"
log "raw stdio session: $(cat "$HDIR/raw.out")"

# --- README.md's first configuration, as written, typed by the user -------------------------------
bx usermod -aG mcp-exec-users "$QSUSER" || fail "cannot add $QSUSER to mcp-exec-users"
conf=/etc/mcp-exec/mcp-exec.conf
had_conf=0
bx test -e "$conf" && had_conf=1 && bx cat "$conf" >"$HDIR/conf.before"
# restore_conf: the file as it was before the README's steps.
restore_conf() {
    if ((had_conf)); then bx tee "$conf" <"$HDIR/conf.before" >/dev/null; else bx rm -f "$conf"; fi
}
at_exit restore_conf
bx runuser -u "$QSUSER" -- bash -c "cd && $conf_steps" >"$HDIR/conf.out" 2>"$HDIR/conf.err" ||
    fail "the README's first configuration failed: $(tail -n 20 "$HDIR/conf.out" "$HDIR/conf.err")"
grep -qx 'exit 124' "$HDIR/conf.out" ||
    fail "the README's first configuration's run did not exit 124:"$'\n'"$(cat "$HDIR/conf.out" "$HDIR/conf.err")"
for v in MCP_EXEC_DEFAULT_TIMEOUT_S=10 MCP_EXEC_MEMORY_MAX=512M; do
    bx grep -qx "$v" "$conf" || fail "$conf lacks $v after the README's first configuration: $(bx cat "$conf")"
done
# The control: the same run with the file as it was ends normally (the default timeout, 30 s).
restore_conf
bx systemctl stop mcp-exec-broker.service mcp-exec-stdio.service mcp-exec.service
rc=0
printf 'import time; time.sleep(12)\n' | bx mcp-exec run >/dev/null 2>"$HDIR/run.err" || rc=$?
((rc == 0)) || fail "with $conf as before, the README's sleep exited $rc: $(cat "$HDIR/run.err")"
log "the README's first configuration, as $QSUSER: $conf has the settings, the run exits 124; without them 0"

# --- the pinned v1 TypeScript SDK through `mcp-exec stdio` ----------------------------------------
node_major=$(bx node -p 'process.versions.node.split(".")[0]' 2>/dev/null) || node_major=0
if ((node_major >= 20)); then
    . "$ITEST_DIR/lib/node-clients.sh"
    cnode v1-sdk.mjs basic || fail "the v1 SDK's basic suite failed through mcp-exec stdio"
    log "v1 SDK basic suite: ok"
else
    log "no Node.js >= 20 in the box: the SDK part is left out (the raw client above ran)"
fi

# --- without sudo: the user is told, root runs the first command again ---------------------------
bx mv /usr/bin/sudo /usr/bin/sudo.itest || fail "cannot move sudo aside"
at_exit 'bx test -e /usr/bin/sudo.itest && bx mv /usr/bin/sudo.itest /usr/bin/sudo'
for c in "${cmds[@]}"; do
    rc=0
    as_user "$c" >"$HDIR/nosudo.out" 2>"$HDIR/nosudo.err" </dev/null || rc=$?
    ((rc != 0)) && grep -q 'needs root.*sudo is not installed' "$HDIR/nosudo.err" ||
        fail "'$c' typed by $QSUSER without sudo: exit $rc, $(cat "$HDIR/nosudo.out" "$HDIR/nosudo.err")"
done
log "without sudo both commands typed by $QSUSER say they need root: $(cat "$HDIR/nosudo.err")"
rc=0
t0=$SECONDS
bx timeout 250 bash -c "cd $SRC && ${cmds[0]}" >"$HDIR/install2.out" 2>"$HDIR/install2.err" </dev/null || rc=$?
no_network_wanted "$HDIR/install2.out" "$HDIR/install2.err"
((rc == 0)) || fail "'${cmds[0]}' typed by root without sudo exited $rc:"$'\n'"$(tail -n 30 "$HDIR/install2.out" "$HDIR/install2.err")"
out=$(printf 'print(6*7)\n' | bx mcp-exec run 2>"$HDIR/run.err") && [[ $out == 42 ]] ||
    fail "mcp-exec run after the re-install printed '$out': $(cat "$HDIR/run.err")"
log "'${cmds[0]}' typed by root without sudo (a re-install): exit 0 after $((SECONDS - t0))s; mcp-exec run: 42"
bx mv /usr/bin/sudo.itest /usr/bin/sudo || fail "cannot put sudo back"

# --- the second command, typed by the sudo user: it re-runs through sudo ------------------------
# An unknown option ends it at once, after the re-run (running it all would boot boxes in a box).
rc=0
as_user "${cmds[1]} --no-such-option" >"$HDIR/run2.out" 2>"$HDIR/run2.err" </dev/null || rc=$?
((rc == 2)) && grep -q "unknown argument '--no-such-option'" "$HDIR/run2.err" ||
    fail "'${cmds[1]} --no-such-option' typed by $QSUSER: exit $rc, $(cat "$HDIR/run2.out" "$HDIR/run2.err")"
bx journalctl --flush >/dev/null 2>&1
bx journalctl --no-pager -o cat -t sudo | grep -qF "COMMAND=$SRC/tests/run --no-such-option" ||
    fail "tests/run did not re-run through sudo; sudo's journal: $(bx journalctl --no-pager -o cat -t sudo | tail -5)"
log "'${cmds[1]}' typed by $QSUSER re-runs itself through sudo"

assert_clean 15
pass
