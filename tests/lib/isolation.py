#!/usr/bin/python3
# tests/lib/isolation.py - raw HTTP clients (http.client, no SDK, no GET stream) for
# tests/integration/transport/test-http-isolation.sh. Runs inside the test box against 127.0.0.1:PORT.
# Each command prints one JSON line.
#
#   isolation.py witness PORT TOKEN          initialize, session_create, x = 41:
#                                            {"sid", "handle"}
#   isolation.py init PORT TOKEN             one initialize: {"status", "sid"}
#   isolation.py read PORT TOKEN SID HANDLE  exec print(x) in the sandbox session:
#                                            {"status", "stdout", "text"}
#   isolation.py init-flood PORT TOKEN N     N initializes, each a new client that never comes
#                                            back: {"200": n, "503": n, "503_no_retry": n, "other": [...]}
#   isolation.py sse-flood PORT TOKEN N SID HANDLE
#                                            opens up to N GET /sse streams and holds them; then,
#                                            still holding them, an initialize and the witness's
#                                            print(x): {"200", "503", "503_no_retry", "other",
#                                            "init_status", "init_retry_after", "witness"}
#   isolation.py hold-sse PORT TOKEN N OTHER
#                                            opens up to N GET /sse streams with TOKEN and holds
#                                            them; then, still holding them, an initialize with
#                                            OTHER: {"200", "503", "503_no_retry", "other",
#                                            "other_status"}
#   isolation.py clients PORT N TOKEN...     N MCP sessions, client i with token i % len(TOKEN),
#                                            each creates one sandbox session: {"ok": n,
#                                            "refused": [texts], "handles": [[token index, sid, handle]]}
#   isolation.py create PORT TOKEN SID       session_create in an existing MCP session:
#                                            {"status", "handle" or null, "text"}
#   isolation.py call PORT TOKEN SID TOOL ARGS_JSON   any tools/call: {"status", "result"}
import http.client
import json
import socket
import sys

PROTOCOL = "2025-06-18"
TIMEOUT = 60


def post(port, token, body, sid=None, conn=None):
    """One POST /mcp: (status, headers dict (lower-case names), parsed JSON body or None)."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "X-MCP-AUTH": token}
    if sid:
        h["Mcp-Session-Id"] = sid
        h["MCP-Protocol-Version"] = PROTOCOL
    try:
        c.request("POST", "/mcp", json.dumps(body), h)
        r = c.getresponse()
        data = r.read()
        headers = {k.lower(): v for k, v in r.getheaders()}
    finally:
        if conn is None:
            c.close()
    try:
        j = json.loads(data) if data else None
    except ValueError:
        j = None
    return r.status, headers, j


def initialize(port, token):
    st, h, j = post(port, token, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "isolation", "version": "1"}}})
    sid = h.get("mcp-session-id")
    if st == 200 and sid:
        post(port, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return st, h, sid


def tool(port, token, sid, name, args):
    st, _, j = post(port, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": {"name": name, "arguments": args}}, sid)
    return st, (j or {}).get("result")


def text_of(result):
    try:
        return result["content"][0]["text"]
    except (TypeError, KeyError, IndexError):
        return None


def create(port, token, sid):
    st, res = tool(port, token, sid, "session_create", {})
    handle = None
    if res and not res.get("isError"):
        handle = (res.get("structuredContent") or {}).get("session")
    return {"status": st, "handle": handle, "text": text_of(res)}


def read_x(port, token, sid, handle):
    st, res = tool(port, token, sid, "exec", {"code": "print(x)", "session": handle})
    return {"status": st, "stdout": ((res or {}).get("structuredContent") or {}).get("stdout"),
            "text": text_of(res)}


def witness(port, token):
    st, _, sid = initialize(port, token)
    if st != 200 or not sid:
        sys.exit("initialize: %s" % st)
    c = create(port, token, sid)
    if not c["handle"]:
        sys.exit("session_create: %s" % json.dumps(c))
    st, res = tool(port, token, sid, "exec", {"code": "x = 41", "session": c["handle"]})
    if st != 200 or not res or res.get("isError"):
        sys.exit("x = 41: %s %s" % (st, json.dumps(res)))
    return {"sid": sid, "handle": c["handle"]}


def count(out, st, h):
    if st == 200:
        out["200"] += 1
    elif st == 503 and h.get("retry-after"):
        out["503"] += 1
    elif st == 503:
        out["503_no_retry"] += 1
    elif len(out["other"]) < 10:
        out["other"].append(st)


def init_flood(port, token, n):
    out = {"200": 0, "503": 0, "503_no_retry": 0, "other": []}
    for _ in range(n):
        st, h, _ = initialize(port, token)
        count(out, st, h)
    return out


def open_sse(port, token):
    """A GET /sse stream held open: (status, headers, socket or None)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(("GET /sse HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\nX-MCP-AUTH: %s\r\n\r\n"
               % (port, token)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(4096)
        if not b:
            break
        buf += b
    head = buf.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(head[0].split(" ")[1]) if head and head[0].startswith("HTTP/1.") else None
    headers = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in head[1:] if ":" in l}
    if status != 200:
        s.close()
        return status, headers, None
    # The endpoint event says the session exists.
    while b"event: endpoint" not in buf:
        b = s.recv(4096)
        if not b:
            break
        buf += b
    return status, headers, s


def with_streams(port, token, n, then):
    """Opens up to n GET /sse streams with token and, while holding them, runs then(out):
    the counts of what the opens got, with what then added."""
    out = {"200": 0, "503": 0, "503_no_retry": 0, "other": []}
    held = []
    try:
        for _ in range(n):
            st, h, s = open_sse(port, token)
            count(out, st, h)
            if s:
                held.append(s)
        then(out)
    finally:
        for s in held:
            s.close()
    return out


def sse_flood(port, token, n, sid, handle):
    def then(out):
        st, h, _ = initialize(port, token)
        out["init_status"] = st
        out["init_retry_after"] = h.get("retry-after")
        out["witness"] = read_x(port, token, sid, handle)
    return with_streams(port, token, n, then)


def hold_sse(port, token, n, other):
    def then(out):
        out["other_status"] = initialize(port, other)[0]
    return with_streams(port, token, n, then)


def clients(port, n, tokens):
    out = {"ok": 0, "refused": [], "handles": []}
    for i in range(n):
        t = i % len(tokens)
        st, _, sid = initialize(port, tokens[t])
        if st != 200:
            out["refused"].append("initialize %s" % st)
            continue
        c = create(port, tokens[t], sid)
        if c["handle"]:
            out["ok"] += 1
            out["handles"].append([t, sid, c["handle"]])
        else:
            out["refused"].append(c["text"])
    return out


def main(argv):
    cmd, port = argv[1], int(argv[2])
    if cmd == "witness":
        r = witness(port, argv[3])
    elif cmd == "init":
        st, _, sid = initialize(port, argv[3])
        r = {"status": st, "sid": sid}
    elif cmd == "read":
        r = read_x(port, argv[3], argv[4], argv[5])
    elif cmd == "init-flood":
        r = init_flood(port, argv[3], int(argv[4]))
    elif cmd == "sse-flood":
        r = sse_flood(port, argv[3], int(argv[4]), argv[5], argv[6])
    elif cmd == "hold-sse":
        r = hold_sse(port, argv[3], int(argv[4]), argv[5])
    elif cmd == "clients":
        r = clients(port, int(argv[3]), argv[4:])
    elif cmd == "create":
        r = create(port, argv[3], argv[4])
    elif cmd == "call":
        st, res = tool(port, argv[3], argv[4], argv[5], json.loads(argv[6]))
        r = {"status": st, "result": res}
    else:
        sys.exit("unknown command %s" % cmd)
    print(json.dumps(r))


if __name__ == "__main__":
    main(sys.argv)
