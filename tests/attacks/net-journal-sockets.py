# attack: write into the journal: native socket, stdout stream socket, syslog socket (/run/systemd/journal/*, /dev/log) with a canary in each message
# expect: every connect fails (/run is an empty tmpfs of the run: TemporaryFileSystem=/run:ro); the suite's post-check would find the canary in the journal otherwise
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 4
import socket

msg = b"MESSAGE=mcpcanaryjournalatk\n"
for p, typ, data in (
    ("/run/systemd/journal/socket", socket.SOCK_DGRAM, msg),
    ("/run/systemd/journal/stdout", socket.SOCK_STREAM, b"mcpatk\n\n6\n0\n0\n0\n0\n0\nmcpcanaryjournalatk\n"),
    ("/run/systemd/journal/dev-log", socket.SOCK_DGRAM, b"<13>mcpatk: mcpcanaryjournalatk"),
    ("/dev/log", socket.SOCK_DGRAM, b"<13>mcpatk: mcpcanaryjournalatk"),
):
    s = socket.socket(socket.AF_UNIX, typ)
    try:
        s.connect(p)
        s.send(data)
        print("ESCAPED journal %s: sent" % p)
    except OSError as e:
        print("BLOCKED journal %s: %s" % (p, e))
