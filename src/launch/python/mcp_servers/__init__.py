# SPDX-License-Identifier: LGPL-2.1-or-later
"""The MCP servers this run may use, as Python functions (code mode).

    import mcp_servers
    mcp_servers.servers()                  # ['everything', 'memory']
    print(mcp_servers.describe())          # one line per server
    print(mcp_servers.describe("everything"))   # every tool's signature and description
    from mcp_servers import everything     # or: import mcp_servers.everything
    everything.echo(message="hi")          # keyword arguments from the tool's inputSchema
    everything.call("get-sum", a=1, b=2)   # a tool whose name is no Python identifier
    await everything.echo_async(message="hi")           # concurrent calls (asyncio)
    await mcp_servers.acall("everything", "echo", message="hi")

A call returns the tool's structuredContent where the result has it, else the
text of its text content (several texts joined with newlines), else the content
list (call_raw() returns the whole CallToolResult). It raises ToolError when the
tool reports an error (isError), and Refused, LimitReached, ToolTimeout,
UpstreamError, Cancelled or BadRequest when the gateway does; all of them, and
ToolsUnavailable (no tools in this run, or the connection is gone) and
ProtocolError (the gateway sent garbage), are ToolCallError. Optional
parameters default to NOT_SENT: not sent at all, the server applies its own
default.

The calls go over the connection the broker handed this run (the descriptor in
MCP_EXEC_TOOLS_FD) to mcp-exec-toolsd, which checks each against the
operator's policy; nothing here can reach more than that. Tool names,
parameters and descriptions come from the upstream servers: they are data,
never code (no exec, eval or compile of them), and none can replace this
package's own names.
"""
# Cost: only os and sys at import (both always loaded); json, socket,
# threading, inspect and asyncio are imported on first use, and nothing
# touches the connection until a server is named or a call is made.
import os as _os
import sys as _sys

MAX_REQUEST_BYTES = 1 << 20     # run -> gateway, per frame (the run protocol's limit)
MAX_ANSWER_BYTES = 64 << 20     # gateway -> run: past the gateway's own caps, only against garbage


class ToolCallError(Exception):
    """A tool call (or the list of servers) failed. kind names the reason;
    server and tool name the call where there is one."""
    kind = "error"

    def __init__(self, message, server=None, tool=None):
        super().__init__(message)
        self.server = server
        self.tool = tool


class ToolsUnavailable(ToolCallError):
    """This run has no tools connection (MCP_EXEC_TOOLS_FD unset), or it is gone."""
    kind = "unavailable"


class ConnectionClosed(ToolsUnavailable):
    """The gateway closed the run's connection (the run ended, or it refused
    the run's frames): every call in flight and every later one fails."""
    kind = "closed"


class ProtocolError(ToolCallError):
    """The gateway sent what the run protocol does not allow (a frame too
    big, bad JSON, an answer of no known shape): the connection is dropped."""
    kind = "protocol"


class ToolError(ToolCallError):
    """The tool ran and reported an error (isError). text: its text; result:
    the whole CallToolResult."""
    kind = "tool"

    def __init__(self, message, server=None, tool=None, text="", result=None):
        super().__init__(message, server, tool)
        self.text = text
        self.result = result


class Refused(ToolCallError):
    """The operator's policy refused the call (server or tool not allowed or
    unknown, a destructive tool without confirmation)."""
    kind = "refused"


class LimitReached(ToolCallError):
    """A per-run cap of the server (calls, bytes, concurrency) was reached."""
    kind = "limit"


class ToolTimeout(ToolCallError):
    """The call took longer than the server's per-call timeout."""
    kind = "timeout"


class UpstreamError(ToolCallError):
    """The upstream server crashed, hung up, sent garbage or a JSON-RPC error."""
    kind = "upstream"


class Cancelled(ToolCallError):
    """The call was cancelled."""
    kind = "cancelled"


class BadRequest(ToolCallError):
    """The gateway (or this package, before sending) found the request malformed."""
    kind = "bad_request"


_KINDS = {c.kind: c for c in (Refused, LimitReached, ToolTimeout, UpstreamError, Cancelled, BadRequest)}


class _NotSent:
    """The default of a tool's optional parameters: the argument is not sent."""
    __slots__ = ()

    def __repr__(self):
        return "NOT_SENT"

    def __reduce__(self):
        return "NOT_SENT"


NOT_SENT = _NotSent()

# ---------------------------------------------------------------- the connection


class _Waiter:
    """One request in flight, answered from the reader thread: a sync caller
    waits on an Event, an async one on a future of its own event loop."""
    __slots__ = ("event", "loop", "future", "answer", "error")

    def __init__(self, loop=None, future=None):
        import threading
        self.event = threading.Event() if loop is None else None
        self.loop, self.future = loop, future
        self.answer = self.error = None

    def deliver(self, answer, error):
        if self.loop is None:
            self.answer, self.error = answer, error
            self.event.set()
            return
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future, answer, error)
        except RuntimeError:
            pass    # its event loop is closed: nobody waits any more


def _resolve(future, answer, error):
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(answer)


class _Connection:
    """The run's end of the run protocol: frames of a 4-byte big-endian length
    and one UTF-8 JSON object. One reader thread reads every answer and hands
    it to its request by id; one writer thread sends what callers queue
    (under one lock). Both start with the first request."""

    def __init__(self, sock):
        import itertools
        import threading
        self.sock = sock
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.wakeup = threading.Condition(self.lock)
        self.pending = {}           # id -> _Waiter
        self.queue = []             # frames for the writer, in order
        self.closed = None          # (class, message) once the connection is over
        self.reader = self.writer = None
        self.rbuf = bytearray()

    # -- sending

    def request(self, msg, waiter, n=None):
        """Sends msg (a dict, without id) as request n (a new id if None) and
        registers waiter for its answer; returns the id. Raises before
        sending if msg cannot be sent."""
        import json
        if n is None:
            n = next(self.ids)
        try:
            body = json.dumps({"id": n, **msg}, ensure_ascii=False, allow_nan=False,
                              separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError("the arguments hold a string that is not valid Unicode (%s)" % e.reason) from None
        if len(body) > MAX_REQUEST_BYTES:
            raise BadRequest("the request is %d bytes of JSON, over the %d a run may send in one" %
                             (len(body), MAX_REQUEST_BYTES), msg.get("server"), msg.get("tool"))
        with self.lock:
            self._raise_if_closed(msg)
            if waiter is not None:
                self.pending[n] = waiter
            self._send_locked(len(body).to_bytes(4, "big") + body)
            if self.reader is None:
                self._start("reader", self._read_loop)
        return n

    def _send_locked(self, frame):
        """Queues frame for the writer thread, which alone sends: a caller
        (an event loop's too) never blocks on a slow gateway, and a signal's
        exception in the caller (KeyboardInterrupt) cannot cut a frame in
        two or send it twice, as it could between a send() and the count of
        what it sent."""
        self.queue.append(frame)
        if self.writer is None:
            self._start("writer", self._write_loop)
        else:
            self.wakeup.notify()

    def _write_loop(self):
        import socket
        while True:
            with self.lock:
                while not self.queue and self.closed is None:
                    # In slices: a notify() cut short by a signal's
                    # exception in the caller costs a moment, not a hang.
                    self.wakeup.wait(0.5)
                if self.closed is not None:
                    return
                # What came meanwhile goes in one write.
                data = self.queue[0] if len(self.queue) == 1 else b"".join(self.queue)
                self.queue.clear()
            try:
                self.sock.sendall(data, socket.MSG_NOSIGNAL)
            except OSError as e:
                with self.lock:
                    self._close_locked(ConnectionClosed, "the tools connection failed: %s" % e)
                return

    def cancel(self, n):
        """The caller gave up on request n (cancelled task, KeyboardInterrupt):
        its answer is dropped and the gateway is asked to cancel it."""
        with self.lock:
            if self.pending.pop(n, None) is None or self.closed is not None:
                return
        try:
            self.request({"op": "cancel", "target": n}, None)
        except ToolCallError:
            pass

    # -- receiving

    def _read_exact(self, n):
        buf = self.rbuf
        while len(buf) < n:
            chunk = self.sock.recv(max(65536, min(n - len(buf), 1 << 22)))
            if not chunk:
                return None
            buf += chunk
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def _read_one(self):
        """The next answer as (id, message); raises ToolCallError at the end."""
        import json
        head = self._read_exact(4)
        if head is None:
            raise ConnectionClosed("the tools connection closed" +
                                   (" in the middle of a frame" if self.rbuf else ""))
        size = int.from_bytes(head, "big")
        if size > MAX_ANSWER_BYTES:
            raise ProtocolError("the gateway sent a frame of %d bytes, over the %d this package reads" %
                                (size, MAX_ANSWER_BYTES))
        body = self._read_exact(size)
        if body is None:
            raise ConnectionClosed("the tools connection closed in the middle of a frame")
        try:
            msg = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:
            raise ProtocolError("the gateway sent a frame that is not JSON (%s)" % type(e).__name__) from None
        n = msg.get("id") if isinstance(msg, dict) else None
        if type(n) is not int:
            raise ProtocolError("the gateway sent a frame that is not an answer (no integer id)")
        return n, msg

    def _read_loop(self):
        why = (ConnectionClosed, "the tools connection closed")
        try:
            while True:
                n, msg = self._read_one()
                with self.lock:
                    waiter = self.pending.pop(n, None)
                # An id nobody waits for: a request given up (cancel()); dropped.
                if waiter is not None:
                    waiter.deliver(msg, None)
        except ToolCallError as e:
            why = (type(e), str(e))
        except OSError as e:
            why = (ConnectionClosed, "the tools connection failed: %s" % e)
        except BaseException as e:  # never leave a caller waiting, whatever happened
            why = (ProtocolError, "reading the tools connection failed: %s" % type(e).__name__)
        with self.lock:
            self._close_locked(*why)

    # -- the end

    def _start(self, what, target):
        import threading
        # Daemon threads: the run's interpreter exits without waiting for them.
        t = threading.Thread(target=target, name="mcp_servers-" + what, daemon=True)
        setattr(self, what, t)
        t.start()

    def _close_locked(self, cls, message):
        import socket
        if self.closed is not None:
            return
        self.closed = (cls, message)
        pending, self.pending, self.queue = self.pending, {}, []
        self.wakeup.notify_all()
        for waiter in pending.values():
            waiter.deliver(None, cls(message))
        # Wakes the reader (or the writer) blocked on it; the gateway sees the end.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _raise_if_closed(self, msg):
        if self.closed is not None:
            cls, message = self.closed
            raise cls(message, msg.get("server"), msg.get("tool"))

    def after_fork_in_child(self):
        """A forked child shares the socket but none of the threads: it must
        not speak on its parent's connection. Its own copy is closed."""
        import threading
        self.lock = threading.Lock()
        self.wakeup = threading.Condition(self.lock)
        self.pending, self.queue, self.reader, self.writer = {}, [], None, None
        self.closed = (ToolsUnavailable, "the tools connection belongs to the process that imported "
                       "mcp_servers (pid %d); a forked child cannot call tools" % _os.getppid())
        try:
            self.sock.close()
        except OSError:
            pass

    # -- one round trip

    def roundtrip(self, msg):
        """Sends msg and waits for its answer (a dict)."""
        waiter = _Waiter()
        # The id first: an interrupt anywhere after it cancels what was sent.
        n = next(self.ids)
        try:
            self.request(msg, waiter, n)
            # In slices: a signal that lands just before the wait blocks
            # would otherwise be handled (KeyboardInterrupt: a session's
            # timeout) only once the answer comes.
            while not waiter.event.wait(0.2):
                pass
        except BaseException:
            self.cancel(n) if msg.get("op") == "call" else self._forget(n)
            raise
        if waiter.error is not None:
            raise _located(waiter.error, msg)
        return waiter.answer

    async def aroundtrip(self, msg):
        import asyncio
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        n = next(self.ids)
        try:
            self.request(msg, _Waiter(loop, future), n)
            answer = await future
        except ToolCallError as e:
            raise _located(e, msg) from None
        except BaseException:
            self.cancel(n) if msg.get("op") == "call" else self._forget(n)
            raise
        return answer

    def _forget(self, n):
        with self.lock:
            self.pending.pop(n, None)


def _no_constant(name):
    raise ValueError("%s is not JSON" % name)


def _located(error, msg):
    """The connection's error, naming the call it failed."""
    if error.server is None and msg.get("server") is not None:
        error.server, error.tool = msg.get("server"), msg.get("tool")
    return error


_state = {"connection": None, "tried": False, "why": None, "catalog": None}


def _state_lock():
    lock = _state.get("lock")
    if lock is None:
        import threading
        lock = _state.setdefault("lock", threading.Lock())
    return lock


def _open():
    """The connection, or None if this run has none (the reason in _state)."""
    if _state["tried"]:
        return _state["connection"]
    with _state_lock():
        if _state["tried"]:
            return _state["connection"]
        value = _os.environ.get("MCP_EXEC_TOOLS_FD")
        if value is None:
            _state["why"] = "this run has no tools (MCP_EXEC_TOOLS_FD is not set: no MCP server was given to it)"
        else:
            _state["connection"] = _connect(value)
        _state["tried"] = True
        return _state["connection"]


_IN_USE = "in-use-by-pid-"


def _connect(value):
    import socket
    import stat
    if value.startswith(_IN_USE):
        _state["why"] = ("this process has no tools: the run's tools connection belongs to process %s, which "
                         "used it first (one connection carries one process's calls)" % value[len(_IN_USE):])
        return None
    if not (value.isascii() and value.isdigit() and len(value) < 10):
        _state["why"] = "this run has no tools: MCP_EXEC_TOOLS_FD=%r is not a descriptor number" % value
        return None
    fd = int(value)
    try:
        if not stat.S_ISSOCK(_os.fstat(fd).st_mode):
            raise OSError("not a socket")
        sock = socket.socket(fileno=fd)
        if sock.type != socket.SOCK_STREAM:
            sock.detach()
            raise OSError("not a stream socket")
    except OSError as e:
        _state["why"] = "this run has no tools: MCP_EXEC_TOOLS_FD=%s is no usable socket (%s)" % (value, e)
        return None
    # Programs the code starts from now on do not get it (two processes'
    # frames and answers would mix on the one stream), and learn why from
    # the variable; sends and receives block (the threads rely on that).
    sock.set_inheritable(False)
    sock.setblocking(True)
    _os.environ["MCP_EXEC_TOOLS_FD"] = _IN_USE + str(_os.getpid())
    return _Connection(sock)


def _connection():
    c = _open()
    if c is None:
        raise ToolsUnavailable(_state["why"])
    return c


def _after_fork_in_child():
    if "lock" in _state:
        import threading
        _state["lock"] = threading.Lock()
    if _state["connection"] is not None:
        _state["connection"].after_fork_in_child()


_os.register_at_fork(after_in_child=_after_fork_in_child)

# ---------------------------------------------------------------- the catalog

_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def _is_server_name(name):
    """A server's module name, as servers.d names it: [a-z][a-z0-9_]{0,31}, no keyword."""
    import keyword
    return (isinstance(name, str) and 0 < len(name) <= 32 and name[0] in _LOWER and
            _NAME_CHARS.issuperset(name) and not keyword.iskeyword(name))


def _is_identifier(name):
    """An ASCII identifier that is no keyword: what may be written as an
    attribute or a keyword argument (non-ASCII identifiers are NFKC-folded by
    the parser, so "ｅcho" in the source would be "echo")."""
    import keyword
    return isinstance(name, str) and name.isascii() and name.isidentifier() and not keyword.iskeyword(name)


class _Server:
    """One server as the gateway listed it. Everything derived from its
    tools is computed on first use: a server of 10,000 tools costs nothing
    until its module is asked for one."""

    def __init__(self, name, description, tools):
        self.name, self.description, self.tools = name, description, tools
        self._attrs = None
        self.attr_of = {}           # tool name -> its (sync) attribute
        self.specs = {}
        self.module = None

    def attrs(self):
        """{attribute: (tool name, async)}: a tool's attribute is its name
        with "-" and "." made "_" if that is an identifier, not a keyword,
        does not start with "_" and is not one of the module's own names;
        if several tools come to one attribute, only the tool of exactly
        that name has it. Then NAME_async for each, where that is free."""
        if self._attrs is not None:
            return self._attrs
        wanted = {}
        for t in self.tools:
            a = t.replace("-", "_").replace(".", "_")
            if _is_identifier(a) and not a.startswith("_") and a not in _SERVER_OWN:
                wanted.setdefault(a, []).append(t)
        out = {}
        for a, names in wanted.items():
            if len(names) == 1:
                out[a] = (names[0], False)
            elif a in names:
                out[a] = (a, False)
        for a, (t, _) in list(out.items()):
            self.attr_of[t] = a
            b = a + "_async"
            if b not in out and b not in wanted and b not in _SERVER_OWN:
                out[b] = (t, True)
        self._attrs = out
        return out

    def spec(self, tool):
        s = self.specs.get(tool)
        if s is None:
            s = self.specs[tool] = _Spec(self.tools[tool])
        return s


def _parse_catalog(answer):
    servers = answer.get("servers") if isinstance(answer, dict) else None
    if not isinstance(servers, list):
        _raise_error(answer, None, None)
        raise ProtocolError("the gateway's list of servers is not a list")
    out = {}
    for s in servers:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or s["name"] in out:
            continue
        tools = {}
        for t in s.get("tools") if isinstance(s.get("tools"), list) else ():
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                tools.setdefault(t["name"], t)
        desc = s.get("description")
        out[s["name"]] = _Server(s["name"], desc if isinstance(desc, str) else "", tools)
    return out


def _catalog():
    """{name: _Server} of this run (empty without tools), asked once."""
    cat = _state["catalog"]
    if cat is not None:
        return cat
    c = _open()
    if c is None:
        _state["catalog"] = {}
        return _state["catalog"]
    with _state_lock():
        if _state["catalog"] is None:
            _state["catalog"] = _parse_catalog(c.roundtrip({"op": "servers"}))
    return _state["catalog"]


async def _acatalog():
    cat = _state["catalog"]
    if cat is not None:
        return cat
    c = _open()
    if c is None:
        return _catalog()
    cat = _parse_catalog(await c.aroundtrip({"op": "servers"}))
    with _state_lock():
        if _state["catalog"] is None:
            _state["catalog"] = cat
    return _state["catalog"]


def _find(server, tool=None):
    """The _Server named server (Refused if this run has none) and its spec
    of tool, None if the server did not list it (the gateway decides)."""
    if not isinstance(server, str) or (tool is not None and not isinstance(tool, str)):
        raise TypeError("server and tool names are strings")
    return _found(_catalog(), server, tool)


def _found(cat, server, tool):
    s = cat.get(server)
    if s is None:
        if _state["connection"] is None:
            raise ToolsUnavailable(_state["why"] or "this run has no tools", server, tool)
        raise Refused("this run has no MCP server %r (its servers: %s)" % (server, ", ".join(cat) or "none"),
                      server, tool)
    return s, (s.spec(tool) if tool is not None and tool in s.tools else None)

# ---------------------------------------------------------------- a tool's parameters

_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
               "object": dict, "null": None}


class _Spec:
    """What inputSchema says of a tool's arguments, read defensively: any
    part that is not of the expected type counts as absent."""

    def __init__(self, tool):
        self.tool = tool
        schema = tool.get("inputSchema")
        schema = schema if isinstance(schema, dict) else {}
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        self.props = {k: (v if isinstance(v, dict) else {}) for k, v in props.items()}
        req = schema.get("required")
        req = [r for r in req if isinstance(r, str)] if isinstance(req, list) else []
        self.required = list(dict.fromkeys(req))
        for r in self.required:
            self.props.setdefault(r, {})
        extra = schema.get("additionalProperties")
        # No properties: whatever the schema allows; else only them, unless it says more.
        self.open = (not self.props and extra is not False) or extra is True or isinstance(extra, dict)
        self._signature = None

    def check(self, qualname, args, kwargs):
        """The arguments to send, or TypeError as Python gives for a function
        of these keyword-only parameters."""
        if args:
            raise TypeError("%s() takes 0 positional arguments but %d %s given" %
                            (qualname, len(args), "was" if len(args) == 1 else "were"))
        out = {}
        for k, v in kwargs.items():
            if v is NOT_SENT:
                continue
            if k not in self.props and not self.open:
                raise TypeError("%s() got an unexpected keyword argument %r" % (qualname, k))
            out[k] = v
        missing = [r for r in self.required if r not in out]
        if missing:
            names = [repr(m) for m in missing]
            listed = names[0] if len(names) == 1 else "%s and %s" % (", ".join(names[:-1]) +
                                                                     ("," if len(names) > 2 else ""), names[-1])
            raise TypeError("%s() missing %d required keyword-only argument%s: %s" %
                            (qualname, len(missing), "" if len(missing) == 1 else "s", listed))
        return out

    def signature(self):
        """keyword-only parameters for the properties that are identifiers
        (required: no default; the others: NOT_SENT), **kwargs for the rest."""
        if self._signature is not None:
            return self._signature
        import inspect
        P = inspect.Parameter
        params, rest = [], self.open
        for name, ps in self.props.items():
            if not _is_identifier(name):
                rest = True
                continue
            default = P.empty if name in self.required else NOT_SENT
            params.append(P(name, P.KEYWORD_ONLY, default=default, annotation=_annotation(ps)))
        if rest:
            var = "kwargs"
            while var in self.props:
                var += "_"
            params.append(P(var, P.VAR_KEYWORD))
        self._signature = inspect.Signature(params)
        return self._signature


def _annotation(ps):
    """str, int | None...: the Python types of a property's JSON types, for help()."""
    import inspect
    t = ps.get("type")
    names = [t] if isinstance(t, str) else t if isinstance(t, list) else []
    if not names or not all(isinstance(n, str) and n in _JSON_TYPES for n in names):
        return inspect.Parameter.empty
    types = [_JSON_TYPES[n] for n in dict.fromkeys(names)]
    out = types[0]
    for x in types[1:]:
        out = out | x if out is not None else x | None
    return out


# Control characters of untrusted text are shown, not passed on to a terminal.
_CONTROLS = {c: "\\x%02x" % c for c in list(range(32)) + [127] if c not in (9, 10)}


def _clean(text):
    return text.translate(_CONTROLS) if isinstance(text, str) else ""


def _short(value):
    import json
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = "?"
    return _clean(text if len(text) <= 80 else text[:77] + "...")


def _type_text(ps):
    t = ps.get("type")
    if isinstance(t, list):
        t = "|".join(x for x in t if isinstance(x, str))
    if not isinstance(t, str) or not t:
        return "any"
    items = ps.get("items")
    if t == "array" and isinstance(items, dict) and isinstance(items.get("type"), str):
        return "array of " + _clean(items["type"])
    return _clean(t)


def _tool_doc(server, tool_name, spec):
    tool = spec.tool
    lines = []
    title, desc = tool.get("title"), tool.get("description")
    if isinstance(title, str) and title.strip() and title != tool_name:
        lines.append(_clean(title).strip())
    if isinstance(desc, str) and desc.strip():
        lines.append(_clean(desc).strip())
    lines += [""] if lines else []
    lines.append("Tool %s of the MCP server %s." % (_clean(repr(tool_name)), server))
    if spec.props:
        lines += ["", "Parameters:"]
        for name, ps in spec.props.items():
            bits = [_type_text(ps), "required" if name in spec.required else "optional"]
            if isinstance(ps.get("enum"), list):
                bits.append("one of " + ", ".join(_short(v) for v in ps["enum"][:20]) +
                            (", ..." if len(ps["enum"]) > 20 else ""))
            if "default" in ps:
                bits.append("the server's default " + _short(ps["default"]))
            head = name if _is_identifier(name) else "%r (pass it as **{%r: ...})" % (name, name)
            line = "  %s (%s)" % (_clean(head), ", ".join(bits))
            pdesc = ps.get("description")
            if isinstance(pdesc, str) and pdesc.strip():
                line += ": " + _clean(pdesc).strip().replace("\n", "\n      ")
            lines.append(line)
    if spec.open:
        lines.append("Other keyword arguments are passed on as they are.")
    hints = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    if hints.get("readOnlyHint") is True:
        lines += ["", "Read-only (the server says)."]
    elif hints.get("destructiveHint") is True:
        lines += ["", "Destructive (the server says): refused unless the operator allowed it."]
    lines += ["", "Returns its structuredContent" + (" (it has an outputSchema)" if "outputSchema" in tool else
                                                     " if any, else its text, else its content list") + "."]
    return "\n".join(lines)

# ---------------------------------------------------------------- results


def _raise_error(answer, server, tool):
    err = answer.get("error") if isinstance(answer, dict) else None
    if err is None:
        return
    kind = err.get("kind") if isinstance(err, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    cls = _KINDS.get(kind, ToolCallError)
    where = "%s.%s: " % (server, tool) if tool is not None else ""
    raise cls(where + (message if isinstance(message, str) else "%s" % (kind or "error")), server, tool)


def _result(answer, server, tool):
    """The CallToolResult of an answer, or the answer's error raised."""
    _raise_error(answer, server, tool)
    result = answer.get("result")
    if not isinstance(result, dict):
        raise ProtocolError("%s.%s: the gateway's answer has neither a result nor an error" % (server, tool),
                            server, tool)
    return result


def _texts(result):
    content = result.get("content")
    content = content if isinstance(content, list) else []
    return content, [c["text"] for c in content
                     if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)]


def _value(result, server, tool):
    """structuredContent, else the joined text, else the content list; ToolError on isError."""
    content, texts = _texts(result)
    if result.get("isError") is True:
        text = "\n".join(texts)
        shown = text if len(text) <= 2000 else text[:2000] + "..."
        raise ToolError("%s.%s: %s" % (server, tool, shown or "the tool reported an error"), server, tool,
                        text, result)
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    if texts:
        return "\n".join(texts)
    return content


def _call_msg(server, tool, arguments):
    return {"op": "call", "server": server, "tool": tool, "arguments": arguments}


def _arguments(server, tool, kwargs):
    s, spec = _find(server, tool)
    if spec is None:
        return {k: v for k, v in kwargs.items() if v is not NOT_SENT}
    return spec.check("%s.%s" % (server, tool), (), kwargs)


def _raw(server, tool, arguments):
    return _result(_connection().roundtrip(_call_msg(server, tool, arguments)), server, tool)


async def _araw(server, tool, arguments):
    return _result(await _connection().aroundtrip(_call_msg(server, tool, arguments)), server, tool)

# ---------------------------------------------------------------- the API


def servers():
    """The names of the MCP servers this run may use (empty without tools)."""
    return list(_catalog())


def call(server, tool, /, **arguments):
    """Calls tool of server with arguments; returns its structuredContent,
    else its text, else its content list. Raises ToolError on isError, and
    the other ToolCallError classes when the gateway refuses or fails."""
    return _value(_raw(server, tool, _arguments(server, tool, arguments)), server, tool)


async def acall(server, tool, /, **arguments):
    """call(), for asyncio: awaits the answer without blocking the event loop."""
    if not isinstance(server, str) or not isinstance(tool, str):
        raise TypeError("server and tool names are strings")
    _, spec = _found(await _acatalog(), server, tool)
    if spec is not None:
        arguments = spec.check("%s.%s" % (server, tool), (), arguments)
    return _value(await _araw(server, tool, {k: v for k, v in arguments.items() if v is not NOT_SENT}),
                  server, tool)


def call_raw(server, tool, /, **arguments):
    """The whole CallToolResult (a dict: content, structuredContent?,
    isError?), isError included: for images and other non-text content."""
    return _raw(server, tool, _arguments(server, tool, arguments))


def server(name):
    """The module of server name: for a server whose name is no attribute
    (a keyword, or one of this package's own names such as "call")."""
    _find(name)
    return _server_module(name)


def describe(name=None, tool=None):
    """Text for reading: without arguments the servers (one line each);
    describe("everything") every tool of that server with its signature and
    description; describe("everything", "echo") or describe("everything.echo")
    one tool."""
    if name is None:
        cat = _catalog()
        if not cat:
            return "No MCP servers: %s." % (_state["why"] or "this run may use none")
        return "\n".join("%s: %s (%d tool%s)" % (s.name, _clean(s.description).strip() or "-", len(s.tools),
                                                 "" if len(s.tools) == 1 else "s") for s in cat.values())
    if tool is None and isinstance(name, str) and "." in name:
        name, tool = name.split(".", 1)
    s, _ = _find(name)
    if tool is not None:
        if tool not in s.tools:
            raise LookupError("the server %s lists no tool %r" % (name, tool))
        return _describe_tool(s, tool)
    head = "%s: %s" % (s.name, _clean(s.description).strip() or "-")
    return "\n\n".join([head] + [_describe_tool(s, t) for t in s.tools])


def _describe_tool(s, tool):
    spec = s.spec(tool)
    s.attrs()
    attr = s.attr_of.get(tool)
    inner = str(spec.signature())[1:-1]
    if attr is not None:
        head = "%s.%s(%s)" % (s.name, attr, inner)
    else:
        head = "%s.call(%s%s)" % (s.name, _clean(repr(tool)), ", " + inner if inner else "")
    return head + "\n    " + _tool_doc(s.name, tool, spec).replace("\n", "\n    ").replace("\n    \n", "\n\n")

# ---------------------------------------------------------------- one module per server


def _tool_function(s, tool, attr, is_async):
    """The function of one tool, made from data: a closure given a name, a
    docstring and an inspect.Signature."""
    spec = s.spec(tool)
    qualname = "%s.%s" % (s.name, tool)
    server = s.name
    if is_async:
        async def function(*args, **kwargs):
            return _value(await _araw(server, tool, spec.check(qualname, args, kwargs)), server, tool)
    else:
        def function(*args, **kwargs):
            return _value(_raw(server, tool, spec.check(qualname, args, kwargs)), server, tool)
    function.__name__ = function.__qualname__ = attr
    function.__module__ = "mcp_servers." + server
    function.__doc__ = _tool_doc(server, tool, spec) + (
        "\n\nAsync: await it (the calls of several tasks run concurrently)." if is_async else "")
    function.__signature__ = spec.signature()
    return function


# The names of a server's module that no tool can take.
_SERVER_OWN = frozenset(("call", "acall", "call_raw", "describe", "tools"))


def _server_module(name):
    s = _catalog().get(name)
    if s is None:
        raise ModuleNotFoundError(_missing(name))
    if s.module is not None:
        return s.module
    import types
    from importlib.machinery import ModuleSpec
    fullname = "mcp_servers." + name
    m = types.ModuleType(fullname, "%s\n\nThe MCP server %s: help(%s.TOOL) or describe() for its tools." %
                         (_clean(s.description).strip() or name, name, name))
    attrs = s.attrs()

    def module_getattr(attr):
        """A tool's function by its attribute name, made on first use."""
        target = attrs.get(attr)
        if target is None:
            hint = ("; its tool %r: %s.call(%r, ...)" % (attr, name, attr)) if attr in s.tools else ""
            raise AttributeError("module %r has no attribute %r%s" % (fullname, attr, hint))
        # setdefault: a name once given never changes (threads may race here).
        return m.__dict__.setdefault(attr, _tool_function(s, target[0], attr, target[1]))

    def module_dir():
        """The module's names and its tools' attributes."""
        return sorted(set(m.__dict__) | set(attrs))

    def module_call(tool, /, **arguments):
        """Calls this server's tool by its name (any name: "get-sum")."""
        return call(name, tool, **arguments)

    async def module_acall(tool, /, **arguments):
        """call(), for asyncio."""
        return await acall(name, tool, **arguments)

    def module_call_raw(tool, /, **arguments):
        """The whole CallToolResult of tool (see mcp_servers.call_raw)."""
        return call_raw(name, tool, **arguments)

    def module_describe(tool=None):
        """Every tool's signature and description, or one tool's."""
        return describe(name, tool)

    def module_tools():
        """The names of this server's tools, as the server gave them."""
        return list(s.tools)

    own = {"call": module_call, "acall": module_acall, "call_raw": module_call_raw,
           "describe": module_describe, "tools": module_tools}
    assert set(own) == _SERVER_OWN
    own_hooks = {"__getattr__": module_getattr, "__dir__": module_dir}
    for k, f in list(own.items()) + list(own_hooks.items()):
        f.__name__ = f.__qualname__ = k
        f.__module__ = fullname
    m.__dict__.update(own)
    m.__dict__.update(own_hooks)
    m.__dict__.update({"__all__": sorted(attrs),
                       "__package__": "mcp_servers", "__spec__": ModuleSpec(fullname, _Finder),
                       "__loader__": _Finder})
    with _state_lock():
        if s.module is None:
            s.module = m
            if _is_server_name(name) and name not in _API:
                # Not under a name of the package's own: "import
                # mcp_servers.call as c" would then be the function.
                _sys.modules.setdefault(fullname, m)
    return s.module


def _missing(name):
    cat = _catalog()
    if _state["connection"] is None:
        return "No module named 'mcp_servers.%s': %s" % (name, _state["why"])
    if name in _API:
        return ("'mcp_servers.%s' is the package's own %s; the server %r is mcp_servers.server(%r)" %
                (name, name, name, name))
    return "No module named 'mcp_servers.%s': this run has no MCP server %r (its servers: %s)" % (
        name, name, ", ".join(cat) or "none")


class _Finder:
    """import mcp_servers.NAME: the server's module (a meta path finder and
    its loader; on sys.meta_path only once this package is imported)."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if not fullname.startswith("mcp_servers."):
            return None
        name = fullname[len("mcp_servers."):]
        if name in _API or not _is_server_name(name):
            # Not ModuleNotFoundError(name=fullname), which "from mcp_servers
            # import x" would turn into a message saying less.
            raise ModuleNotFoundError(_missing(name))
        return _server_module(name).__spec__

    @staticmethod
    def create_module(spec):
        return _server_module(spec.name[len("mcp_servers."):])

    @staticmethod
    def exec_module(module):
        pass


def __getattr__(name):
    """mcp_servers.NAME for a server NAME (asks the gateway the first time)."""
    if name in _API or not _is_server_name(name):
        raise AttributeError("module 'mcp_servers' has no attribute %r" % name)
    if name not in _catalog():
        raise AttributeError("module 'mcp_servers' has no attribute %r: %s" % (name, _missing(name)))
    return _server_module(name)


def __dir__():
    names = set(globals())
    try:
        names |= {n for n in _catalog() if _is_server_name(n) and n not in _API}
    except ToolCallError:
        pass
    return sorted(names)


__all__ = ["servers", "describe", "server", "call", "acall", "call_raw", "NOT_SENT", "ToolCallError",
           "ToolsUnavailable", "ConnectionClosed", "ProtocolError", "ToolError", "Refused", "LimitReached",
           "ToolTimeout", "UpstreamError", "Cancelled", "BadRequest", "MAX_REQUEST_BYTES", "MAX_ANSWER_BYTES"]
# Every public name of this package: no server may take one.
_API = frozenset(k for k in globals() if not k.startswith("_"))
# Submodules come from _Finder only: nothing on disk below this package.
__path__ = []
_sys.meta_path.insert(0, _Finder)
