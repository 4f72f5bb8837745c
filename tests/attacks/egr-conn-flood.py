# attack: open 24 proxy connections at once, each a slow download, to exceed the per-run connection cap (8 by default)
# expect: at most 8 are served at once, the others are refused (403, cap); the result counts cap refusals
# network: web
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
# check: r.egress && r.egress.connections.cap >= 1 && (r.egress.connections.allowed || 0) <= 8
import socket

socks, ok, refused, other = [], 0, 0, []
for i in range(24):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"GET http://allowed.test/slow/100 HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
    socks.append(s)
for s in socks:
    try:
        line = s.recv(64).split(b"\r\n", 1)[0]
    except OSError as e:
        line = str(e).encode()
    if b" 200" in line:
        ok += 1
    elif b" 403" in line or b" 429" in line or b" 503" in line:
        refused += 1
    else:
        other.append(line)
for s in socks:
    s.close()
print(("BLOCKED" if ok <= 8 and refused >= 1 else "ESCAPED") + " flood: %d served, %d refused, other %r" % (ok, refused, other[:3]))
