#!/usr/bin/env bash
# The README's quick start, verbatim, in a fresh box (tests/run gives every test-packaging-* test a
# box of its own, with no meson install in it):
#   - README.md's "Quick start" section holds exactly two commands (indented code lines);
#   - the first one (`sudo ./packaging/install.sh`) runs verbatim in a copy of the checkout's
#     tracked files (working-tree content) at /root/mcp-exec in the box: it exits 0 and prints how
#     to connect a client; the broker and stdio sockets are enabled and active, mcp-exec.socket
#     (HTTP) is not; `mcp-exec run` prints 42 and passes an exit status through;
#   - a raw newline-delimited JSON-RPC client through `mcp-exec stdio` (python3) initializes, lists
#     the one tool and, with its session still open, the admin's `systemctl enable --now
#     mcp-exec.socket` succeeds (it used to be refused while the stdio session's service ran), the
#     README's stateless curl call gets 42 over HTTP, and then the open session's exec call gets 42;
#   - the pinned v1 TypeScript SDK (tests/clients, Node >= 20) runs its basic suite through
#     `mcp-exec stdio` (calls, structuredContent it validates, progress, parallel calls);
#   - every ```json block in README.md parses, and each client configuration in them points at
#     what the install provides (`mcp-exec stdio`, http://127.0.0.1:8080/mcp);
#   - on a host whose PID 1 is not systemd (this test's own host side), install.sh says so, points
#     at tests/box/try and exits 1 before installing anything.
# The second command (`sudo ./tests/run`) cannot run here: it boots boxes itself, and this test is
# one of the tests it runs. CI runs it verbatim on a fresh clone (.ci/run execs it); this test only
# checks that the README's second command is exactly what .ci/run execs (less the sudo: CI is root),
# so the two cannot drift apart.
. "$(dirname "$0")/../lib/itest.sh"

TOP=$(cd "$ITEST_DIR/.." && pwd)
README=$TOP/README.md
SRC=/root/mcp-exec

# --- README: the quick start's commands, the JSON blocks (host side, no box needed) -------------
mapfile -t cmds < <(awk '
    /^## / { q = ($0 == "## Quick start"); next }
    q && /^    [^ ]/ { sub(/^    /, ""); sub(/[[:space:]]+#.*$/, ""); print }' "$README")
((${#cmds[@]} == 2)) || fail "README.md's Quick start has ${#cmds[@]} commands, not 2:"$'\n'"$(printf '  %s\n' "${cmds[@]}")"
log "quick start: '${cmds[0]}' and '${cmds[1]}'"

mapfile -t ci_exec < <(sed -n 's/^exec[[:space:]]\{1,\}//p' "$TOP/.ci/run")
((${#ci_exec[@]} == 1)) || fail ".ci/run has ${#ci_exec[@]} exec lines, expected 1"
[[ ${cmds[1]} == "sudo ${ci_exec[0]}" ]] ||
    fail "README's second command '${cmds[1]}' is not what .ci/run runs ('sudo ' + '${ci_exec[0]}')"
grep -q '^cd "$(dirname "$(readlink -f "$0")")/.."' "$TOP/.ci/run" ||
    fail ".ci/run does not run from the top of the checkout, as the README's command does"
log "the second command is what .ci/run execs (${ci_exec[0]}, as root)"

jout=$("$PY" - "$README" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"^```json\n(.*?)^```$", text, re.S | re.M)
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
) || fail "README.md: $jout"
log "README: $jout"

# --- host side: no systemd as PID 1 -------------------------------------------------------------
# Only where install.sh itself sees no systemd (else it would install on the host).
if [[ $(ps -o comm= -p 1) != systemd && ! -d /run/systemd/system ]]; then
    rc=0
    "$TOP/packaging/install.sh" >"$HDIR/host.out" 2>"$HDIR/host.err" </dev/null || rc=$?
    ((rc == 1)) || fail "install.sh on this host (PID 1: $(ps -o comm= -p 1)) exited $rc, not 1: $(cat "$HDIR/host.out" "$HDIR/host.err")"
    grep -q 'PID 1 on this machine is not systemd' "$HDIR/host.err" && grep -qF 'sudo tests/box/try' "$HDIR/host.err" ||
        fail "install.sh on a host without systemd does not say so and point at tests/box/try: $(cat "$HDIR/host.err")"
    [[ ! -s $HDIR/host.out ]] || fail "install.sh did something on a host without systemd: $(cat "$HDIR/host.out")"
    log "host without systemd (PID 1 $(ps -o comm= -p 1)): install.sh exits 1 and points at tests/box/try"
else
    log "the host runs systemd: its no-systemd message is not checked here"
fi

# --- the box: fresh, and as a fresh machine would be ----------------------------------------------
if bx test -e /usr/libexec/mcp-exec || bx test -e /usr/bin/mcp-exec; then
    skip "mcp-exec is installed in the box already; this test needs a fresh box of its own"
fi
bx test -x /usr/bin/sudo ||
    fail "no sudo in the box (it sees the host's packages): install it on the host (packaging/deps.sh --test does)"
[[ $(bx ps -o comm= -p 1) == systemd ]] || fail "PID 1 in the box is not systemd"

# The checkout: tracked files with their working-tree content (what a clone of this tree holds).
rm -rf "$BOXROOT$SRC"
mkdir -p "$BOXROOT$SRC"
(cd "$TOP" && git ls-files -z | while IFS= read -r -d '' f; do
    [[ -e $f || -L $f ]] && printf '%s\0' "$f"
done | xargs -0 cp --parents -a -t "$BOXROOT$SRC") || fail "cannot copy the checkout into the box"
log "copied $(cd "$TOP" && git ls-files | wc -l) tracked files to $SRC in the box"

# The host is a Docker image whose /usr/sbin/policy-rc.d forbids starting services from package
# scripts; a fresh machine has none (and install.sh uses none, but deps.sh might run apt-get).
if bx test -e /usr/sbin/policy-rc.d; then
    bx mv /usr/sbin/policy-rc.d /usr/sbin/policy-rc.d.itest || fail "cannot move policy-rc.d aside"
    at_exit 'bx mv /usr/sbin/policy-rc.d.itest /usr/sbin/policy-rc.d'
fi

# --- the first command, verbatim ---------------------------------------------------------------
log "running '${cmds[0]}' in $SRC"
rc=0
t0=$SECONDS
bx timeout 250 sh -c "cd $SRC && ${cmds[0]}" >"$HDIR/install.out" 2>"$HDIR/install.err" </dev/null || rc=$?
if grep -q '^Installing: ' "$HDIR/install.out" "$HDIR/install.err"; then
    fail "install.sh wanted packages from the network ($(grep -h '^Installing: ' "$HDIR/install.out" "$HDIR/install.err")); the box has none: install them on the host (packaging/deps.sh)"
fi
((rc == 0)) || fail "'${cmds[0]}' exited $rc:"$'\n'"$(tail -30 "$HDIR/install.out" "$HDIR/install.err")"
grep -qF '{"command": "mcp-exec", "args": ["stdio"]}' "$HDIR/install.out" ||
    fail "install.sh did not print how to connect a client:"$'\n'"$(cat "$HDIR/install.out")"
log "install.sh: exit 0 after $((SECONDS - t0))s, printed: $(tr '\n' '|' <"$HDIR/install.out")"

for u in mcp-exec-broker.socket mcp-exec-stdio.socket; do
    [[ $(bx systemctl is-enabled "$u") == enabled ]] || fail "$u is $(bx systemctl is-enabled "$u") after install.sh, not enabled"
    bx systemctl is-active -q "$u" || fail "$u is not active after install.sh"
done
[[ $(bx systemctl is-enabled mcp-exec.socket) == disabled ]] ||
    fail "mcp-exec.socket (HTTP) is $(bx systemctl is-enabled mcp-exec.socket) after install.sh, not disabled"
bx systemctl is-active -q mcp-exec.socket && fail "mcp-exec.socket (HTTP) listens right after install.sh"
bx getent passwd mcp-exec >/dev/null || fail "no user mcp-exec after install.sh"
log "enabled and active: mcp-exec-broker.socket mcp-exec-stdio.socket; mcp-exec.socket disabled"

# --- mcp-exec run ---------------------------------------------------------------------------------
out=$(printf 'print(6*7)\n' | bx mcp-exec run 2>"$HDIR/run.err") || fail "mcp-exec run failed: $out $(cat "$HDIR/run.err")"
[[ $out == 42 ]] || fail "mcp-exec run printed '$out', not 42: $(cat "$HDIR/run.err")"
rc=0
printf 'import sys\nsys.exit(3)\n' | bx mcp-exec run >/dev/null 2>"$HDIR/run.err" || rc=$?
((rc == 3)) || fail "mcp-exec run of sys.exit(3) exited $rc: $(cat "$HDIR/run.err")"
log "mcp-exec run: 42; sys.exit(3) exits 3"

# --- a raw MCP session through `mcp-exec stdio`, held open while HTTP is enabled ------------------
client=$(put raw-client.py <<'EOF'
# Raw newline-delimited JSON-RPC through `mcp-exec stdio`: initialize, tools/list, then (once the
# file ARGV[1]/go exists) one exec call. ARGV[1]/session-open marks the open session.
import json, os, queue, subprocess, sys, threading, time
state = sys.argv[1]
p = subprocess.Popen(["mcp-exec", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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
if tools != ["exec"]:
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
en=$(bx systemctl enable --now mcp-exec.socket 2>&1) ||
    fail "systemctl enable --now mcp-exec.socket failed while a stdio session is open: $en"
bx systemctl is-active -q mcp-exec.socket || fail "mcp-exec.socket is not active after enable --now"
log "systemctl enable --now mcp-exec.socket with a stdio session open: ok"

st=$(bx curl -s --max-time 60 -o "$BDIR/http.b" -w '%{http_code}' http://127.0.0.1:8080/mcp \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: exec' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6*7)"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')
[[ $st == 200 ]] || fail "HTTP $st: $(head -c 500 "$HDIR/http.b")"
grep -qF '"stdout":"42\n"' "$HDIR/http.b" || fail "no answer 42 over HTTP: $(head -c 500 "$HDIR/http.b")"
log "HTTP /mcp: 200, stdout 42"

touch "$HDIR/go"
wait "$rawpid" || fail "the raw stdio client failed: $(cat "$HDIR/raw.py.err" "$HDIR/raw.err" 2>/dev/null)"
log "raw stdio session: $(cat "$HDIR/raw.out")"

# --- the pinned v1 TypeScript SDK through `mcp-exec stdio` ----------------------------------------
node_major=$(bx node -p 'process.versions.node.split(".")[0]' 2>/dev/null) || node_major=0
if ((node_major >= 20)); then
    . "$ITEST_DIR/clients/lib.sh"
    cnode v1-sdk.mjs basic || fail "the v1 SDK's basic suite failed through mcp-exec stdio"
    log "v1 SDK basic suite: ok"
else
    log "no Node.js >= 20 in the box: the SDK part is left out (the raw client above ran)"
fi
assert_clean 15
pass
