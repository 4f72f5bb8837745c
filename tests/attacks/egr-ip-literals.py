# attack: IP literals in the absolute-form URL and in CONNECT, in the forms parsers disagree on: 127.1, 0x7f000001, 2130706433, [::1], [::ffff:127.0.0.1], and the test-public 192.0.2.10
# expect: every one 403, never served; no DNS query for any of them
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 8 && !/ESCAPED/.test(r.stdout)
# check: !/ GET /.test(net.http) && !/query (127|0x|2130|192)/.test(net.dns)
import socket

def ask(req):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(req)
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            c = s.recv(4096)
            if not c:
                break
            head += c
    except OSError as e:
        return "error %s" % e, head
    s.close()
    return head.split(b"\r\n", 1)[0].decode(errors="replace"), head

for host in ("127.1", "0x7f000001", "2130706433", "[::1]", "[::ffff:127.0.0.1]", "192.0.2.10"):
    line, head = ask(b"GET http://%s/small.txt HTTP/1.1\r\nHost: %s\r\n\r\n" % (host.encode(), host.encode()))
    ok = line.split(" ")[1:2] and line.split(" ")[1].startswith("4") and b"hello" not in head
    print(("BLOCKED" if ok else "ESCAPED") + " GET %s: %s" % (host, line))
for host in ("192.0.2.11", "[::ffff:192.0.2.11]"):
    line, head = ask(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
    ok = line.split(" ")[1:2] and line.split(" ")[1].startswith("4")
    print(("BLOCKED" if ok else "ESCAPED") + " CONNECT %s: %s" % (host, line))
