#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Component test of mcp-exec-upstream-http, the bridge of a Streamable HTTP
upstream server (no systemd, no gateway: this script plays the gateway on the
bridge's stdin and stdout, a socket as its unit has them, and a Streamable
HTTP server on loopback that answers as the spec allows and misbehaves on
demand). Checks: initialize goes first and what the gateway sent meanwhile
waits for its session; every later request carries Mcp-Session-Id and
MCP-Protocol-Version, the operator's header and the credential header (read
from $CREDENTIALS_DIRECTORY); answers in application/json (pretty-printed:
one line all the same), in text/event-stream (CRLF, events split over
chunks, several data lines) and batches come back one message a line; the
GET stream's list_changed reaches the gateway; an HTTP error, an answer over
the cap and a server that is down give the request a JSON-RPC error naming
why; notifications/cancelled stops the request's stream; EOF ends the session
with DELETE; a server that forgets the session ends the bridge; a malformed
or missing credential stops it before it connects, naming the credential,
never its content; no sanitizer report.

argv: BRIDGE"""
import http.server
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BRIDGE = sys.argv[1]
CANARY = "canary-http-bridge-%d" % os.getpid()
SESSION = "sess-1.A~z"
VERSION = "2025-06-18"
failures = []
events = []             # what the server saw: (kind, detail)
lock = threading.Lock()


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def note(kind, detail=None):
    with lock:
        events.append((kind, detail))


def seen(kind):
    with lock:
        return [d for k, d in events if k == kind]


def wait_for(pred, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


class Server(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"       # close-delimited bodies: the event streams end when closed

    def log_message(self, *args):
        pass

    def send_json(self, obj, status=200, extra=None, indent=None):
        body = json.dumps(obj, indent=indent).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def sse(self, raw):
        self.wfile.write(raw.encode())
        self.wfile.flush()

    def authorized(self):
        ok = (self.headers.get("Authorization") == "Bearer " + CANARY and self.headers.get("X-Team") == "data")
        if not ok:
            self.send_json({"error": "unauthorized"}, 401)
        return ok

    def in_session(self):
        ok = (self.headers.get("Mcp-Session-Id") == SESSION and
              self.headers.get("MCP-Protocol-Version") == VERSION)
        if not ok:
            note("bad-session", dict(self.headers))
            self.send_json({"error": "no session"}, 400)
        return ok

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        msg = json.loads(body)
        note("post", {"method": msg.get("method"), "accept": self.headers.get("Accept"),
                      "type": self.headers.get("Content-Type")})
        if not self.authorized():
            return
        if msg.get("method") == "initialize":
            time.sleep(0.2)     # what the gateway sends meanwhile must wait
            return self.send_json({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": VERSION, "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake-http", "version": "1"}}}, extra={"Mcp-Session-Id": SESSION})
        if not self.in_session():
            return
        if "id" not in msg or "method" not in msg:
            if msg.get("method") == "notifications/cancelled":
                note("cancelled", msg["params"]["requestId"])
            self.send_response(202)
            self.end_headers()
            return
        self.request_(msg)

    def request_(self, msg):
        rid = msg["id"]
        if msg["method"] == "tools/list":
            self.start_sse()
            # CRLF line ends, a comment, an event split over writes, two data lines.
            self.sse(": hello\r\n\r\nevent: message\r\nid: 1\r\ndata: ")
            time.sleep(0.05)
            self.sse(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                 "params": {"progressToken": 1, "progress": 1}}) + "\r")
            time.sleep(0.05)
            self.sse("\n\r\ndata: {\"jsonrpc\": \"2.0\", \"id\": %s,\r\ndata: \"result\": " % json.dumps(rid))
            self.sse(json.dumps({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}) + "}\r\n\r\n")
            return
        name = msg["params"]["name"]
        if name == "echo":
            return self.send_json({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": "Echo: " + msg["params"]["arguments"]["message"]}]}}, indent=2)
        if name == "fail":
            return self.send_json({"oops": True}, 500)
        if name == "big":
            return self.send_json({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": "x" * (2 << 20)}]}})
        if name == "batch":
            return self.send_json([{"jsonrpc": "2.0", "method": "notifications/message",
                                    "params": {"level": "info", "data": "batched"}},
                                   {"jsonrpc": "2.0", "id": rid, "result": {"content": []}}])
        if name == "gone":
            return self.send_json({"error": "session gone"}, 404)
        if name == "hang":
            self.start_sse()
            note("hang-started")
            try:
                for _ in range(200):
                    self.sse(": waiting\n\n")
                    time.sleep(0.05)
                note("hang-finished")
            except OSError:
                note("hang-aborted")

    def do_GET(self):
        note("get", self.headers.get("Accept"))
        if not self.authorized() or not self.in_session():
            return
        self.start_sse()
        try:
            self.sse("data: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n\n")
            for _ in range(400):
                self.sse(": ping\n\n")
                time.sleep(0.05)
        except OSError:
            pass

    def do_DELETE(self):
        note("delete", self.headers.get("Mcp-Session-Id"))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Gateway:
    """The gateway's end of the bridge's connection."""

    def __init__(self, url, creds, credential=True):
        self.me, theirs = socket.socketpair()
        cred = ["--credential-header=Authorization=tok"] if credential else []
        args = [BRIDGE, "--header=X-Team=data"] + cred + ["--max-bytes=4K", "--timeout=20", "--", url]
        self.p = subprocess.Popen(args,
                                  stdin=theirs, stdout=theirs, stderr=subprocess.PIPE,
                                  env={"CREDENTIALS_DIRECTORY": creds, "PATH": "/usr/bin:/bin",
                                       "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", ""),
                                       "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS", "")})
        theirs.close()
        self.buf = b""
        self.lines = []

    def send(self, obj):
        self.me.sendall(json.dumps(obj).encode() + b"\n")

    def request(self, rid, method, params=None):
        m = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def pump(self, timeout):
        r, _, _ = select.select([self.me], [], [], timeout)
        if not r:
            return False
        data = self.me.recv(1 << 20)
        if not data:
            return None
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self.lines.append(json.loads(line))
        return True

    def wait(self, pred, timeout=10):
        end = time.monotonic() + timeout
        while True:
            for m in self.lines:
                if pred(m):
                    self.lines.remove(m)
                    return m
            left = end - time.monotonic()
            if left <= 0 or self.pump(left) is None:
                return None

    def answer(self, rid, timeout=10):
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)

    def finish(self, timeout=15):
        self.me.close()
        try:
            _, err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            _, err = self.p.communicate()
        return self.p.returncode, err.decode(errors="replace")


def no_sanitizer(err, what):
    check("AddressSanitizer" not in err and "runtime error" not in err and "LeakSanitizer" not in err,
          "%s: no sanitizer report" % what)
    check(CANARY not in err, "%s: the credential is not in the bridge's messages" % what)


def main(work):
    creds = os.path.join(work, "creds")
    os.mkdir(creds)
    with open(os.path.join(creds, "tok"), "w") as f:
        f.write("Bearer " + CANARY + "\n")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/mcp" % httpd.server_address[1]

    g = Gateway(url, creds)
    g.request(1, "initialize", {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t"}})
    g.request(2, "tools/list")          # before initialize is answered: waits for the session
    a = g.answer(1)
    check(a is not None and a["result"]["protocolVersion"] == VERSION, "initialize answered: %s" % a)
    prog = g.wait(lambda m: m.get("method") == "notifications/progress")
    a = g.answer(2)
    check(prog is not None and a is not None and a["result"]["tools"][0]["name"] == "echo",
          "tools/list over an event stream (CRLF, split events, two data lines): %s %s" % (prog, a))
    g.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    lc = g.wait(lambda m: m.get("method") == "notifications/tools/list_changed")
    check(lc is not None, "the GET stream's list_changed reaches the gateway")
    check(seen("get") == ["text/event-stream"], "the GET stream asks for text/event-stream: %s" % seen("get"))

    g.request(3, "tools/call", {"name": "echo", "arguments": {"message": "hi\nthere"}})
    a = g.answer(3)
    check(a is not None and a["result"]["content"][0]["text"] == "Echo: hi\nthere",
          "a pretty-printed JSON answer comes back as one line: %s" % a)
    g.request(4, "tools/call", {"name": "fail", "arguments": {}})
    a = g.answer(4)
    check(a is not None and "HTTP 500" in a.get("error", {}).get("message", ""), "HTTP 500: an error: %s" % a)
    g.request(5, "tools/call", {"name": "big", "arguments": {}})
    a = g.answer(5)
    check(a is not None and "MAX_BYTES" in a.get("error", {}).get("message", ""), "over the cap: an error: %s" % a)
    g.request(6, "tools/call", {"name": "batch", "arguments": {}})
    log = g.wait(lambda m: m.get("method") == "notifications/message")
    a = g.answer(6)
    check(log is not None and a is not None and a.get("result") == {"content": []}, "a batch: one line each")

    g.request(7, "tools/call", {"name": "hang", "arguments": {}})
    check(wait_for(lambda: seen("hang-started")), "the hanging call reached the server")
    g.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "t"}})
    check(wait_for(lambda: seen("hang-aborted")) and wait_for(lambda: seen("cancelled") == [7]),
          "notifications/cancelled: the stream is cut and the server told: %s" % seen("cancelled"))
    g.request(8, "tools/call", {"name": "echo", "arguments": {"message": "after"}})
    a = g.answer(8)
    check(a is not None and a["result"]["content"][0]["text"] == "Echo: after", "a call after the cancellation")
    check(not [m for m in g.lines if m.get("id") == 7], "the cancelled call gets no answer")

    posts = seen("post")
    check(all(p["accept"] == "application/json, text/event-stream" and p["type"] == "application/json"
              for p in posts), "every POST: Accept both, Content-Type JSON")
    check(not seen("bad-session"), "every request after initialize carries the session and the revision: %s" %
          seen("bad-session"))
    check(posts and posts[0]["method"] == "initialize", "initialize went first: %s" % posts[:2])

    code, err = g.finish()
    check(code == 0 and seen("delete") == [SESSION], "EOF: DELETE of the session (%s), exit %s" %
          (seen("delete"), code))
    no_sanitizer(err, "the session")

    # The server forgets the session: the call fails, the bridge ends.
    g = Gateway(url, creds)
    g.request(1, "initialize", {"protocolVersion": VERSION})
    g.answer(1)
    g.request(2, "tools/call", {"name": "gone", "arguments": {}})
    a = g.answer(2)
    check(a is not None and "HTTP 404" in a.get("error", {}).get("message", ""), "404: an error: %s" % a)
    check(g.wait(lambda m: False, 10) is None and g.p.wait(10) == 1, "a forgotten session ends the bridge")
    code, err = g.finish()
    no_sanitizer(err, "a forgotten session")

    # Without the credential header: the server's 401 is initialize's error.
    g = Gateway(url, creds, credential=False)
    g.request(1, "initialize", {"protocolVersion": VERSION})
    a = g.answer(1)
    check(a is not None and "HTTP 401" in a.get("error", {}).get("message", ""), "no credential: 401: %s" % a)
    code, err = g.finish()
    no_sanitizer(err, "no credential header")

    # A server that is down: initialize fails with the reason.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = "http://127.0.0.1:%d/mcp" % s.getsockname()[1]
    g = Gateway(down, creds)
    g.request(1, "initialize", {"protocolVersion": VERSION})
    a = g.answer(1)
    check(a is not None and "HTTP request failed" in a.get("error", {}).get("message", ""),
          "a server that is down: %s" % a)
    code, err = g.finish()
    check(code == 0, "EOF without a session: exit %s" % code)
    no_sanitizer(err, "a server down")

    # Credentials: a line break inside, or none at all: never connects.
    with open(os.path.join(creds, "tok"), "w") as f:
        f.write("Bearer " + CANARY + "\nX-Evil: 1\n")
    for what in ("a line break in the credential", "no credential"):
        g = Gateway(url, creds)
        code, err = g.finish()
        check(code != 0 and "credential tok" in err, "%s: refused (%s): %s" % (what, code, err.strip()))
        no_sanitizer(err, what)
        if os.path.exists(os.path.join(creds, "tok")):
            os.unlink(os.path.join(creds, "tok"))
    check(seen("post").count({"method": "initialize", "accept": "application/json, text/event-stream",
                              "type": "application/json"}) == 3, "refused credentials never reached the server")
    httpd.shutdown()


work = tempfile.mkdtemp(prefix="bridge-component.")
try:
    main(work)
finally:
    shutil.rmtree(work, ignore_errors=True)
if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("ok")
