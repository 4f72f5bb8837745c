# attack: UDP datagrams to a listener on the box's own 127.0.0.1 and ::1
# expect: no socket can be made (EAFNOSUPPORT), the box's listeners receive nothing
# needs: hostlisten
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
import socket

for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        n = s.sendto(b"attack", (host, @HOSTPORT@))
        print("ESCAPED udp %s: sent %d bytes" % (host, n))
    except OSError as e:
        print("BLOCKED udp %s: %s" % (host, e))
