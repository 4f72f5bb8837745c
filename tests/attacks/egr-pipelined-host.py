# attack: two requests pipelined on one absolute-form connection: the first to allowed.test, the second to denied.test (the same server address), hoping the proxy forwards the rest of the stream unchecked
# expect: the second request never reaches the server as denied.test and the DNS stub is never asked for it; at most the first is served
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
# check: !net.http.includes('Host=denied.test') && !net.http.includes('GET /secret.txt') && !net.dns.includes('denied.test')
import socket

s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"GET http://allowed.test/small.txt HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
          b"GET http://denied.test/secret.txt HTTP/1.1\r\nHost: denied.test\r\nConnection: close\r\n\r\n")
s.settimeout(5)
data = b""
try:
    while True:
        c = s.recv(65536)
        if not c:
            break
        data += c
except OSError:
    pass
n = data.count(b"hello from allowed.test")
print(("BLOCKED" if n <= 1 else "ESCAPED") + " pipelined second host: %d bodies, %r" % (n, data.split(b"\r\n", 1)[0]))
