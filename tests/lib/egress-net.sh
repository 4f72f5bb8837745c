# shellcheck shell=bash
# tests/lib/egress-net.sh - the test "internet" of the egress tests (issue 22), built in the box.
# Source after itest.sh. The box has a network namespace of its own (tests/box/box unshares it);
# nothing here touches the host's network. Only documentation ranges are used:
#
#   box netns   mcpegr0 203.0.113.1/24, route 192.0.2.0/24 via 203.0.113.2
#   mcpinet     mcpegr1 203.0.113.2/24, and on its lo 192.0.2.10 (HTTP :80), 192.0.2.11 (HTTPS
#               :443, a test CA's certificate for tls.test and other.test), 192.0.2.53 (DNS :53)
#
# The servers (tests/lib/egress-inet.py) run as a transient unit of the box's systemd in that
# namespace and log every DNS query and every connection. The box's /etc/resolv.conf points at
# 192.0.2.53 while the test runs, and egressd gets a drop-in allowing 192.0.2.0/24 through the
# IPAddressDeny= belt of its unit (the documentation ranges are in it).
#
#   egress_net_up        build it all (files under $HDIR/inet, seen as $BDIR/inet in the box)
#   EGRESS_CA            the test CA (PEM text), for the code to trust through SSL_CERT_FILE
#   egress_dns_log / egress_http_log   the servers' logs (host paths)
#   egress_dns_asked NAME              true if the DNS stub saw a query for NAME
#   egress_assert_no_crash             fail if egressd crashed since egress_net_up (in the ASan
#                                      pass a sanitizer report aborts it: this is where it shows)
# Cleanup is registered with at_exit.

EGRESS_NS=mcpinet
EGRESS_UNIT=mcp-test-egress-inet-$$
EGRESS_DROPIN=/etc/systemd/system/mcp-exec-egress.service.d/50-mcp-test-egress.conf
EGRESS_INET=$HDIR/inet
EGRESS_BINET=$BDIR/inet
EGRESS_CA=
egress_dns_log() { printf '%s\n' "$EGRESS_INET/dns.log"; }
egress_http_log() { printf '%s\n' "$EGRESS_INET/http.log"; }
egress_dns_asked() { grep -q "query $1 " "$EGRESS_INET/dns.log"; }

# The wheel of the tiny index: pure Python, a hand-made zip (no build tools, no network).
egress_make_index() {
    "$PY" - "$EGRESS_INET/www" <<'PYEOF'
import base64, hashlib, os, sys, zipfile
www = sys.argv[1]
files = {
    "tinypkg/__init__.py": b"VALUE = 'tinypkg-works'\n",
    "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
    "tinypkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: mcp-exec-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for n, d in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\n" % (n, h, len(d))
record += "tinypkg-1.0.dist-info/RECORD,,\n"
files["tinypkg-1.0.dist-info/RECORD"] = record.encode()
os.makedirs(www + "/packages", exist_ok=True)
os.makedirs(www + "/simple/tinypkg", exist_ok=True)
whl = www + "/packages/tinypkg-1.0-py3-none-any.whl"
with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
    for n, d in files.items():
        z.writestr(n, d)
sha = hashlib.sha256(open(whl, "rb").read()).hexdigest()
open(www + "/simple/index.html", "w").write('<html><body><a href="tinypkg/">tinypkg</a></body></html>\n')
open(www + "/simple/tinypkg/index.html", "w").write(
    '<html><body><a href="../../packages/tinypkg-1.0-py3-none-any.whl#sha256=%s">tinypkg-1.0-py3-none-any.whl</a></body></html>\n' % sha)
open(www + "/small.txt", "w").write("hello from allowed.test\n")
with open(www + "/big.bin", "wb") as f:
    f.write(b"b" * (4 * 1024 * 1024))
with open(www + "/1m.bin", "wb") as f:
    f.write(b"m" * (1024 * 1024))
PYEOF
}

# A test CA and a certificate for tls.test and other.test signed by it. With the extensions
# RFC 5280 asks for (key usages, key identifiers): Python 3.13's default context verifies with
# X509_STRICT, which refuses a CA without keyUsage.
egress_make_certs() {
    local d=$EGRESS_INET
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj '/CN=mcp-exec egress test CA' -addext 'keyUsage=critical,keyCertSign,cRLSign' \
        -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN=tls.test' \
            -keyout "$d/tls.key" -out "$d/tls.csr" 2>/dev/null &&
        printf '%s\n' 'subjectAltName=DNS:tls.test,DNS:other.test' 'basicConstraints=critical,CA:FALSE' \
            'keyUsage=critical,digitalSignature' 'extendedKeyUsage=serverAuth' \
            'subjectKeyIdentifier=hash' 'authorityKeyIdentifier=keyid' >"$d/ext.cnf" &&
        openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
            -days 2 -extfile "$d/ext.cnf" -out "$d/tls.pem" 2>/dev/null
}

egress_net_up() {
    local t
    for t in openssl ip; do
        command -v "$t" >/dev/null || fail "missing tool: $t (packaging/deps.sh --test)"
    done
    mkdir -p "$EGRESS_INET/www"
    egress_make_certs || fail "cannot make the test CA and certificate"
    egress_make_index || fail "cannot make the tiny package index"
    chmod -R a+rX "$EGRESS_INET"
    EGRESS_CA=$(cat "$EGRESS_INET/ca.pem")
    : >"$EGRESS_INET/dns.log"
    : >"$EGRESS_INET/http.log"
    # resolv.conf as it was (the box's overlay; restored at exit).
    if [[ -e $BOXROOT/etc/resolv.conf || -L $BOXROOT/etc/resolv.conf ]]; then
        cp -a "$BOXROOT/etc/resolv.conf" "$EGRESS_INET/resolv.conf.saved"
    fi
    at_exit egress_net_down
    EGRESS_CURSOR=$(journal_cursor)
    put egress-net-setup.sh >/dev/null <<EOSH
set -e
exec 3>&2 >/dev/null 2>&1
systemctl stop $EGRESS_UNIT || true
systemctl reset-failed $EGRESS_UNIT || true
ip link del mcpegr0 || true
ip netns del $EGRESS_NS || true
rm -f $EGRESS_DROPIN
if [ "\$1" = down ]; then systemctl daemon-reload; systemctl stop mcp-exec-egress.service || true; exit 0; fi
exec 2>&3
ip netns add $EGRESS_NS
ip link add mcpegr0 type veth peer name mcpegr1
ip link set mcpegr1 netns $EGRESS_NS
ip addr add 203.0.113.1/24 dev mcpegr0
ip link set mcpegr0 up
ip route add 192.0.2.0/24 via 203.0.113.2
ip netns exec $EGRESS_NS sh -ec '
    ip link set lo up
    ip addr add 192.0.2.10/32 dev lo
    ip addr add 192.0.2.11/32 dev lo
    ip addr add 192.0.2.53/32 dev lo
    ip addr add 203.0.113.2/24 dev mcpegr1
    ip link set mcpegr1 up'
mkdir -p ${EGRESS_DROPIN%/*}
printf '[Service]\nIPAddressAllow=192.0.2.0/24\n' >$EGRESS_DROPIN
systemctl daemon-reload
systemctl stop mcp-exec-egress.service 2>/dev/null || true
systemd-run --quiet --unit=$EGRESS_UNIT --property=Type=simple \
    --property=NetworkNamespacePath=/run/netns/$EGRESS_NS python3 $EGRESS_BINET/egress-inet.py $EGRESS_BINET
EOSH
    cp "$ITEST_DIR/lib/egress-inet.py" "$EGRESS_INET/egress-inet.py"
    chmod 0644 "$EGRESS_INET/egress-inet.py"
    rm -f "$BOXROOT/etc/resolv.conf"
    printf 'nameserver 192.0.2.53\noptions timeout:2 attempts:1\n' >"$BOXROOT/etc/resolv.conf"
    bx sh "$BDIR/egress-net-setup.sh" up || fail "cannot set up the test internet in the box"
    wait_for 15 grep -q ready "$EGRESS_INET/dns.log" ||
        fail "the test internet's servers did not come up: $(bx journalctl -u "$EGRESS_UNIT" --no-pager 2>&1 | tail -8)"
    # Control: from the box itself, outside any sandbox, the stub answers and both servers serve,
    # with the test CA (so a failure later is egressd's or the sandbox's doing).
    bx python3 - "$EGRESS_BINET/ca.pem" <<'PYEOF' >"$EGRESS_INET/control.out" 2>&1 ||
import socket, ssl, sys, urllib.request
assert socket.gethostbyname("allowed.test") == "192.0.2.10"
assert b"hello from allowed.test" in urllib.request.urlopen("http://allowed.test/small.txt", timeout=5).read()
ctx = ssl.create_default_context(cafile=sys.argv[1])
s = ctx.wrap_socket(socket.create_connection(("192.0.2.11", 443), timeout=5), server_hostname="tls.test")
s.sendall(b"GET /small.txt HTTP/1.0\r\nHost: tls.test\r\n\r\n")
assert b"hello from allowed.test" in s.makefile("rb").read()
print("control ok")
PYEOF
        fail "control: the test internet does not work from the box: $(cat "$EGRESS_INET/control.out")"
    egress_dns_asked allowed.test || fail "control: the DNS stub logged no query for allowed.test"
    log "test internet up: DNS 192.0.2.53, HTTP 192.0.2.10, HTTPS 192.0.2.11 (control from the box passed)"
}

egress_assert_no_crash() {
    local j
    j=$(journal_since "$EGRESS_CURSOR" -u mcp-exec-egress.service -o cat)
    if grep -Eq 'code=(dumped|killed)|Failed with result|Sanitizer|runtime error' <<<"$j"; then
        fail "mcp-exec-egressd crashed: $(grep -E 'code=|Failed with|Sanitizer|runtime error|ERROR' <<<"$j" | head -10)"
    fi
}

egress_net_down() {
    bx sh "$BDIR/egress-net-setup.sh" down
    rm -f "$BOXROOT/etc/resolv.conf"
    if [[ -e $EGRESS_INET/resolv.conf.saved || -L $EGRESS_INET/resolv.conf.saved ]]; then
        cp -a "$EGRESS_INET/resolv.conf.saved" "$BOXROOT/etc/resolv.conf"
    fi
}

# egressd runs as a dynamic user too and stays a while after the last run (it exits when idle):
# itest.sh's leftover checks (dyn_procs, assert_clean) leave its main process out, nothing else.
itest_dyn_procs=$(declare -f dyn_procs)
eval "${itest_dyn_procs/dyn_procs/itest_dyn_procs}"
dyn_procs() {
    local p
    p=$(bx systemctl show -P MainPID mcp-exec-egress.service 2>/dev/null)
    itest_dyn_procs | awk -v p="${p:-0}" '$1 != p'
}
