# attack: after tools-end-1-detach, a later run asks on its own tools connection (same fd number) and listens for stray frames: answers to the earlier grandchild's ids (1000 and up)
# expect: exactly the answer to its own request (id 1), no stray frame within 1.5 s: the earlier connection and its grandchild are gone
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 1 && !/ESCAPED/.test(r.stdout)
import json, os, socket

fd = int(os.environ["MCP_EXEC_TOOLS_FD"])
s = socket.socket(fileno=os.dup(fd))
d = json.dumps({"id": 1, "op": "servers"}).encode()
s.sendall(len(d).to_bytes(4, "big") + d)
s.settimeout(1.5)
buf, ids = b"", []
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
            n = int.from_bytes(buf[:4], "big")
            ids.append(json.loads(buf[4:4 + n]).get("id"))
            buf = buf[4 + n:]
except socket.timeout:
    pass
print(("BLOCKED" if ids == [1] else "ESCAPED") + " later run on fd %d: answers with ids %s" % (fd, ids[:10]))
