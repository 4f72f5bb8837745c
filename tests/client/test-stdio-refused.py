#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-stdio-refused MCP_EXEC: `mcp-exec stdio` against a daemon that refuses
the peer the way mcp-execd does (one JSON-RPC error line with id null, then
close, without reading): the client prints that line and says it on stderr,
even when the daemon closed before the client's own lines were written. A
client with much to send hits a closed socket (EPIPE) first; it once gave up
there, silently, with exit 0 and nothing for its MCP client."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

MCP_EXEC = sys.argv[1]
LINE = json.dumps({"jsonrpc": "2.0", "id": None,
                   "error": {"code": -32001, "message": "access denied: uid 1 is not authorized"}}) + "\n"

tmp = tempfile.mkdtemp(prefix="mcp-exec-client-test.")
path = os.path.join(tmp, "stdio.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
srv.bind(path)
srv.listen(16)


def serve():
    while True:
        c, _ = srv.accept()
        c.sendall(LINE.encode())
        c.close()


threading.Thread(target=serve, daemon=True).start()

failures = []
# A short first line, and far more than a socket buffer takes, so that the
# client's write meets the closed socket.
for name, stdin in (("one line", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'),
                    ("a large batch", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n' * 20000)):
    for i in range(20):
        p = subprocess.run([MCP_EXEC, "stdio"], input=stdin, capture_output=True, timeout=30,
                           env={"MCP_EXEC_STDIO_SOCKET": path, "PATH": os.environ.get("PATH", "")})
        out = [l for l in p.stdout.decode(errors="replace").splitlines() if l.strip()]
        ok = (len(out) == 1 and json.loads(out[0]).get("error", {}).get("code") == -32001
              and b"access denied" in p.stderr)
        if not ok:
            failures.append("%s, try %d: exit %d, stdout %r, stderr %r" % (name, i, p.returncode, p.stdout[:200],
                                                                          p.stderr[:200]))
            break
os.unlink(path)
os.rmdir(tmp)
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
