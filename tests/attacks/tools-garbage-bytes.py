# attack: speak garbage on the run's tools connection: a small length header and 32 bytes that are no JSON (NUL, 0xff, control bytes), then more raw bytes
# expect: the gateway closes the connection (EOF, no answer) at once; mcp_servers then raises ConnectionClosed instead of hanging; the gateway lives on (test-code-mode.sh: same pid, another run's calls work)
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 2 && !/ESCAPED/.test(r.stdout)
import os, socket

fd = int(os.environ["MCP_EXEC_TOOLS_FD"])
s = socket.socket(fileno=os.dup(fd))
s.settimeout(10)
try:
    s.sendall(b"\x00\x00\x00\x20" + bytes(range(0, 256, 8)) + b"\xff\xfe\x00\x01 not a frame at all \x1b[2J")
    got = s.recv(4096)
    print(("BLOCKED" if got == b"" else "ESCAPED") + " garbage: the gateway %s" % ("closed the connection" if got == b"" else "answered %r" % got[:80]))
except socket.timeout:
    print("ESCAPED garbage: the connection stayed open 10 s")
except OSError as e:
    print("BLOCKED garbage: the connection broke (%s)" % e)
s.close()

import mcp_servers
try:
    mcp_servers.call("everything", "echo", message="after garbage")
    print("ESCAPED call after garbage: answered")
except mcp_servers.ConnectionClosed as e:
    print("BLOCKED call after garbage: ConnectionClosed: %s" % e)
except Exception as e:
    print("WRONG call after garbage: %s: %s" % (type(e).__name__, e))
