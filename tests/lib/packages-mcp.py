#!/usr/bin/env python3
# tests/lib/packages-mcp.py - the MCP client of test-packages (issue 23): a list of tool calls over
# one connection, stdio (`mcp-exec stdio`, one MCP session: sandbox sessions live across its calls)
# or HTTP (mcp-exec.socket on 127.0.0.1:8080, the stateless 2026-07-28 revision, one POST a call).
#
#   packages-mcp.py stdio|http CALLS.json
#
# CALLS: [{"tool": NAME, "args": {...}}, …]; "code_file": PATH in args is replaced by the file's
# text as "code"; the string "@SESSION@" anywhere in args by the handle of the latest
# session_create; {"tool": "@list"} is tools/list; "task": true (stdio only, 2025-11-25) makes the
# call a task and waits for it with tasks/result. Prints one JSON line per call:
# {"ms": wall time of the call in the client, "result": the result} or {"ms", "error": …}; a task's
# line has "task": its status when created, and its tasks/result as "result".
import json, os, select, subprocess, sys, time, urllib.request

mode, calls = sys.argv[1], json.load(open(sys.argv[2]))
REV = "2026-07-28"


class Stdio:
    def __init__(self):
        self.p = subprocess.Popen(["mcp-exec", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buf, self.n = b"", 0
        r = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "test-packages", "version": "1"}})
        if "result" not in r:
            sys.exit("initialize failed: %r" % r)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m):
        self.p.stdin.write(json.dumps(m).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method, params, timeout=240):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                    return {"error": "no answer in %d s" % timeout}
                d = os.read(self.p.stdout.fileno(), 65536)
                if not d:
                    return {"error": "the stdio bridge closed"}
                self.buf += d
            line, self.buf = self.buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") == self.n and ("result" in m or "error" in m):
                return m


class Http:
    def request(self, method, params, timeout=240):
        params = dict(params, _meta={"io.modelcontextprotocol/protocolVersion": REV,
                                     "io.modelcontextprotocol/clientCapabilities": {}})
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": REV, "Mcp-Method": method}
        if method == "tools/call":
            h["Mcp-Name"] = params["name"]
            if "session" in params["arguments"]:
                h["Mcp-Param-Session"] = params["arguments"]["session"]
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        req = urllib.request.Request("http://127.0.0.1:8080/mcp", data=body, headers=h)
        try:
            return json.loads(urllib.request.urlopen(req, timeout=timeout).read())
        except Exception as e:
            return {"error": "%s: %s" % (type(e).__name__, e)}


def subst(v, session):
    if isinstance(v, str):
        return v.replace("@SESSION@", session or "")
    if isinstance(v, list):
        return [subst(x, session) for x in v]
    if isinstance(v, dict):
        return {k: subst(x, session) for k, x in v.items()}
    return v


c = Stdio() if mode == "stdio" else Http()
session = None
for call in calls:
    if call["tool"] == "@list":
        method, params = "tools/list", {}
    else:
        args = subst(call.get("args", {}), session)
        if "code_file" in args:
            args["code"] = open(args.pop("code_file")).read()
        method, params = "tools/call", {"name": call["tool"], "arguments": args}
        if call.get("task"):
            params["task"] = {"ttl": 60000}
    t = time.monotonic()
    r = c.request(method, params)
    task = (r.get("result") or {}).get("task") if call.get("task") else None
    if isinstance(task, dict) and "taskId" in task:
        r = c.request("tasks/result", {"taskId": task["taskId"]})
    out = {"ms": round((time.monotonic() - t) * 1000)}
    if call.get("task"):
        out["task"] = task.get("status") if isinstance(task, dict) else None
    if "result" in r:
        out["result"] = r["result"]
        if call["tool"] == "session_create":
            session = (r["result"].get("structuredContent") or {}).get("session")
    else:
        out["error"] = r.get("error")
    print(json.dumps(out), flush=True)
