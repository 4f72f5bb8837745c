#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-task-cmd MCP_EXEC: `mcp-exec run --detach` and `mcp-exec task ...`
against a scripted 2025-11-25 server on a private socket, for what the real
core (tests/integration/transport/test-tasks-cli.sh) cannot be made to say:
what exactly goes on the wire (protocol version, the "task" parameter and
its ttl), tasks/list pages followed by cursor, notifications skipped while
tasks/result waits, server strings with control characters escaped, and
every exit status the man page promises (0, 75, the program's, 125)."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

MCP_EXEC = sys.argv[1]
seen = []               # (protocolVersion, method, params) of every request
failures = []

TASKS = {
    "n.working": {"status": "working"},
    "n.done": {"status": "completed"},
    "n.cancelled": {"status": "cancelled", "statusMessage": "cancelled by the client"},
    "n.failed": {"status": "failed", "statusMessage": "invalid arguments: code is required"},
}
RESULT_DONE = {"content": [{"type": "text", "text": "{}"}],
               "structuredContent": {"stdout": "out of the task\n", "stderr": "err of the task\n", "exit_code": 4}}
RESULT_FAILED = {"isError": True, "content": [{"type": "text", "text": "invalid arguments: code is required"}]}


def task(tid, **kw):
    t = {"taskId": tid, "createdAt": "2026-01-01T00:00:00.000Z", "lastUpdatedAt": "2026-01-01T00:00:00.000Z",
         "ttl": 60000, "pollInterval": 1000}
    t.update(TASKS.get(tid, {}))
    t.update(kw)
    return t


def answer(method, params):
    """(result, error) for one request."""
    tid = params.get("taskId")
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": {"tasks": {"list": {}}},
                "serverInfo": {"name": "fake", "version": "1"}}, None
    if method == "tools/call":
        return {"task": task("n.new", status="working")}, None
    if method in ("tasks/get", "tasks/result", "tasks/cancel") and tid not in TASKS:
        return None, {"code": -32602, "message": "Invalid params: no such task"}
    if method == "tasks/get":
        return task(tid), None
    if method == "tasks/result":
        if tid == "n.cancelled":
            return None, {"code": -32602, "message": "Invalid params: the task was cancelled"}
        return dict(RESULT_FAILED if tid == "n.failed" else RESULT_DONE), None
    if method == "tasks/cancel":
        return task(tid, status="cancelled"), None
    if method == "tasks/list":
        if "cursor" not in params:
            return {"tasks": [task("n.done"), task("n.working")], "nextCursor": "n.working"}, None
        if params["cursor"] == "n.working":
            return {"tasks": [task("n.esc\x1b[31m", status="failed", statusMessage="bad\nline")]}, None
        return None, {"code": -32602, "message": "Invalid params: unknown cursor"}
    return None, {"code": -32601, "message": "Method not found"}


def serve_one(c):
    f = c.makefile("rwb")
    version = None
    for line in f:
        m = json.loads(line)
        if "id" not in m:
            continue
        params = m.get("params") or {}
        if m["method"] == "initialize":
            version = params.get("protocolVersion")
        seen.append((version, m["method"], params))
        result, error = answer(m["method"], params)
        if m["method"] == "tasks/result":
            # What a waiting client must skip.
            f.write(b'{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"n.x","status":"working"}}\n')
        reply = {"jsonrpc": "2.0", "id": m["id"]}
        reply.update({"result": result} if error is None else {"error": error})
        f.write(json.dumps(reply).encode() + b"\n")
        f.flush()
    c.close()


tmp = tempfile.mkdtemp(prefix="mcp-exec-task-test.")
path = os.path.join(tmp, "stdio.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
srv.bind(path)
srv.listen(16)


def serve():
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve_one, args=(c,), daemon=True).start()


threading.Thread(target=serve, daemon=True).start()


def run(args, stdin=b"", want_rc=None, want_out=None, err_has=None):
    del seen[:]
    p = subprocess.run([MCP_EXEC] + args, input=stdin, capture_output=True, timeout=30,
                       env={"MCP_EXEC_STDIO_SOCKET": path, "PATH": os.environ.get("PATH", "")})
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    what = "mcp-exec %s: exit %d, stdout %r, stderr %r" % (" ".join(args), p.returncode, out, err)
    if want_rc is not None and p.returncode != want_rc:
        failures.append("%s: want exit %d" % (what, want_rc))
    if want_out is not None and out != want_out:
        failures.append("%s: want stdout %r" % (what, want_out))
    if err_has is not None and err_has not in err:
        failures.append("%s: want %r on stderr" % (what, err_has))
    return list(seen), out, err


def expect(cond, message):
    if not cond:
        failures.append(message)


# run --detach: 2025-11-25, the "task" parameter (no ttl: the server's longest), the timeout as given.
s, _, _ = run(["run", "--detach", "--timeout", "1800", "-"], b"print(1)\n", 0, "n.new\n")
call = [p for v, m, p in s if m == "tools/call"]
expect(len(call) == 1 and s[0][0] == "2025-11-25" and call[0].get("task") == {}
       and call[0]["arguments"] == {"code": "print(1)\n", "timeout_s": 1800},
       "run --detach sent %r" % s)
s, _, _ = run(["run", "--detach", "--ttl", "90", "-"], b"pass\n", 0, "n.new\n")
expect([p.get("task") for v, m, p in s if m == "tools/call"] == [{"ttl": 90000}], "--ttl 90 sent %r" % s)
# A plain run keeps its revision and never asks for a task.
s, _, _ = run(["run", "-"], b"pass\n")
expect(s and s[0][0] == "2025-06-18" and all("task" not in p for v, m, p in s if m == "tools/call"),
       "a plain run sent %r" % s)
run(["run", "--ttl", "90", "-"], b"pass\n", 2)
run(["run", "--detach", "--output-dir", tmp, "-"], b"pass\n", 2)

# task get: never waits; the result as run prints it.
s, _, _ = run(["task", "get", "n.working"], want_rc=75, want_out="working\n")
expect([m for v, m, p in s] == ["initialize", "tasks/get"], "task get of a working task asked %r" % s)
run(["task", "get", "n.done"], want_rc=4, want_out="out of the task\n", err_has="err of the task")
run(["task", "get", "n.failed"], want_rc=125, want_out="", err_has="invalid arguments: code is required")
run(["task", "get", "n.cancelled"], want_rc=125, want_out="cancelled\n", err_has="cancelled by the client")
run(["task", "get", "bogus"], want_rc=125, want_out="", err_has="task bogus: no such task")
# task wait: tasks/result, past the notification.
s, _, _ = run(["task", "wait", "n.done"], want_rc=4, want_out="out of the task\n", err_has="err of the task")
expect([m for v, m, p in s] == ["initialize", "tasks/result"], "task wait asked %r" % s)
run(["task", "wait", "n.cancelled"], want_rc=125, want_out="", err_has="the task was cancelled")
# task cancel
run(["task", "cancel", "n.working"], want_rc=0, want_out="cancelled\n")
run(["task", "cancel", "nope"], want_rc=125, err_has="no such task")
# task list: both pages, server strings escaped.
s, out, _ = run(["task", "list"], want_rc=0)
expect([p.get("cursor") for v, m, p in s if m == "tasks/list"] == [None, "n.working"], "task list asked %r" % s)
lines = out.splitlines()
expect(len(lines) == 3 and lines[0].startswith("n.done\tcompleted\t") and lines[1].startswith("n.working\tworking\t")
       and lines[2] == "n.esc\\x1b[31m\tfailed\t2026-01-01T00:00:00.000Z\tbad\\x0aline",
       "task list printed %r" % out)
# Usage errors.
for args in (["task"], ["task", "get"], ["task", "list", "x"], ["task", "frob", "x"], ["task", "cancel", "--output-dir",
                                                                                       tmp, "x"]):
    run(args, want_rc=2)

os.unlink(path)
os.rmdir(tmp)
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
