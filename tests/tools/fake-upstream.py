#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A misbehaving MCP stdio server for toolsd-component.py: the cases a real
server does not do on demand (hang, crash, garbage, a destructive tool, a
tool listed twice, a request to the client, two list pages, list_changed). One instance per
connection (systemd-socket-activate --inetd -a). argv: LOGFILE, where it
appends each notifications/cancelled and each answer to its own request."""
import json
import os
import sys

log_path = sys.argv[1]
ro = {"readOnlyHint": True}
tools = [
    {"name": "ok", "description": "answers", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "pid", "description": "its pid", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "wipe", "description": "destructive", "inputSchema": {"type": "object"},
     "annotations": {"destructiveHint": True}},
    {"name": "wipe_confirmed", "description": "destructive, confirmed", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "never answers", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "gate", "description": "answers after open", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "open", "description": "opens the gate", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "crash", "description": "exits", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "garbage", "description": "sends garbage", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "ask", "description": "asks the client", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "add", "description": "adds a tool", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "flood", "description": "floods progress", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "huge", "description": "answers too much", "inputSchema": {"type": "object"}, "annotations": ro},
    # One tool listed twice, read-only first: the gateway must not take the first entry's word.
    {"name": "twin", "description": "read-only, says this entry", "inputSchema": {"type": "object"}, "annotations": ro},
    {"name": "twin", "description": "destructive, says this one", "inputSchema": {"type": "object"},
     "annotations": {"destructiveHint": True}},
]
gate = None
asked = None


def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


def log(m):
    with open(log_path, "a") as f:
        f.write(json.dumps(m) + "\n")


def text(i, s):
    send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": s}]}})


def call(i, name):
    global gate, asked
    if name in ("ok", "wipe", "wipe_confirmed", "added", "twin"):
        text(i, name + " done")
    elif name == "pid":
        text(i, str(os.getpid()))
    elif name == "gate":
        gate = i
    elif name == "open":
        text(i, "opened")
        if gate is not None:
            text(gate, "gate passed")
    elif name == "crash":
        os._exit(3)
    elif name == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif name == "ask":
        asked = i
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
    elif name == "add":
        tools.append({"name": "added", "description": "new", "inputSchema": {"type": "object"},
                      "annotations": ro})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text(i, "added")
    elif name == "flood":
        for k in range(2000):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": "x", "progress": k}})
        text(i, "flooded")
    elif name == "huge":
        text(i, "x" * (2 * 1024 * 1024))
    # hang: nothing


for line in sys.stdin:
    m = json.loads(line)
    i, method = m.get("id"), m.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": m["params"]["protocolVersion"],
                                                    "capabilities": {"tools": {"listChanged": True}},
                                                    "serverInfo": {"name": "fake", "version": "1"}}})
    elif method == "tools/list":
        # Two pages: the gateway must follow the cursor.
        cursor = (m.get("params") or {}).get("cursor")
        if cursor is None:
            send({"jsonrpc": "2.0", "id": i, "result": {"tools": tools[:3], "nextCursor": "page2"}})
        else:
            send({"jsonrpc": "2.0", "id": i, "result": {"tools": tools[3:]}})
    elif method == "tools/call":
        if m["params"]["name"].startswith("wipe"):
            log({"called": m["params"]["name"]})
        call(i, m["params"]["name"])
    elif method == "notifications/cancelled":
        log({"cancelled": m["params"]})
    elif method is None and i == "s1":
        log({"answer": m})
        text(asked, "asked: %s" % m.get("error", {}).get("code"))
