# attack: a frame whose length header says 2 GiB - 1, then a few bytes of it, on the run's tools connection
# expect: the gateway closes the connection at once, without waiting for (or allocating) the frame; the gateway lives on with its memory bounded (test-code-mode.sh: same pid, RSS bound)
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
import os, socket

fd = int(os.environ["MCP_EXEC_TOOLS_FD"])
s = socket.socket(fileno=os.dup(fd))
s.settimeout(10)
try:
    s.sendall(b"\x7f\xff\xff\xff" + b'{"id":1,"op":"call","server":"everything","tool":"echo","arguments":{"message":"' + b"x" * 65536)
    got = s.recv(4096)
    print(("BLOCKED" if got == b"" else "ESCAPED") + " huge frame: the gateway %s" % ("closed the connection" if got == b"" else "answered %r" % got[:80]))
except socket.timeout:
    print("ESCAPED huge frame: the connection stayed open 10 s (the gateway waits for 2 GiB)")
except OSError as e:
    print("BLOCKED huge frame: the connection broke (%s)" % e)
