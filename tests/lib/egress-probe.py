# tests/lib/egress-probe.py - the code test-egress.sh sends as one egress run (policy WEB over
# tests/lib/egress-net.sh's test internet). The test prepends CA = "<the test CA's PEM>" and
# CANARY = "<a canary>". One line per probe: "OK <name> <detail>" where the probe went as it
# must, "BAD <name> <detail>" where it did not; the exact connections it makes through the proxy
# are in EXPECT (printed last as JSON), so the test can compare the result's egress counts.
import json, os, socket, ssl, subprocess, sys, urllib.error, urllib.request

open("/tmp/ca.pem", "w").write(CA)
os.environ["SSL_CERT_FILE"] = "/tmp/ca.pem"
EXPECT = {}


def expect(verdict):
    EXPECT[verdict] = EXPECT.get(verdict, 0) + 1


def out(ok, name, detail):
    print("%s %s %s" % ("OK" if ok else "BAD", name, str(detail).replace("\n", " ")[:300]), flush=True)


def get(url, data=None):
    """(status, body text) through the proxy (urllib reads HTTP_PROXY/HTTPS_PROXY)."""
    try:
        with urllib.request.urlopen(url, data=data, timeout=15) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, e)


out(os.environ.get("HTTP_PROXY") == "http://127.0.0.1:3128", "proxy-env", os.environ.get("HTTP_PROXY"))

# Allowed: plain HTTP (absolute-form GET) and HTTPS (CONNECT) with the test CA.
st, body = get("http://allowed.test/small.txt"); expect("allowed")
out(st == 200 and "hello from allowed.test" in body, "urllib-http", (st, body[:80]))
st, body = get("https://tls.test/small.txt"); expect("allowed")
out(st == 200 and "hello from allowed.test" in body, "urllib-https", (st, body[:80]))
# A POST whose body carries the canary: it reaches the server, never egressd's journal.
st, body = get("http://allowed.test/echo", data=("canary=" + CANARY).encode()); expect("allowed")
out(st == 200 and body.startswith("got "), "post-canary", (st, body[:80]))

# requests, where the sandbox's Python has it (Debian: python3-requests).
try:
    import requests
except ImportError:
    requests = None
if requests:
    try:
        r = requests.get("https://tls.test/small.txt", timeout=15, verify="/tmp/ca.pem"); expect("allowed")
        out(r.status_code == 200 and "hello from allowed.test" in r.text, "requests-https", (r.status_code, r.text[:80]))
    except Exception as e:
        out(False, "requests-https", "%s: %s" % (type(e).__name__, e))
else:
    out(True, "requests-https", "skipped: requests is not installed")

# Refused before any lookup: not in the policy.
st, body = get("http://denied.test/small.txt"); expect("policy")
out(st == 403, "denied-403", (st, body[:120]))
# Names that resolve to non-public addresses.
for n in ("loop", "meta", "priv", "mixed"):
    st, body = get("http://%s.test/small.txt" % n); expect("non-public")
    out(st == 403 and "hello" not in body, "non-public-" + n, (st, body[:120]))
# An IP literal, even one of the (test-)public range.
st, body = get("http://192.0.2.10/small.txt"); expect("ip-literal")
out(st == 403 and "hello" not in body, "ip-literal", (st, body[:120]))


# CONNECT by hand: SNI must equal the CONNECT host.
def connect_tls(host, sni):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=15)
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            return "proxy closed before answering: %r" % head
        head += c
    if not head.startswith(b"HTTP/1.1 200") and not head.startswith(b"HTTP/1.0 200"):
        return "proxy said %r" % head[:40]
    ctx = ssl.create_default_context(cafile="/tmp/ca.pem")
    ctx.check_hostname = False   # the server's certificate covers both names; SNI is the point
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET /small.txt HTTP/1.0\r\nHost: %s\r\n\r\n" % sni.encode())
        data = b""
        while True:
            c = t.recv(65536)
            if not c:
                break
            data += c
        return "served" if b"hello from allowed.test" in data else "no content %r" % data[:60]
    except (ssl.SSLError, OSError) as e:
        return "handshake failed: %s" % e


r = connect_tls("tls.test", "tls.test"); expect("allowed")
out(r == "served", "sni-match", r)
r = connect_tls("tls.test", "other.test"); expect("sni-mismatch")
out(r.startswith("handshake failed") or r.startswith("proxy said"), "sni-mismatch", r)

# Around the proxy: raw UDP to the DNS stub and raw TCP to the server reach nothing.
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03raw\x04test\x00\x00\x01\x00\x01", ("192.0.2.53", 53))
    out(False, "raw-udp", "sent, answer %r" % (u.recv(512)[:20],))
except OSError as e:
    out(True, "raw-udp", "%s errno %s" % (type(e).__name__, e.errno))
try:
    t = socket.create_connection(("192.0.2.10", 80), timeout=3)
    out(False, "raw-tcp", "connected")
except OSError as e:
    out(True, "raw-tcp", "%s errno %s" % (type(e).__name__, e.errno))
try:
    socket.getaddrinfo("allowed.test", 80)
    out(False, "getaddrinfo", "resolved")
except OSError as e:
    out(True, "getaddrinfo", "%s" % e)
# No listener but the launcher's.
try:
    b = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    b.bind(("127.0.0.1", 3129))
    b.listen(1)
    out(False, "bind", "listening on 3129")
except OSError as e:
    out(e.errno == 1, "bind", "%s errno %s" % (type(e).__name__, e.errno))

print("EXPECT " + json.dumps(EXPECT, sort_keys=True))
