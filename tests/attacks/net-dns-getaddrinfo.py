# attack: resolve names with getaddrinfo (a DNS lookup is a way out: the query itself carries data)
# expect: names not in /etc/hosts do not resolve (socket.gaierror); localhost still does, from /etc/hosts (control: the resolver works)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 3
# check: /^CONTROL localhost resolves/m.test(r.stdout)
import socket

try:
    socket.getaddrinfo("localhost", 80)
    print("CONTROL localhost resolves")
except OSError as e:
    print("CONTROL localhost does not resolve: %s" % e)
for name in ("mcpatk-dns-probe.example.com", "example.com", "debian.org."):
    try:
        ai = socket.getaddrinfo(name, 80)
        print("ESCAPED getaddrinfo %s: %s" % (name, ai[0][4]))
    except socket.gaierror as e:
        print("BLOCKED getaddrinfo %s: %s" % (name, e))
