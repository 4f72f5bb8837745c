#!/usr/bin/python3
# tests/lib/parse-flood.py - messages that are cheap to send and were dear to parse, for
# tests/integration/load/test-flood-parse.sh (issue 19, item 1). Runs inside the test box, loopback
# only. Every message is about 4 MB, far under the size limits; what differs is what json-c
# would build of it:
#   objects  params.pad = [{},{},...]          1.4 million empty objects (about 790 bytes each)
#   numbers  params.pad = [0,0,...]            2 million numbers
#   keys     params.pad = {"0":0,"1":0,...}    450 000 keys
#   deep     params.pad = [[[[...]]]]          2 million levels
#   string   params.pad = "\"[{\\..."          one long string of escapes, quotes and brackets
#   number   params.pad = 99999...             one number of 4 million digits
#   long     params.pad = "aaaa..."            one plain string of 12 MiB less 4 KiB: the largest
#                                              message a front end takes (twice code, stdin and
#                                              input files, README), parsed at its full cost
#
#   parse-flood.py http-witness PORT             a Streamable HTTP session (2025-06-18) with a
#                                                sandbox session in which x = 41; prints
#                                                {"sid", "handle"}
#   parse-flood.py stdio-witness SOCKET          the same over the stdio socket (the sandbox
#                                                session is the uid's); prints {"handle"}
#   parse-flood.py http VARIANT PORT SID HANDLE N   VARIANT N times to /mcp in the session, N
#                                                times stateless (2026-07-28) and N times to a
#                                                legacy SSE session's /messages, back to back;
#   parse-flood.py stdio VARIANT SOCKET HANDLE N    N times as one line on a connection of its
#                                                own; while the attack lasts a witness thread
#                                                keeps calling exec with print(x) in the sandbox
#                                                session (each call sleeps a little, so one is in
#                                                flight most of the time), and one more call
#                                                follows. Prints {"variant", "answers": {transport:
#                                                [[status or null, error code or "result" or
#                                                "none"], ...]}, "witness": {"ok", "bad"}, "x"}.
import json
import socket
import sys
import threading
import time

SIZE = 4 * 1024 * 1024
LONG = 12 * 1024 * 1024 - 4096
TIMEOUT = 60.0
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
WITNESS_CODE = "import time\ntime.sleep(0.3)\nprint(x)"


def pad(variant):
    """The value of params.pad, as JSON text of about SIZE bytes."""
    if variant == "objects":
        return "[" + ",".join(["{}"] * (SIZE // 3)) + "]"
    if variant == "numbers":
        return "[" + ",".join(["0"] * (SIZE // 2)) + "]"
    if variant == "keys":
        out, i, n = [], 0, 0
        while n < SIZE:
            k = '"%d":0' % i
            out.append(k)
            n += len(k) + 1
            i += 1
        return "{" + ",".join(out) + "}"
    if variant == "deep":
        return "[" * (SIZE // 2) + "]" * (SIZE // 2)
    if variant == "string":
        return '"' + '\\"[{\\\\]}' * (SIZE // 10) + '"'
    if variant == "number":
        return "9" * SIZE
    if variant == "long":
        return '"' + "a" * LONG + '"'
    raise SystemExit("unknown variant %s" % variant)


def envelope(method, params_head, p):
    # Built as text: json.dumps of the parsed pad would take the test box as much memory as the
    # server once took.
    return ('{"jsonrpc":"2.0","id":7,"method":"%s","params":{%s"pad":%s}}' % (method, params_head, p)).encode()


# --- HTTP --------------------------------------------------------------------------------------

def http(port, method, path, headers, body=b"", timeout=TIMEOUT):
    """(status, headers dict (lower-case names), body bytes); (None, {}, error text) on failure."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError as e:
        return None, {}, "%s" % e
    try:
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\nContent-Length: %d\r\n" % (
            method, path, port, len(body))
        for k, v in headers.items():
            head += "%s: %s\r\n" % (k, v)
        try:
            s.sendall(head.encode() + b"\r\n" + body)
        except OSError:
            pass        # refused early: the answer may be there anyway
        resp = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            resp += b
    except OSError as e:
        return None, {}, "%s" % e
    finally:
        s.close()
    if not resp.startswith(b"HTTP/1."):
        return None, {}, "no response (%d bytes)" % len(resp)
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    return int(lines[0].split(" ")[1]), hdrs, body


def dechunk(b):
    out = b""
    while b:
        size, _, rest = b.partition(b"\r\n")
        n = int(size.split(b";")[0], 16)
        if n == 0:
            break
        out += rest[:n]
        b = rest[n + 2:]
    return out


def json_of(body):
    """The JSON-RPC message of a response body: plain JSON or the last SSE data line."""
    if isinstance(body, str):
        return None
    text = body.decode("utf-8", "replace").strip()
    if not text.startswith("{") and not text.startswith("["):
        data = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        text = data[-1] if data else ""
    try:
        return json.loads(text)
    except ValueError:
        return None


def outcome(status, msg):
    """[status, what the JSON-RPC body was]: an error code, "result" or "none"."""
    if isinstance(msg, dict) and isinstance(msg.get("error"), dict):
        return [status, msg["error"].get("code"), msg.get("id", "absent")]
    if isinstance(msg, dict) and "result" in msg:
        return [status, "result", msg.get("id")]
    return [status, "none", None]


BASE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def rpc(port, sid, method, params, rid=1):
    h = dict(BASE, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}) if sid else dict(BASE)
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    status, hdrs, b = http(port, "POST", "/mcp", h, body)
    return status, hdrs, json_of(b)


def structured(msg):
    try:
        return msg["result"]["structuredContent"]
    except (KeyError, TypeError):
        return None


def http_witness(port):
    status, hdrs, msg = rpc(port, None, "initialize", {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "witness", "version": "1"}})
    sid = hdrs.get("mcp-session-id")
    if status != 200 or not sid:
        raise SystemExit("initialize: %s %s" % (status, msg))
    h = dict(BASE, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
    http(port, "POST", "/mcp", h, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    _, _, msg = rpc(port, sid, "tools/call", {"name": "session_create", "arguments": {}})
    handle = (structured(msg) or {}).get("session")
    if not handle:
        raise SystemExit("session_create: %s" % msg)
    _, _, msg = rpc(port, sid, "tools/call", {"name": "exec", "arguments": {"code": "x = 41", "session": handle}})
    if (structured(msg) or {}).get("exit_code") != 0:
        raise SystemExit("x = 41: %s" % msg)
    print(json.dumps({"sid": sid, "handle": handle}))


def http_witness_call(port, sid, handle):
    _, _, msg = rpc(port, sid, "tools/call", {"name": "exec", "arguments": {"code": WITNESS_CODE, "session": handle}})
    return (structured(msg) or {}).get("stdout"), msg


def legacy_open(port):
    """A legacy SSE session: (socket kept open, its /messages path)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.sendall(("GET /sse HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n" % port).encode())
    buf = b""
    while b"data: /messages" not in buf or not buf.split(b"data: /messages", 1)[1].count(b"\n"):
        b = s.recv(4096)
        if not b:
            raise SystemExit("legacy /sse: closed: %r" % buf)
        buf += b
    path = "/messages" + buf.split(b"data: /messages", 1)[1].split(b"\n", 1)[0].decode().strip()
    return s, path


def legacy_reply(s, rid):
    """The message event with id rid on the legacy stream (None after the timeout)."""
    buf = b""
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        for line in buf.split(b"\n"):
            if line.startswith(b"data: {"):
                try:
                    m = json.loads(line[6:])
                except ValueError:
                    continue
                if m.get("id") == rid:
                    return m
        try:
            b = s.recv(1 << 20)
        except OSError:
            return None
        if not b:
            return None
        buf += b
    return None


def http_attack(variant, port, sid, n):
    p = pad(variant)
    answers = {"session": [], "stateless": [], "legacy": []}
    session_body = envelope("ping", "", p)
    h = dict(BASE, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
    for _ in range(n):
        status, _, b = http(port, "POST", "/mcp", h, session_body)
        answers["session"].append(outcome(status, json_of(b)))
    stateless_body = envelope("tools/list", '"_meta":%s,' % json.dumps(META), p)
    h = dict(BASE, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    for _ in range(n):
        status, _, b = http(port, "POST", "/mcp", h, stateless_body)
        answers["stateless"].append(outcome(status, json_of(b)))
    s, path = legacy_open(port)
    try:
        for _ in range(n):
            status, _, b = http(port, "POST", path, dict(BASE), session_body)
            if status == 202:
                # Taken: the answer comes on the stream.
                answers["legacy"].append(outcome(status, legacy_reply(s, 7)))
            else:
                answers["legacy"].append(outcome(status, json_of(b)))
    finally:
        s.close()
    return answers


# --- stdio -------------------------------------------------------------------------------------

class Line:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(TIMEOUT)
        self.s.connect(path)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data + b"\n")

    def read(self):
        while b"\n" not in self.buf:
            b = self.s.recv(1 << 20)
            if not b:
                return None
            self.buf += b
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, rid, method, params):
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())
        while True:
            m = self.read()
            if m is None or m.get("id") == rid:
                return m

    def initialize(self):
        m = self.call(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "witness", "version": "1"}})
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return m

    def close(self):
        self.s.close()


def stdio_witness(path):
    c = Line(path)
    c.initialize()
    handle = (structured(c.call(1, "tools/call", {"name": "session_create", "arguments": {}})) or {}).get("session")
    if not handle:
        raise SystemExit("session_create failed")
    m = c.call(2, "tools/call", {"name": "exec", "arguments": {"code": "x = 41", "session": handle}})
    if (structured(m) or {}).get("exit_code") != 0:
        raise SystemExit("x = 41: %s" % m)
    c.close()
    print(json.dumps({"handle": handle}))


class StdioWitness:
    """print(x) in the sandbox session, on one connection (a new one if it was lost)."""

    def __init__(self, path, handle):
        self.path, self.handle, self.c, self.id = path, handle, None, 10

    def __call__(self):
        try:
            if not self.c:
                self.c = Line(self.path)
                self.c.initialize()
            self.id += 1
            m = self.c.call(self.id, "tools/call", {"name": "exec", "arguments": {"code": WITNESS_CODE,
                                                                                  "session": self.handle}})
        except (OSError, ValueError) as e:
            self.c = None
            return None, "%s" % e
        return (structured(m) or {}).get("stdout"), m


def stdio_attack(variant, path, n):
    line = envelope("ping", "", pad(variant))
    answers = {"stdio": []}
    for _ in range(n):
        try:
            c = Line(path)
            c.send(line)
            m = c.read()
            c.close()
            answers["stdio"].append(outcome("line", m))
        except (OSError, ValueError) as e:
            answers["stdio"].append([None, "%s" % e, None])
    return answers


# --- the witness while an attack lasts ---------------------------------------------------------

class Witness(threading.Thread):
    def __init__(self, call):
        super().__init__(daemon=True)
        self.call = call
        self.stop = threading.Event()
        self.ok = 0
        self.bad = []

    def run(self):
        while not self.stop.is_set():
            out, msg = self.call()
            if out == "41\n":
                self.ok += 1
            elif len(self.bad) < 5:
                self.bad.append(str(msg)[:300])
            self.stop.wait(0.1)


def attack(variant, run, call):
    w = Witness(call)
    w.start()
    answers = run()
    w.stop.set()
    w.join(TIMEOUT)
    # One more call after all of it: the sandbox session still has x.
    out, msg = call()
    print(json.dumps({"variant": variant, "answers": answers, "witness": {"ok": w.ok, "bad": w.bad},
                      "x": out.strip() if out else str(msg)[:300]}))


def main(argv):
    mode = argv[1]
    if mode == "http-witness":
        http_witness(int(argv[2]))
    elif mode == "stdio-witness":
        stdio_witness(argv[2])
    elif mode == "http":
        variant, port, sid, handle, n = argv[2], int(argv[3]), argv[4], argv[5], int(argv[6])
        attack(variant, lambda: http_attack(variant, port, sid, n), lambda: http_witness_call(port, sid, handle))
    elif mode == "stdio":
        variant, path, handle, n = argv[2], argv[3], argv[4], int(argv[5])
        attack(variant, lambda: stdio_attack(variant, path, n), StdioWitness(path, handle))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
