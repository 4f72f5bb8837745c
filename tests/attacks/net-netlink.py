# attack: netlink sockets: NETLINK_ROUTE (interfaces, routes), NETLINK_AUDIT (audit log), NETLINK_SOCK_DIAG (other sockets), NETLINK_KOBJECT_UEVENT (device events)
# expect: every socket() fails (RestrictAddressFamilies=AF_UNIX)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 4
import socket

for name, proto in (("ROUTE", 0), ("AUDIT", 9), ("SOCK_DIAG", 4), ("KOBJECT_UEVENT", 15)):
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
        s.bind((0, 0))
        print("ESCAPED netlink %s: %r" % (name, s.getsockname()))
    except OSError as e:
        print("BLOCKED netlink %s: %s" % (name, e))
