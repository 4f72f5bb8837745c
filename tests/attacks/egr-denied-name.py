# attack: exfiltrate by DNS: ask the proxy for a name outside the policy (absolute-form GET and CONNECT), hoping egressd resolves it before it decides
# expect: both 403 from the proxy, and the DNS stub never sees a query for denied.test (an allowed name first, as a control that the stub is asked at all)
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 2 && !/ESCAPED/.test(r.stdout)
# check: r.stdout.includes('CONTROL 200')
# check: !net.dns.includes('denied.test') && net.dns.includes('query allowed.test')
# check: r.egress && r.egress.connections.policy === 2
import socket, urllib.request, urllib.error

print("CONTROL", urllib.request.urlopen("http://allowed.test/small.txt", timeout=10).status)
try:
    urllib.request.urlopen("http://denied.test/small.txt", timeout=10)
    print("ESCAPED GET denied.test: served")
except urllib.error.HTTPError as e:
    print(("BLOCKED" if e.code == 403 else "ESCAPED") + " GET denied.test: %d %s" % (e.code, e.read()[:80]))
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n")
head = s.recv(200)
print(("BLOCKED" if head.startswith(b"HTTP/1.1 403") or head.startswith(b"HTTP/1.0 403") else "ESCAPED") + " CONNECT denied.test: %r" % head[:60])
