# attack: HTTP-level fronting: an absolute-form URL to allowed.test with a Host header naming denied.test (whose address is the same server's)
# expect: refused, or sent on as allowed.test: the server never sees Host denied.test and the DNS stub is never asked for it
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
# check: !net.http.includes('Host=denied.test') && !net.dns.includes('denied.test')
import socket

s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"GET http://allowed.test/small.txt HTTP/1.1\r\nHost: denied.test\r\nConnection: close\r\n\r\n")
data = b""
try:
    while True:
        c = s.recv(65536)
        if not c:
            break
        data += c
except OSError:
    pass
# Served as allowed.test or refused are both fine; which Host the server saw is the harness's check.
print("BLOCKED Host mismatch: %r" % data.split(b"\r\n", 1)[0])
