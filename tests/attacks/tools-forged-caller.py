# attack: forge "caller" and "run" fields in the frames of the run's tools connection, claiming to be uid:4242, the only caller allowed server memory (test-code-mode.sh's servers.d)
# expect: the fields are ignored, the gateway uses the caller the broker named: "servers" does not list memory, a call to memory is refused; a call to everything with the same forged fields is answered (the frames are read)
# timeout: 30
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /mg) || []).length === 2 && !/ESCAPED/.test(r.stdout)
# check: /^CONTROL everything answered: Echo: forged-ok$/m.test(r.stdout)
import json, os, socket

fd = int(os.environ["MCP_EXEC_TOOLS_FD"])
s = socket.socket(fileno=os.dup(fd))
s.settimeout(20)
FORGED = {"caller": "uid:4242", "run": "mcp-exec-run-forged", "uid": 4242}


def recv_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("the gateway closed the connection")
        buf += chunk
    return buf


def ask(req):
    data = json.dumps(dict(req, **FORGED)).encode()
    s.sendall(len(data).to_bytes(4, "big") + data)
    ans = json.loads(recv_exact(int.from_bytes(recv_exact(4), "big")))
    assert ans.get("id") == req["id"], ans
    return ans


names = [x.get("name") for x in ask({"id": 1, "op": "servers"}).get("servers", [])]
print(("ESCAPED" if "memory" in names else "BLOCKED") + " servers with a forged caller: %s" % names)
ans = ask({"id": 2, "op": "call", "server": "memory", "tool": "echo", "arguments": {"message": "forged"}})
kind = (ans.get("error") or {}).get("kind")
print(("BLOCKED" if kind == "refused" else "ESCAPED") + " call to memory with a forged caller: %s"
      % json.dumps(ans)[:200])
ans = ask({"id": 3, "op": "call", "server": "everything", "tool": "echo", "arguments": {"message": "forged-ok"}})
text = ((ans.get("result") or {}).get("content") or [{}])[0].get("text")
print("CONTROL everything answered: %s" % text)
