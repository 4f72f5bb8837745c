#!/usr/bin/python3
# tests/lib/flood-queue.py - the clients of tests/integration/load/test-flood-queue.sh (issue 19, item
# 2). Runs inside the test box. Each prints JSON lines on stdout.
#
#   flood-queue.py hold PORT N SECONDS      N stateless HTTP calls of time.sleep(SECONDS), on
#                                           threads; prints {"sent": N}, then, once all answered,
#                                           {"results": [...]} ("ok" or what came)
#   flood-queue.py http PORT N GO           N stateless HTTP calls with maximal code, stdin and one
#                                           base64 input file, one after another, on their own
#                                           connections, never read; prints {"sent", "send_failed"};
#                                           once the file GO exists, reads what came on each and
#                                           prints {"classes": {...}, "samples": [...]}
#   flood-queue.py stdio SOCKET N GO        the same over one local connection (after initialize)
#   flood-queue.py witness SOCKET GO        a well-behaved local client: session_create, x = 41 in
#                                           the session; prints {"ready": true}; once GO exists,
#                                           tools/list (timed), then print(x) in the session and
#                                           session_close; prints what it got
import base64
import json
import os
import socket
import sys
import threading
import time

MiB = 1024 * 1024
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "exec"}
BUSY = "server busy"


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def wait_file(path, limit=300):
    t = time.monotonic()
    while not os.path.exists(path):
        if time.monotonic() - t > limit:
            sys.exit("no %s within %d s" % (path, limit))
        time.sleep(0.2)


def maximal_arguments():
    """What one call may carry at the default limits: 1 MiB of code and of stdin, a 4 MiB file."""
    code = "pass\n#" + "x" * (MiB - 6)
    data = os.urandom(4 * MiB)
    return {"code": code, "stdin": "y" * MiB,
            "files": [{"name": "blob.bin", "content": base64.b64encode(data).decode(), "encoding": "base64"}]}


def http_post(port, body):
    head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\nContent-Length: %d\r\n" % (
        port, len(body))
    for k, v in HEADERS.items():
        head += "%s: %s\r\n" % (k, v)
    return head.encode() + b"\r\n" + body


def call_body(rid, arguments):
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                       "params": {"name": "exec", "arguments": arguments, "_meta": META}}).encode()


def read_all(s, timeout):
    """What the server sent within timeout (or until it closed)."""
    s.settimeout(timeout)
    data = b""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            b = s.recv(65536)
            if not b:
                break
            data += b
            if b"\r\n\r\n" in data:
                head, _, rest = data.partition(b"\r\n\r\n")
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:") and len(rest) >= int(line.split(b":")[1]):
                        return data
    except socket.timeout:
        pass
    except OSError as e:
        return data or ("%s" % e).encode()
    return data


def classify_http(resp):
    if not resp:
        return "pending"
    if not resp.startswith(b"HTTP/1."):
        return "reset"
    status = int(resp.split(b" ", 2)[1])
    body = resp.split(b"\r\n\r\n", 1)[-1]
    if status in (429, 503):
        return "refused"
    if status == 200 and BUSY.encode() in body:
        return "busy"
    if status == 200 and b'"isError":false' in body:
        return "ok"
    return "other"


def hold(port, n, seconds):
    results = [None] * n

    def one(k):
        s = socket.create_connection(("127.0.0.1", port), timeout=seconds + 120)
        s.sendall(http_post(port, call_body(k, {"code": "import time; time.sleep(%d); print('held')" % seconds,
                                                "timeout_s": seconds + 60})))
        resp = read_all(s, seconds + 120)
        results[k] = "ok" if b"held\\n" in resp else resp[-300:].decode(errors="replace")
        s.close()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    out({"sent": n})
    for t in threads:
        t.join()
    out({"results": results})


def attack_http(port, n, go):
    body = http_post(port, call_body(1, maximal_arguments()))
    t0 = time.monotonic()
    socks, failed = [], 0
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(body)
            socks.append(s)
        except OSError:
            failed += 1
    out({"sent": len(socks), "send_failed": failed, "body_bytes": len(body), "s": round(time.monotonic() - t0, 1)})
    wait_file(go)
    classes, samples = {}, []
    for s in socks:
        resp = read_all(s, 1.0)
        c = classify_http(resp)
        classes[c] = classes.get(c, 0) + 1
        if c in ("other", "reset") and len(samples) < 3:
            samples.append(resp[-400:].decode(errors="replace"))
        s.close()
    out({"classes": classes, "send_failed": failed, "samples": samples})


class Line:
    """Newline-delimited JSON-RPC on the local socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""

    def send(self, obj):
        self.s.sendall(json.dumps(obj).encode() + b"\n")

    def recv(self, timeout):
        self.s.settimeout(timeout)
        while b"\n" not in self.buf:
            b = self.s.recv(65536)
            if not b:
                raise EOFError("the server closed the connection")
            self.buf += b
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def reply(self, rid, timeout):
        """The reply to rid; progress and other messages are skipped."""
        end = time.monotonic() + timeout
        while True:
            m = self.recv(max(end - time.monotonic(), 0.1))
            if m.get("id") == rid and "method" not in m:
                return m

    def initialize(self):
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "flood-queue", "version": "1"}}})
        self.reply("init", 30)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, rid, name, arguments, timeout):
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})
        return self.reply(rid, timeout)["result"]


def attack_stdio(path, n, go):
    c = Line(path)
    c.initialize()
    line = json.dumps({"jsonrpc": "2.0", "id": "ID", "method": "tools/call",
                       "params": {"name": "exec", "arguments": maximal_arguments()}}).encode() + b"\n"
    t0 = time.monotonic()
    for k in range(n):
        c.s.sendall(line.replace(b'"id": "ID"', b'"id": %d' % k, 1))
    out({"sent": n, "line_bytes": len(line), "s": round(time.monotonic() - t0, 1)})
    wait_file(go)
    classes, seen = {}, set()
    end = time.monotonic() + 2.0
    try:
        while time.monotonic() < end:
            m = c.recv(max(end - time.monotonic(), 0.1))
            if "id" not in m or m["id"] in seen or "method" in m:
                continue
            seen.add(m["id"])
            r = m.get("result") or {}
            text = (r.get("content") or [{}])[0].get("text", "")
            k = "busy" if r.get("isError") and text.startswith(BUSY) else "ok" if r.get("isError") is False else "other"
            classes[k] = classes.get(k, 0) + 1
    except (socket.timeout, EOFError):
        pass
    classes["pending"] = n - len(seen)
    out({"classes": classes})


def witness(path, go):
    c = Line(path)
    c.initialize()
    r = c.call("create", "session_create", {}, 120)
    handle = r["structuredContent"]["session"]
    r = c.call("set", "exec", {"code": "x = 41", "session": handle}, 120)
    assert r.get("isError") is False, r
    out({"ready": True})
    wait_file(go)
    t = time.monotonic()
    c.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    tools = [x["name"] for x in c.reply("list", 60)["result"]["tools"]]
    list_s = round(time.monotonic() - t, 2)
    t = time.monotonic()
    r = c.call("get", "exec", {"code": "print(x)", "session": handle}, 240)
    get_s = round(time.monotonic() - t, 2)
    closed = c.call("close", "session_close", {"session": handle}, 60)
    out({"tools": tools, "list_s": list_s, "get": r.get("structuredContent") or r, "get_s": get_s,
         "closed": closed.get("isError") is False})


def main():
    what = sys.argv[1]
    if what == "hold":
        hold(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif what == "http":
        attack_http(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif what == "stdio":
        attack_stdio(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif what == "witness":
        witness(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown: %s" % what)


if __name__ == "__main__":
    main()
