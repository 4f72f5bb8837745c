# attack: go around the proxy in an egress run, where AF_INET is allowed: raw UDP to the DNS stub, TCP straight to the servers and to the box's veth address, a resolver lookup, AF_INET6, AF_PACKET
# expect: every attempt fails; neither the DNS stub nor the servers log anything
# network: web
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 8 && !/ESCAPED/.test(r.stdout)
# check: net.dns === '' && net.http === ''
import socket

q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03raw\x04test\x00\x00\x01\x00\x01"
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    u.sendto(q, ("192.0.2.53", 53))
    print("ESCAPED udp 192.0.2.53:53: answer %r" % u.recv(100)[:20])
except OSError as e:
    print("BLOCKED udp 192.0.2.53:53: %s" % e)
for addr in (("192.0.2.10", 80), ("192.0.2.11", 443), ("192.0.2.53", 53), ("203.0.113.1", 22)):
    try:
        socket.create_connection(addr, timeout=3)
        print("ESCAPED tcp %s:%d connected" % addr)
    except OSError as e:
        print("BLOCKED tcp %s:%d: %s" % (addr + (e,)))
try:
    print("ESCAPED getaddrinfo: %r" % socket.getaddrinfo("allowed.test", 80)[:1])
except OSError as e:
    print("BLOCKED getaddrinfo allowed.test: %s" % e)
for fam, name in ((socket.AF_INET6, "AF_INET6"), (getattr(socket, "AF_PACKET", 17), "AF_PACKET")):
    try:
        socket.socket(fam, socket.SOCK_DGRAM)
        print("ESCAPED %s socket made" % name)
    except OSError as e:
        print("BLOCKED %s: %s" % (name, e))
