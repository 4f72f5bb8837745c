# attack: a hand-made DNS query over UDP and TCP to each nameserver of /etc/resolv.conf (and 127.0.0.53, 8.8.8.8)
# expect: no socket for it can be made (EAFNOSUPPORT), nothing is sent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && /^NAMESERVERS \S/m.test(r.stdout)
# check: (r.stdout.match(/^BLOCKED/gm) || []).length === 2 * (r.stdout.match(/^NAMESERVERS (.*)$/m)[1].split(' ').length)
import socket, struct

servers = []
try:
    for line in open("/etc/resolv.conf"):
        f = line.split()
        if len(f) >= 2 and f[0] == "nameserver":
            servers.append(f[1])
except OSError as e:
    print("resolv.conf: %s" % e)
servers += [s for s in ("127.0.0.53", "8.8.8.8") if s not in servers]
print("NAMESERVERS", " ".join(servers))
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p for p in b"mcpatk-raw-probe.example.com".split(b".")) + b"\0" + struct.pack(">HH", 1, 1)
for ns in servers:
    fam = socket.AF_INET6 if ":" in ns else socket.AF_INET
    try:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(2)
        s.sendto(q, (ns, 53))
        print("ESCAPED udp dns %s: sent; reply %r" % (ns, s.recv(512)[:20]))
    except socket.timeout:
        print("ESCAPED udp dns %s: sent (no reply)" % ns)
    except OSError as e:
        print("BLOCKED udp dns %s: %s" % (ns, e))
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect((ns, 53))
        print("ESCAPED tcp dns %s: connected" % ns)
    except OSError as e:
        print("BLOCKED tcp dns %s: %s" % (ns, e))
