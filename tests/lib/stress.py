#!/usr/bin/python3
# tests/lib/stress.py - the property test of the front ends' memory (issue 37): random sequences of
# every client operation, from several callers over HTTP and stdio, against the real front ends.
# Runs inside the test box. Each command prints one JSON line at its end.
#
#   stress.py attack SEED SECONDS PORT SOCKET TOKEN...
#       Workers pick, by a seeded random generator, one operation after another for SECONDS:
#       plain calls (read or never read), calls that become tasks with results of several MiB
#       (stdout, files), tasks/get and tasks/result and subscriptions/listen on them (read or
#       never read), large progress tokens on calls whose streams are never read, 2025-11-25
#       sessions with GET streams never read, sandbox sessions, cancels; HTTP callers by named
#       token (TOKEN... each its own caller), the local one (root) over stdio. What it holds
#       unread is bounded (HELD_MAX sockets) so that the measure is memory, not connection slots
#       (the connection floods are test-flood-http's). Prints {"ops": {op: n}, "errors": {...}}.
#   stress.py witness PORT TOKEN SECONDS     a well-behaved HTTP caller: print(6*7) on its own
#   stress.py witness-stdio SOCKET SECONDS   connection, again and again; prints {"ok", "bad",
#                                            "longest_gap_s", "samples"}: the longest time between
#                                            two answers it was served (or from the start)
import json
import os
import random
import socket
import sys
import threading
import time

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TASKS_EXT = "io.modelcontextprotocol/tasks"
HELD_MAX = 96          # sockets held unread at once, all workers together
IO_TIMEOUT = 30

# Code that becomes a task (it outlives MCP_EXEC_TASK_AFTER_MS) with a result of several MiB: 1 MiB
# of stdout and three files of 1.3 MiB of random bytes (base64 in the result).
BIG_TASK = ("import os, time\ntime.sleep(%s)\nos.makedirs('/tmp/outputs', exist_ok=True)\n"
            "for i in range(3):\n    open('/tmp/outputs/f%%d.bin' %% i, 'wb').write(os.urandom(1300000))\n"
            "print('x' * 1048000)\n")


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def modern_meta(tasks=False):
    caps = {"extensions": {TASKS_EXT: {}}} if tasks else {}
    return {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps}


def http_bytes(port, token, body, headers):
    data = json.dumps(body).encode()
    head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n" % (port, len(data)))
    if token:
        head += "X-MCP-AUTH: %s\r\n" % token
    for k, v in headers.items():
        head += "%s: %s\r\n" % (k, v)
    return head.encode() + b"\r\n" + data


def read_response(s, timeout):
    """(status, body bytes) of one HTTP response: Content-Length or, for SSE, up to the first event."""
    s.settimeout(timeout)
    data = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            b = s.recv(1 << 16)
        except (socket.timeout, OSError):
            break
        if not b:
            break
        data += b
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            continue
        lines = head.split(b"\r\n")
        clen = [int(x.split(b":")[1]) for x in lines if x.lower().startswith(b"content-length:")]
        if clen and len(rest) >= clen[0]:
            break
        if not clen and b"\n\n" in rest.replace(b"\r\n", b"\n"):
            break
    try:
        status = int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = 0
    return status, data.partition(b"\r\n\r\n")[2]


def json_of(body):
    """The JSON-RPC message in a plain or SSE body, or None."""
    for chunk in (body, *[ln[5:] for ln in body.split(b"\n") if ln.startswith(b"data:")]):
        try:
            return json.loads(chunk)
        except ValueError:
            continue
    return None


class Held:
    """Sockets whose replies are never read, bounded: past HELD_MAX the oldest is closed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.socks = []

    def add(self, s):
        with self.lock:
            self.socks.append(s)
            old = self.socks.pop(0) if len(self.socks) > HELD_MAX else None
        if old:
            old.close()

    def drop_some(self, rng):
        with self.lock:
            rng.shuffle(self.socks)
            n = len(self.socks) // 3
            gone, self.socks = self.socks[:n], self.socks[n:]
        for s in gone:
            s.close()

    def close_all(self):
        with self.lock:
            for s in self.socks:
                s.close()
            self.socks = []


class Caller:
    """One HTTP caller (a named token): the task ids and 2025 sessions it knows."""

    def __init__(self, port, token):
        self.port, self.token = port, token
        self.lock = threading.Lock()
        self.modern_tasks, self.legacy_tasks = [], []

    def remember(self, kind, tid):
        with self.lock:
            lst = self.modern_tasks if kind == "modern" else self.legacy_tasks
            lst.append(tid)
            del lst[:-32]

    def some(self, kind, rng, n=1):
        with self.lock:
            lst = self.modern_tasks if kind == "modern" else self.legacy_tasks
            return rng.sample(lst, min(n, len(lst))) if lst else []

    def send(self, body, headers, read, timeout=IO_TIMEOUT):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(http_bytes(self.port, self.token, body, headers))
        if not read:
            return s, None, None
        try:
            return None, *read_response(s, timeout)
        finally:
            s.close()


def modern_headers(method, name):
    return {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": name}


def call_body(rid, code, meta, **extra):
    args = {"code": code, "timeout_s": 60}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "exec", "arguments": args, "_meta": meta, **extra}}


class Attack:
    def __init__(self, seed, seconds, port, sock, tokens):
        self.rng0 = random.Random(seed)
        self.end = time.monotonic() + seconds
        self.port, self.sock = port, sock
        self.callers = [Caller(port, t) for t in tokens]
        self.held = Held()
        self.ops, self.errors = {}, {}
        self.lock = threading.Lock()

    def count(self, table, key):
        with self.lock:
            table[key] = table.get(key, 0) + 1

    # --- the operations: each takes (caller, rng) ---------------------------------------------------
    def op_call(self, c, rng):
        read = rng.random() < 0.5
        code = "print('y' * %d)" % rng.choice([10, 100000, 1000000])
        s, st, _ = c.send(call_body(1, code, modern_meta()), modern_headers("tools/call", "exec"), read, 60)
        if s:
            self.held.add(s)

    def op_task(self, c, rng):
        body = call_body(1, BIG_TASK % rng.choice(["0.5", "2", "6"]), modern_meta(tasks=True))
        _, st, resp = c.send(body, modern_headers("tools/call", "exec"), True, 60)
        r = (json_of(resp or b"") or {}).get("result") or {}
        if r.get("resultType") == "task":
            c.remember("modern", r["taskId"])

    def op_get_unread(self, c, rng):
        for tid in c.some("modern", rng, rng.randint(1, 4)):
            body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": tid, "_meta": modern_meta(True)}}
            s, _, _ = c.send(body, modern_headers("tasks/get", tid), False)
            self.held.add(s)

    def op_get_read(self, c, rng):
        for tid in c.some("modern", rng):
            body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": tid, "_meta": modern_meta(True)}}
            c.send(body, modern_headers("tasks/get", tid), True)

    def op_listen(self, c, rng):
        ids = c.some("modern", rng, 8)
        if not ids:
            return
        body = {"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen",
                "params": {"notifications": {"taskIds": ids}, "_meta": modern_meta(True)}}
        s, _, _ = c.send(body, modern_headers("subscriptions/listen", ""), False)
        self.held.add(s)

    def op_progress(self, c, rng):
        token = "p" * rng.choice([16, 4096, 1 << 20, 5 << 19])
        meta = modern_meta()
        meta["progressToken"] = token
        s, _, _ = c.send(call_body(4, "import time; time.sleep(4); print(1)", meta),
                         modern_headers("tools/call", "exec"), False)
        self.held.add(s)

    def legacy_session(self, c):
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "stress", "version": "1"}}}
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            s.sendall(http_bytes(self.port, c.token, body, {}))
            s.settimeout(IO_TIMEOUT)
            data = b""
            while b"\r\n\r\n" not in data:
                b = s.recv(4096)
                if not b:
                    break
                data += b
        finally:
            s.close()
        for line in data.split(b"\r\n"):
            if line.lower().startswith(b"mcp-session-id:"):
                return line.split(b":", 1)[1].strip().decode()
        return None

    def op_legacy(self, c, rng):
        sid = self.legacy_session(c)
        if not sid:
            self.count(self.errors, "legacy-init")
            return
        h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
        c.send({"jsonrpc": "2.0", "method": "notifications/initialized"}, h, True)
        what = rng.random()
        if what < 0.4:   # a task, and waiters on its result never read
            body = call_body(5, BIG_TASK % "1", {}, task={"ttl": 600000})
            del body["params"]["_meta"]
            _, _, resp = c.send(body, h, True, 60)
            tid = (((json_of(resp or b"") or {}).get("result") or {}).get("task") or {}).get("taskId")
            if tid:
                c.remember("legacy", tid)
                for _ in range(rng.randint(1, 8)):
                    s, _, _ = c.send({"jsonrpc": "2.0", "id": 6, "method": "tasks/result", "params": {"taskId": tid}}, h, False)
                    self.held.add(s)
        elif what < 0.7:   # a GET stream, never read
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.sendall(("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nX-MCP-AUTH: %s\r\n"
                       "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n" % (c.token, sid, LEGACY)).encode())
            self.held.add(s)
            c.send(call_body(7, "print('z' * 500000)", {}), h, False)
        else:              # a sandbox session: state, then closed or left
            _, _, resp = c.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                 "params": {"name": "session_create", "arguments": {}}}, h, True, 60)
            res = (json_of(resp or b"") or {}).get("result") or {}
            handle = (res.get("structuredContent") or {}).get("session")
            if handle:
                c.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                        "params": {"name": "exec", "arguments": {"code": "x = 1", "session": handle}}}, h, True, 60)
                if rng.random() < 0.7:
                    c.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                            "params": {"name": "session_close", "arguments": {"session": handle}}}, h, True, 60)

    def op_cancel(self, c, rng):
        for tid in c.some("modern", rng):
            body = {"jsonrpc": "2.0", "id": 11, "method": "tasks/cancel", "params": {"taskId": tid, "_meta": modern_meta(True)}}
            c.send(body, modern_headers("tasks/cancel", tid), True)

    def op_drop(self, c, rng):
        self.held.drop_some(rng)

    def op_stdio(self, c, rng):
        """The local caller: calls with big outputs and big progress tokens, tasks and their
        results, never read; the connection closes after a while."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(IO_TIMEOUT)
        s.connect(self.sock)
        line = lambda o: s.sendall(json.dumps(o).encode() + b"\n")
        line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "stress", "version": "1"}}})
        line({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for k in range(rng.randint(1, 6)):
            what = rng.random()
            if what < 0.4:
                params = {"name": "exec", "arguments": {"code": "import time; time.sleep(3); print('q' * 1000000)"},
                          "_meta": {"progressToken": "t" * rng.choice([8, 1 << 20])}}
            else:
                params = {"name": "exec", "arguments": {"code": BIG_TASK % "1"}, "task": {"ttl": 600000}}
            line({"jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": params})
        self.held.add(s)

    OPS = [("call", 3), ("task", 3), ("get_unread", 3), ("get_read", 1), ("listen", 3), ("progress", 2),
           ("legacy", 2), ("cancel", 1), ("drop", 1), ("stdio", 2)]

    def worker(self, k):
        rng = random.Random(self.rng0.random() + k)
        names = [n for n, w in self.OPS for _ in range(w)]
        while time.monotonic() < self.end:
            op = rng.choice(names)
            c = rng.choice(self.callers)
            try:
                getattr(self, "op_" + op)(c, rng)
                self.count(self.ops, op)
            except (OSError, ValueError) as e:
                self.count(self.errors, "%s: %s" % (op, type(e).__name__))

    def run(self, workers=6):
        threads = [threading.Thread(target=self.worker, args=(k,), daemon=True) for k in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(self.end - time.monotonic(), 0) + 120)
        self.held.close_all()
        out({"ops": self.ops, "errors": self.errors})


def witness(send_one, seconds):
    """Calls print(6*7) until SECONDS passed; the longest time it went unserved."""
    t0 = last = time.monotonic()
    ok, bad, gap, samples = 0, 0, 0.0, []
    while time.monotonic() - t0 < seconds:
        try:
            good, what = send_one()
        except (OSError, ValueError) as e:
            good, what = False, "%s: %s" % (type(e).__name__, e)
        now = time.monotonic()
        if good:
            ok += 1
            gap = max(gap, now - last)
            last = now
        else:
            bad += 1
            if len(samples) < 5:
                samples.append(what[:300])
        time.sleep(1)
    gap = max(gap, time.monotonic() - last)
    out({"ok": ok, "bad": bad, "longest_gap_s": round(gap, 1), "samples": samples})


def witness_http(port, token, seconds):
    c = Caller(port, token)

    def one():
        _, st, resp = c.send(call_body(1, "print(6*7)", modern_meta()), modern_headers("tools/call", "exec"), True, 120)
        r = (json_of(resp or b"") or {}).get("result") or {}
        good = st == 200 and (r.get("structuredContent") or {}).get("stdout") == "42\n"
        return good, "%s %s" % (st, (resp or b"")[:300])
    witness(one, seconds)


def witness_stdio(path, seconds):
    def one():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(120)
        try:
            s.connect(path)
            f = s.makefile("rb")
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                      b'"capabilities":{},"clientInfo":{"name":"witness","version":"1"}}}\n'
                      b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                      b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"code":"print(6*7)"}}}\n')
            while True:
                line = f.readline()
                if not line:
                    return False, "closed"
                m = json.loads(line)
                if m.get("id") == 2:
                    r = m.get("result") or {}
                    return (r.get("structuredContent") or {}).get("stdout") == "42\n", line[:300].decode(errors="replace")
        finally:
            s.close()
    witness(one, seconds)


def main(argv):
    if len(argv) >= 6 and argv[0] == "attack":
        Attack(int(argv[1]), float(argv[2]), int(argv[3]), argv[4], argv[5:]).run()
    elif len(argv) == 4 and argv[0] == "witness":
        witness_http(int(argv[1]), argv[2], float(argv[3]))
    elif len(argv) == 3 and argv[0] == "witness-stdio":
        witness_stdio(argv[1], float(argv[2]))
    else:
        sys.exit("usage: see the head of %s" % argv and sys.argv[0])


if __name__ == "__main__":
    main(sys.argv[1:])
