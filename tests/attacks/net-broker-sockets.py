# attack: talk to mcp-exec itself: the root broker's /run/mcp-exec/broker.sock (start a run from inside a run) and the front end's stdio.sock (a nested MCP session)
# expect: both connects fail (/run is an empty tmpfs of the run: TemporaryFileSystem=/run:ro)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
import socket

for p, typ in (("/run/mcp-exec/broker.sock", socket.SOCK_SEQPACKET), ("/run/mcp-exec/stdio.sock", socket.SOCK_STREAM)):
    s = socket.socket(socket.AF_UNIX, typ)
    try:
        s.connect(p)
        print("ESCAPED %s: connected" % p)
    except OSError as e:
        print("BLOCKED %s: %s" % (p, e))
