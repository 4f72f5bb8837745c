#!/usr/bin/env bash
# Sandboxed code sees no network but its own loopback: /proc/net/dev lists only lo, and a TCP
# service listening on 127.0.0.1 in the box (reachable from the box itself) cannot be reached.
# Plain pass only: PrivateNetwork= is systemd's and the kernel's.
. "$(dirname "$0")/../../lib/itest.sh"

PORT=$((20000 + $$ % 20000))
SRV=mcp-test-http-$$

# A TCP service on the box's loopback.
bx systemd-run --quiet --unit="$SRV" --property=Type=simple \
    python3 -m http.server --bind 127.0.0.1 --directory /srv "$PORT" >/dev/null ||
    fail "cannot start the test HTTP server in the box"
at_exit "bx systemctl stop $SRV >/dev/null 2>&1"

probe='import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    print("CONNECTED", s.recv(12).decode(errors="replace"))
except OSError as e:
    print("BLOCKED", type(e).__name__, e.errno)
    sys.exit(1)'
reachable() { bx python3 -c "$probe" "$PORT" | grep -q '^CONNECTED HTTP/'; }
wait_for 15 reachable || fail "control: the HTTP server on 127.0.0.1:$PORT is not reachable from the box itself"

code='import os, socket
# Interfaces the code can see.
names = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:] if ":" in l]
print("IFACES", " ".join(sorted(names)))
for fam, addr in ((socket.AF_INET, ("127.0.0.1", PORT)), (socket.AF_INET6, ("::1", PORT))):
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(addr)
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        print("CONNECTED", fam, s.recv(12))
    except OSError as e:
        print("BLOCKED", fam, type(e).__name__, e.errno)
try:
    import urllib.request
    urllib.request.urlopen("http://127.0.0.1:%d/" % PORT, timeout=2)
    print("CONNECTED urllib")
except Exception as e:
    print("BLOCKED urllib", type(e).__name__)
'
out=$(call --timeout 20 -- "PORT = $PORT"$'\n'"$code") || fail "run failed: $out $(call_err)"
jcheck "$out" 'r["exit_code"] == 0 and "error" not in r' "the run did not complete"
stdout=$(jget "$out" 'r["stdout"]')
log "sandbox says: $(tr '\n' ';' <<<"$stdout")"
grep -qx 'IFACES lo' <<<"$stdout" || fail "code sees interfaces other than lo: $(grep IFACES <<<"$stdout")"
if grep -q CONNECTED <<<"$stdout"; then fail "code reached the box's TCP service: $stdout"; fi
[[ $(grep -c '^BLOCKED' <<<"$stdout") -eq 3 ]] || fail "unexpected probe output: $stdout"
# The service is still there, so the failure above is the sandbox's doing.
reachable || fail "control: the HTTP server went away during the test"
pass
