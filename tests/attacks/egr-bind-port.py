# attack: listen on another port in the egress run's namespace (a second proxy port, a service for a child to reach), or on the proxy's own port
# expect: bind() and listen() fail with EPERM for the code; only the launcher's 127.0.0.1:3128 listens (control: it still answers)
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 4 && !/ESCAPED/.test(r.stdout)
# check: r.stdout.includes('CONTROL 200')
import errno, socket, urllib.request

for addr in (("127.0.0.1", 0), ("127.0.0.1", 8080), ("0.0.0.0", 3129), ("127.0.0.1", 3128)):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        s.listen(1)
        print("ESCAPED listening on %s:%d" % s.getsockname())
    except OSError as e:
        print(("BLOCKED" if e.errno == errno.EPERM else "ESCAPED-not-EPERM") + " bind %s:%d: %s" % (addr + (e,)))
print("CONTROL", urllib.request.urlopen("http://allowed.test/small.txt", timeout=10).status)
