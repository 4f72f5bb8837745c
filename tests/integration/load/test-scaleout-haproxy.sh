#!/usr/bin/env bash
# Two mcp-exec hosts behind HAProxy (Debian's), configured with the shipped examples
# (examples/haproxy.cfg, listen-remote.conf, node.conf; only addresses, port and certificate path
# replaced), driven by real MCP clients (tests/node-clients/scaleout.mjs):
#   - two more boxes boot as the hosts exec1 and exec2 (this build installed, HTTP on 0.0.0.0:8080
#     with a token, MCP_EXEC_ALLOWED_HOSTS=mcp-lb.test), each joined to the test box by a veth
#     pair; HAProxy runs in the test box and ends TLS with a self-signed certificate for
#     mcp-lb.test. Every call prints the hostname of the box that ran it.
#   0  /healthz without a token, /metrics with one (promtool check metrics), a foreign Host
#      through the balancer gets 403, HAProxy sees both hosts up
#   1  20 sessions x 10 calls, v1 SDK: every call ran on the host its session id names, no error
#   2  negative control: the same run with the naive `stick on req.hdr(mcp-session-id)` instead of
#      the routing rules fails
#   3  stateless 2026-07-28 calls (v2 client) go round-robin: both hosts, no error
#  3t  tasks (2026-07-28 extension; the hosts run with MCP_EXEC_TASK_AFTER_MS=200): 6 calls of a
#      2 s run become tasks, each polled with tasks/get on new connections until it ends: every
#      poll reaches the host the task id names (never -32602) and the result is that host's;
#      negative control: without the example's Mcp-Name rules the same run meets -32602
#   4  progress notifications arrive while a run goes (v1 session and v2 stateless)
#   5  legacy SSE: the endpoint names a host, and its calls run there
#   6  cancel a 30 s run through the balancer (v1: notifications/cancelled; v2: closing the
#      stream): its unit is gone on the host that ran it, well before the run would end (within
#      5 s; measured 0.1-0.5 s and 1.4-2.0 s)
#   7  runs per second through the balancer with one host (the other in maintenance) and with
#      both (printed for docs/several-hosts.md, not checked; plain pass only)
#   8  failover: the broker of exec1 stops (its runs stop, /healthz says 503, HAProxy marks it down
#      on that): exec1's sessions get 404 from exec2 and the client starts over there; exec1 comes
#      back, then its front end stops hard: again 404, never a 5xx
# No 5xx anywhere. Needs the build directory (MCP_TEST_BUILDDIR, which tests/run sets) to install
# the two hosts, haproxy, openssl and promtool (packaging/deps.sh --test) and Node (tests/node-clients).
# Plain pass only: what it checks is HAProxy's routing by our ids; the front ends serve the same
# requests the transport tests give the sanitized build.
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/node-clients.sh"

EXAMPLES=$ITEST_DIR/../examples
BUILD=${MCP_TEST_BUILDDIR:-}
[[ -n $BUILD && -d $BUILD ]] || skip "MCP_TEST_BUILDDIR does not name a build directory (tests/run sets it)"
for t in haproxy openssl promtool; do
    bx sh -c "command -v $t" >/dev/null || skip "no $t in the box (packaging/deps.sh --test installs it)"
done

TOKEN=tok-$RANDOM$RANDOM$RANDOM$RANDOM
LB_NAME=mcp-lb.test
URL=https://$LB_NAME:8443
NODES=(exec1 exec2)
declare -A HOSTBOX ADDR
for i in 1 2; do
    HOSTBOX[exec$i]=${BOX:0:24}-so$i
    ADDR[exec$i]=10.77.$i.2
done
HOSTS="exec1=${HOSTBOX[exec1]},exec2=${HOSTBOX[exec2]}"

# bxn NODE CMD...: run CMD in that host's box.
bxn() {
    local n=$1
    shift
    "$BOXCMD" exec "${HOSTBOX[$n]}" -- "$@"
}
# units_in NODE: that host's run units that run a client's code (as active_run_units in the test
# box: not the broker's own, not idle warm units).
units_in() {
    bxn "$1" systemctl list-units --state=active 'mcp-exec-run-*' --plain --no-legend --no-pager 2>/dev/null |
        awk -v re="$NOT_A_CLIENT_RUN" '$1 ~ /^mcp-exec-run-/ && $0 !~ re { print $1 }'
}
no_units_in() { [[ -z $(units_in "$1") ]]; }

# --- the two hosts ------------------------------------------------------------------------------
# sub FILE FROM TO: replace a line's text that must be in FILE exactly once.
sub() {
    local n
    n=$(grep -cF -- "$2" "$1")
    ((n == 1)) || fail "the example $(basename "$1") has '$2' $n times, not once: update this test with it"
    sed -i "s|$(printf '%s' "$2" | sed 's/[][\.*^$|]/\\&/g')|$3|" "$1"
}

host_up() {
    local n=$1 i=$2 box=${HOSTBOX[$1]} root pid
    "$BOXCMD" down "$box" >/dev/null 2>&1
    at_exit "\"\$BOXCMD\" down $box >/dev/null 2>&1"
    # One retry, as tests/run's own boxes get: on a loaded machine a boot has failed once in a
    # while (infrastructure, not mcp-exec; the first attempt's log is kept).
    if ! "$BOXCMD" up "$box" >"$HDIR/$box.log" 2>&1; then
        log "box $box did not come up ($(grep '^box:' "$HDIR/$box.log" | tail -2 | tr '\n' ' ')); once more"
        "$BOXCMD" down "$box" >/dev/null 2>&1
        "$BOXCMD" up "$box" >>"$HDIR/$box.log" 2>&1 ||
            fail "box $box did not come up twice: $(grep '^box:' "$HDIR/$box.log" | tail -4) $(tail -5 "$HDIR/$box.log")"
    fi
    "$ITEST_DIR/box/install-build" "$box" "$BUILD" >>"$HDIR/$box.log" 2>&1 ||
        fail "installing the build into $box failed: $(tail -5 "$HDIR/$box.log")"
    if [[ -n ${MCP_TEST_SANITIZE-} ]]; then
        (. "$ITEST_DIR/lib/post-checks.sh" && setup_sanitizers "$box") >>"$HDIR/$box.log" 2>&1 ||
            fail "sanitizer set-up in $box failed"
    fi
    root=$("$BOXCMD" root "$box")
    # The shipped files: the socket on every address, the node id and allowed Host.
    mkdir -p "$root/etc/systemd/system/mcp-exec.socket.d" "$root/etc/mcp-exec" "$root/etc/credstore"
    cp "$EXAMPLES/listen-remote.conf" "$root/etc/systemd/system/mcp-exec.socket.d/"
    cp "$EXAMPLES/node.conf" "$root/etc/mcp-exec/mcp-exec.conf"
    sub "$root/etc/mcp-exec/mcp-exec.conf" "MCP_EXEC_NODE_ID=exec1" "MCP_EXEC_NODE_ID=$n"
    sub "$root/etc/mcp-exec/mcp-exec.conf" "MCP_EXEC_ALLOWED_HOSTS=mcp.example.com" "MCP_EXEC_ALLOWED_HOSTS=$LB_NAME"
    # A 2 s call that declared the tasks extension becomes a task (step 3t).
    printf 'MCP_EXEC_TASK_AFTER_MS=200\n' >>"$root/etc/mcp-exec/mcp-exec.conf"
    chmod 0644 "$root/etc/mcp-exec/mcp-exec.conf"
    (umask 077 && printf '%s\n' "$TOKEN" >"$root/etc/credstore/mcp-exec.auth-token")
    # A private network between the test box (10.77.i.1) and this host (10.77.i.2).
    pid=$("$BOXCMD" pid "$box")
    nsenter -t "$("$BOXCMD" pid "$BOX")" -n ip link del "so$i" >/dev/null 2>&1
    nsenter -t "$("$BOXCMD" pid "$BOX")" -n ip link add "so$i" type veth peer name eth0 netns "$pid" &&
        nsenter -t "$("$BOXCMD" pid "$BOX")" -n sh -c "ip addr add 10.77.$i.1/24 dev so$i && ip link set so$i up" &&
        nsenter -t "$pid" -n sh -c "ip addr add ${ADDR[$n]}/24 dev eth0 && ip link set eth0 up && ip link set lo up" ||
        fail "cannot connect $box to the test box"
    "$BOXCMD" exec "$box" -- sh -ec '
        mount --make-rshared /
        systemctl daemon-reload
        systemctl restart mcp-exec.socket' >>"$HDIR/$box.log" 2>&1 || fail "mcp-exec.socket does not start in $box"
}

log "booting the hosts ${HOSTBOX[exec1]} and ${HOSTBOX[exec2]}"
host_up exec1 1
host_up exec2 2

# --- HAProxy in the test box --------------------------------------------------------------------
# Debian's own haproxy.service (Type=notify, /dev/log bound into its chroot), told by a drop-in
# to read our file.
at_exit "bx sh -c 'systemctl stop haproxy.service; rm -rf /run/systemd/system/haproxy.service.d; systemctl daemon-reload' >/dev/null 2>&1"
bx sh -c "mkdir -p /run/systemd/system/haproxy.service.d &&
          printf '[Service]\nEnvironment=CONFIG=%s\n' '$BDIR/haproxy.cfg' >/run/systemd/system/haproxy.service.d/itest.conf &&
          systemctl daemon-reload" || fail "cannot point haproxy.service at the test's configuration"
cp -a "$BOXROOT/etc/hosts" "$HDIR/hosts.saved"
at_exit "cp -a '$HDIR/hosts.saved' '$BOXROOT/etc/hosts'"
printf '127.0.0.1 %s\n' "$LB_NAME" >>"$BOXROOT/etc/hosts"
bx openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$LB_NAME" -addext "subjectAltName=DNS:$LB_NAME" \
    -keyout "$BDIR/lb.key" -out "$BDIR/lb.crt" >/dev/null 2>&1 || fail "openssl could not make a certificate"
cat "$HDIR/lb.crt" "$HDIR/lb.key" >"$HDIR/lb.pem"
chmod 0644 "$HDIR/lb.crt" "$HDIR/lb.pem"
bx mkdir -p /run/haproxy

# lb_config [naive|notasks]: the shipped haproxy.cfg for this network; "naive" swaps the routing
# rules for the stick-table line that looks right and is not (design notes: it stores from the
# request); "notasks" drops the rules that route task requests by Mcp-Name.
lb_config() {
    local f=$HDIR/haproxy.cfg
    cp "$EXAMPLES/haproxy.cfg" "$f"
    sub "$f" "192.0.2.11:8080" "${ADDR[exec1]}:8080"
    sub "$f" "192.0.2.12:8080" "${ADDR[exec2]}:8080"
    sub "$f" "bind :443 " "bind 127.0.0.1:8443 "
    sub "$f" "/etc/haproxy/certs/mcp-exec.pem" "$BDIR/lb.pem"
    if [[ ${1-} == naive ]]; then
        grep -q '^ *use-server ' "$f" || fail "no use-server rules in the example"
        sed -i -e '/^ *use-server /d' \
            -e 's/^\( *\)balance roundrobin$/&\n\1stick-table type string len 128 size 100k expire 30m\n\1stick on req.hdr(mcp-session-id)/' "$f"
        grep -q 'stick on req.hdr' "$f" || fail "could not make the naive configuration"
    fi
    if [[ ${1-} == notasks ]]; then
        grep -q '^ *use-server .* task_request ' "$f" || fail "no task routing rules in the example"
        sed -i '/task_request/d' "$f"
    fi
    chmod 0644 "$f"
}

cat >"$HDIR/hastat.py" <<'EOF'
# hastat.py SERVER FIELD...: fields of one server of backend mcp_exec from HAProxy's "show stat";
# hastat.py -c COMMAND: any command on the admin socket.
import csv, socket, sys
def ask(cmd):
    s = socket.socket(socket.AF_UNIX)
    s.connect("/run/haproxy/admin.sock")
    s.sendall((cmd + "\n").encode())
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            return out.decode()
        out += b
if sys.argv[1] == "-c":
    print(ask(" ".join(sys.argv[2:])))
    sys.exit(0)
rows = list(csv.DictReader(ask("show stat").lstrip("# ").splitlines()))
for r in rows:
    if r["pxname"] == "mcp_exec" and r["svname"] == sys.argv[1]:
        print(" ".join(r[f] for f in sys.argv[2:]))
EOF
hastat() { bx python3 "$BDIR/hastat.py" "$@" 2>/dev/null; }
srv_is() { [[ $(hastat "$1" status) == "$2"* ]]; }

lb_start() {
    lb_config "${1-}"
    bx haproxy -c -q -f "$BDIR/haproxy.cfg" >"$HDIR/haproxy-check.log" 2>&1 ||
        fail "haproxy -c refuses the configuration: $(cat "$HDIR/haproxy-check.log")"
    bx systemctl restart haproxy.service || fail "haproxy.service does not start: $(bx journalctl -u haproxy -n 10 --no-pager)"
    wait_for 30 srv_is exec1 UP && wait_for 30 srv_is exec2 UP ||
        fail "HAProxy does not see both hosts up: exec1 $(hastat exec1 status check_status), exec2 $(hastat exec2 status check_status)"
}

# client CMD ARGS...: scaleout.mjs in the test box; its JSON line is in $OUT.
client() {
    OUT=$(bx env HOME="$BDIR/home" MCP_TEST_STATE="$BDIR" NODE_EXTRA_CA_CERTS="$BDIR/lb.crt" \
        MCP_TEST_URL="$URL" MCP_TEST_TOKEN="$TOKEN" MCP_TEST_HOSTS="$HOSTS" NODE_OPTIONS=--unhandled-rejections=strict \
        "$NODE" "$CLIENTS/scaleout.mjs" "$@" 2>>"$HDIR/clients.log")
}
# judge JSON EXPR WHAT: the Python expression EXPR holds for the JSON (bound to r).
judge() {
    "$PY" -c 'import json, sys; r = json.loads(sys.argv[1]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null ||
        fail "$3: not $2 in: $(head -c 3000 <<<"$1")"$'\n'"client log: $(tail -n 20 "$HDIR/clients.log")"
}

# --- 0: health, metrics, Host, and the balancer's view -----------------------------------------
for n in "${NODES[@]}"; do
    a=http://${ADDR[$n]}:8080
    wait_for 20 bx sh -c "curl -sf -m 5 $a/healthz | grep -qx ok" || fail "$n: /healthz without a token is not 200 ok: $(bx curl -s -m 5 -i $a/healthz)"
    code=$(bx curl -s -m 5 -o /dev/null -w '%{http_code}' "$a/metrics")
    [[ $code == 401 ]] || fail "$n: /metrics without the token answered $code, not 401"
    d=$(bx curl -s -m 5 -H "X-MCP-AUTH: $TOKEN" "$a/healthz")
    judge "$d" 'r["status"] == "ok" and r["node"] == "'"$n"'" and r["self_check"] == "passed"' "$n: /healthz details"
done
lb_start
log "HAProxy sees both hosts up"
code=$(bx curl -s -m 10 --cacert "$BDIR/lb.crt" -o /dev/null -w '%{http_code}' -H "X-MCP-AUTH: $TOKEN" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'Host: evil.example' \
    --resolve "evil.example:8443:127.0.0.1" -d '{}' "https://evil.example:8443/mcp" -k)
[[ $code == 403 ]] || fail "a foreign Host through the balancer answered $code, not 403"
log "0: /healthz and /metrics answer, a foreign Host gets 403 through the balancer"

# --- 1: sessions stay on their host -------------------------------------------------------------
client sessions 20 10 || fail "sessions: the client failed: $(tail -n 20 "$HDIR/clients.log")"
judge "$OUT" 'r["calls"] == 200 and r["ok"] == 200 and r["wrong"] == 0 and r["errors"] == 0 and r["status_5xx"] == 0' \
    "1: 20 sessions x 10 calls"
judge "$OUT" 'r["sessions"].get("exec1", 0) >= 5 and r["sessions"].get("exec2", 0) >= 5' "1: sessions on both hosts"
log "1: 200 calls of 20 sessions, every one on its session's host: $OUT"

# --- 2: the naive stick table fails the same run -------------------------------------------------
lb_start naive
client sessions 20 10 || fail "sessions (naive): the client failed: $(tail -n 20 "$HDIR/clients.log")"
judge "$OUT" 'r["wrong"] + r["errors"] >= 10' "2: the naive configuration did not fail (the test could not fail)"
log "2: naive stick on req.hdr(mcp-session-id): $OUT"
lb_start

# --- 3: stateless calls go anywhere -------------------------------------------------------------
client stateless 20 || fail "stateless: the client failed: $(tail -n 20 "$HDIR/clients.log")"
judge "$OUT" 'r["errors"] == 0 and r["status_5xx"] == 0 and sum(r["hosts"].values()) == 20' "3: stateless calls"
judge "$OUT" 'r["hosts"].get("'"${HOSTBOX[exec1]}"'", 0) > 0 and r["hosts"].get("'"${HOSTBOX[exec2]}"'", 0) > 0' \
    "3: both hosts used"
log "3: stateless: $OUT"

# --- 3t: a task is fetched from the host that holds it -------------------------------------------
client tasks 6 || fail "tasks: the client failed: $(tail -n 20 "$HDIR/clients.log")"
judge "$OUT" 'r["tasks"] == 6 and r["ok"] == 6 and r["not_found"] == 0 and r["wrong"] == 0 and r["errors"] == 0 and r["status_5xx"] == 0' \
    "3t: tasks through the balancer"
judge "$OUT" 'r["polls"] >= 12' "3t: too few tasks/get polls to tell routing from luck"
log "3t: tasks: $OUT"
lb_start notasks
client tasks 3 || fail "tasks (no Mcp-Name rules): the client failed: $(tail -n 20 "$HDIR/clients.log")"
judge "$OUT" 'r["not_found"] >= 1' "3t: without the Mcp-Name rules no tasks/get missed (the test could not fail)"
log "3t: without the Mcp-Name rules: $OUT"
lb_start

# --- 4: progress is not buffered ----------------------------------------------------------------
client progress || fail "progress: the client failed: $(tail -n 20 "$HDIR/clients.log")"
judge "$OUT" 'r["v1"]["early"] >= 1 and r["v2"]["early"] >= 1 and r["status_5xx"] == 0' \
    "4: progress came only at the end (buffered)"
log "4: progress during the run: $OUT"

# --- 5: legacy SSE ------------------------------------------------------------------------------
client legacy 4 3 || fail "legacy: the client failed: $(tail -n 20 "$HDIR/clients.log")"
judge "$OUT" 'r["calls"] == 12 and r["ok"] == 12 and r["wrong"] == 0 and r["errors"] == 0 and r["status_5xx"] == 0' \
    "5: legacy SSE"
judge "$OUT" 'len(r["sessions"]) == 2' "5: legacy sessions on both hosts"
log "5: legacy SSE: $OUT"

# --- 6: cancellation reaches the host that runs the code -----------------------------------------
for era in v1 v2; do
    rm -f "$HDIR"/cancel.*
    bx env HOME="$BDIR/home" MCP_TEST_STATE="$BDIR" NODE_EXTRA_CA_CERTS="$BDIR/lb.crt" MCP_TEST_URL="$URL" \
        MCP_TEST_TOKEN="$TOKEN" MCP_TEST_HOSTS="$HOSTS" "$NODE" "$CLIENTS/scaleout.mjs" cancel "$era" \
        >"$HDIR/cancel.out" 2>>"$HDIR/clients.log" &
    cpid=$!
    at_exit "kill $cpid 2>/dev/null"
    wait_for 30 test -e "$HDIR/cancel.sent" || fail "6 $era: the call was not sent"
    ran=
    deadline=$((SECONDS + 30))
    while [[ -z $ran ]] && ((SECONDS < deadline)); do
        for n in "${NODES[@]}"; do [[ -n $(units_in "$n") ]] && ran=$n; done
        [[ -n $ran ]] || sleep 0.2
    done
    [[ -n $ran ]] || fail "6 $era: no run unit became active on either host"
    sess=$(cat "$HDIR/cancel.sent")
    [[ -z $sess || $sess == "$ran" ]] || fail "6 $era: the run of a session of $sess went to $ran"
    t0=$(date +%s%N)
    touch "$HDIR/cancel.go"
    wait_for 10 no_units_in "$ran" || fail "6 $era: the run's unit on $ran is still there 10 s after the cancel"
    ms=$((($(date +%s%N) - t0) / 1000000))
    wait "$cpid" || fail "6 $era: the client failed: $(tail -n 20 "$HDIR/clients.log")"
    OUT=$(cat "$HDIR/cancel.out")
    judge "$OUT" 'r["outcome"]["ms"] < 5000 and r["status_5xx"] == 0' "6 $era: the aborted call did not end at once"
    # Well before the 30 s run would end; what it took is logged (docs/several-hosts.md).
    ((ms <= 5000)) || fail "6 $era: the unit on $ran went only $ms ms after the cancel (want within 5 s)"
    log "6 $era: cancelled on $ran, unit gone after $ms ms: $OUT"
done

# --- 7: runs per second, one host and two --------------------------------------------------------
# A measurement for docs/several-hosts.md, not a check (timing goals are for benchmarks); meaningless under
# the sanitizers, so left out there.
if [[ -n ${MCP_TEST_SANITIZE-} ]]; then
    log "7: skipped under the sanitizers"
else
    hastat -c "set server mcp_exec/exec2 state maint" >/dev/null
    client bench 60 4 || fail "bench (one host): $(tail -n 20 "$HDIR/clients.log")"
    one=$OUT
    hastat -c "set server mcp_exec/exec2 state ready" >/dev/null
    wait_for 30 srv_is exec2 UP || fail "exec2 did not come back from maintenance"
    client bench 60 4 || fail "bench (two hosts): $(tail -n 20 "$HDIR/clients.log")"
    two=$OUT
    judge "$one" 'r["errors"] == 0 and list(r["hosts"]) == ["'"${HOSTBOX[exec1]}"'"]' "7: one host"
    judge "$two" 'r["errors"] == 0 and len(r["hosts"]) == 2' "7: two hosts"
    log "7: one host: $one"
    log "7: two hosts: $two"
    log "7: runs/s, 4 clients at once: one host $(jget "$one" '"%.1f" % r["runs_per_s"]'), two hosts $(jget "$two" '"%.1f" % r["runs_per_s"]') ($(nproc) cores shared)"
fi

# --- metrics after all that ---------------------------------------------------------------------
scrape() {
    local n
    for n in "${NODES[@]}"; do
        bx curl -s -m 10 -H "X-MCP-AUTH: $TOKEN" "http://${ADDR[$n]}:8080/metrics" >"$HDIR/metrics.$n" || return 1
    done
}
cancelled_runs() {
    cat "$HDIR"/metrics.exec* | sed -n 's/^mcp_exec_runs_total{outcome="cancelled"} //p' | awk '{ s += $1 } END { print s + 0 }'
}
# A run is counted when the broker has its unit's final state, which may come a moment after the
# unit left the active state that step 6 waited for (slower under the sanitizers).
two_cancelled() { scrape && (($(cancelled_runs) >= 2)); }
wait_for 30 two_cancelled || true
scrape || fail "no /metrics from one of the hosts"
for n in "${NODES[@]}"; do
    bx promtool check metrics <"$HDIR/metrics.$n" >"$HDIR/promtool.$n" 2>&1 ||
        fail "$n: promtool check metrics: $(cat "$HDIR/promtool.$n")"
    grep -q "^mcp_exec_info{node=\"$n\"," "$HDIR/metrics.$n" || fail "$n: no mcp_exec_info for $n"
    ok=$(sed -n 's/^mcp_exec_runs_total{outcome="ok"} //p' "$HDIR/metrics.$n")
    ((ok >= 20)) || fail "$n: mcp_exec_runs_total{outcome=\"ok\"} is ${ok:-missing} after the runs above"
    hits=$(sed -n 's/^mcp_exec_pool_hits_total //p' "$HDIR/metrics.$n")
    ((hits >= 1)) || fail "$n: mcp_exec_pool_hits_total is ${hits:-missing}: no run took a warm unit?"
done
cancelled=$(cancelled_runs)
((cancelled >= 2)) || fail "the two cancelled runs are not counted as cancelled ($cancelled, 30 s after): $(grep -h '^mcp_exec_runs_total' "$HDIR"/metrics.exec* | tr '\n' ' ')"
log "metrics: promtool accepts both hosts' /metrics; runs counted by outcome"

# --- 8: failover --------------------------------------------------------------------------------
rm -f "$HDIR"/failover.*
bx env HOME="$BDIR/home" MCP_TEST_STATE="$BDIR" NODE_EXTRA_CA_CERTS="$BDIR/lb.crt" MCP_TEST_URL="$URL" \
    MCP_TEST_TOKEN="$TOKEN" MCP_TEST_HOSTS="$HOSTS" "$NODE" "$CLIENTS/scaleout.mjs" failover exec1 \
    >"$HDIR/failover.out" 2>>"$HDIR/clients.log" &
fpid=$!
at_exit "kill $fpid 2>/dev/null"
wait_for 60 test -e "$HDIR/failover.long-sent" || fail "8: the long call was not sent"
wait_for 30 found units_in exec1 || fail "8: the long call's unit did not start on exec1"
# A: exec1 loses its broker. Its runs stop with it (BindsTo=); /healthz says 503.
bxn exec1 systemctl stop mcp-exec-broker.socket mcp-exec-broker.service
wait_for 15 no_units_in exec1 || fail "8: exec1's run units are still there after its broker stopped"
# The front end's view of the broker may be a second old.
exec1_unhealthy() { [[ $(bx curl -s -m 10 -o /dev/null -w '%{http_code}' "http://${ADDR[exec1]}:8080/healthz") == 503 ]]; }
wait_for 5 exec1_unhealthy || fail "8: exec1's /healthz does not answer 503 without its broker"
wait_for 30 srv_is exec1 DOWN || fail "8: HAProxy did not mark exec1 down: $(hastat exec1 status check_status check_code)"
why=$(hastat exec1 check_status check_code)
[[ $why == "L7STS 503" ]] || fail "8: HAProxy marked exec1 down, but not for its /healthz 503: $why"
log "8A: exec1's broker stopped: its runs are gone, HAProxy marked it down ($why)"
touch "$HDIR/failover.down"
wait_for 60 test -e "$HDIR/failover.a-done" || fail "8A: the clients did not finish: $(tail -n 20 "$HDIR/clients.log")"
A=$(cat "$HDIR/failover.a-done")
# Its run was killed with the broker: the call ends with a result saying so (or an error), no 5xx.
judge "$A" '(r["long"]["kind"] == "result" and (r["long"]["isError"] or "\"exit_code\":-1" in r["long"]["text"])) or (r["long"]["kind"] == "error" and r["long"]["code"] not in range(500, 600))' \
    "8A: the call that ran on exec1"
judge "$A" 'all(s["ok"] and s["host"] == "'"${HOSTBOX[exec2]}"'" for s in r["sessions"] if s["node"] == "exec2")' \
    "8A: exec2's sessions go on"
judge "$A" 'all(not s["ok"] and s["error"]["code"] == 404 and s["new_node"] == "exec2" and s["new_host"] == "'"${HOSTBOX[exec2]}"'" for s in r["sessions"] if s["node"] == "exec1")' \
    "8A: exec1's sessions: 404, then a new session on exec2"
log "8A: $A"
# B: exec1 comes back, then its front end stops hard (connection refused at once).
bxn exec1 systemctl start mcp-exec-broker.socket
wait_for 60 srv_is exec1 UP || fail "8: exec1 did not come back up: $(hastat exec1 status check_status)"
touch "$HDIR/failover.up"
wait_for 60 test -e "$HDIR/failover.b-ready" || fail "8B: no session on exec1: $(tail -n 20 "$HDIR/clients.log")"
bxn exec1 systemctl stop mcp-exec.socket mcp-exec.service
touch "$HDIR/failover.stopped"
wait_for 60 test -e "$HDIR/failover.b-done" || fail "8B: the client did not finish: $(tail -n 20 "$HDIR/clients.log")"
B=$(cat "$HDIR/failover.b-done")
judge "$B" 'not r["ok"] and r["error"]["code"] == 404 and r["new_node"] == "exec2" and r["new_host"] == "'"${HOSTBOX[exec2]}"'"' \
    "8B: a session of the stopped exec1"
wait "$fpid" || fail "8: the client failed: $(tail -n 20 "$HDIR/clients.log")"
OUT=$(cat "$HDIR/failover.out")
judge "$OUT" 'r["status_5xx"] == 0' "8: a 5xx reached the client"
log "8B: exec1's front end stopped: $B (HAProxy: retries/redispatches $(hastat exec1 wretr wredis))"

# --- the hosts' own checks ------------------------------------------------------------------------
for n in "${NODES[@]}"; do
    bxn "$n" journalctl --no-pager -o cat >"$HDIR/journal.$n" 2>/dev/null
    grep -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$HDIR/journal.$n" | head -5 >"$HDIR/san.$n"
    [[ ! -s $HDIR/san.$n ]] || fail "$n: sanitizer reports: $(cat "$HDIR/san.$n")"
    ! grep -qF "$TOKEN" "$HDIR/journal.$n" || fail "$n: the token is in the journal"
done
pass
