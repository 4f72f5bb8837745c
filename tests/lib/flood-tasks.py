#!/usr/bin/python3
# tests/lib/flood-tasks.py - the raw HTTP clients of tests/integration/transport/test-tasks-limits.sh
# (issue 37, items 2, 3 and 9): 2026-07-28 requests with the tasks extension. Runs inside the test
# box. Each prints one JSON line on stdout.
#
#   flood-tasks.py big PORT TOKEN          a task whose result is several MiB (1 MB of stdout, a
#                                          3.9 MB file in /tmp/outputs): {"task": ID}
#   flood-tasks.py listen PORT TOKEN ID N STOP  N subscriptions/listen for ID, each its own request
#                                          on its own connection, never read (a small receive
#                                          buffer); prints {"open": N}, holds them until the file
#                                          STOP exists
#   flood-tasks.py get PORT TOKEN ID N STOP  N tasks/get for ID the same way, never read until STOP
#                                          exists; then the start of each: {"served", "busy"} (a
#                                          result or an error)
#   flood-tasks.py wait PORT TOKEN ID      polls tasks/get until ID ended, reading only the status
#                                          line and headers: {"status", "bytes"}
#   flood-tasks.py task PORT TOKEN SECONDS a call sleeping SECONDS: {"resultType", "taskId"?}
#   flood-tasks.py do PORT TOKEN METHOD ID one tasks/get or tasks/cancel, read: {"reply": ...}
#   flood-tasks.py witness PORT TOKEN      print(6*7) as a plain call: {"stdout": ...}
import json
import os
import socket
import sys
import time

EXT = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def body(method, params, caps=None):
    params = dict(params)
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {}}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def request(port, token, method, name, data):
    head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\nContent-Length: %d\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: %s\r\nMcp-Name: %s\r\n"
            "Authorization: Bearer %s\r\n\r\n") % (port, len(data), method, name, token)
    return head.encode() + data


def connect(port, small=False):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if small:
        # What the client leaves unread stays in the server, not in this socket's buffer.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    return s


def exchange(port, token, method, name, data, timeout=120):
    s = connect(port)
    s.settimeout(timeout)
    s.sendall(request(port, token, method, name, data))
    chunks = []
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        chunks.append(b)
    s.close()
    raw = b"".join(chunks)
    head, _, payload = raw.partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        payload = dechunk(payload)
    return head.decode(errors="replace"), payload


def dechunk(p):
    res = b""
    while p:
        line, _, p = p.partition(b"\r\n")
        n = int(line.split(b";")[0] or b"0", 16)
        if n == 0:
            break
        res += p[:n]
        p = p[n + 2:]
    return res


def message(payload):
    """The JSON-RPC reply in a JSON body or the last data: line of an event stream."""
    text = payload.decode(errors="replace").strip()
    if text.startswith("{"):
        return json.loads(text)
    last = None
    for line in text.splitlines():
        if line.startswith("data:"):
            m = json.loads(line[5:])
            if "id" in m:
                last = m
    return last


def hold(port, token, method, tid, n, make, stop):
    socks = []
    for _ in range(n):
        s = connect(port, small=True)
        s.sendall(request(port, token, method, tid, make()))
        socks.append(s)
    out({"open": len(socks)})
    t = time.monotonic()
    while not os.path.exists(stop) and time.monotonic() - t < 300:
        time.sleep(0.2)
    # The start of each reply: a result or an error (a stream never ends: not read).
    served = busy = 0
    for s in socks if method == "tasks/get" else []:
        s.settimeout(10)
        head = b""
        try:
            while b'"result"' not in head and b'"error"' not in head and len(head) < 65536:
                b = s.recv(4096)
                if not b:
                    break
                head += b
        except OSError:
            pass
        served += b'"result"' in head
        busy += b'"error"' in head and b'"result"' not in head
    for s in socks:
        s.close()
    out({"served": served, "busy": busy})


def main():
    mode, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "big":
        code = ("import os, sys, time\ntime.sleep(3)\nos.makedirs('/tmp/outputs', exist_ok=True)\n"
                "open('/tmp/outputs/blob.bin', 'wb').write(os.urandom(3900000))\nsys.stdout.write('x' * 1000000)\n")
        _, p = exchange(port, token, "tools/call", "exec",
                        body("tools/call", {"name": "exec", "arguments": {"code": code, "timeout_s": 60}}, EXT))
        out({"task": message(p)["result"]["taskId"]})
    elif mode == "listen":
        tid = sys.argv[4]
        hold(port, token, "subscriptions/listen", tid, int(sys.argv[5]),
             lambda: body("subscriptions/listen", {"notifications": {"taskIds": [tid]}}, EXT), sys.argv[6])
    elif mode == "get":
        tid = sys.argv[4]
        hold(port, token, "tasks/get", tid, int(sys.argv[5]), lambda: body("tasks/get", {"taskId": tid}), sys.argv[6])
    elif mode == "wait":
        tid = sys.argv[4]
        for _ in range(120):
            _, p = exchange(port, token, "tasks/get", tid, body("tasks/get", {"taskId": tid}))
            m = message(p)
            st = m.get("result", {}).get("status")
            if st != "working":
                out({"status": st, "bytes": len(p), "error": m.get("error")})
                return
            time.sleep(0.5)
        out({"status": "working"})
    elif mode == "task":
        code = "import time\ntime.sleep(%s)\nprint('slept')" % sys.argv[4]
        _, p = exchange(port, token, "tools/call", "exec",
                        body("tools/call", {"name": "exec", "arguments": {"code": code, "timeout_s": 60}}, EXT))
        r = message(p).get("result", {})
        out({"resultType": r.get("resultType"), "taskId": r.get("taskId")})
    elif mode == "do":
        method, tid = sys.argv[4], sys.argv[5]
        _, p = exchange(port, token, method, tid, body(method, {"taskId": tid}))
        out({"reply": message(p)})
    elif mode == "witness":
        t = time.monotonic()
        _, p = exchange(port, token, "tools/call", "exec",
                        body("tools/call", {"name": "exec", "arguments": {"code": "print(6*7)"}}))
        m = message(p)
        out({"stdout": (m or {}).get("result", {}).get("structuredContent", {}).get("stdout"),
             "seconds": round(time.monotonic() - t, 2), "reply": None if m and "result" in m else m})
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
