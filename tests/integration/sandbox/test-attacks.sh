#!/usr/bin/env bash
# The attack corpus (tests/attacks/*.py, format in tests/attacks/README.md): each case is sent as
# the exec tool's code through one real MCP client session (tests/node-clients/attacks.mjs: the v1
# SDK Client over `mcp-exec stdio`, in the box as root). After every case the harness checks that
# the service still answers, that the next run is clean and that nothing (unit, process, file of a
# dynamic uid) is left.
#
# Set up here for the cases:
#   testhost    a network namespace in the box (mcpatk) behind a veth pair, 10.213.0.1/24 and
#               fd00:213::1/64 on the box's side, .2 and ::2 inside, with TCP and UDP listeners
#   hostlisten  TCP and UDP listeners on the box's own 127.0.0.1 and ::1, and an abstract unix
#               socket in the box's network namespace
# Every listener logs each connection or datagram to a file; before the cases a control, from the
# box itself (outside any sandbox), shows that each one does log, so `# after: listeners-silent`
# can fail.
# Plain pass only: the corpus tests what the kernel and systemd enforce, the same in both builds;
# the sanitized daemons see nothing here that the other integration tests do not give them.
#
# Then the terminal-escape case once more through `mcp-exec run`: it must print exactly what
# python3 prints (escape sequences pass through to the terminal, as running the program would).
#
# Cold here (MCP_EXEC_POOL_SIZE=0: a fresh unit for each run); test-attacks-warm.sh runs the same
# corpus with ATTACK_MODE=warm: every run (each case's and each check's) on a warm unit of the pool,
# whose interpreter was started before the code came, and checks from the broker's journal that
# no run took the cold path.
#
# ATTACK_CASES='net-* out-nul' (globs on the file name) runs a subset.
# Heavy: the corpus's fork, thread and memory bombs and busy loops take both cores.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"
. "$ITEST_DIR/lib/attack-cases.sh"

MODE=${ATTACK_MODE:-cold}
case $MODE in
cold) set_config MCP_EXEC_POOL_SIZE=0 ;;
# A light preload: the containment is the same whatever was imported, and a warm unit for each of
# ~130 runs refills in a fraction of a second (test-pool.sh has the data stack).
warm)
    set_config MCP_EXEC_POOL_SIZE=2 MCP_EXEC_PRELOAD=json,subprocess
    # Socket activation would start it only at the first call, which waits for a warm unit.
    bx systemctl start mcp-exec-broker.service || fail "the broker does not start"
    ;;
*) fail "ATTACK_MODE=$MODE: cold or warm" ;;
esac
log "mode: $MODE"

CASES_HOST=$ITEST_DIR/attacks
NS=mcpatk
VETH=mcpatk0
TESTPORT=$((20000 + $$ % 20000))
HOSTPORT=$((TESTPORT + 1))
ABSTRACT=mcpatk-abstract-$$
UNIT_TH=mcp-atk-testhost-$$
UNIT_LO=mcp-atk-local-$$

# --- the cases -----------------------------------------------------------------------------------
# Figures and files (*-outputs-*, *-inputs-*) need matplotlib and their own configuration, and
# their own time: test-rich-attacks.sh runs them.
shopt -s nullglob
all=()
# Bash's (*.sh) and JavaScript's (*.js, issue 42), JavaScript's where the box has node (the server
# offers javascript only then).
langs=(py sh)
bx test -x /usr/bin/node && langs+=(js)
for ext in "${langs[@]}"; do
    for f in "$CASES_HOST"/{net,res,esc,out}-*."$ext"; do
        [[ $f == *-outputs-* || $f == *-inputs-* ]] || all+=("$f")
    done
done
shopt -u nullglob
attack_cases_copy "case files in $CASES_HOST" "${all[@]}"
log "$N_CASES cases"

# --- listeners -----------------------------------------------------------------------------------
# listener.py LOG ADDR... : ADDR is tcp:HOST:PORT, udp:HOST:PORT, abstract:NAME or unix:PATH. One
# line per connection or datagram (with the peer's pid, uid and command on unix sockets; those of
# root go to LOG.root); "ready" once all are bound.
put listener.py >/dev/null <<'PYEOF'
import os, selectors, socket, struct, sys, time
log = open(sys.argv[1], "a", buffering=1)
rootlog = open(sys.argv[1] + ".root", "a", buffering=1)
sel = selectors.DefaultSelector()
for spec in sys.argv[2:]:
    kind, rest = spec.split(":", 1)
    if kind in ("abstract", "unix"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\0" + rest if kind == "abstract" else rest)
        if kind == "unix":
            os.chmod(rest, 0o666)
        s.listen(16)
    else:
        host, port = rest.rsplit(":", 1)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port)))
        if kind == "tcp":
            s.listen(16)
    sel.register(s, selectors.EVENT_READ, spec)
log.write("ready\n")
while True:
    for key, _ in sel.select():
        s, spec = key.fileobj, key.data
        if spec.startswith("udp"):
            data, peer = s.recvfrom(65536)
            log.write("%.3f %s datagram from %s: %r\n" % (time.time(), spec, peer, data[:60]))
        else:
            c, peer = s.accept()
            c.settimeout(0.5)
            try:
                data = c.recv(60)
            except OSError:
                data = b""
            if c.family == socket.AF_UNIX:
                pid, uid, _ = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
                try:
                    comm = open("/proc/%d/comm" % pid).read().strip()
                except OSError:
                    comm = "?"
                peer = "pid %d uid %d %s" % (pid, uid, comm)
            c.close()
            # On a unix socket, root is systemd setting up a run (glibc asks nscd for users
            # before the sandbox exists); the sandboxed code never runs as root.
            (rootlog if isinstance(peer, str) and uid == 0 else log).write(
                "%.3f %s connection from %s: %r\n" % (time.time(), spec, peer, data))
PYEOF

LOG_TH=$HDIR/listen-testhost.log
LOG_LO=$HDIR/listen-local.log
: >"$LOG_TH"
: >"$LOG_LO"

# Everything in the box in one go (each `bx` costs a fraction of a second). Decoys for local
# resolver services (systemd-resolved's varlink socket, nscd, avahi) where the box has none (their
# directories are created here and removed at exit): a sandbox that reaches one of them can resolve
# names, i.e. send data out by DNS. And a third party's socket of mode 0666, as a print or container
# service would leave in /run. Prints the decoys it placed.
put net-setup.sh >/dev/null <<EOF
set -e
exec 3>&1 >/dev/null 2>&1
systemctl stop $UNIT_TH $UNIT_LO || true
systemctl reset-failed $UNIT_TH $UNIT_LO || true
ip link del $VETH || true
ip netns del $NS || true
[ "\$1" = down ] && { for d in \$2; do rm -rf "\$d"; done; exit 0; }
exec 2>&3
decoys=
for d in /run/systemd/resolve/io.systemd.Resolve /run/nscd/socket /run/avahi-daemon/socket /run/mcpatk-thirdparty/api.sock; do
    [ -e "\${d%/*}" ] && continue
    mkdir -m 0755 "\${d%/*}"
    decoys="\$decoys \$d"
done
echo "\$decoys" >&3
ip netns add $NS
ip link add $VETH type veth peer name mcpatk1
ip link set mcpatk1 netns $NS
ip addr add 10.213.0.1/24 dev $VETH
ip -6 addr add fd00:213::1/64 dev $VETH nodad
ip link set $VETH up
ip netns exec $NS sh -ec '
    ip link set lo up
    ip addr add 10.213.0.2/24 dev mcpatk1
    ip -6 addr add fd00:213::2/64 dev mcpatk1 nodad
    ip link set mcpatk1 up'
systemd-run --quiet --unit=$UNIT_TH --property=Type=simple --property=NetworkNamespacePath=/run/netns/$NS \
    python3 $BDIR/listener.py $BDIR/listen-testhost.log \
    tcp:10.213.0.2:$TESTPORT udp:10.213.0.2:$TESTPORT tcp:fd00:213::2:$TESTPORT udp:fd00:213::2:$TESTPORT
unix=
for d in \$decoys; do unix="\$unix unix:\$d"; done
systemd-run --quiet --unit=$UNIT_LO --property=Type=simple \
    python3 $BDIR/listener.py $BDIR/listen-local.log \
    tcp:127.0.0.1:$HOSTPORT udp:127.0.0.1:$HOSTPORT tcp:::1:$HOSTPORT udp:::1:$HOSTPORT abstract:$ABSTRACT \$unix
EOF
DECOYS=()
cleanup_net() {
    local dirs=() d
    for d in ${DECOYS[@]+"${DECOYS[@]}"}; do
        dirs+=("$(dirname "$d")")
    done
    bx sh "$BDIR/net-setup.sh" down "${dirs[*]}"
}
at_exit cleanup_net
decoys=$(bx sh "$BDIR/net-setup.sh") || fail "cannot set up the test host and the listeners in the box"
read -ra DECOYS <<<"$decoys"
wait_for 15 grep -qx ready "$LOG_TH" || fail "the test host's listeners did not come up: $(bx systemctl status --no-pager "$UNIT_TH" 2>&1 | tail -5)"
wait_for 15 grep -qx ready "$LOG_LO" || fail "the box's listeners did not come up: $(bx systemctl status --no-pager "$UNIT_LO" 2>&1 | tail -5)"

# Control: from the box, outside any sandbox, every listener logs what reaches it. As nobody: a
# unix listener files root's connections elsewhere.
put control.py >/dev/null <<'PYEOF2'
import socket, sys
for spec in sys.argv[1:]:
    kind, host, port = spec.split(" ")
    try:
        if kind in ("abstract", "unix"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(3)
            s.connect("\0" + host if kind == "abstract" else host)
            s.sendall(b"control")
        elif kind == "tcp":
            s = socket.create_connection((host, int(port)), timeout=3)
            s.sendall(b"control")
        else:
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"control", (host, int(port)))
        s.close()
    except OSError as e:
        print("control %s: %s" % (spec, e), file=sys.stderr)
PYEOF2
specs=("tcp 10.213.0.2 $TESTPORT" "udp 10.213.0.2 $TESTPORT" "tcp fd00:213::2 $TESTPORT" "udp fd00:213::2 $TESTPORT"
    "tcp 127.0.0.1 $HOSTPORT" "udp 127.0.0.1 $HOSTPORT" "tcp ::1 $HOSTPORT" "udp ::1 $HOSTPORT" "abstract $ABSTRACT 0")
for d in ${DECOYS[@]+"${DECOYS[@]}"}; do
    specs+=("unix $d 0")
done
heard() {
    local kind host port
    read -r kind host port <<<"$1"
    case $kind in
    abstract | unix) grep -Eq -- "$kind:$host connection from .*'control'" "$LOG_LO" ;;
    *) grep -Eq -- "$kind:$host:$port (connection|datagram) from .*'control'" "$LOG_TH" "$LOG_LO" ;;
    esac
}
all_heard() {
    local sp
    for sp in "${specs[@]}"; do heard "$sp" || return 1; done
}
for _ in 1 2 3; do
    bx setpriv --reuid=65534 --regid=65534 --clear-groups python3 "$BDIR/control.py" "${specs[@]}" 2>>"$HDIR/control.err"
    wait_for 3 all_heard && break
done
for sp in "${specs[@]}"; do
    heard "$sp" || fail "control: the listener '$sp' logged nothing for a client in the box: $(cat "$HDIR/control.err")"$'\n'"$(cat "$LOG_TH" "$LOG_LO")"
done
log "control: all ${#specs[@]} listeners log a connection or datagram from the box${DECOYS[*]:+ (decoys: ${DECOYS[*]})}"

# --- the run -------------------------------------------------------------------------------------
t0=$SECONDS
# The test's timeout is 300 s: what is left of 270 s after the set-up goes to the cases.
budget=$((270 - SECONDS - 15))
warm=()
[[ $MODE == warm ]] && warm=(ATTACK_WAIT_WARM=1)
# A language's warm pool starts at its first run (issue 42): one run of each before the count, so
# that every case's run, bash's and JavaScript's first too, finds a warm unit of its language.
if [[ $MODE == warm ]]; then
    for ext in "${langs[@]}"; do
        case $ext in
        sh) bx sh -c 'echo : | mcp-exec run --language bash -' || fail "a bash run to start its pool failed" ;;
        js) bx sh -c 'echo 0 | mcp-exec run --language javascript -' || fail "a JavaScript run to start its pool failed" ;;
        esac
    done
fi
cursor=$(journal_cursor)
cnode attacks.mjs ATTACK_RESULTS="$BDIR/results.jsonl" ATTACK_NEEDS=testhost,hostlisten ATTACK_BUDGET_S="$budget" \
    ${warm[@]+"${warm[@]}"} \
    ATTACK_TESTHOST4=10.213.0.2 ATTACK_TESTHOST6=fd00:213::2 ATTACK_TESTPORT="$TESTPORT" \
    ATTACK_HOSTPORT="$HOSTPORT" ATTACK_ABSTRACT="$ABSTRACT" \
    ATTACK_LISTEN_LOGS="$BDIR/listen-testhost.log,$BDIR/listen-local.log" \
    "$BDIR/cases" 2>&1 | sed 's/mcpcanary[a-z0-9]*/<canary>/g' >&2
rc=${PIPESTATUS[0]}
log "harness exit status $rc after $((SECONDS - t0)) s"

[[ -s $HDIR/results.jsonl ]] || fail "the harness wrote no results"
"$ITEST_DIR/attacks/report" "$HDIR/results.jsonl" >&2 || log "(the report exits non-zero when a case failed)"
ran=$(grep -c . "$HDIR/results.jsonl")
((ran == N_CASES)) || fail "$ran cases ran, but there are $N_CASES case files"
((rc == 0)) || fail "attack cases failed (see above)"
# Which path the runs took, from the broker's journal (MCP_WARM of each "Run … requested").
paths=$(journal_since "$cursor" -o json | "$PY" -c '
import json, sys
n = {"0": 0, "1": 0}
for l in sys.stdin:
    e = json.loads(l)
    if e.get("SYSLOG_IDENTIFIER") == "mcp-exec-brokerd" and str(e.get("MESSAGE", "")).endswith(" requested"):
        n[e.get("MCP_WARM", "0")] = n.get(e.get("MCP_WARM", "0"), 0) + 1
print(n["1"], n["0"])')
read -r n_warm n_cold <<<"$paths"
log "runs: $n_warm warm, $n_cold cold"
case $MODE in
cold) ((n_warm == 0 && n_cold >= ran)) || fail "the cold pass ran $n_warm runs on warm units, $n_cold cold" ;;
warm) ((n_cold == 0 && n_warm >= ran)) || fail "the warm pass ran $n_cold runs on cold units, $n_warm warm" ;;
esac

# The other way out of mcp-exec: `mcp-exec run` prints the run's stdout and stderr to the terminal as
# they are (as running the program there would), escape sequences included. Check that it passes
# them through unchanged and adds nothing.
if [[ -e $HDIR/cases/out-terminal-escapes.py ]]; then
    bx python3 "$BDIR/cases/out-terminal-escapes.py" >"$HDIR/esc.direct" 2>"$HDIR/esc.direct.err"
    bx mcp-exec run "$BDIR/cases/out-terminal-escapes.py" >"$HDIR/esc.run" 2>"$HDIR/esc.run.err" ||
        fail "mcp-exec run of out-terminal-escapes failed: $(head -c 500 "$HDIR/esc.run.err")"
    if ! cmp -s "$HDIR/esc.direct" "$HDIR/esc.run" || ! cmp -s "$HDIR/esc.direct.err" "$HDIR/esc.run.err"; then
        fail "mcp-exec run changed the escape sequences: $(od -c "$HDIR/esc.run" | head -5)"
    fi
    grep -q $'\x1b]52;c;' "$HDIR/esc.run" || fail "control: no OSC 52 sequence in the output of mcp-exec run"
    log "mcp-exec run passes terminal escape sequences through unchanged ($(wc -c <"$HDIR/esc.run") bytes, as python3 prints them)"
fi

# The listeners are still there: a silent listener was silent because of the sandbox.
n_th=$(wc -l <"$LOG_TH")
n_lo=$(wc -l <"$LOG_LO")
bx setpriv --reuid=65534 --regid=65534 --clear-groups python3 "$BDIR/control.py" "udp 10.213.0.2 $TESTPORT" "udp ::1 $HOSTPORT"
wait_for 5 test "$(wc -l <"$LOG_TH")" -gt "$n_th" || fail "control: the test host's listener no longer logs after the cases"
wait_for 5 test "$(wc -l <"$LOG_LO")" -gt "$n_lo" || fail "control: the box's listener no longer logs after the cases"
assert_clean 15
pass
