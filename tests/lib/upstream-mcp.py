#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The in-box side of tests/integration/tools/test-upstream-units.sh: a raw MCP
client of the upstream servers' sockets (/run/mcp-exec/upstream/NAME.sock,
one newline-delimited JSON-RPC stream per connection, as the gateway speaks
to them), and the checks that need a connection held open.

usage: upstream-mcp.py CHECK ARGS...  (prints what it found; exit 1 with a
reason on a failed check)
  tools NAME                  initialize + tools/list: the tool names, one a line
  env NAME CANARY             get-env shows API_KEY=CANARY; with the connection held,
                              the instance's unit: a dynamic uid, its own network
                              namespace, `systemctl show` without the canary
  memory NAME                 two connections at once are two instances: an entity
                              created on one is not seen on the other
  gateway CANARY              through mcp-exec-toolsd: runs of two callers, a memory server
                              instance per caller, get-env's credential
  argv-env NAME KEY VALUE ARG...  the instance's argv (after ExecStart= parsing) is ARG...
                              and its environment has KEY=VALUE exactly
  egress NAME CANARY          NAME is tests/lib/upstream-fetch.py with NETWORK=egress:web:
                              allowed.test served, denied.test and loop.test (127.0.0.1)
                              refused by egressd, a POST of CANARY served; on its own the
                              instance has only lo, no route, no bind/listen, no DNS, no
                              AF_INET6, and its parent (the supervisor) is not readable
  egress-gateway              through mcp-exec-toolsd: uid:1000 gets fetch (policy web,
                              every caller) and not narrow (policy narrow: CALLERS uid:4242),
                              uid:4242 gets narrow; fetch works through a run
  no-start NAME               a connection to NAME's socket ends (EOF) without an answer:
                              its instance did not start
  feed-end NAME               egressd stopped under a live instance of NAME: the instance ends
  linger NAME                 NAME's server outlives its connection's EOF (ignoring SIGTERM):
                              its supervisor ends it all the same
  egress-down                 (egressd cannot start) a new instance of fetch does not start, and
                              the call through the gateway fails naming NETWORK=egress and the journal
"""
import json
import os
import socket
import subprocess
import sys
import time

DYN_MIN, DYN_MAX = 61184, 65519


def die(msg):
    print("upstream-mcp: " + msg, file=sys.stderr)
    sys.exit(1)


class Conn:
    def __init__(self, name):
        self.name = name
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.s.settimeout(30)
        self.s.connect("/run/mcp-exec/upstream/%s.sock" % name)
        self.f = self.s.makefile("rb")
        self.next_id = 1

    def send(self, msg):
        self.s.sendall((json.dumps(msg) + "\n").encode())

    def rpc(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        while True:
            line = self.f.readline()
            if not line:
                die("%s: EOF waiting for the answer to %s" % (self.name, method))
            m = json.loads(line)
            if m.get("id") == i and "method" not in m:
                if "error" in m:
                    die("%s: %s: %s" % (self.name, method, m["error"]))
                return m["result"]

    def initialize(self):
        r = self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "mcp-exec-test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def call(self, tool, args):
        r = self.rpc("tools/call", {"name": tool, "arguments": args})
        if r.get("isError"):
            die("%s: %s failed: %s" % (self.name, tool, r))
        return r

    def close(self):
        self.f.close()
        self.s.close()


def systemctl(*args):
    return subprocess.run(["systemctl"] + list(args), capture_output=True, text=True, check=False).stdout


def instances(name):
    out = systemctl("list-units", "--no-legend", "--plain", "--state=active",
                    "mcp-exec-upstream-%s@*.service" % name)
    return sorted(l.split()[0] for l in out.splitlines() if l.strip())


def instance_pid(unit):
    """The server's process: the unit's main process (the wrapper execs it)."""
    pid = systemctl("show", "-P", "MainPID", unit).strip()
    if not pid or pid == "0":
        die("%s: no main process" % unit)
    return int(pid)


def held_instance(name):
    """A connection, initialized, and the unit of its instance."""
    before = set(instances(name))
    c = Conn(name)
    c.initialize()
    deadline = time.time() + 20
    while time.time() < deadline:
        new = set(instances(name)) - before
        if len(new) == 1:
            return c, new.pop()
        time.sleep(0.1)
    die("%s: no new instance for the connection (before %s, now %s)" % (name, sorted(before), instances(name)))


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return [int(x) for x in line.split()[1:]]
    die("no Uid: in /proc/%d/status" % pid)


def check_tools(name):
    c = Conn(name)
    init = c.initialize()
    tools = []
    cursor = None
    while True:
        r = c.rpc("tools/list", {"cursor": cursor} if cursor else {})
        tools += [t["name"] for t in r["tools"]]
        cursor = r.get("nextCursor")
        if not cursor:
            break
    c.close()
    print("server %s %s" % (init["serverInfo"]["name"], init["protocolVersion"]), file=sys.stderr)
    print("\n".join(tools))


def check_env(name, canary):
    c, unit = held_instance(name)
    r = c.call("get-env", {})
    text = "".join(x.get("text", "") for x in r["content"])
    env = json.loads(text)
    if env.get("API_KEY") != canary:
        die("get-env: API_KEY is %r, not the credential" % env.get("API_KEY"))
    pid = instance_pid(unit)
    uids = uid_of(pid)
    if not all(DYN_MIN <= u <= DYN_MAX for u in uids):
        die("%s runs as uids %s, not a dynamic user" % (unit, uids))
    if os.readlink("/proc/%d/ns/net" % pid) == os.readlink("/proc/1/ns/net"):
        die("%s shares the host's network namespace" % unit)
    with open("/proc/%d/net/dev" % pid) as f:
        ifaces = sorted(l.split(":")[0].strip() for l in f.readlines()[2:])
    if ifaces != ["lo"]:
        die("%s sees the interfaces %s" % (unit, ifaces))
    shown = systemctl("show", unit) + systemctl("show", unit.split("@")[0] + "@.service")
    if canary in shown:
        die("the credential is in `systemctl show %s`" % unit)
    if "API_KEY" in shown and "API_KEY=tok" not in shown:
        die("API_KEY in `systemctl show` otherwise than by id")
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        if canary.encode() in f.read():
            die("the credential is on the server's command line")
    print("%s: uid %d, own network namespace (lo only), API_KEY from the credential, not in systemctl show"
          % (unit, uids[0]))
    c.close()


def graph_names(c):
    r = c.call("read_graph", {})
    g = r.get("structuredContent") or json.loads(r["content"][0]["text"])
    return sorted(e["name"] for e in g["entities"])


def check_memory(name):
    a, unit_a = held_instance(name)
    b, unit_b = held_instance(name)
    if unit_a == unit_b:
        die("two connections, one instance: %s" % unit_a)
    # A dynamic user each: neither can reach the other's /tmp (its graph) through /proc.
    uid_a, uid_b = uid_of(instance_pid(unit_a))[0], uid_of(instance_pid(unit_b))[0]
    if uid_a == uid_b or not (DYN_MIN <= uid_a <= DYN_MAX and DYN_MIN <= uid_b <= DYN_MAX):
        die("the instances run as uids %d and %d: not two dynamic users" % (uid_a, uid_b))
    a.call("create_entities", {"entities": [{"name": "alice-secret", "entityType": "person",
                                             "observations": ["only on connection A"]}]})
    if graph_names(a) != ["alice-secret"]:
        die("connection A does not see its own entity: %s" % graph_names(a))
    if graph_names(b) != []:
        die("connection B sees connection A's entities: %s" % graph_names(b))
    b.call("create_entities", {"entities": [{"name": "bob", "entityType": "person", "observations": []}]})
    if graph_names(a) != ["alice-secret"] or graph_names(b) != ["bob"]:
        die("the graphs mixed: A %s, B %s" % (graph_names(a), graph_names(b)))
    a.close()
    # A new connection is a fresh instance again: nothing of A's.
    c, unit_c = held_instance(name)
    if graph_names(c) != []:
        die("a new connection sees an old one's entities: %s" % graph_names(c))
    print("%s, %s and %s: three instances, three graphs, uids %d and %d for the first two"
          % (unit_a, unit_b, unit_c, uid_a, uid_b))
    b.close()
    c.close()


def check_argv(name, expected):
    # Not an MCP server: the connection only keeps the instance alive.
    before = set(instances(name))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/mcp-exec/upstream/%s.sock" % name)
    deadline = time.time() + 20
    while time.time() < deadline and not set(instances(name)) - before:
        time.sleep(0.1)
    new = set(instances(name)) - before
    if len(new) != 1:
        die("%s: no instance for the connection" % name)
    unit = new.pop()
    pid = instance_pid(unit)
    # Until systemd has executed the command, the process is its "(sh)".
    while True:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0")[:-1]]
        if (argv and not argv[0].startswith("(")) or time.time() > deadline:
            break
        time.sleep(0.05)
    if argv != expected:
        die("%s runs %r, not %r" % (unit, argv, expected))
    print("%s: argv %r" % (unit, argv))
    return s, pid


def check_env_of(name, key, value, args):
    s, pid = check_argv(name, args)
    with open("/proc/%d/environ" % pid, "rb") as f:
        env = dict(e.decode().split("=", 1) for e in f.read().split(b"\0") if b"=" in e)
    if env.get(key) != value:
        die("%s=%r in the instance, not %r" % (key, env.get(key), value))
    print("%s=%r" % (key, env.get(key)))
    s.close()


# ---- through the gateway (mcp-exec-toolsd), as the broker and a run use it ----

def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            die("the gateway closed the run's connection")
        buf += chunk
    return buf


class GatewayRun:
    """A run of CALLER: the control packet with the run's end of a socketpair,
    then framed requests on it (4-byte big-endian length + JSON)."""

    def __init__(self, caller):
        self.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        self.ctl.settimeout(30)
        self.ctl.connect("/run/mcp-exec/tools.sock")
        self.run, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.run.settimeout(60)
        msg = {"op": "run", "run": "upstream-test-%d" % os.getpid(), "caller": caller}
        socket.send_fds(self.ctl, [json.dumps(msg).encode()], [theirs.fileno()])
        theirs.close()
        reply = json.loads(self.ctl.recv(65536))
        if not reply.get("ok"):
            die("the gateway refused the run of %s: %s" % (caller, reply))
        self.servers = reply["servers"]
        self.next_id = 1

    def ask(self, req):
        req = dict(req, id=self.next_id)
        self.next_id += 1
        data = json.dumps(req).encode()
        self.run.sendall(len(data).to_bytes(4, "big") + data)
        n = int.from_bytes(recv_exact(self.run, 4), "big")
        ans = json.loads(recv_exact(self.run, n))
        if ans.get("id") != req["id"]:
            die("answer %s to request %d" % (ans.get("id"), req["id"]))
        if "error" in ans:
            die("%s: %s" % (req, ans["error"]))
        return ans

    def run_ask(self, req):
        """As ask(), but the answer as it is, an error too."""
        req = dict(req, id=self.next_id)
        self.next_id += 1
        data = json.dumps(req).encode()
        self.run.sendall(len(data).to_bytes(4, "big") + data)
        n = int.from_bytes(recv_exact(self.run, 4), "big")
        return json.loads(recv_exact(self.run, n))

    def call(self, server, tool, args):
        r = self.ask({"op": "call", "server": server, "tool": tool, "arguments": args})["result"]
        if r.get("isError"):
            die("%s.%s failed: %s" % (server, tool, r))
        return r

    def graph(self):
        r = self.call("memory", "read_graph", {})
        g = r.get("structuredContent") or json.loads(r["content"][0]["text"])
        return sorted(e["name"] for e in g["entities"])

    def end(self):
        self.ctl.send(json.dumps({"op": "end"}).encode())
        counts = json.loads(self.ctl.recv(65536))
        self.ctl.close()
        self.run.close()
        return counts


def check_gateway(canary):
    """The gateway reaches the generator's sockets as its own dynamic user (a member of
    mcp-exec-tools) and keeps one upstream instance per caller: caller A's graph is A's
    in a later run, and never B's."""
    a = GatewayRun("uid:1000")
    if sorted(a.servers) != ["everything", "memory"]:
        die("the gateway offers uid:1000 %s, not everything and memory" % a.servers)
    listed = {s["name"]: [t["name"] for t in s["tools"]] for s in a.ask({"op": "servers"})["servers"]}
    if "create_entities" not in listed.get("memory", []) or "get-env" not in listed.get("everything", []):
        die("the gateway's tool lists: %s" % listed)
    a.call("memory", "create_entities", {"entities": [{"name": "alice-private", "entityType": "person",
                                                       "observations": ["uid 1000 only"]}]})
    env = json.loads(a.call("everything", "get-env", {})["content"][0]["text"])
    if env.get("API_KEY") != canary:
        die("get-env through the gateway: API_KEY %r" % env.get("API_KEY"))
    counts = a.end()
    b = GatewayRun("uid:1001")
    if b.graph() != []:
        die("caller uid:1001 sees uid:1000's graph: %s" % b.graph())
    b.end()
    a2 = GatewayRun("uid:1000")
    if a2.graph() != ["alice-private"]:
        die("caller uid:1000's next run lost its graph: %s" % a2.graph())
    a2.end()
    print("through the gateway: tools of %s; uid:1000's entity kept for its next run, not seen by uid:1001; "
          "counts %s" % (sorted(listed), json.dumps(counts.get("servers"))))


# ---- NETWORK=egress:POLICY (tests/lib/upstream-fetch.py) ----

def text_of(r):
    return r["content"][0]["text"]


def check_egress(name, canary):
    c, unit = held_instance(name)
    pid = instance_pid(unit)
    probe = json.loads(text_of(c.call("probe", {})))
    want = {"proxy": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128", "bind": "EPERM",
            "listen": "EPERM", "direct": "ENETUNREACH", "ifaces": ["lo"], "inet6": "EAFNOSUPPORT",
            # io_uring would bind() and listen() past the filter (IORING_OP_BIND, _LISTEN, Linux 6.11);
            # /run's IPC endpoints (the system bus, a local resolver) would carry data out by DNS.
            "io_uring": "EPERM", "system_bus": "ENOENT",
            # ENVIRONMENT reaches the server (and not the root ExecStartPre=+, or it would not run).
            "env": ["ok", "/run/mcp-exec/egress.sock"]}
    bad = {k: (probe.get(k), v) for k, v in want.items() if probe.get(k) != v}
    # Not dumpable: its /proc entry is root's, which ProtectProc=invisible hides (ENOENT), or at
    # least does not let the server into (EACCES).
    if probe.get("parent_fds") not in ("ENOENT", "EACCES"):
        bad["parent_fds"] = (probe.get("parent_fds"), "ENOENT or EACCES")
    if bad or probe.get("dns") == "allowed":
        die("%s's instance on its own: %s (got, want); dns %s" % (name, bad, probe.get("dns")))
    got = {}
    for what, url, data in (("allowed", "http://allowed.test/small.txt", None),
                            ("post", "http://allowed.test/post", canary),
                            ("denied", "http://denied.test/", None),
                            ("non-public", "http://loop.test/", None)):
        got[what] = text_of(c.call("fetch", {"url": url, "data": data} if data else {"url": url}))
    if not got["allowed"].startswith("200 hello from allowed.test"):
        die("allowed.test through the proxy: %r" % got["allowed"])
    if not got["post"].startswith("200"):
        die("a POST to allowed.test through the proxy: %r" % got["post"])
    if not (got["denied"].startswith("403") and "blocked by policy" in got["denied"]):
        die("denied.test: %r" % got["denied"])
    if not (got["non-public"].startswith("403") and "not a public address" in got["non-public"]):
        die("loop.test (127.0.0.1): %r" % got["non-public"])
    # The supervisor is the unit's main process, the server its child.
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        children = f.read().split()
    if len(children) != 1:
        die("%s: the supervisor (%d) has children %s, want the server alone" % (unit, pid, children))
    c.close()
    print("%s (%s): on its own %s; allowed %s; denied %s; non-public %s" % (
        name, unit, json.dumps(probe, sort_keys=True), got["allowed"][:40].strip(), got["denied"][:60].strip(),
        got["non-public"][:70].strip()))


def check_egress_gateway():
    a = GatewayRun("uid:1000")
    if "fetch" not in a.servers or "narrow" in a.servers:
        die("the gateway offers uid:1000 %s: want fetch, not narrow (its policy's CALLERS)" % a.servers)
    r = a.call("fetch", "fetch", {"url": "http://allowed.test/small.txt"})
    if not text_of(r).startswith("200 hello"):
        die("fetch through the gateway: %r" % text_of(r))
    refused = a.run_ask({"op": "call", "server": "narrow", "tool": "fetch",
                         "arguments": {"url": "http://allowed.test/small.txt"}})
    if "error" not in refused:
        die("uid:1000 called narrow, whose policy's CALLERS are uid:4242: %s" % refused)
    a.end()
    b = GatewayRun("uid:4242")
    if "narrow" not in b.servers:
        die("the gateway does not offer uid:4242 narrow: %s" % b.servers)
    b.end()
    print("through the gateway: uid:1000 gets %s (not narrow: %s), fetched allowed.test; uid:4242 gets narrow"
          % (sorted(a.servers), refused["error"].get("message")))


def check_egress_down():
    """egressd cannot start: a new instance of fetch (a caller without one yet) cannot get its
    network, so it does not start, and the code's call fails naming why."""
    a = GatewayRun("uid:1001")
    ans = a.run_ask({"op": "call", "server": "fetch", "tool": "fetch",
                     "arguments": {"url": "http://allowed.test/small.txt"}})
    a.end()
    text = json.dumps(ans)
    if "NETWORK=egress" not in text or "journalctl" not in text:
        die("a call to an instance without its network: %s" % text[:400])
    print("egressd down: the call fails: %s" % text[:300])


def check_feed_end(name):
    """egressd stopped under a live instance: its feed ends, and so does the instance (the
    connection's EOF), rather than a server left without network."""
    c, unit = held_instance(name)
    systemctl("stop", "mcp-exec-egress.service")
    c.s.settimeout(15)
    try:
        line = c.f.readline()
    except ConnectionResetError:
        line = b""
    except TimeoutError:
        die("%s still runs 15 s after egressd stopped" % unit)
    if line:
        die("%s answered after egressd stopped: %r" % (unit, line[:200]))
    print("egressd stopped: %s ended with its feed" % unit)


def check_linger(name):
    """A server that would outlive its connection (it ignores the EOF and SIGTERM) and keep its
    network and its run in egressd after the gateway let it go: its supervisor ends it."""
    c, unit = held_instance(name)
    c.call("linger", {})
    c.close()
    deadline = time.time() + 30
    while time.time() < deadline:
        if systemctl("is-active", unit).strip() != "active":
            print("%s: the connection closed, the lingering server ended" % unit)
            return
        time.sleep(0.2)
    die("%s still runs 30 s after its connection closed (a server ignoring EOF keeps its network)" % unit)


def check_no_start(name):
    c = Conn(name)
    c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "mcp-exec-test", "version": "1"}}})
    try:
        line = c.f.readline()
    except ConnectionResetError:
        line = b""
    if line:
        die("%s answered although its instance should not start: %r" % (name, line[:200]))
    print("%s: the connection ended without an answer" % name)


def main():
    what, name = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    if what == "tools":
        check_tools(name)
    elif what == "env":
        check_env(name, sys.argv[3])
    elif what == "memory":
        check_memory(name)
    elif what == "gateway":
        check_gateway(name)
    elif what == "egress":
        check_egress(name, sys.argv[3])
    elif what == "egress-gateway":
        check_egress_gateway()
    elif what == "egress-down":
        check_egress_down()
    elif what == "feed-end":
        check_feed_end(name)
    elif what == "linger":
        check_linger(name)
    elif what == "no-start":
        check_no_start(name)
    elif what == "argv-env":
        # argv-env NAME KEY VALUE ARG...: both at once, one instance.
        check_env_of(name, sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        die("unknown check " + what)


main()
