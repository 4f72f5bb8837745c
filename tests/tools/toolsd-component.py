#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Component test of mcp-exec-toolsd (not an integration test: no systemd,
no broker, no sandbox). The real @modelcontextprotocol/server-everything and
a misbehaving fake (fake-upstream.py) listen on unix sockets through
systemd-socket-activate --inetd -a (a fresh instance per connection, as the
upstream units' Accept=yes); toolsd is pointed at them with its test-only
--config-dir= and --upstream-dir=. This script plays the broker (control
socket, "run" with one end of a socketpair, "end") and the run (frames).

With a bridge (mcp-exec-upstream-http, in builds with libcurl), a
Streamable HTTP server too: server-everything in its streamableHttp mode on
loopback, its bridge behind systemd-socket-activate as its unit would run it.

argv: TOOLSD NODE EVERYTHING_INDEX_JS FAKE_UPSTREAM_PY [BRIDGE]"""
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

toolsd, node, everything, fake = sys.argv[1:5]
bridge = sys.argv[5] if len(sys.argv) > 5 else ""
work = tempfile.mkdtemp(prefix="toolsd-component.")
conf, up = os.path.join(work, "servers.d"), os.path.join(work, "upstream")
os.mkdir(conf)
os.mkdir(up)
fake_log = os.path.join(work, "fake.log")
failures = []
procs = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def write_conf(name, text):
    with open(os.path.join(conf, name + ".conf"), "w") as f:
        f.write(text)


write_conf("everything", 'DESCRIPTION="the reference server"\n'
           'COMMAND="/usr/bin/node /opt/everything/index.js stdio"\n'
           'TOOLS="echo get-sum get-env get-structured-content trigger-long-running-operation"\n'
           "MAX_CALLS=400\nMAX_CONCURRENT=8\nCALL_TIMEOUT_S=30\n")
write_conf("fake", "# the misbehaving one\nDESCRIPTION=\"a fake\"\nCOMMAND=/usr/bin/true\n"
           'CONFIRMED="wipe_confirmed"\nMAX_CALLS=40\nMAX_BYTES=1M\nCALL_TIMEOUT_S=2\nMAX_CONCURRENT=4\n')
write_conf("limited", "COMMAND=/usr/bin/true\nMAX_CALLS=3\n")
write_conf("other", 'COMMAND=/usr/bin/true\nCALLERS="uid:4242"\n')
write_conf("broken", "COMMAND=/usr/bin/true\nNO_SUCH_KEY=1\n")
if bridge:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        http_port = probe.getsockname()[1]
    write_conf("web", 'URL="http://127.0.0.1:%d/mcp"\nTOOLS="echo get-sum"\n' % http_port)
else:
    # Without the bridge a URL server is off.
    write_conf("web", 'URL="http://127.0.0.1:1/mcp"\n')
served = ["everything", "fake", "limited"] + (["web"] if bridge else [])
write_conf("full", 'COMMAND=/usr/bin/true\nCALLERS="uid:3000"\n')

# An upstream socket whose backlog is full: connect() gets EAGAIN.
full = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
full.bind(os.path.join(up, "full.sock"))
full.listen(0)
fillers = []
while True:
    f = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    f.setblocking(False)
    try:
        f.connect(os.path.join(up, "full.sock"))
    except BlockingIOError:
        f.close()
        break
    fillers.append(f)


def activate(name, argv):
    path = os.path.join(up, name + ".sock")
    p = subprocess.Popen(["systemd-socket-activate", "--inetd", "-a", "-l", path] + argv,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    procs.append(p)
    for _ in range(100):
        if os.path.exists(path):
            return
        time.sleep(0.05)
    raise SystemExit("systemd-socket-activate did not listen on " + path)


activate("everything", [node, everything, "stdio"])
activate("fake", [sys.executable, fake, fake_log])
activate("limited", [sys.executable, fake, fake_log])
if bridge:
    procs.append(subprocess.Popen([node, everything, "streamableHttp"], env=dict(os.environ, PORT=str(http_port)),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    for _ in range(200):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", http_port)) == 0:
                break
        time.sleep(0.05)
    activate("web", [bridge, "--timeout=30", "--", "http://127.0.0.1:%d/mcp" % http_port])

ctl_path = os.path.join(work, "tools.sock")
daemon = subprocess.Popen([toolsd, "--listen=" + ctl_path, "--config-dir=" + conf, "--upstream-dir=" + up],
                          env=dict(os.environ, MCP_EXEC_LOG_LEVEL="info"), stderr=subprocess.PIPE, text=True)
procs.append(daemon)
for _ in range(100):
    if os.path.exists(ctl_path):
        break
    time.sleep(0.05)


class Run:
    """The broker's control connection and the run's end of the socketpair."""

    def __init__(self, caller="uid:1000", run_id="run1"):
        self.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctl.settimeout(30)
        self.ctl.connect(ctl_path)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        socket.send_fds(self.ctl, [json.dumps({"op": "run", "run": run_id, "caller": caller}).encode()],
                        [theirs.fileno()])
        theirs.close()
        self.reply = json.loads(self.ctl.recv(65536))
        self.s = mine
        self.s.settimeout(30)
        self.next_id = 1
        self.early = {}
        # As the broker: what the gateway asked to confirm, and how to
        # answer (accept, reason), or None to leave it open.
        self.asked = []
        self.answer = lambda ask: (False, "no client to ask")

    def send(self, obj):
        data = json.dumps(obj).encode()
        self.s.sendall(struct.pack(">I", len(data)) + data)

    def recv_exact(self, n):
        b = b""
        while len(b) < n:
            chunk = self.s.recv(n - len(b))
            if not chunk:
                return None
            b += chunk
        return b

    def recv(self):
        h = self.recv_exact(4)
        if h is None:
            return None
        return json.loads(self.recv_exact(struct.unpack(">I", h)[0]))

    def request(self, obj):
        i = self.next_id
        self.next_id += 1
        self.send(dict(obj, id=i))
        return i

    def confirm_pending(self):
        """Answers what the gateway asked on the control connection."""
        while select.select([self.ctl], [], [], 0)[0]:
            ask = json.loads(self.ctl.recv(65536))
            if ask.get("op") != "confirm":
                raise AssertionError("unexpected on the control connection: %s" % ask)
            self.asked.append(ask)
            a = self.answer(ask)
            if a is not None:
                self.ctl.send(json.dumps({"op": "confirmed", "id": ask["id"], "accept": a[0],
                                          "reason": a[1]}).encode())

    def wait(self, i):
        while i not in self.early:
            while not select.select([self.s], [], [], 0.05)[0]:
                self.confirm_pending()
            m = self.recv()
            if m is None:
                raise EOFError("the gateway closed the run's connection")
            self.early[m["id"]] = m
        return self.early.pop(i)

    def call(self, server, tool, **args):
        return self.wait(self.request({"op": "call", "server": server, "tool": tool, "arguments": args}))

    def counts(self, question):
        self.ctl.send(json.dumps(question).encode())
        return json.loads(self.ctl.recv(65536))

    def end(self):
        self.ctl.send(json.dumps({"op": "end"}).encode())
        return json.loads(self.ctl.recv(65536))


def text_of(answer):
    return "".join(c.get("text", "") for c in answer.get("result", {}).get("content", []))


def kind_of(answer):
    return answer.get("error", {}).get("kind")


def fake_cancels(n):
    """Waits (bounded) until the fakes logged n notifications/cancelled:
    they arrive after the answer the gateway gave the run."""
    for _ in range(100):
        found = [x["cancelled"] for x in fake_log_lines() if "cancelled" in x]
        if len(found) >= n:
            return found
        time.sleep(0.05)
    return found


def fake_log_lines():
    try:
        with open(fake_log) as f:
            return [json.loads(x) for x in f]
    except FileNotFoundError:
        return []


try:
    if not os.path.exists(ctl_path):
        raise SystemExit("toolsd did not listen")
    r = Run()
    check(r.reply == {"ok": True, "servers": served},
          "run: the caller's servers, not another caller's or a broken file's: %s" % r.reply)

    listing = r.wait(r.request({"op": "servers"}))
    by_name = {s["name"]: s for s in listing.get("servers", [])}
    names = sorted(t["name"] for t in by_name.get("everything", {}).get("tools", []))
    check(names == ["echo", "get-env", "get-structured-content", "get-sum", "trigger-long-running-operation"],
          "servers: everything's tools are the allowed ones as listed: %s" % names)
    check(by_name.get("everything", {}).get("description") == "the reference server", "servers: the description")
    get_sum = [t for t in by_name["everything"]["tools"] if t["name"] == "get-sum"]
    check(bool(get_sum) and "inputSchema" in get_sum[0], "servers: a tool keeps its inputSchema")
    fake_names = [t["name"] for t in by_name.get("fake", {}).get("tools", [])]
    check("ok" in fake_names and "hang" in fake_names, "servers: both pages of a paged tools/list")

    a = r.call("everything", "get-sum", a=2, b=3)
    check("5" in text_of(a), "call get-sum: %s" % text_of(a))

    if bridge:
        web_tools = sorted(t["name"] for t in by_name.get("web", {}).get("tools", []))
        check(web_tools == ["echo", "get-sum"], "servers: the HTTP server's allowed tools: %s" % by_name.get("web"))
        w = r.call("web", "echo", message="over http")
        check(text_of(w) == "Echo: over http", "a Streamable HTTP server's echo through its bridge: %s" % w)
        w = r.call("web", "get-sum", a=40, b=2)
        check("42" in text_of(w), "its get-sum: %s" % w)
        ids = [r.request({"op": "call", "server": "web", "tool": "echo", "arguments": {"message": "c%d" % k}})
               for k in range(4)]
        check(all(text_of(r.wait(i)) == "Echo: c%d" % k for k, i in enumerate(ids)),
              "4 concurrent calls to the HTTP server, each answered by id")

    good = 0
    for i in range(200):
        if text_of(r.call("everything", "echo", message="m%d" % i)).endswith("m%d" % i):
            good += 1
    check(good == 200, "200 calls in a row: %d answered right" % good)

    # 8 at once: each answer carries its own id and its own sum.
    ids = {r.request({"op": "call", "server": "everything", "tool": "get-sum", "arguments": {"a": k, "b": 1000}}): k
           for k in range(8)}
    right = sum(1 for i, k in ids.items() if str(k + 1000) in text_of(r.wait(i)))
    check(right == 8, "8 concurrent calls answered by id: %d right" % right)

    # Out of order, deterministically: gate answers only once open has.
    g = r.request({"op": "call", "server": "fake", "tool": "gate", "arguments": {}})
    o = r.request({"op": "call", "server": "fake", "tool": "open", "arguments": {}})
    first = r.recv()
    second = r.recv()
    check(first["id"] == o and second["id"] == g and text_of(second) == "gate passed",
          "answers in any order: the later call answered first")

    check(kind_of(r.call("everything", "get-tiny-image")) == "refused", "a tool not in TOOLS is refused")
    check(kind_of(r.call("everything", "no-such-tool")) == "refused", "an unknown tool is refused")
    check(kind_of(r.call("other", "ok")) == "refused", "a server of another caller is refused")
    w = r.call("fake", "wipe")
    check(kind_of(w) == "refused" and "no client to ask" in w["error"]["message"] and
          [(x["server"], x["tool"]) for x in r.asked] == [("fake", "wipe")],
          "a destructive tool not in CONFIRMED is asked of the broker, refused on its no: %s" % w)
    check("arguments" not in json.dumps(r.asked), "the question carries no arguments: %s" % r.asked)
    r.answer = lambda ask: (True, "")
    check(text_of(r.call("fake", "wipe", path="x")) == "wipe done", "the user's yes lets it through")
    r.answer = lambda ask: (False, "the user declined")
    w = r.call("fake", "wipe")
    check(kind_of(w) == "refused" and "the user declined" in w["error"]["message"], "the user's no: %s" % w)
    check([x["called"] for x in fake_log_lines() if "called" in x] == ["wipe"],
          "only the confirmed call went upstream")
    # An answer for an id never asked, or asked and answered, lets nothing through.
    r.answer = lambda ask: None
    pending = r.request({"op": "call", "server": "fake", "tool": "wipe", "arguments": {}})
    for _ in range(500):
        r.confirm_pending()
        if len(r.asked) >= 4:
            break
        time.sleep(0.01)
    check(len(r.asked) == 4, "the question is asked before any answer")
    last = r.asked[-1]["id"]
    for forged in (last + 1, last - 1, 0, "x"):
        r.ctl.send(json.dumps({"op": "confirmed", "id": forged, "accept": True}).encode())
    # The run itself cannot answer: it has no way onto the control connection.
    r.send({"id": r.next_id, "op": "confirmed", "confirm": last, "accept": True})
    check(kind_of(r.wait(r.next_id)) == "bad_request", "a run's own \"confirmed\" is a bad request")
    r.next_id += 1
    r.ctl.send(json.dumps({"op": "confirmed", "id": last, "accept": False, "reason": "late"}).encode())
    w = r.wait(pending)
    check(kind_of(w) == "refused" and "late" in w["error"]["message"],
          "only the answer to the open id counts: %s" % w)
    r.ctl.send(json.dumps({"op": "confirmed", "id": last, "accept": True}).encode())
    check([x["called"] for x in fake_log_lines() if "called" in x] == ["wipe"], "nothing else went upstream")
    # Never answered: the call's own timeout ends it.
    check(kind_of(r.call("fake", "wipe")) == "timeout", "an unanswered question: the call times out")
    r.answer = lambda ask: (False, "no client to ask")
    check(text_of(r.call("fake", "wipe_confirmed")) == "wipe_confirmed done",
          "a destructive tool in CONFIRMED is called")
    check(kind_of(r.call("fake", "twin")) == "refused",
          "a tool listed twice, read-only and destructive, is refused as destructive")
    # A run asks at most 16 times; then it is refused without asking.
    for _ in range(16):
        if len(r.asked) < 16:
            r.call("fake", "wipe")
    w = r.call("fake", "wipe")
    check(kind_of(w) == "refused" and "too many confirmations" in w["error"]["message"] and len(r.asked) == 16,
          "the 17th question of a run is not asked: %s" % w)

    dup = r.request({"op": "call", "server": "fake", "tool": "hang", "arguments": {}})
    r.send({"id": dup, "op": "call", "server": "fake", "tool": "ok", "arguments": {}})
    check(kind_of(r.wait(dup)) == "bad_request", "a duplicate id in flight is a bad request")
    h = r.wait(dup)
    check(kind_of(h) == "timeout", "a hanging upstream: the call times out: %s" % h)
    cancelled = fake_cancels(1)
    check(len(cancelled) == 1 and cancelled[0]["reason"] == "timeout",
          "the upstream got notifications/cancelled: %s" % cancelled)

    c = r.request({"op": "call", "server": "fake", "tool": "hang", "arguments": {}})
    r.send({"id": r.next_id, "op": "cancel", "target": c})
    r.next_id += 1
    check(kind_of(r.wait(c)) == "cancelled", "cancel: the call answers cancelled")
    check(len(fake_cancels(2)) == 2, "cancel: the upstream got notifications/cancelled")

    a = r.call("fake", "ask")
    answers = [x for x in fake_log_lines() if "answer" in x]
    check(text_of(a) == "asked: -32601" and answers and answers[-1]["answer"]["error"]["code"] == -32601,
          "a server-to-client request is answered -32601: %s" % text_of(a))

    check(text_of(r.call("fake", "add")) == "added", "add a tool (list_changed)")
    check(text_of(r.call("fake", "added")) == "added done", "list_changed: the new tool is listed and called")

    check(text_of(r.call("fake", "flood")) == "flooded", "a flood of progress notifications is tolerated")

    pid1 = text_of(r.call("fake", "pid"))
    check(kind_of(r.call("fake", "crash")) == "upstream", "an upstream that dies: kind upstream")
    pid2 = text_of(r.call("fake", "pid"))
    check(pid2.isdigit() and pid1 != pid2, "the next call connects again (%s, then %s)" % (pid1, pid2))
    check(kind_of(r.call("fake", "garbage")) == "upstream", "an upstream that sends garbage: kind upstream")
    check(text_of(r.call("fake", "ok")) == "ok done", "and the next call works again")
    check(kind_of(r.call("fake", "huge")) == "upstream", "an answer over MAX_BYTES: kind upstream")

    other = Run(caller="uid:2000", run_id="run2")
    pid_other = text_of(other.call("fake", "pid"))
    check(pid_other.isdigit() and pid_other != text_of(r.call("fake", "pid")),
          "another caller gets its own upstream instance")
    for _ in range(3):
        other.call("limited", "ok")
    check(kind_of(other.call("limited", "ok")) == "limit", "MAX_CALLS reached gives limit")
    busy = Run(caller="uid:3000", run_id="run6")
    a = busy.call("full", "ok")
    check(kind_of(a) == "upstream" and "cannot connect" in a["error"]["message"],
          "an upstream socket with a full backlog fails the call at once: %s" % a)

    # Garbage from a run closes that run only.
    bad = Run(run_id="run3")
    bad.s.sendall(b"\x00\x00\x00\x05hello")
    check(bad.recv() is None, "a frame that is not JSON closes the run's connection")
    huge = Run(run_id="run4")
    huge.s.sendall(struct.pack(">I", 2 * 1024 * 1024) + b"{")
    check(huge.recv() is None, "a frame over 1 MiB closes the run's connection")
    noid = Run(run_id="run5")
    noid.send({"op": "servers"})
    check(noid.recv() is None, "a request without an id closes the run's connection")
    check(text_of(r.call("everything", "echo", message="still")).endswith("still"), "other runs go on")
    check(bad.end() == {"op": "counts", "servers": {}}, "end of a closed run answers its counts")

    # "counts" answers the counts so far with the broker's id, the run going on (a session's).
    so_far = r.counts({"op": "counts", "id": 7})
    ev = so_far.get("servers", {}).get("everything", {})
    check(so_far.get("op") == "counts" and so_far.get("id") == 7 and ev.get("calls") == 212 and
          ev.get("refused") == 2, "counts answers the counts so far: %s" % so_far)
    check(r.counts({"op": "counts"}).get("ok") is False, "counts without an id is refused")
    check(r.counts({"op": "counts", "id": -1}).get("ok") is False, "counts with a negative id is refused")
    check("servers" in r.wait(r.request({"op": "servers"})), "the run goes on after counts")

    # "end" cancels what is in flight and answers the counts.
    pending = r.request({"op": "call", "server": "fake", "tool": "hang", "arguments": {}})
    counts = r.end()
    ev = counts.get("servers", {}).get("everything", {})
    check(counts.get("op") == "counts" and ev.get("calls") == 212 and ev.get("refused") == 2,
          "end answers counts: %s" % counts.get("servers", {}).get("everything"))
    check(r.recv() is None, "end closes the run's connection (call %d cut)" % pending)
    cut = fake_cancels(3)
    check(len(cut) == 3 and cut[2]["reason"] == "the run ended", "end cancels the run's calls upstream: %s" % cut[2:])

    d = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    d.connect(ctl_path)
    d.send(json.dumps({"op": "describe", "caller": "uid:2000"}).encode())
    desc = json.loads(d.recv(65536))
    check(desc.get("ok") and [s["name"] for s in desc["servers"]] == served,
          "describe: %s" % desc)
    check(daemon.poll() is None, "toolsd is still running")
finally:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM) if p is not daemon else p.terminate()
        except ProcessLookupError:
            pass
    try:
        _, err = daemon.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        daemon.kill()
        _, err = daemon.communicate()
    for p in procs:
        p.wait()
    shutil.rmtree(work, ignore_errors=True)

check(daemon.returncode == 0, "toolsd exits cleanly on SIGTERM (%s)" % daemon.returncode)
check("AddressSanitizer" not in err and "runtime error" not in err and "LeakSanitizer" not in err,
      "no sanitizer report")
journal = [line for line in err.splitlines() if "tools call" in line]
check(any("everything.get-sum: ok" in line for line in journal) and
      any("limited.ok: limit" in line for line in journal) and
      any("other.ok: refused" in line for line in journal) and
      any("fake.hang: timeout" in line and "TOOLS_DURATION_MS=" in line for line in journal),
      "the journal has each call's outcome, refusals too")
check(any("fake.wipe: ok" in line and "TOOLS_CONFIRMED=user" in line for line in journal) and
      any("fake.wipe_confirmed: ok" in line and "TOOLS_CONFIRMED=operator" in line for line in journal) and
      any("fake.wipe: refused" in line and "TOOLS_CONFIRMED=refused" in line for line in journal) and
      not any("TOOLS_CONFIRMED" in line for line in journal if "everything." in line),
      "the journal says how each destructive call was confirmed, or that it was not")
check(not any("m199" in line or "still" in line for line in err.splitlines()), "no argument in the log")
check("broken.conf:2: unknown key" in err, "a bad file is named with its line")
if failures:
    print("stderr of toolsd:\n" + err[-3000:])
    sys.exit(1)
