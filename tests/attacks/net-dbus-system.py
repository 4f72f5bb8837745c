# attack: connect to the system D-Bus (/run/dbus/system_bus_socket, also via /var/run) to reach systemd, polkit, logind
# expect: both connects fail (/run is an empty tmpfs of the run: TemporaryFileSystem=/run:ro)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
import socket

for p in ("/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p)
        s.sendall(b"\0AUTH EXTERNAL\r\n")
        print("ESCAPED dbus %s: connected, answer %r" % (p, s.recv(64)))
    except OSError as e:
        print("BLOCKED dbus %s: %s" % (p, e))
