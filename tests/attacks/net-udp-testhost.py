# attack: UDP datagrams to a listener on a test host in another network namespace (v4 and v6), several times each
# expect: no datagram can be sent, the test host's listeners receive nothing
# needs: testhost
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
import socket

for fam, host in ((socket.AF_INET, "@TESTHOST4@"), (socket.AF_INET6, "@TESTHOST6@")):
    try:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        n = sum(s.sendto(b"attack", (host, @TESTPORT@)) for _ in range(5))
        print("ESCAPED udp %s: sent %d bytes" % (host, n))
    except OSError as e:
        print("BLOCKED udp %s: %s" % (host, e))
