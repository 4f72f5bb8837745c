#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A tiny MCP stdio server for tests/integration/tools/test-upstream-units.sh:
an upstream with NETWORK=egress:POLICY (issue 40). Newline-delimited JSON-RPC
on stdin/stdout, only what the tests need (initialize, tools/list,
tools/call). Tools:
  fetch {url, data?}  urllib through the proxy variables the unit gives it:
                      "STATUS BODY" (a 403's body says why), or "ERR ..."
  probe {}            what the instance can reach on its own, as JSON: the
                      proxy variable, bind()/listen() (refused), a direct
                      connect() out, its interfaces, AF_INET6, a name lookup,
                      its parent's (the supervisor's) descriptors, io_uring
                      (whose IORING_OP_BIND and _LISTEN would pass by the
                      filter), the system bus in /run (a way to a local
                      resolver, DNS out), ENVIRONMENT's FETCH_TEST and
                      NOTIFY_SOCKET
  linger {}           from now on ignore SIGTERM and outlive stdin's EOF (a
                      server that would keep its network after the gateway
                      let it go)
Standard library only: it runs as the unit's dynamic user under /usr/bin/python3."""
import ctypes
import errno
import json
import os
import signal
import socket
import sys
import time
import urllib.error
import urllib.request


def err_name(e):
    return errno.errorcode.get(e.errno, str(e)) if isinstance(e, OSError) and e.errno else repr(e)


def fetch(url, data=None):
    try:
        r = urllib.request.urlopen(url, data=data.encode() if data else None, timeout=20)
        return "%d %s" % (r.status, r.read().decode(errors="replace"))
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.read().decode(errors="replace"))
    except Exception as e:  # noqa: BLE001 - the reason is the answer
        return "ERR %r" % e


def attempt(what, f):
    try:
        f()
        return "allowed"
    except OSError as e:
        return err_name(e)


def io_uring_setup():
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)     # struct io_uring_params, zeroed
    fd = libc.syscall(425, 4, params)             # __NR_io_uring_setup: x86-64 and arm64 alike
    if fd < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
    os.close(fd)


def unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
    finally:
        s.close()


def probe():
    out = {"proxy": os.environ.get("HTTP_PROXY"), "https_proxy": os.environ.get("HTTPS_PROXY")}
    out["bind"] = attempt("bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
    out["listen"] = attempt("listen", lambda: socket.socket().listen(1))
    s = socket.socket()
    s.settimeout(5)
    out["direct"] = attempt("direct", lambda: s.connect(("192.0.2.10", 80)))
    with open("/proc/net/dev") as f:
        out["ifaces"] = sorted(line.split(":")[0].strip() for line in f.readlines()[2:])
    out["inet6"] = attempt("inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM))
    out["dns"] = attempt("dns", lambda: socket.getaddrinfo("allowed.test", 80))
    out["parent_fds"] = attempt("parent_fds", lambda: os.listdir("/proc/%d/fd" % os.getppid()))
    out["io_uring"] = attempt("io_uring", io_uring_setup)
    out["env"] = [os.environ.get("FETCH_TEST"), os.environ.get("NOTIFY_SOCKET")]
    out["system_bus"] = attempt("system_bus", lambda: unix_connect("/run/dbus/system_bus_socket"))
    return out


TOOLS = [
    {"name": "fetch", "description": "Fetch a URL through the proxy",
     "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}, "data": {"type": "string"}},
                     "required": ["url"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "probe", "description": "What this instance reaches on its own",
     "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": True}},
    {"name": "linger", "description": "Outlive the connection",
     "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": True}},
]
linger = False


def answer(msg):
    m, params = msg.get("method"), msg.get("params") or {}
    if m == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "upstream-fetch", "version": "1"}}
    if m == "tools/list":
        return {"tools": TOOLS}
    if m == "tools/call":
        args = params.get("arguments") or {}
        if params.get("name") == "fetch":
            text = fetch(args.get("url", ""), args.get("data"))
        elif params.get("name") == "probe":
            text = json.dumps(probe())
        elif params.get("name") == "linger":
            global linger
            linger = True
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            text = "lingering"
        else:
            return {"content": [{"type": "text", "text": "no such tool"}], "isError": True}
        return {"content": [{"type": "text", "text": text}]}
    if m == "ping":
        return {}
    return None


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg or "method" not in msg:
        continue        # notifications, answers
    result = answer(msg)
    reply = {"jsonrpc": "2.0", "id": msg["id"]}
    if result is None:
        reply["error"] = {"code": -32601, "message": "method not found"}
    else:
        reply["result"] = result
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
while linger:
    time.sleep(3600)
