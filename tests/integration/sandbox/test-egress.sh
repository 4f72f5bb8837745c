#!/usr/bin/env bash
# Network by policy (issue 22): runs reach the test internet of tests/lib/egress-net.sh (a netns
# behind a veth pair, documentation ranges only, a counting DNS stub, HTTP and HTTPS servers)
# through mcp-exec-egressd, and nothing else. Policy WEB allows allowed.test tls.test other.test
# and the names that resolve to non-public addresses, on :80 and :443; MCP_EXEC_EGRESS_TESTING_PUBLIC
# makes 192.0.2.0/24 public for egressd.
#   - one run over HTTP (tests/lib/egress-probe.py): urllib over http and https (test CA through
#     SSL_CERT_FILE), a POST, denied.test 403 and never asked of the DNS stub, loop/meta/priv/mixed
#     names 403, an IP literal 403, CONNECT with the SNI of another name refused and with the
#     right one served, raw UDP to the stub and raw TCP to the server reach nothing (their logs
#     say so), no resolver, bind() EPERM; the result's egress counts match what the code did
#   - pip download from the tiny index over stdio (`mcp-exec run --network web`), and a denied
#     name over stdio
#   - egressd's journal: one entry per connection with its verdict, no payload (a canary)
#   - a byte cap (MCP_EXEC_EGRESS_MAX_BYTES=1M) cuts a 4 MB download
#   - a slow download still running at the run's timeout is cut (the server sees it close)
#   - one run's 1,200 idle proxy connections (cap 8): egressd closes those over the cap at once and
#     stays far from its open-file limit, another caller's run during it gets network (issue 37)
#   - after the runs no unit and no process is left; a run without network has no AF_INET;
#     network with an unknown policy, and with none configured, is a clear isError
# Both passes: egressd is C parsing what the sandbox sends (request heads, ClientHellos); the
# ASan pass runs it sanitized, and a report aborts it, which egress_assert_no_crash catches
# (about 50 s each there, as plain).
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/http.sh"
. "$ITEST_DIR/lib/egress-net.sh"

bx systemctl cat mcp-exec-egress.socket >/dev/null 2>&1 || fail "mcp-exec-egress.socket is not installed in the box"
egress_net_up

POLICY='MCP_EXEC_EGRESS_POLICY_WEB="allowed.test tls.test other.test loop.test meta.test priv.test mixed.test :80 :443"'
PUBLIC=MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/24
CANARY=mcpcanaryegress$RANDOM$RANDOM

# egress_config LINE...: the configuration, read again by broker, front ends and egressd.
egress_config() {
    set_config "$@"
    restart_http
    bx systemctl stop mcp-exec-egress.service mcp-exec-stdio.service >/dev/null 2>&1
    bx systemctl reset-failed mcp-exec-egress.service >/dev/null 2>&1
}
at_exit 'bx systemctl stop mcp-exec-egress.service >/dev/null 2>&1'

# hx CODE-FILE NETWORK TIMEOUT: one exec call over HTTP (the stateless 2026-07-28 revision);
# prints the tools/call result as one JSON line.
put mcp-http.py >/dev/null <<'PYEOF'
import json, sys, urllib.request
args = {"code": open(sys.argv[1]).read(), "timeout_s": int(sys.argv[3])}
if sys.argv[2]:
    args["network"] = sys.argv[2]
body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "exec", "arguments": args,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}
req = urllib.request.Request("http://127.0.0.1:8080/mcp", data=json.dumps(body).encode(), headers={
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "exec"})
r = json.loads(urllib.request.urlopen(req, timeout=int(sys.argv[3]) + 60).read())
print(json.dumps(r.get("result", r)))
PYEOF
hx() {
    local f
    f=$(printf '%s' "$1" | put "code.$RANDOM$RANDOM.py")
    bx python3 "$BDIR/mcp-http.py" "$f" "$2" "$3"
}

egress_config "$POLICY" "$PUBLIC"

# --- 1. the probe run, over HTTP -----------------------------------------------------------------
: >"$EGRESS_INET/dns.log.mark"
n_http_before=$(wc -l <"$(egress_http_log)")
cursor=$(journal_cursor)
code="CA = '''$EGRESS_CA'''"$'\n'"CANARY = '$CANARY'"$'\n'"$(cat "$ITEST_DIR/lib/egress-probe.py")"
out=$(hx "$code" web 120) || fail "the probe run over HTTP failed: $out"
jcheck "$out" 'not r.get("isError") and r["structuredContent"]["exit_code"] == 0' "the probe run did not complete"
stdout=$(jget "$out" 'r["structuredContent"]["stdout"]')
log "probe: $(grep -E '^(OK|BAD) ' <<<"$stdout" | sed 's/mcpcanary[a-z0-9]*/<canary>/g' | cut -c1-140 | tr '\n' ';')"
for p in proxy-env urllib-http urllib-https requests-https post-canary denied-403 non-public-loop non-public-meta non-public-priv \
    non-public-mixed ip-literal sni-match sni-mismatch raw-udp raw-tcp getaddrinfo bind; do
    grep -q "^OK $p " <<<"$stdout" || fail "probe $p: $(grep -E "^(OK|BAD) $p " <<<"$stdout" || echo 'no line')"$'\n'"stderr: $(jget "$out" 'r["structuredContent"]["stderr"]' | tail -5)"
done
! grep -q '^BAD ' <<<"$stdout" || fail "probes failed: $(grep '^BAD ' <<<"$stdout")"
# What the result says the run did: the counts per verdict are exactly the probe's connections.
expect=$(sed -n 's/^EXPECT //p' <<<"$stdout")
jcheck "$out" 'r["structuredContent"]["egress"]["policy"] == "web" and r["structuredContent"]["egress"]["connections"] == '"$expect" \
    "the result's egress counts are not the probe's connections ($expect)"
jcheck "$out" 'r["structuredContent"]["egress"]["bytes_down"] > 0 and r["structuredContent"]["egress"]["bytes_up"] > 0' \
    "the result counts no bytes"
log "egress in the result: $(jget "$out" 'r["structuredContent"]["egress"]')"
# The DNS stub: never asked for denied.test, asked for the allowed names (so it was listening).
egress_dns_asked denied.test && fail "the DNS stub was asked for denied.test: $(grep denied "$(egress_dns_log)")"
egress_dns_asked tls.test || fail "control: the DNS stub saw no query for tls.test"
egress_dns_asked loop.test || fail "control: the DNS stub saw no query for loop.test"
egress_dns_asked raw.test && fail "the raw UDP datagram of the sandbox reached the DNS stub"
# The servers: the HTTP one saw exactly the two allowed plain requests (small.txt, the POST): not
# the raw connect, not mixed.test's public address; the HTTPS one the allowed CONNECTs (urllib,
# sni-match, requests if there), and at most one more if egressd dials before it reads the SNI.
newlog=$(tail -n +"$((n_http_before + 1))" "$(egress_http_log)")
n_http=$(grep -c '^[0-9.]* http connection from ' <<<"$newlog")
n_https=$(grep -c '^[0-9.]* https connection from ' <<<"$newlog")
want_https=2
grep -q '^OK requests-https [^s]' <<<"$stdout" && want_https=3
((n_http == 2)) || fail "the HTTP server saw $n_http connections, want 2: $newlog"
((n_https == want_https || n_https == want_https + 1)) || fail "the HTTPS server saw $n_https connections, want $want_https: $newlog"
tail -n +"$((n_http_before + 1))" "$(egress_http_log)" | grep -q 'https sni other.test' &&
    fail "the TLS server saw the SNI other.test through a CONNECT to tls.test"

# egressd's journal: one entry per connection with a verdict, none with the canary.
jl=$(journal_since "$cursor" -o json)
want=$(jget "$out" 'json.dumps(r["structuredContent"]["egress"]["connections"], sort_keys=True)')
got=$("$PY" -c '
import json, sys
n = {}
for l in sys.stdin:
    e = json.loads(l)
    if e.get("SYSLOG_IDENTIFIER") == "mcp-exec-egressd" and "EGRESS_VERDICT" in e:
        n[e["EGRESS_VERDICT"]] = n.get(e["EGRESS_VERDICT"], 0) + 1
print(json.dumps(n, sort_keys=True))' <<<"$jl")
[[ $got == "$want" ]] || fail "egressd's journal entries per EGRESS_VERDICT ($got) are not the run's connections ($want)"
grep -q "$CANARY" <<<"$jl" && fail "the canary the code sent in a request body is in the journal"
log "journal: one entry per connection, by EGRESS_VERDICT $got, no payload"

# --- 2. over stdio: pip download from the tiny index, a denied name ------------------------------
pipcode='import os, subprocess, sys
r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
    "--no-cache-dir", "--index-url", "http://allowed.test/simple", "--trusted-host", "allowed.test",
    "tinypkg", "-d", "/tmp/d"], capture_output=True, text=True, timeout=100)
print("PIP", r.returncode, sorted(os.listdir("/tmp/d")) if os.path.isdir("/tmp/d") else [])
if r.returncode: print(r.stdout[-600:], r.stderr[-600:])
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://denied.test/", timeout=10)
    print("DENIED reached")
except urllib.error.HTTPError as e:
    print("DENIED", e.code)
'
f=$(printf '%s' "$pipcode" | put pip.py)
bx sh -c "mcp-exec run --network web --timeout 110 $f" >"$HDIR/pip.out" 2>"$HDIR/pip.err"
grep -q "^PIP 0 \['tinypkg-1.0-py3-none-any.whl'\]" "$HDIR/pip.out" ||
    fail "pip download over stdio: $(cat "$HDIR/pip.out" "$HDIR/pip.err" | head -c 1500)"
grep -qx 'DENIED 403' "$HDIR/pip.out" || fail "denied.test over stdio: $(cat "$HDIR/pip.out")"
grep -q 'GET /packages/tinypkg-1.0-py3-none-any.whl' "$(egress_http_log)" || fail "control: the server did not serve the wheel"
egress_dns_asked denied.test && fail "the DNS stub was asked for denied.test (stdio run)"
log "stdio: pip download of tinypkg from the test index works, denied.test 403"

# --- 3. after the runs ---------------------------------------------------------------------------
assert_clean 15
# Without network: no AF_INET at all.
out=$(hx 'import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("INET made")
except OSError as e:
    print("INET refused", e.errno)' "" 20) || fail "a run without network failed: $out"
jcheck "$out" 'r["structuredContent"]["stdout"].startswith("INET refused") and "egress" not in r["structuredContent"]' \
    "a run without network can make an AF_INET socket"
# An unknown policy: a clear isError.
out=$(hx 'print(1)' nosuch 20) || fail "the call with an unknown policy failed: $out"
jcheck "$out" 'r.get("isError") is True and "web" in r["content"][0]["text"]' "an unknown policy is not an isError naming the policies"
log "unknown policy: $(jget "$out" 'r["content"][0]["text"]')"

# What an egress run costs over a plain one (reported, not asserted: the machine is noisy).
ms() { date +%s%3N; }
t_plain=() t_egress=() t_dl=()
for _ in 1 2 3; do
    t=$(ms); hx 'print(1)' "" 20 >/dev/null; t_plain+=($(($(ms) - t)))
    t=$(ms); hx 'print(1)' web 20 >/dev/null; t_egress+=($(($(ms) - t)))
    t=$(ms)
    out=$(hx 'import urllib.request; print(len(urllib.request.urlopen("http://allowed.test/1m.bin", timeout=20).read()))' web 30)
    t_dl+=($(($(ms) - t)))
    jcheck "$out" 'r["structuredContent"]["stdout"] == "1048576\n"' "the 1 MB download did not work"
done
med() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
log "cost (median of 3 calls over HTTP): plain run $(med "${t_plain[@]}") ms, egress run $(med "${t_egress[@]}") ms, egress run with a 1 MB download $(med "${t_dl[@]}") ms"

# --- 4. the run's end cuts a slow download -------------------------------------------------------
: >"$HDIR/mark"
out=$(hx 'import urllib.request
r = urllib.request.urlopen("http://allowed.test/slow/600", timeout=30)
print("started", flush=True)
r.read()
print("finished")' web 4) || fail "the slow run failed: $out"
jcheck "$out" 'r["structuredContent"].get("timed_out") is True and "finished" not in r["structuredContent"]["stdout"]' \
    "the slow download was not stopped by the run's timeout"
wait_for 15 grep -q 'http slow cut' "$(egress_http_log)" ||
    fail "the server's slow download was not cut at the run's end: $(grep slow "$(egress_http_log)")"
log "a download running at the run's timeout is cut (the server saw the connection go)"
assert_clean 15

# --- 4b. one run's idle flood denies no one else (issue 37) -------------------------------------
# A run opens 1,200 connections to its proxy and sends nothing (its cap is 8): egressd closes those
# over the cap at once, so it stays far from its open-file limit, and another caller's run (stdio:
# another uid) started during the flood gets network. The flood's own network works after it.
flood='import resource, socket, time, urllib.request
try:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
except (OSError, ValueError):
    pass
s = []
for i in range(1200):
    try:
        s.append(socket.create_connection(("127.0.0.1", 3128), timeout=5))
    except OSError as e:
        print("STOP", i, e)
        break
print("OPEN", len(s), flush=True)
time.sleep(8)
for x in s:
    x.close()
for i in range(30):
    try:
        print("AFTER", urllib.request.urlopen("http://allowed.test/small.txt", timeout=5).status)
        break
    except Exception as e:
        time.sleep(0.3)'
f=$(printf '%s' "$flood" | put flood.py)
since=$(bx date +%s)
bx python3 "$BDIR/mcp-http.py" "$f" web 40 >"$HDIR/flood.out" 2>&1 &
flood_pid=$!
# Until the flood is under way (egressd closed one over the cap, or, the old egressd, holds many
# descriptors), then egressd's descriptors, during the flood (it holds its connections 8 s).
# (--since, not --after-cursor: the entries of egressd, a dynamic user, are in a journal file of
# their own, and a cursor of the system's missed its first ones.)
under_way='journalctl --flush; journalctl --no-pager --since="@$1" -o cat SYSLOG_IDENTIFIER=mcp-exec-egressd |
    grep -q "^egress -:0 cap" && exit 0
pid=$(systemctl show -P MainPID mcp-exec-egress.service)
[ "$pid" -gt 0 ] && [ "$(ls /proc/$pid/fd | wc -l)" -gt 200 ]'
for _ in $(seq 150); do
    bx sh -c "$under_way" sh "$since" && break
    sleep 0.2
done
pid=$(bx systemctl show -P MainPID mcp-exec-egress.service)
n_fds=$(bx sh -c "ls /proc/$pid/fd | wc -l")
other='import urllib.request
print("OTHER", urllib.request.urlopen("http://allowed.test/small.txt", timeout=10).status)'
f=$(printf '%s' "$other" | put other.py)
bx sh -c "mcp-exec run --network web --timeout 20 $f" >"$HDIR/other.out" 2>"$HDIR/other.err"
wait "$flood_pid" || fail "the flooding run failed: $(cat "$HDIR/flood.out")"
out=$(cat "$HDIR/flood.out")
grep -qx 'OTHER 200' "$HDIR/other.out" ||
    fail "another caller's run during the flood got no network: $(cat "$HDIR/other.out" "$HDIR/other.err" | head -c 800)"
((n_fds < 200)) || fail "egressd held $n_fds descriptors during one run's flood (its cap is 8)"
jcheck "$out" 'int(r["structuredContent"]["stdout"].split("OPEN ")[1].split()[0]) >= 1000 and "AFTER 200" in r["structuredContent"]["stdout"]' \
    "the flooding run did not open 1000 connections, or its network did not work after them"
jcheck "$out" 'r["structuredContent"]["egress"]["connections"].get("cap", 0) >= 900' \
    "the flooding run's result does not count its connections refused over the cap"
log "idle flood of 1200: egressd held $n_fds descriptors, another caller's run got 200, the flood's result $(jget "$out" 'r["structuredContent"]["egress"]["connections"]')"
assert_clean 15

# --- 5. the byte cap -----------------------------------------------------------------------------
egress_config "$POLICY" "$PUBLIC" MCP_EXEC_EGRESS_MAX_BYTES=1M
out=$(hx 'import urllib.request
n = 0
try:
    r = urllib.request.urlopen("http://allowed.test/big.bin", timeout=20)
    while True:
        c = r.read(65536)
        if not c: break
        n += len(c)
    print("GOT", n)
except Exception as e:
    print("CUT", n, type(e).__name__)' web 40) || fail "the byte-cap run failed: $out"
jcheck "$out" 'r["structuredContent"]["stdout"].startswith("CUT ") or int(r["structuredContent"]["stdout"].split()[1]) < 4194304' \
    "the byte cap did not cut the 4 MB download"
jcheck "$out" 'r["structuredContent"]["egress"]["bytes_down"] <= 1100000' "more than the byte cap went down"
log "byte cap 1M: $(jget "$out" 'r["structuredContent"]["stdout"]' | head -1), egress $(jget "$out" 'r["structuredContent"]["egress"]')"

# --- 6. no policy configured ---------------------------------------------------------------------
egress_config MCP_EXEC_POOL_SIZE=0
out=$(hx 'print(1)' web 20) || fail "the call without a configured policy failed: $out"
jcheck "$out" 'r.get("isError") is True and "not enabled" in r["content"][0]["text"]' "network without a policy is not a clear isError"
assert_clean 15
egress_assert_no_crash
pass
