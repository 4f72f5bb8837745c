# attack: exit with a CONNECT tunnel and an absolute-form POST (its body half sent, so its server waits) still open, to hide them from the run's egress counts
# expect: the result counts both as allowed: egressd cuts what a run left open at its end and the result waits for its final counts (issue 37)
# network: web
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
# check: r.egress && r.egress.connections.allowed === 2 && Object.keys(r.egress.connections).length === 1
import os, socket, ssl

# A tunnel into the TLS server, its handshake done: relayed when the run ends.
t = socket.create_connection(("127.0.0.1", 3128), timeout=10)
t.sendall(b"CONNECT tls.test:443 HTTP/1.1\r\nHost: tls.test:443\r\n\r\n")
head = t.recv(4096)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
tls = ctx.wrap_socket(t, server_hostname="tls.test")
# A POST whose server waits for the rest of its body: egressd ends it only
# when the run does (a closed client does not end a relayed request). The
# server's "100 Continue" says it is relayed.
p = socket.create_connection(("127.0.0.1", 3128), timeout=10)
p.sendall(b"POST http://allowed.test/post HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 100000\r\n"
          b"Expect: 100-continue\r\n\r\n0123456789")
cont = p.recv(4096)
ok = head.startswith(b"HTTP/1.1 200") and tls.version() is not None and cont.startswith(b"HTTP/1.1 100")
print(("BLOCKED" if ok else "ESCAPED") + " open at exit: tunnel %r (%s), POST %r" % (head[:12], tls.version(), cont[:16]))
os._exit(0)
