# attack: one frame of valid length (about 400 KB) holding a call whose arguments nest 200,000 arrays deep
# expect: the gateway closes the connection (over its nesting limit: no answer, no crash, no stack exhaustion); it lives on (test-code-mode.sh: same pid)
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
import os, socket

fd = int(os.environ["MCP_EXEC_TOOLS_FD"])
s = socket.socket(fileno=os.dup(fd))
s.settimeout(10)
body = (b'{"id":1,"op":"call","server":"everything","tool":"echo","arguments":{"message":' +
        b"[" * 200000 + b"]" * 200000 + b"}}")
try:
    s.sendall(len(body).to_bytes(4, "big") + body)
    got = s.recv(4096)
    print(("BLOCKED" if got == b"" else "ESCAPED") + " deep JSON: the gateway %s" % ("closed the connection" if got == b"" else "answered %r" % got[:120]))
except socket.timeout:
    print("ESCAPED deep JSON: no answer and the connection stayed open 10 s")
except OSError as e:
    print("BLOCKED deep JSON: the connection broke (%s)" % e)
