# attack: connect to an abstract unix socket listening in the box's network namespace (abstract names are per network namespace, not files)
# expect: ECONNREFUSED (the run has its own network namespace), the listener logs nothing
# needs: hostlisten
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
# check: /^CONTROL own abstract socket works/m.test(r.stdout)
import socket

# Control: abstract sockets as such work inside the run.
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0mcpatk-own")
srv.listen(1)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect("\0mcpatk-own")
print("CONTROL own abstract socket works")
for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    s = socket.socket(socket.AF_UNIX, typ)
    try:
        s.connect("\0@ABSTRACT@")
        s.send(b"attack")
        print("ESCAPED abstract %s: connected" % typ.name)
    except OSError as e:
        print("BLOCKED abstract %s: %s" % (typ.name, e))
