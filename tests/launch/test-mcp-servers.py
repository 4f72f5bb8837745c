#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-mcp-servers PACKAGE_DIR: a unit test of the sandbox's mcp_servers
package (src/launch/python/mcp_servers, code mode, issue 40) against a fake
gateway: one end of a socketpair in MCP_EXEC_TOOLS_FD, a thread at the other
answering the run protocol of CODEMODE.md as the test tells it (in order, out
of order, not at all, with errors, with garbage, or hanging up). What the
real gateway does is the integration tests'. Plain Python: runs under any
python3 >= 3.11 (the host's, and the trixie root's 3.13 through
tests/box/in-root)."""
import asyncio
import builtins
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import types
import warnings

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.abspath(sys.argv[1]))
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def fresh(fd_value):
    """A new copy of the package, as a new run's interpreter imports it, with
    MCP_EXEC_TOOLS_FD set to fd_value (None: unset)."""
    for k in [k for k in sys.modules if k == "mcp_servers" or k.startswith("mcp_servers.")]:
        del sys.modules[k]
    sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__module__", "") != "mcp_servers"]
    if fd_value is None:
        os.environ.pop("MCP_EXEC_TOOLS_FD", None)
    else:
        os.environ["MCP_EXEC_TOOLS_FD"] = fd_value
    import mcp_servers
    return mcp_servers


def within(fn, timeout=30):
    """("ok", value) or ("raised", exception), or ("hung", None) if fn does not return in time."""
    out = []

    def run():
        try:
            out.append(("ok", fn()))
        except BaseException as e:
            out.append(("raised", e))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    return out[0] if out else ("hung", None)


def raised(outcome, cls, *words):
    kind, value = outcome
    return kind == "raised" and type(value) is cls and all(w in str(value) for w in words)


ECHO = {"name": "echo", "description": "Echoes back the input",
        "inputSchema": {"type": "object", "properties": {
            "message": {"type": "string", "description": "Message to echo"},
            "times": {"type": ["integer", "null"], "description": "How often", "default": 1}},
            "required": ["message"]}}
TOOLS = [ECHO,
         {"name": "get-sum", "description": "Adds", "inputSchema": {"type": "object", "properties": {
             "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
          "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
         {"name": "args", "inputSchema": {"type": "object", "properties": {
             "x": {}, "opt": {"type": "string"}, "odd-name": {"type": "integer"}}}},
         {"name": "texts"}, {"name": "image"}, {"name": "empty"}, {"name": "fail"}, {"name": "shapeless"},
         {"name": "hang"}, {"name": "slow-echo", "inputSchema": {"properties": {"message": {}}}},
         {"name": "kind"}]
SERVERS = [{"name": "everything", "description": "The reference server", "tools": TOOLS},
           {"name": "memory", "description": "A knowledge graph", "tools": [dict(ECHO)]}]


class Gateway:
    """The fake gateway: reads the run's frames, answers "servers" with
    servers and each call as on_call says."""

    def __init__(self, servers=SERVERS, on_call=None):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.fd = str(theirs.detach())
        self.servers, self.on_call = servers, on_call or default_call
        self.requests, self.cond = [], threading.Condition()
        self.eof = threading.Event()
        self.send_lock = threading.Lock()
        self.early = None    # called with each frame as soon as it is read
        threading.Thread(target=self.loop, daemon=True).start()

    def read_exact(self, n):
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except OSError:
                chunk = b""
            if not chunk:
                return None
            data += chunk
        return data

    def loop(self):
        while True:
            head = self.read_exact(4)
            body = head and self.read_exact(int.from_bytes(head, "big"))
            if body is None:
                self.eof.set()
                return
            msg = json.loads(body)
            if self.early is not None:
                self.early(msg)
            with self.cond:
                self.requests.append(msg)
                self.cond.notify_all()
            if msg.get("op") == "servers":
                self.send({"id": msg["id"], "servers": self.servers})
            elif msg.get("op") == "call":
                self.on_call(self, msg)

    def send(self, obj):
        self.raw(json.dumps(obj).encode() if not isinstance(obj, bytes) else obj)

    def raw(self, body, length=None):
        with self.send_lock:
            try:
                self.sock.sendall((len(body) if length is None else length).to_bytes(4, "big") + body)
            except OSError:
                pass

    def calls(self, op="call"):
        with self.cond:
            return [m for m in self.requests if m.get("op") == op]

    def wait(self, pred, timeout=30):
        with self.cond:
            return self.cond.wait_for(lambda: pred(self.requests), timeout)

    def hang_up(self):
        self.sock.shutdown(socket.SHUT_RDWR)


def default_call(gw, msg):
    tool, args, n = msg["tool"], msg["arguments"], msg["id"]
    text = lambda t: {"type": "text", "text": t}  # noqa: E731
    results = {
        "echo": {"content": [text("Echo: %s" % args.get("message"))]},
        "get-sum": {"content": [text("ignored")], "structuredContent": {"sum": args.get("a", 0) + args.get("b", 0)}},
        "args": {"content": [], "structuredContent": {"got": args}},
        "texts": {"content": [text("one"), {"type": "image", "data": "AA==", "mimeType": "image/png"}, text("two")]},
        "image": {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
        "empty": {"content": []},
        "fail": {"content": [text("it broke: "), text("badly")], "isError": True},
    }
    if tool in results:
        gw.send({"id": n, "result": results[tool]})
    elif tool == "shapeless":
        gw.send({"id": n, "neither": True})
    elif tool == "kind":
        gw.send({"id": n, "error": {"kind": args["kind"], "message": "the gateway says no"}})
    elif tool == "hang":
        pass
    else:
        gw.send({"id": n, "error": {"kind": "refused", "message": "no tool %s" % tool}})


# ---------------------------------------------------------------- no tools connection

m = fresh(None)
check(m.servers() == [], "without MCP_EXEC_TOOLS_FD the package imports and lists no servers")
check("MCP_EXEC_TOOLS_FD" in m.describe(), "describe() says why there are none: %r" % m.describe())
out = within(lambda: m.call("everything", "echo", message="hi"))
check(raised(out, m.ToolsUnavailable, "no tools", "MCP_EXEC_TOOLS_FD"), "a call raises ToolsUnavailable: %s" % (out,))
out = within(lambda: asyncio.run(m.acall("everything", "echo", message="hi")))
check(raised(out, m.ToolsUnavailable, "MCP_EXEC_TOOLS_FD"), "so does acall(): %s" % (out,))
check(isinstance(out[1], m.ToolCallError), "ToolsUnavailable is a ToolCallError")
try:
    from mcp_servers import everything  # noqa: F401
    out = ("ok", None)
except ImportError as e:
    out = ("raised", e)
check(out[0] == "raised" and "MCP_EXEC_TOOLS_FD" in str(out[1]),
      "from mcp_servers import everything: ImportError saying why: %s" % (out,))
try:
    import mcp_servers.everything  # noqa: F401,F811
    out = ("ok", None)
except ModuleNotFoundError as e:
    out = ("raised", e)
check(out[0] == "raised" and "MCP_EXEC_TOOLS_FD" in str(out[1]), "import mcp_servers.everything too: %s" % (out,))

for value, words in (("abc", "not a descriptor number"), ("99999", "no usable socket"), ("pipe", "not a socket")):
    if value == "pipe":
        r, w = os.pipe()
        value = str(r)
    m = fresh(value)
    out = within(lambda: m.call("everything", "echo", message="hi"))
    check(raised(out, m.ToolsUnavailable, words), "MCP_EXEC_TOOLS_FD=%s: %s" % (value, out))

# ---------------------------------------------------------------- calls

gw = Gateway()
threads_before = threading.active_count()
m = fresh(gw.fd)
hasattr(m, "__wrapped__"), hasattr(m, "__path__"), hasattr(m, "__file__"), hasattr(m, "Nope")
check(gw.requests == [] and threading.active_count() == threads_before,
      "importing it (and probing dunder names) sends nothing and starts no thread")
check(m.servers() == ["everything", "memory"] and m.servers() == ["everything", "memory"]
      and len(gw.calls("servers")) == 1, "servers(): the gateway's list, asked once: %s" % gw.requests)
fd = int(gw.fd)
child = subprocess.run([sys.executable, "-B", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import mcp_servers\n"
                        "try:\n mcp_servers.call('everything', 'echo', message='x')\n"
                        "except mcp_servers.ToolsUnavailable as e:\n print(e)", os.path.abspath(sys.argv[1])],
                       capture_output=True, text=True, close_fds=False)
check(not os.get_inheritable(fd) and os.environ["MCP_EXEC_TOOLS_FD"] == "in-use-by-pid-%d" % os.getpid()
      and "belongs to process %d" % os.getpid() in child.stdout,
      "once used, the connection is not inherited by programs the code starts, and they say why: %r %r"
      % (child.stdout, child.stderr[-300:]))

from mcp_servers import everything  # noqa: E402
import mcp_servers.everything  # noqa: E402,F811
import mcp_servers.memory as memory  # noqa: E402
check(mcp_servers.everything is everything and m.everything is everything and sys.modules["mcp_servers.everything"]
      is everything and isinstance(everything, types.ModuleType) and memory.__name__ == "mcp_servers.memory",
      "from mcp_servers import everything, import mcp_servers.everything and m.everything: one module")

check(everything.echo(message="hi") == "Echo: hi", "a call returns the text of the result")
check(everything.get_sum(a=1, b=2) == {"sum": 3}, "structuredContent where the result has it")
check(everything.call("get-sum", a=2, b=3) == {"sum": 5} and m.call("everything", "get-sum", a=1, b=1) == {"sum": 2},
      "a tool by its own name: everything.call(\"get-sum\", ...) and mcp_servers.call(...)")
check(everything.texts() == "one\ntwo", "several texts joined with newlines")
check(everything.image() == [{"type": "image", "data": "AA==", "mimeType": "image/png"}] and everything.empty() == [],
      "no text: the content list")
raw = everything.call_raw("texts")
check(isinstance(raw, dict) and len(raw["content"]) == 3, "call_raw(): the whole CallToolResult")
raw = m.call_raw("everything", "fail")
check(raw.get("isError") is True, "call_raw() returns an isError result rather than raising")
check(everything.args(x=[1, {"y": None}], opt=m.NOT_SENT, **{"odd-name": 3}) == {"got": {"x": [1, {"y": None}],
                                                                                       "odd-name": 3}},
      "arguments sent as given; NOT_SENT ones not at all; a property that is no identifier through **{}")
last = gw.calls()[-1]
check(set(last) == {"id", "op", "server", "tool", "arguments"} and last["server"] == "everything"
      and last["tool"] == "args" and type(last["id"]) is int, "the call frame of the contract: %s" % last)
ids = [r["id"] for r in gw.requests]
check(len(set(ids)) == len(ids) and min(ids) >= 1, "ids unique and positive: %s" % ids)
check(memory.echo(message="m") == "Echo: m" and gw.calls()[-1]["server"] == "memory", "each server its own module")

# ---------------------------------------------------------------- client-side checks

sent = len(gw.calls())
for fn, words in ((lambda: everything.echo(),
                   ["everything.echo() missing 1 required keyword-only argument: 'message'"]),
                  (lambda: everything.echo("hi"), ["takes 0 positional arguments but 1 was given"]),
                  (lambda: everything.echo(message="hi", nope=1), ["unexpected keyword argument 'nope'"]),
                  (lambda: everything.get_sum(), ["missing 2 required keyword-only arguments: 'a' and 'b'"]),
                  (lambda: everything.echo(message=m.NOT_SENT), ["missing 1 required"]),
                  (lambda: m.call("everything", "echo", mesage="typo"), ["unexpected keyword argument 'mesage'"]),
                  (lambda: everything.call("echo", message="hi", x=1), ["unexpected keyword argument 'x'"]),
                  (lambda: asyncio.run(everything.echo_async(bad=1)), ["unexpected keyword argument 'bad'"]),
                  (lambda: asyncio.run(m.acall("everything", "echo")), ["missing 1 required"])):
    out = within(fn)
    check(raised(out, TypeError, *words), "TypeError before sending: %s" % (out,))
check(len(gw.calls()) == sent, "and nothing was sent for them")
out = within(lambda: everything.echo(message="x" * (1 << 20)))
check(raised(out, m.BadRequest, "over the 1048576"), "a request over 1 MiB: BadRequest before sending: %s" % (out,))
out = within(lambda: everything.echo(message="\ud800"))
check(raised(out, ValueError, "not valid Unicode"), "a lone surrogate: ValueError before sending: %s" % (out,))
out = within(lambda: everything.echo(message=float("nan")))
check(out[0] == "raised" and isinstance(out[1], ValueError), "NaN is no JSON: ValueError: %s" % (out,))
check(len(gw.calls()) == sent and everything.echo(message="still") == "Echo: still",
      "nothing was sent, and the connection still serves")
out = within(lambda: m.call("nosuch", "echo"))
check(raised(out, m.Refused, "no MCP server 'nosuch'", "everything, memory"), "an unknown server: Refused: %s" % (out,))
out = within(lambda: everything.call("nosuchtool"))
check(raised(out, m.Refused, "no tool nosuchtool") and gw.calls()[-1]["tool"] == "nosuchtool",
      "an unknown tool goes to the gateway, which decides (its list may have changed): %s" % (out,))

# ---------------------------------------------------------------- errors

out = within(lambda: everything.fail())
check(raised(out, m.ToolError, "everything.fail", "it broke: \nbadly") and out[1].text == "it broke: \nbadly"
      and out[1].result["isError"] is True and out[1].server == "everything" and out[1].tool == "fail",
      "isError: ToolError with the text, the result, the server and the tool: %s" % (out,))
for kind, cls in (("refused", m.Refused), ("limit", m.LimitReached), ("timeout", m.ToolTimeout),
                  ("upstream", m.UpstreamError), ("cancelled", m.Cancelled), ("bad_request", m.BadRequest),
                  ("something-new", m.ToolCallError)):
    out = within(lambda: everything.kind(kind=kind))
    out_async = within(lambda: asyncio.run(everything.kind_async(kind=kind)))
    check(raised(out, cls, "the gateway says no") and raised(out_async, cls, "the gateway says no")
          and isinstance(out[1], m.ToolCallError) and out[1].tool == "kind",
          "error kind %s: %s, sync and async: %s %s" % (kind, cls.__name__, out, out_async))
out = within(lambda: everything.shapeless())
check(raised(out, m.ProtocolError, "neither a result nor an error"),
      "an answer of no shape: ProtocolError: %s" % (out,))
gw.send({"id": 999999, "result": {"content": []}})
check(everything.echo(message="after") == "Echo: after", "an answer to no request is dropped; the connection serves")

# ---------------------------------------------------------------- concurrency


def out_of_order(n):
    """Answers the slow-echo calls in reverse once n of them are in flight."""
    held = []

    def on_call(gw, msg):
        if msg["tool"] != "slow-echo":
            return default_call(gw, msg)
        held.append(msg)
        if len(held) == n:
            for h in reversed(held):
                gw.send({"id": h["id"], "result": {"content": [{"type": "text", "text": h["arguments"]["message"]}]}})
            held.clear()
    return on_call


gw.on_call = out_of_order(20)


async def twenty():
    return await asyncio.gather(*[everything.slow_echo_async(message="m%d" % i) for i in range(20)])
out = within(lambda: asyncio.run(twenty()))
check(out == ("ok", ["m%d" % i for i in range(20)]),
      "asyncio.gather of 20 calls, answered in reverse once all 20 are in flight: each gets its own: %s" % (out,))


async def twenty_acall():
    return await asyncio.gather(*[m.acall("everything", "slow-echo", message="a%d" % i) for i in range(20)])
out = within(lambda: asyncio.run(twenty_acall()))
check(out == ("ok", ["a%d" % i for i in range(20)]), "the same with mcp_servers.acall: %s" % (out,))

gw.on_call = out_of_order(8)
results = {}
workers = [threading.Thread(target=lambda i=i: results.__setitem__(i, everything.call("slow-echo", message="t%d" % i)))
           for i in range(8)]
for t in workers:
    t.start()
for t in workers:
    t.join(30)
check(results == {i: "t%d" % i for i in range(8)}, "8 threads at once, answered in reverse: %s" % results)
gw.on_call = default_call

# A gateway that stops reading (after the header of the next frame) until a
# coroutine opens the gate: if a send blocked the event loop, the gate would
# open only when the wait gives up (30 s: a bound against a hang, no timing).
gate = threading.Event()
blocked = []
orig_loop_read = gw.read_exact


def gated_read(n):
    if not gate.is_set():
        if not gate.wait(30):
            blocked.append(True)
        gate.set()
    return orig_loop_read(n)


gw.read_exact = gated_read


async def big_sends():
    async def open_gate():
        for _ in range(3):
            await asyncio.sleep(0)
        gate.set()
    opener = asyncio.ensure_future(open_gate())
    big = "y" * (900 << 10)
    got = await asyncio.gather(*[everything.echo_async(message=big + str(i)) for i in range(6)])
    await opener
    return [len(g) for g in got]
out = within(lambda: asyncio.run(big_sends()), 90)
check(out[0] == "ok" and out[1] == [len("Echo: ") + (900 << 10) + 1] * 6 and not blocked,
      "6 requests of 900 KiB to a gateway not reading: the event loop is not blocked by the sends: %s %s"
      % (out[0], blocked))
gw.read_exact = orig_loop_read

# Cancelling: an asyncio task, and a KeyboardInterrupt in a sync call.


async def cancel_one():
    task = asyncio.ensure_future(everything.hang_async())
    for _ in range(3000):
        if gw.calls() and gw.calls()[-1]["tool"] == "hang":
            break
        await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
        return "not cancelled"
    except asyncio.CancelledError:
        return "cancelled"
n_before = len(gw.calls())
out = within(lambda: asyncio.run(cancel_one()))
hung_id = gw.calls()[-1]["id"]
gw.wait(lambda rs: any(r.get("op") == "cancel" for r in rs))
cancels = gw.calls("cancel")
check(out == ("ok", "cancelled") and cancels and cancels[-1]["target"] == hung_id and type(cancels[-1]["id"]) is int
      and cancels[-1]["id"] != hung_id, "a cancelled task sends {op: cancel, target: its id}: %s %s" % (out, cancels))
gw.send({"id": hung_id, "error": {"kind": "cancelled", "message": "cancelled"}})
check(everything.echo(message="x") == "Echo: x", "the late 'cancelled' answer is dropped; calls go on")


def interrupt_main(msg):
    # As soon as the frame is read: the signal lands anywhere from the
    # caller's send to its wait.
    if msg.get("op") == "call" and msg.get("tool") == "hang":
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def interrupting_call(gw, msg):
    if msg["tool"] == "hang":
        # If the interrupt were lost (CPython handles a signal that lands
        # just before a lock's wait blocks only when the wait ends), the call
        # would wait for an answer that never comes: 10 s later (a bound, not
        # a timing) one comes, and the loss is counted.
        def late():
            if msg["id"] not in {c["target"] for c in gw.calls("cancel")}:
                lost.append(msg["id"])
                gw.send({"id": msg["id"], "error": {"kind": "timeout", "message": "late"}})
        timer = threading.Timer(10, late)
        timer.daemon = True
        timer.start()
    return default_call(gw, msg)


gw.on_call, gw.early = interrupting_call, interrupt_main
outs, first, lost = [], len(gw.calls()), []
# Many times (each race once lost the interrupt, or sent a frame twice).
for _ in range(50):
    try:
        everything.hang()
        outs.append("returned")
    except KeyboardInterrupt:
        outs.append("interrupted")
    except m.ToolTimeout:
        outs.append("interrupt lost")
hung = [r["id"] for r in gw.calls()[first:]]
gw.wait(lambda rs: {r.get("target") for r in rs if r.get("op") == "cancel"}.issuperset(hung))
ids = [r["id"] for r in gw.requests]
check(outs == ["interrupted"] * 50 and not lost and len(hung) == 50 and len(set(ids)) == len(ids),
      "KeyboardInterrupt in a sync call (50 times): raised each time, none lost, every call sent once and cancelled "
      "at the gateway: %s, %d lost, %d calls, %d ids for %d frames" % (set(outs), len(lost), len(hung), len(set(ids)),
                                                                       len(ids)))
gw.on_call, gw.early = default_call, None
check(everything.echo(message="y") == "Echo: y", "calls go on after it")

# A forked child cannot speak on its parent's connection.
before = len(gw.requests)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)     # 3.12+: fork() with threads, as the code may do
    pid = os.fork()
if pid == 0:
    try:
        everything.echo(message="from the child")
        os._exit(1)
    except m.ToolsUnavailable as e:
        os._exit(0 if "forked child" in str(e) else 2)
    except BaseException:
        os._exit(3)
status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
check(status == 0 and len(gw.requests) == before and everything.echo(message="p") == "Echo: p",
      "a forked child gets ToolsUnavailable, sends nothing, and the parent's calls go on: %d" % status)

# ---------------------------------------------------------------- help() and describe()

buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    help(everything.echo)
text = buf.getvalue()
check("echo(*, message: str, times: int | None = NOT_SENT)" in text and "Echoes back the input" in text
      and "message (string, required): Message to echo" in text and "the server's default 1" in text,
      "help(everything.echo): signature, description, parameters: %r" % text)
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    help(everything)
text = buf.getvalue()
check("get_sum(*, a: float, b: float)" in text and "async echo_async(" in text and "Read-only" in text,
      "help(everything) lists the tools and their async variants: %r" % text[:300])
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    help(m)
check("describe(" in buf.getvalue() and "ToolError" in buf.getvalue(), "help(mcp_servers) works")
d = m.describe()
check(d == "everything: The reference server (11 tools)\nmemory: A knowledge graph (1 tool)", "describe(): %r" % d)
d = m.describe("everything")
check(d.startswith("everything: The reference server\n\neverything.echo(*, message: str")
      and "everything.get_sum(*, a: float, b: float)" in d
      and "everything.args(*, x=NOT_SENT, opt: str = NOT_SENT, **kwargs)" in d
      and "'odd-name' (pass it as **{'odd-name': ...})" in d, "describe(server): %r" % d[:400])
check(m.describe("everything.get-sum") == m.describe("everything", "get-sum") == everything.describe("get-sum")
      and "Adds" in everything.describe("get-sum"), "describe(server, tool) and describe('server.tool')")
check(everything.tools() == [t["name"] for t in TOOLS], "everything.tools(): the names as the server gave them")
check(not asyncio.iscoroutinefunction(everything.echo) and asyncio.iscoroutinefunction(everything.echo_async),
      "echo is a function, echo_async a coroutine function")

# ---------------------------------------------------------------- hostile schemas

HOSTILE = [{"name": n} for n in ("__class__", "__getattr__", "__dict__", "call", "describe", "tools", "class",
                                 "get-sum", "get_sum", "a.b", "a-b", "x y", "\uff45cho", "echo", "echo_async",
                                 "__import__('os').system('false')", "_private", "")]
HOSTILE += [
    {"name": "quote", "description": 'Says """ and \'\'\' \x00 and \x1b[31mred\nline two',
     "inputSchema": {"type": "object", "properties": {
         "__class__": {"type": "string"}, "class": {"type": "string"}, "my-param": {"type": "integer"},
         "kwargs": {}, "self": {"type": "string", "description": "a \x00 NUL"}, "\u00e9t\u00e9": {}},
         "required": [[1], 5, {"a": 1}, "self", "self"]}},
    {"name": "open-schema", "inputSchema": "not a dict"},
    {"name": "no-props", "inputSchema": {"properties": [1, 2], "required": "self", "additionalProperties": False}},
    {"name": "bad-types", "inputSchema": {"properties": {"p": {"type": [1, "string", None]}, "q": {"type": 5},
                                                           "r": "not a dict", "s": {"type": ["object", "fancy"]}}}},
    {"name": 7}, "not a dict", None, {"name": "echo", "description": "a duplicate: dropped"},
]
BIG = [{"name": "t%d" % i, "description": "tool %d" % i,
        "inputSchema": {"properties": {"v": {"type": "integer"}}, "required": ["v"]}} for i in range(10000)]
HOSTILE_SERVERS = [
    {"name": "hostile", "description": 'Quotes """ \x00 and \x1b[2J', "tools": HOSTILE},
    {"name": "call", "description": "named as the package's call()", "tools": [dict(ECHO)]},
    {"name": "class", "tools": [dict(ECHO)]},
    {"name": "Bad-Name", "tools": [dict(ECHO)]},
    {"name": "hostile", "tools": []}, {"name": 5}, "junk",
    {"name": "big", "tools": BIG},
]


def hostile_call(gw, msg):
    gw.send({"id": msg["id"], "result": {"content": [], "structuredContent": {
        "server": msg["server"], "tool": msg["tool"], "arguments": msg["arguments"]}}})


gw2 = Gateway(HOSTILE_SERVERS, hostile_call)
m = fresh(gw2.fd)
api = {k: getattr(m, k) for k in m.__all__}
banned = []


def no_code(*args, **kwargs):
    banned.append(args[:1])
    raise AssertionError("exec/eval/compile called")


saved = builtins.exec, builtins.eval, builtins.compile
builtins.exec = builtins.eval = builtins.compile = no_code
try:
    names = m.servers()
    hostile = m.hostile
    big = m.big
    mods = [hostile, big, m.server("call"), m.server("class"), m.server("Bad-Name")]
    attrs = {mod.__name__: {a: getattr(mod, a) for a in dir(mod)} for mod in mods}
    described = m.describe("hostile") + m.describe("big") + m.describe()
finally:
    builtins.exec, builtins.eval, builtins.compile = saved
check(not banned, "building the modules, every tool's function and describe() never calls exec, eval or compile")
check(names == ["hostile", "call", "class", "Bad-Name", "big"], "servers(): junk and duplicates dropped: %s" % names)
check(all(getattr(m, k) is v for k, v in api.items()) and callable(m.call) and m.call.__module__ == "mcp_servers",
      "no server replaces the package's own names")
try:
    import mcp_servers.call  # noqa: F401
    out = ("ok", None)
except ModuleNotFoundError as e:
    out = ("raised", e)
check(out[0] == "raised" and "server('call')" in str(out[1]) and m.call is api["call"],
      "import mcp_servers.call: refused, saying how to reach the server; mcp_servers.call unchanged: %s" % (out,))
check(not hasattr(m, "class") and not hasattr(m, "Bad-Name") and m.server("call").echo(message="x") ==
      {"server": "call", "tool": "echo", "arguments": {"message": "x"}}
      and m.server("class").call("echo", message="k")["server"] == "class",
      "servers named as keywords or as the package's names: through mcp_servers.server(name)")
own = {k: getattr(hostile, k) for k in ("call", "acall", "call_raw", "describe", "tools")}
check(all(f.__module__ == "mcp_servers.hostile" and f.__name__ == k for k, f in own.items())
      and hostile.__class__ is types.ModuleType and hostile.__getattr__.__name__ == "__getattr__"
      and isinstance(hostile.__dict__, dict), "tools named call, describe, tools, __class__, __getattr__, __dict__ "
                                              "replace none of the module's own names")
check(hostile.call("call") == {"server": "hostile", "tool": "call", "arguments": {}}
      and hostile.call("__class__")["tool"] == "__class__" and hostile.call("a.b")["tool"] == "a.b"
      and hostile.call("__import__('os').system('false')")["tool"] == "__import__('os').system('false')",
      "each of them is reachable by name through call()")
check(hostile.get_sum()["tool"] == "get_sum" and not hasattr(hostile, "a_b") and not hasattr(hostile, "x_y")
      and not hasattr(hostile, "_private"), "get-sum and get_sum clash: the tool of exactly that name has it; a.b "
                                            "and a-b clash: neither; 'x y', '_private': no attribute")
check(not hasattr(hostile, "\uff45cho") and hostile.echo()["tool"] == "echo" and
      not asyncio.iscoroutinefunction(hostile.echo_async) and hostile.echo_async()["tool"] == "echo_async"
      and asyncio.iscoroutinefunction(hostile.echo_async_async),
      "a non-ASCII name gets no attribute (NFKC would fold it to echo); a tool named echo_async keeps its name")
out = within(lambda: getattr(hostile, "class"))
check(raised(out, AttributeError, "hostile.call('class', ...)"), "getattr(hostile, 'class') says how: %s" % (out,))
quote = hostile.quote
sig = str(quote.__signature__)
check(sig == "(*, __class__: str = NOT_SENT, kwargs=NOT_SENT, self: str, **kwargs_)",
      "parameters: identifiers kept (__class__, self, kwargs), keywords and other names through **kwargs_: %s" % sig)
check(quote(self="s", **{"class": "c", "my-param": 1, "__class__": "k", "\u00e9t\u00e9": 2})["arguments"] ==
      {"self": "s", "class": "c", "my-param": 1, "__class__": "k", "\u00e9t\u00e9": 2},
      "and they are sent as given")
out = within(lambda: quote(**{"class": "c"}))
check(raised(out, TypeError, "missing 1 required keyword-only argument: 'self'"),
      "junk in required ignored: %s" % (out,))
out = within(lambda: quote(self="s", other=1))
check(raised(out, TypeError, "unexpected keyword argument 'other'"), "unknown names refused: %s" % (out,))
doc = quote.__doc__
check('Says """ and \'\'\' \\x00 and \\x1b[31mred\nline two' in doc and "\x00" not in doc and "\x1b" not in doc
      and "\x00" not in described and "\x1b" not in described and "\x00" not in hostile.__doc__,
      "quotes kept as text; NULs and escapes shown, never passed on: %r" % doc[:80])
check(str(hostile.open_schema.__signature__) == "(**kwargs)" and hostile.open_schema(a=1, b=2)["arguments"] ==
      {"a": 1, "b": 2}, "an inputSchema that is no object: any keyword argument")
out = within(lambda: hostile.no_props(x=1))
check(str(hostile.no_props.__signature__) == "()" and raised(out, TypeError, "unexpected keyword argument 'x'"),
      "properties not an object, additionalProperties false: no arguments: %s" % (out,))
check(str(hostile.bad_types.__signature__) == "(*, p=NOT_SENT, q=NOT_SENT, r=NOT_SENT, s=NOT_SENT)"
      and hostile.bad_types(p=1)["arguments"] == {"p": 1},
      "types of junk: no annotation: %s" % hostile.bad_types.__signature__)
check(hostile.tools()[:3] == ["__class__", "__getattr__", "__dict__"] and len(hostile.tools()) == 22,
      "tools(): junk entries and duplicates dropped: %s" % hostile.tools())
check(len(big.tools()) == 10000 and big.t9999(v=1)["tool"] == "t9999" and len(attrs["mcp_servers.big"]) > 20000
      and described.count("big.t") >= 10000, "10,000 tools: each a function, an async variant, described")
out = within(lambda: big.t5(v=1, w=2))
check(raised(out, TypeError, "big.t5() got an unexpected keyword argument 'w'"), "and checked: %s" % (out,))
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    help(quote)
check("quote(*, __class__: str = NOT_SENT, kwargs=NOT_SENT, self: str, **kwargs_)" in buf.getvalue()
      and "'my-param' (pass it as **{'my-param': ...})" in buf.getvalue(), "help(hostile.quote): %r" % buf.getvalue())

# ---------------------------------------------------------------- the connection's end


def closing(after_n=1, how="hang_up"):
    """A gateway that reads after_n calls, then ends as how says."""
    held = []

    def on_call(gw, msg):
        held.append(msg)
        if len(held) < after_n:
            return
        if how == "hang_up":
            gw.hang_up()
        elif how == "half-frame":
            gw.sock.sendall(b"\x00\x00\x01\x00{\"id\":")
            gw.hang_up()
        elif how == "huge":
            gw.raw(b"", length=0xFFFFFFFF)
        elif how == "over-cap":
            gw.raw(b"", length=(64 << 20) + 1)
        elif how == "deep":
            gw.raw(b"[" * 200000 + b"]" * 200000)
        else:
            gw.raw(how)
    return on_call


for how, cls, words in (("hang_up", "ConnectionClosed", "closed"),
                        ("half-frame", "ConnectionClosed", "in the middle of a frame"),
                        ("huge", "ProtocolError", "4294967295 bytes"),
                        ("over-cap", "ProtocolError", "67108865 bytes"),
                        (b"not json", "ProtocolError", "not JSON"),
                        (b"\xff\xfe{}", "ProtocolError", "not JSON"),
                        (b'{"id": 1, "result": NaN}', "ProtocolError", "not JSON"),
                        ("deep", "ProtocolError", "not JSON"),
                        (b"[1, 2]", "ProtocolError", "not an answer"),
                        (b'{"result": {}}', "ProtocolError", "not an answer"),
                        (b'{"id": "1", "result": {}}', "ProtocolError", "not an answer")):
    g = Gateway(on_call=closing(1, how))
    m = fresh(g.fd)
    e = m.everything
    out = within(lambda: e.echo(message="x"))
    eof = g.eof.wait(30)
    later = within(lambda: e.echo(message="y"), 10 if out[0] != "hung" else 0)
    check(raised(out, getattr(m, cls), *words) and raised(later, getattr(m, cls), *words) and eof
          and out[1].server == "everything",
          "%s from the gateway mid-call: %s (no hang), then every call; the run's end closed: %s / %s"
          % (how if isinstance(how, str) else how[:20], cls, out, later))

g = Gateway(on_call=closing(3))
m = fresh(g.fd)
e = m.everything


async def three():
    return await asyncio.gather(*[e.echo_async(message="%d" % i) for i in range(3)], return_exceptions=True)
out = within(lambda: asyncio.run(three()))
check(out[0] == "ok" and [type(x).__name__ for x in out[1]] == ["ConnectionClosed"] * 3,
      "EOF with three async calls in flight: each raises ConnectionClosed: %s" % (out,))
check(m.servers() == ["everything", "memory"] and "echo" in e.describe(),
      "servers() and describe() still answer from what the gateway listed")

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
