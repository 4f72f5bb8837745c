#!/usr/bin/python3
# tests/lib/flood.py - badly behaved clients for the flood tests (tests/integration/load/test-flood-*.sh).
# Runs inside the test box. Each scenario holds many connections the way a careless or hostile
# client would, while a well-behaved client probes the server every PROBE_EVERY seconds; then it
# lets go and measures how long until the well-behaved client is served again. Prints one JSON
# line: {"scenario", "opened", "during": {"ok", "refused", "other", "hang", "max_s", "samples"},
#        "recovered_s": seconds or null, ...}.
#
#   flood.py http-probe PORT            one well-behaved call; exit status 0 if it printed 42
#   flood.py http-repro PORT            the reproduction of the issue: 1500 half-sent requests,
#                                       then 2000 initialize POSTs whose clients give up after 10 s
#   flood.py http SCENARIO PORT N HOLD  SCENARIO: slow-headers | slow-body | abandoned | sse | sessions
#   flood.py stdio SOCKET N HOLD        N connections to the stdio socket that never speak; the probe
#                                       is run by the caller (another uid); prints what each got
#   flood.py http-token PORT N HOLD PID N stateless calls of HOLD seconds, each with a 2.5 MiB progressToken,
#                                       whose streams are never read (issue 37, item 4), while the probe
#                                       runs; "answers" classifies what each got first, "hwm_kib" is the
#                                       highest VmHWM of PID seen
#   flood.py http-unread PORT N PID     a legacy /sse stream read up to its endpoint and then never again,
#                                       N calls of 1 MB of output each with progress on it: "eof" says
#                                       whether the server ended the stream; RSS of PID before and after
import json
import os
import socket
import sys
import threading
import time

PROBE_EVERY = 0.5
PROBE_TIMEOUT = 8.0     # a probe slower than this counts as left hanging
RECOVER_MAX = 60.0

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def http_request(port, method, path, headers, body=None, timeout=PROBE_TIMEOUT):
    """One request on its own connection: (status, body bytes), (None, 'timeout') or (None, error)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.settimeout(timeout)
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n" % (method, path, port)
        for k, v in headers.items():
            head += "%s: %s\r\n" % (k, v)
        data = body.encode() if body is not None else b""
        if body is not None:
            head += "Content-Length: %d\r\n" % len(data)
        s.sendall(head.encode() + b"\r\n" + data)
        resp = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            resp += b
        status = int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.") else None
        return status, resp.split(b"\r\n\r\n", 1)[-1]
    except socket.timeout:
        return None, "timeout"
    except OSError as e:
        return None, "%s" % e
    finally:
        s.close()


def stateless_call(port, code="print(6*7)", timeout=PROBE_TIMEOUT):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "exec", "arguments": {"code": code}, "_meta": META}})
    return http_request(port, "POST", "/mcp", {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "exec"}, body, timeout)


def classify(status, body):
    if status == 200 and b'"stdout":"42\\n"' in body:
        return "ok"
    if status in (429, 503):
        return "refused"
    if status is None and body == "timeout":
        return "hang"
    return "other"


class Prober(threading.Thread):
    """The well-behaved client: one call every PROBE_EVERY seconds while running."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.counts = {"ok": 0, "refused": 0, "other": 0, "hang": 0}
        self.max_s = 0.0
        self.samples = []

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            st, body = stateless_call(self.port)
            d = time.monotonic() - t
            c = classify(st, body)
            self.counts[c] += 1
            self.max_s = max(self.max_s, d)
            if c in ("other", "hang") and len(self.samples) < 5:
                self.samples.append("%s %s" % (st, (body[:200] if isinstance(body, bytes) else body)))
            self.stop.wait(PROBE_EVERY)

    def result(self):
        return dict(self.counts, max_s=round(self.max_s, 2), samples=[str(x) for x in self.samples])


def recover(port):
    """Seconds until a call is served again (None: not within RECOVER_MAX)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < RECOVER_MAX:
        st, body = stateless_call(port, timeout=RECOVER_MAX)
        if classify(st, body) == "ok":
            return round(time.monotonic() - t0, 2)
        time.sleep(0.5)
    return None


def connect_many(port, n, first=b""):
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setblocking(False)
            if first:
                try:
                    s.send(first)
                except OSError:
                    pass
            socks.append(s)
        except OSError:
            break
    return socks


def hold(socks, seconds, trickle=None):
    """Keeps socks open for seconds; every second sends trickle (a byte of more) on each."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for s in socks:
            try:
                s.recv(65536)       # read replies (503s, events) so nothing piles up at the server
            except (BlockingIOError, OSError):
                pass
            if trickle:
                try:
                    s.send(trickle)
                except OSError:
                    pass
        time.sleep(1)


def closed_count(socks):
    """How many of socks the server has closed (EOF after whatever it sent, or a reset)."""
    n = 0
    for s in socks:
        try:
            while True:
                b = s.recv(65536)
                if b == b"":
                    n += 1
                    break
        except BlockingIOError:
            pass
        except OSError:
            n += 1
    return n


def scenario_http(name, port, n, hold_s):
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}})
    out = {"scenario": name}
    probe = Prober(port)
    probe.start()
    time.sleep(1)
    extra = {}
    if name == "slow-headers":
        socks = connect_many(port, n, ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port).encode())
        hold(socks, hold_s, trickle=b"X")
        extra["closed_by_server"] = closed_count(socks)
    elif name == "slow-body":
        head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\"" % port)
        socks = connect_many(port, n, head.encode())
        hold(socks, hold_s, trickle=b" ")
        extra["closed_by_server"] = closed_count(socks)
    elif name == "abandoned":
        # Whole requests whose clients leave at once: a 20 s run each, and initializes.
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "exec", "arguments": {"code": "import time; time.sleep(20)"}, "_meta": META}})
        call = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                "Mcp-Method: tools/call\r\nMcp-Name: exec\r\nContent-Length: %d\r\n\r\n%s" % (port, len(body), body))
        ini = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (port, len(init), init))
        t_end = time.monotonic() + hold_s
        k = 0
        socks = []
        while time.monotonic() < t_end and k < n:
            batch = connect_many(port, 20, (call if k % 2 else ini).encode())
            for s in batch:
                s.close()
            k += len(batch) or 1
            time.sleep(0.05)
        time.sleep(max(0, t_end - time.monotonic()))
    elif name == "sse":
        socks = connect_many(port, n, ("GET /sse HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n"
                                       % port).encode())
        hold(socks, hold_s)
        extra["open_at_end"] = len(socks) - closed_count(socks)
    elif name == "sessions":
        sids = 0
        for _ in range(n):
            st, _ = http_request(port, "POST", "/mcp", {"Content-Type": "application/json",
                                                        "Accept": "application/json, text/event-stream"}, init, 10)
            sids += st == 200
        extra["initialized"] = sids
        socks = []
        time.sleep(hold_s)
    else:
        raise SystemExit("unknown scenario " + name)
    probe.stop.set()
    probe.join()
    out["opened"] = len(socks) if name != "abandoned" else n
    out["during"] = probe.result()
    for s in socks:
        s.close()
    out["recovered_s"] = recover(port)
    out.update(extra)
    return out


def repro(port):
    """The issue's reproduction, as it was reported."""
    out = {"scenario": "repro"}
    half = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port).encode()
    socks = connect_many(port, 1500, half)
    out["opened"] = len(socks)
    t = time.monotonic()
    st, body = stateless_call(port, timeout=30)
    out["during"] = {"class": classify(st, body), "s": round(time.monotonic() - t, 2)}
    for s in socks:
        s.close()
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}})
    res = {}
    lock = threading.Lock()

    def worker(k):
        for _ in range(k):
            st, _ = http_request(port, "POST", "/mcp", {"Content-Type": "application/json",
                                                        "Accept": "application/json, text/event-stream"}, init, 10)
            with lock:
                res[st] = res.get(st, 0) + 1

    ts = [threading.Thread(target=worker, args=(4,)) for _ in range(500)]
    for x in ts:
        x.start()
    for x in ts:
        x.join()
    out["inits"] = {str(k): v for k, v in res.items()}
    out["recovered_s"] = recover(port)
    # And it stays served: a few more calls, a few seconds apart.
    later = []
    for _ in range(3):
        time.sleep(2)
        st, body = stateless_call(port, timeout=30)
        later.append(classify(st, body))
    out["later"] = later
    return out


def stdio(path, n, hold_s):
    socks, refused = [], 0
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            refused += 1
            s.close()
            continue
        s.setblocking(False)
        socks.append(s)
    time.sleep(1)
    got = {"line": 0, "closed": 0, "open": 0}
    texts = []
    for s in socks:
        try:
            b = s.recv(4096)
            if b:
                got["line"] += 1
                if len(texts) < 3 and b.strip() not in texts:
                    texts.append(b.strip())
            else:
                got["closed"] += 1
        except BlockingIOError:
            got["open"] += 1
        except OSError:
            got["closed"] += 1
    sys.stdout.write(json.dumps({"scenario": "stdio", "connected": len(socks), "connect_failed": refused,
                                 "after_1s": got, "texts": [t.decode(errors="replace") for t in texts]}) + "\n")
    sys.stdout.flush()
    # Hold what is still open; the caller probes meanwhile; then report what the server closed.
    end = time.monotonic() + hold_s
    while time.monotonic() < end:
        time.sleep(0.5)
    closed = closed_count(socks)
    for s in socks:
        s.close()
    return {"scenario": "stdio-end", "closed_by_server": closed}


def status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def unread_socket(port, request):
    """A connection that sends request and then reads nothing: a tiny receive buffer, so the server's
    bytes stay on its side."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(request)
    return s


def token_flood(port, n, hold_s, pid):
    """Issue 37, item 4: a 2.5 MiB progress token is echoed in every progress notification, once a
    second, into streams nobody reads."""
    out = {"scenario": "token"}
    probe = Prober(port)
    probe.start()
    token = "t" * (5 * 1024 * 1024 // 2)
    socks = []
    for k in range(n):
        body = json.dumps({"jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": {
            "name": "exec", "arguments": {"code": "import time; time.sleep(%d)" % hold_s, "timeout_s": hold_s + 10},
            "_meta": dict(META, progressToken=token + str(k))}}).encode()
        head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                "Mcp-Method: tools/call\r\nMcp-Name: exec\r\nContent-Length: %d\r\n\r\n" % (port, len(body)))
        try:
            socks.append(unread_socket(port, head.encode() + body))
        except OSError:
            pass
    hwm = 0
    end = time.monotonic() + hold_s
    while time.monotonic() < end:
        hwm = max(hwm, status_kib(pid, "VmHWM") or 0)
        time.sleep(0.5)
    probe.stop.set()
    probe.join()
    out["opened"] = len(socks)
    out["during"] = probe.result()
    out["hwm_kib"] = hwm
    answers = {}
    for s in socks:
        s.settimeout(2)
        try:
            b = s.recv(4096)
        except OSError:
            b = b""
        kind = ("invalid-params" if b" 200 " in b.split(b"\r\n", 1)[0] and b"-32602" in b and b"progressToken" in b
                else "stream" if b"text/event-stream" in b else "closed" if not b else "other")
        answers[kind] = answers.get(kind, 0) + 1
        s.close()
    out["answers"] = answers
    out["recovered_s"] = recover(port)
    return out


def server_end_closed(port, client_port):
    """Whether the server's end of 127.0.0.1:client_port -> 127.0.0.1:port is no longer established
    (closed: FIN_WAIT1 with unsent bytes, or gone), from /proc/net/tcp."""
    local, remote = "0100007F:%04X" % port, "0100007F:%04X" % client_port
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                return fields[3] != "01"
    return True


def unread_stream(port, n, pid):
    """A stream that stops reading is dropped once its backlog passes the bound, and its bytes go."""
    out = {"scenario": "unread", "rss_before_kib": status_kib(pid, "VmRSS")}
    s = unread_socket(port, ("GET /sse HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n"
                             % port).encode())
    s.settimeout(10)
    got = b""
    while b"sessionId=" not in got or b"\n" not in got.split(b"sessionId=", 1)[1]:
        b = s.recv(4096)
        if not b:
            raise SystemExit("the /sse stream ended before its endpoint")
        got += b
    sid = got.split(b"sessionId=", 1)[1].split(b"\n", 1)[0].decode()
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}})
    posted = []
    for body in (init, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})):
        st, _ = http_request(port, "POST", "/messages?sessionId=" + sid, {"Content-Type": "application/json"}, body)
        posted.append(st)
    for k in range(n):
        body = json.dumps({"jsonrpc": "2.0", "id": k + 1, "method": "tools/call", "params": {
            "name": "exec", "arguments": {"code": "import time; print('x' * 1000000); time.sleep(4)"},
            "_meta": {"progressToken": k + 1}}})
        st, _ = http_request(port, "POST", "/messages?sessionId=" + sid, {"Content-Type": "application/json"}, body)
        posted.append(st)
    out["posted"] = posted
    # Dropped: the server closed its end of the connection. Seen in the kernel's table, without
    # reading a byte here (reading would make room and so relieve the backlog; the server's FIN
    # waits behind the bytes we do not read). The calls end within seconds on a quiet machine; a
    # minute allows for a loaded one. Then what is left is read: it must end.
    end = time.monotonic() + 60
    while not server_end_closed(port, s.getsockname()[1]) and time.monotonic() < end:
        time.sleep(0.5)
    s.settimeout(5)
    eof = False
    try:
        while True:
            b = s.recv(1 << 20)
            if not b:
                eof = True
                break
    except OSError as e:
        eof = not isinstance(e, socket.timeout)
    s.close()
    out["eof"] = eof
    time.sleep(2)
    out["rss_after_kib"] = status_kib(pid, "VmRSS")
    return out


def main():
    a = sys.argv[1:]
    if a[:1] == ["http-probe"]:
        st, body = stateless_call(int(a[1]))
        sys.stdout.write("%s %s\n" % (st, body[:300]))
        sys.exit(0 if classify(st, body) == "ok" else 1)
    if a[:1] == ["http-repro"]:
        r = repro(int(a[1]))
    elif a[:1] == ["http"]:
        r = scenario_http(a[1], int(a[2]), int(a[3]), float(a[4]))
    elif a[:1] == ["http-token"]:
        r = token_flood(int(a[1]), int(a[2]), int(a[3]), int(a[4]))
    elif a[:1] == ["http-unread"]:
        r = unread_stream(int(a[1]), int(a[2]), int(a[3]))
    elif a[:1] == ["stdio"]:
        r = stdio(a[1], int(a[2]), float(a[3]))
    else:
        raise SystemExit("usage: see the header of " + os.path.basename(sys.argv[0]))
    sys.stdout.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
