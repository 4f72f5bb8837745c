# attack: TCP connect to a listener on the box's own 127.0.0.1 and ::1 (PrivateNetwork gives the run its own loopback)
# expect: both connects fail (no AF_INET/AF_INET6 sockets at all), the box's listeners log nothing
# needs: hostlisten
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
import socket

for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect((host, @HOSTPORT@))
        s.sendall(b"attack")
        print("ESCAPED tcp %s: connected" % host)
    except OSError as e:
        print("BLOCKED tcp %s: %s" % (host, e))
