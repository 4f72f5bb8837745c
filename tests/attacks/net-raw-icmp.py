# attack: raw and ping sockets: AF_INET SOCK_RAW ICMP, AF_INET6 SOCK_RAW ICMPv6, AF_INET SOCK_DGRAM ICMP (unprivileged ping); an echo request to the test host
# expect: every socket() fails, nothing reaches the test host
# needs: testhost
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 3
import socket

echo = bytes([8, 0, 0xf7, 0xfe, 0, 1, 0, 0])  # type 8, checksum over the rest
for what, fam, typ, proto, dst in (
    ("raw icmp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, "@TESTHOST4@"),
    ("raw icmpv6", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6, "@TESTHOST6@"),
    ("ping dgram", socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP, "@TESTHOST4@"),
):
    try:
        s = socket.socket(fam, typ, proto)
        s.sendto(echo, (dst, 0))
        print("ESCAPED %s: sent an echo request to %s" % (what, dst))
    except OSError as e:
        print("BLOCKED %s: %s" % (what, e))
