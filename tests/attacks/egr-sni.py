# attack: domain fronting by TLS: CONNECT to an allowed host, then a ClientHello with another (also allowed, same server) name, or none at all
# expect: both refused (the TLS server never sees SNI other.test); the right SNI is served as a control; the result counts 2 sni-mismatch
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 2 && !/ESCAPED/.test(r.stdout)
# check: r.stdout.includes('CONTROL served')
# check: r.egress && r.egress.connections['sni-mismatch'] === 2
# check: !net.http.includes('sni other.test') && net.http.includes('sni tls.test')
import socket, ssl

CA = None

def connect_tls(sni):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT tls.test:443 HTTP/1.1\r\nHost: tls.test:443\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            return "proxy closed: %r" % head
        head += c
    if b" 200" not in head.split(b"\r\n")[0]:
        return "proxy said %r" % head[:40]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE   # the test CA is not the point here: what the proxy lets through is
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET /small.txt HTTP/1.0\r\nHost: tls.test\r\n\r\n")
        data = b""
        while True:
            c = t.recv(65536)
            if not c:
                break
            data += c
        return "served" if b"hello" in data else "no content"
    except (ssl.SSLError, OSError) as e:
        return "handshake failed: %s" % e

print("CONTROL", connect_tls("tls.test"))
for sni in ("other.test", None):
    res = connect_tls(sni)
    print(("ESCAPED" if res == "served" else "BLOCKED") + " SNI %s: %s" % (sni, res))
