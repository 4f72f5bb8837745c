#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""mcp-exec benchmarks, run inside a systemd machine (bench/run boots one)
with the service installed and mcp-exec.socket listening on 127.0.0.1:8080.
Every comparison is measured side by side in one run, interleaved, so that
load spikes hit each side alike; only ratios are meant to be compared.

  bench.py latency N        `pass` over Streamable HTTP (stateless calls), one
                            at a time (paced, and back to back), vs bare
                            `python3 -I -c pass`
  bench.py languages N      issue 42: an empty program in python, bash and
                            javascript (`language`), a call every second
                            each, beside `python3 -c pass`, `bash -c :` and
                            `node -e 0` started the same way, interleaved;
                            p50 ratios (goal <= 0.3x each)
  bench.py dataplot N       numpy + pandas + matplotlib.pyplot and one plot
                            saved to PNG, the same comparison
  bench.py throughput C N   N calls, C at a time: calls/s and CPU per exec
                            (the machine's whole CPU time, from its cgroup)
                            vs N `systemd-run --wait --pipe` units with the
                            same properties running /bin/true, and running
                            `python3 -I -c pass`; and the floor: /bin/true in
                            a unit with the run unit's own properties, and
                            in a bare unit
  bench.py props N          what each run unit property costs systemd here:
                            `systemd-run --wait --pipe` /bin/true with all
                            of them vs the same minus one (or one group), N
                            rounds, every variant once per round
  bench.py first N          the first call after the front end and the broker
                            stopped (as after idle exit) vs the calls after it
  bench.py idle N           as first, after real idle exits of the front end
                            and the broker (short idle times), one warm unit:
                            with systemd >= 254 it outlives the broker
  bench.py fdstore          what systemd keeps of a service's stored fds
                            across its exit (what an idle exit could keep)
  bench.py beside N         an experiment: a sandbox unit that systemd starts
                            beside the front end after an idle exit, when
                            its interpreter is up against the front end's
                            main() and the goal for the first call
  bench.py datastack N      `import numpy, pandas, matplotlib.pyplot` (the
                            imports only) paced, vs bare python (goal <= 0.05x)
  bench.py breakdown N [L]  where a paced warm empty call's time goes, stage
                            by stage, from the front end's debug lines
                            (MCP_STAGE_*; bench/run turns debug on for it),
                            in language L (python, the default, or bash,
                            javascript)
  bench.py session N        stateful sessions: session_create (N times), the
                            memory of an idle session's unit (after one call,
                            and with pandas imported), and `pass` in a session
                            vs a stateless `pass` taken by a warm unit vs bare
                            python, interleaved
  bench.py tools N          code mode (issue 40): N sequential echo calls to a
                            real server-everything from a run's Python
                            (mcp_servers, through the gateway) vs N from a
                            direct MCP client on the same upstream socket
                            (root, one connection), each timed call by call;
                            needs servers.d/everything.conf (bench/run
                            writes it)
  bench.py packages N       issue 41: `pass` without packages, with one
                            tiny pure-Python package, and with five (one
                            with a compiled extension, built with gcc),
                            interleaved, a call every second; puts its
                            wheels in the wheelhouse (`mcp-exec wheels add`)
                            (goal: with packages <= 1.2x without + 20 ms)

Prints one table per mode; bench/run collects them."""
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time

PY = "/usr/bin/python3"
HOST, PORT = "127.0.0.1", 8080
PV = "2026-07-28"

# The run units' systemd properties (src/broker/sandbox-properties.c), for
# systemd-run: what systemd itself costs with them.
PROPS = [
    "DynamicUser=yes", "NoNewPrivileges=yes", "RestrictSUIDSGID=yes", "RemoveIPC=yes",
    "PrivateNetwork=yes", "PrivateTmp=yes", "PrivateDevices=yes", "PrivateIPC=yes", "PrivateMounts=yes",
    "ProtectKernelTunables=yes", "ProtectKernelModules=yes", "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes", "ProtectClock=yes", "ProtectHostname=yes", "LockPersonality=yes",
    "RestrictRealtime=yes", "CPUAccounting=yes", "MemoryAccounting=yes", "TasksAccounting=yes",
    "ProtectSystem=strict", "ProtectHome=yes", "ProtectProc=invisible", "WorkingDirectory=/tmp",
    "KillMode=control-group", "OOMPolicy=stop",
    "TemporaryFileSystem=/dev/shm:mode=1777,size=67108864,nosuid,nodev",
    "TemporaryFileSystem=/run:ro,mode=0755,nosuid,nodev,noexec",
    "BindReadOnlyPaths=/run/systemd/userdb",
    "CapabilityBoundingSet=", "AmbientCapabilities=", "RestrictNamespaces=yes", "UMask=0077",
    "RestrictAddressFamilies=AF_UNIX", "SystemCallFilter=@system-service",
    "SystemCallFilter=~@keyring io_uring_setup io_uring_enter io_uring_register userfaultfd",
    "SystemCallArchitectures=native", "SystemCallErrorNumber=EPERM",
    "MemoryMax=256M", "MemorySwapMax=0", "TasksMax=128", "CPUQuota=100%", "RuntimeMaxSec=30",
    "KillSignal=SIGKILL", "LimitFSIZE=64M", "LimitCORE=0", "Slice=mcp-exec.slice",
]

DATASTACK = "import numpy, pandas, matplotlib.pyplot\n"

DATAPLOT = ("import numpy, pandas, matplotlib.pyplot as plt\n"
            "df = pandas.DataFrame({'x': numpy.arange(10), 'y': numpy.arange(10) ** 2})\n"
            "plt.plot(df.x, df.y)\n"
            "plt.savefig('/tmp/plot.png')\n")


def auth_headers():
    """The token mcp-exec.service loads (README, "Connect a client"), if the machine has one:
    with it, a call without the header is refused (401)."""
    try:
        with open("/etc/credstore/mcp-exec.auth-token") as f:
            token = f.read().strip()
    except FileNotFoundError:
        return {}
    return {"X-MCP-AUTH": token} if token else {}


class Client:
    """Stateless tools/call (revision 2026-07-28) on one keep-alive connection."""

    def __init__(self):
        self.conn = http.client.HTTPConnection(HOST, PORT, timeout=120)
        self.id = 0
        self.auth = auth_headers()

    def exec(self, code, session=None, language=None):
        args = {"code": code}
        if session:
            args["session"] = session
        if language:
            args["language"] = language
        sc = self.call("exec", args)
        if sc.get("exit_code") != 0:
            sys.exit("the call failed: %s" % json.dumps(sc)[:600])
        return sc

    def refused(self):
        """An exec call the server refuses before any run (an unknown
        language): HTTP, JSON-RPC, the argument check and an isError reply,
        what every call costs whatever its run takes."""
        self.call("exec", {"code": ":", "language": "cobol"}, refused=True)

    def call(self, tool, args, refused=False):
        self.id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": "tools/call", "params": {
            "name": tool, "arguments": args,
            "_meta": {"io.modelcontextprotocol/protocolVersion": PV,
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": PV, "Mcp-Method": "tools/call", "Mcp-Name": tool}
        if "session" in args:
            headers["Mcp-Param-Session"] = args["session"]     # 2026-07-28 mirrors it
        headers.update(self.auth)
        for attempt in range(2):
            try:
                self.conn.request("POST", "/mcp", body, headers)
                resp = self.conn.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, OSError):
                # The front end closed an idle keep-alive connection: once more on a new one.
                self.conn.close()
                self.conn = http.client.HTTPConnection(HOST, PORT, timeout=120)
                if attempt:
                    raise
        if resp.status != 200:
            sys.exit("HTTP %d: %s" % (resp.status, data[:300]))
        if data.startswith(b"event:") or data.startswith(b"data:"):
            data = b"".join(l[5:] for l in data.splitlines() if l.startswith(b"data:"))
        reply = json.loads(data)
        result = reply.get("result") or {}
        if bool(result.get("isError")) != refused:
            sys.exit("the call %s: %s" % ("was not refused" if refused else "failed", json.dumps(reply)[:600]))
        if refused:
            return None
        sc = result.get("structuredContent")
        if sc is None:
            sc = json.loads(result["content"][0]["text"])
        return sc


def timed(f):
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1000


def bare(code):
    r = subprocess.run([PY, "-I", "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/tmp")
    if r.returncode:
        sys.exit("bare python failed: %s" % r.stderr.decode(errors="replace"))


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p * (len(v) - 1))))]


def table(title, rows, base, goals=None):
    """goals: {row: "≤ 0.2×"}, the issue's goal for a row's ratio, printed beside it (not judged)."""
    goals = goals or {}
    print("\n## %s" % title)
    print("| what | p50 ms | p99 ms | p50 ratio to bare python | goal |")
    print("|---|---:|---:|---:|---|")
    b = statistics.median(rows[base])
    for k, v in rows.items():
        print("| %s | %.1f | %.1f | %.2f× | %s |" % (k, statistics.median(v), pct(v, 0.99), statistics.median(v) / b,
                                                 goals.get(k, "")))


def compare(title, code, n, pace, goal=None, back_to_back=True):
    """bare python next to mcp-exec, interleaved; mcp-exec both paced (a
    call every `pace` seconds, as an agent calls between thoughts: the pool
    refills in between) and back to back (the pool runs dry after its size,
    then calls take the cold path)."""
    c = Client()
    for _ in range(3):              # the pool fills, caches are warm
        c.exec(code)
        bare(code)
    time.sleep(pace)
    base = "bare `python3 -I -c`"
    paced = "mcp-exec over HTTP, a call every %g s" % pace
    b2b = "mcp-exec over HTTP, back to back"
    rows = {base: [], paced: [], b2b: []}
    for _ in range(n):
        t0 = time.perf_counter()
        rows[base].append(timed(lambda: bare(code)))
        rows[paced].append(timed(lambda: c.exec(code)))
        time.sleep(max(0.0, pace - (time.perf_counter() - t0)))
    if back_to_back:
        for _ in range(n):
            rows[b2b].append(timed(lambda: c.exec(code)))
    else:
        del rows[b2b]
    table(title, rows, base, {paced: goal} if goal else None)


# Issue 42: each language's empty program, and its bare interpreter started
# the same way outside the sandbox.
LANGUAGES = (
    ("python", "pass", ["python3", "-c", "pass"]),
    ("bash", ":", ["bash", "-c", ":"]),
    ("javascript", "0", ["node", "-e", "0"]),
)


def languages(n, pace=1.0):
    """Paced calls (one every `pace` s, as an agent between thoughts) of an
    empty program in each language through the server, each beside its bare
    interpreter, interleaved in one run; the ratios side by side."""
    c = Client()
    langs = [(l, code, argv) for l, code, argv in LANGUAGES if shutil.which(argv[0])]
    for l, code, argv in langs:
        for _ in range(3):          # each language's pool fills, caches are warm
            c.exec(code, language=l)
            subprocess.run(argv, check=True, cwd="/tmp")
        c.refused()
    time.sleep(pace)
    rows = {l: ([], []) for l, _, _ in langs}
    floor = []
    for _ in range(n):
        for l, code, argv in langs:
            t0 = time.perf_counter()
            rows[l][0].append(timed(lambda: subprocess.run(argv, check=True, cwd="/tmp")))
            rows[l][1].append(timed(lambda: c.exec(code, language=l)))
            time.sleep(max(0.0, pace - (time.perf_counter() - t0)))
        # The floor: a call refused before any run, paced the same way.
        t0 = time.perf_counter()
        floor.append(timed(c.refused))
        time.sleep(max(0.0, pace - (time.perf_counter() - t0)))
    f = statistics.median(floor)
    print("\n## An empty program per language, a call every %g s, beside its bare interpreter" % pace)
    print("(floor: an exec call refused before any run, an unknown language: HTTP, JSON-RPC, the argument")
    print("check and the reply, paced the same way; p50 %.1f ms, p99 %.1f ms. No run can cost less.)" % (
        f, pct(floor, 0.99)))
    print("| language | bare | bare p50 ms | mcp-exec p50 ms | mcp-exec p99 ms | p50 ratio to bare | floor ratio to bare"
          " | goal |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for l, code, argv in langs:
        b, m = rows[l]
        bp = statistics.median(b)
        print("| %s | `%s` | %.1f | %.1f | %.1f | %.2f× | %.2f× | ≤ 0.3× |" % (
            l, " ".join(argv), bp, statistics.median(m), pct(m, 0.99), statistics.median(m) / bp, f / bp))


def cpu_ns():
    with open("/sys/fs/cgroup/cpuacct/cpuacct.usage") as f:
        return int(f.read())


def run_units():
    """systemctl's lines of the run units, warm ones included (their
    description says "warm unit (starting)" or "(idle)")."""
    return subprocess.run(["systemctl", "list-units", "mcp-exec-run-*", "--plain", "--no-legend"],
                          capture_output=True, text=True, check=True).stdout


def settle():
    """Waits until no warm unit is starting: a refill's imports would take
    CPU from whatever is measured next."""
    for _ in range(600):
        if "(starting)" not in run_units():
            break
        time.sleep(0.1)
    time.sleep(0.5)


def throughput(conc, n):
    def drive(work):
        left = [n]
        lock = threading.Lock()

        def worker():
            w = work()
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                w()
        ts = [threading.Thread(target=worker) for _ in range(conc)]
        c0, t0 = cpu_ns(), time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return n / (time.perf_counter() - t0), (cpu_ns() - c0) / n / 1e6

    def sdrun(*cmd, props=PROPS):
        argv = ["systemd-run", "--wait", "--pipe", "--quiet", "--collect"] + \
            [a for p in props for a in ("-p", p)] + list(cmd)

        def work():
            def once():
                r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
                if r.returncode:
                    sys.exit("systemd-run failed: %s" % r.stderr.decode(errors="replace"))
            return once
        return work

    def mcp():
        c = Client()
        return lambda: c.exec("pass")

    drive(mcp)                      # warm-up: the front end, the broker, the pool
    settle()
    rate_s, cpu_s = drive(sdrun("/bin/true"))
    settle()
    rate_p, cpu_p = drive(sdrun(PY, "-I", "-c", "pass"))
    settle()
    rate_m, cpu_m = drive(mcp)
    # The floor under any call: systemd's own part of a unit. A run unit
    # carries the old set less the seccomp family (the launcher loads its
    # filter itself); a bare unit carries nothing at all.
    settle()
    rate_o, cpu_o = drive(sdrun("/bin/true", props=RUN_UNIT_PROPS))
    settle()
    rate_b, cpu_b = drive(sdrun("/bin/true", props=[]))
    print("\n## %d calls, %d at a time" % (n, conc))
    print("| what | per second | CPU ms per exec (whole machine) |")
    print("|---|---:|---:|")
    print("| `systemd-run --wait --pipe` /bin/true, same properties | %.1f | %.1f |" % (rate_s, cpu_s))
    print("| `systemd-run --wait --pipe` /bin/true, same properties less the seccomp family "
          "(the launcher's now) | %.1f | %.1f |" % (rate_o, cpu_o))
    print("| `systemd-run --wait --pipe` /bin/true, no properties (a bare unit) | %.1f | %.1f |"
          % (rate_b, cpu_b))
    print("| `systemd-run --wait --pipe` `python3 -I -c pass`, same properties | %.1f | %.1f |" % (rate_p, cpu_p))
    print("| mcp-exec `pass` over HTTP | %.1f | %.1f |" % (rate_m, cpu_m))
    print("| ratio to systemd-run /bin/true | %.2f× | %.2f× |" % (rate_m / rate_s, cpu_m / cpu_s))
    print("| ratio to systemd-run python (goal: ≥ 1.5× the rate, ≤ 1× the CPU) | %.2f× | %.2f× |"
          % (rate_m / rate_p, cpu_m / cpu_p))
    # With every core busy the rate is the machine's CPU over the CPU per
    # call: then 1.5× the rate means two thirds of the CPU per call.
    print("\nsystemd-run python kept %.0f%% of the %d cores busy; at that, 1.5× its rate needs a call "
          "at ≤ %.1f ms of CPU (%.2f× systemd-run /bin/true with the run unit's own properties, "
          "%.2f× a bare unit)" % (rate_p * cpu_p / 10 / os.cpu_count(), os.cpu_count(), cpu_p / 1.5,
                                  cpu_p / 1.5 / cpu_o, cpu_p / 1.5 / cpu_b))


# Properties that only make sense together: left out as one.
SYSCALL_FILTER = [p for p in PROPS if p.startswith(("SystemCallFilter=", "SystemCallArchitectures=",
                                                     "SystemCallErrorNumber="))]
# The system call filter and what systemd builds into the same seccomp
# programs: the family the launcher loads itself now (issue 24).
SECCOMP_FAMILY = SYSCALL_FILTER + [p for p in PROPS if p.split("=")[0] in (
    "RestrictAddressFamilies", "RestrictNamespaces", "LockPersonality", "RestrictRealtime",
    "RestrictSUIDSGID")]
# What systemd itself enforces for a run unit now: the old set less that
# family (the throughput floor and the beside experiment).
RUN_UNIT_PROPS = [p for p in PROPS if p not in SECCOMP_FAMILY]


def prop_variants():
    """name -> property list: the full set, the full set minus each
    property (minus each group), and none at all."""
    v = {"all of them": PROPS,
         "system call filter (%d properties)" % len(SYSCALL_FILTER):
             [p for p in PROPS if p not in SYSCALL_FILTER],
         "the seccomp family (%d properties)" % len(SECCOMP_FAMILY):
             [p for p in PROPS if p not in SECCOMP_FAMILY]}
    for p in PROPS:
        if p not in SYSCALL_FILTER:
            v["`%s`" % p] = [q for q in PROPS if q != p]
    v["every property (a bare unit)"] = []
    return v


def props(n):
    """What each property costs systemd per unit here: `systemd-run --wait
    --pipe` /bin/true (as the throughput mode runs it) with the full set vs
    the full set minus one property or group. N rounds, each variant once
    per round in a new random order, so that load, and the work a unit
    leaves to PID 1 after systemd-run returns, hits every variant alike.
    CPU is the machine's whole CPU time (its cgroup) around each unit."""
    variants = prop_variants()
    argv = {k: ["systemd-run", "--wait", "--pipe", "--quiet", "--collect"] +
            [a for p in ps for a in ("-p", p)] + ["/bin/true"] for k, ps in variants.items()}
    cpu = {k: [] for k in variants}
    wall = {k: [] for k in variants}
    rng = random.Random(24)
    settle()
    order = list(variants)
    for _ in range(n):
        rng.shuffle(order)
        for k in order:
            c0, t0 = cpu_ns(), time.perf_counter()
            r = subprocess.run(argv[k], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
            wall[k].append((time.perf_counter() - t0) * 1000)
            cpu[k].append((cpu_ns() - c0) / 1e6)
            if r.returncode:
                sys.exit("systemd-run without %s failed: %s" % (k, r.stderr.decode(errors="replace")))
    fc, fw = statistics.median(cpu["all of them"]), statistics.median(wall["all of them"])
    print("\n## What each run unit property costs systemd: `systemd-run --wait --pipe` /bin/true, "
          "%d rounds of %d variants" % (n, len(variants)))
    print("| left out | CPU ms per unit (p50, whole machine) | saved vs all | wall ms p50 | saved vs all |")
    print("|---|---:|---:|---:|---:|")
    for k in sorted(variants, key=lambda k: statistics.median(cpu[k])):
        c, w = statistics.median(cpu[k]), statistics.median(wall[k])
        print("| %s | %.1f | %+.1f | %.1f | %+.1f |" % ("nothing (all %d properties)" % len(PROPS)
                                                    if k == "all of them" else k, c, fc - c, w, fw - w))


def pool_ready():
    return run_units().count("warm unit (idle)")


def idle_exit(*also):
    """What an idle exit leaves: the front end, the broker and the mount
    daemon (10 s after the broker) all gone; units in also stopped with the
    first two. The mount daemon after the broker: a broker that stops sends
    it its last removals, and that connection would start it again."""
    subprocess.run(["systemctl", "stop", "mcp-exec.service", "mcp-exec-broker.service", *also], check=True)
    subprocess.run(["systemctl", "stop", "mcp-exec-tmpfs.service"], check=True)


def waited_idle_exit():
    """A real idle exit: the front end and the broker exit on their own
    (idle_first() shortens their idle times), then the mount daemon is
    stopped as in idle_exit()."""
    for _ in range(1200):
        if all(unit_prop(u, "ActiveState") == "inactive" for u in ("mcp-exec.service", "mcp-exec-broker.service")):
            break
        time.sleep(0.1)
    else:
        sys.exit("the front end and the broker did not exit idle")
    subprocess.run(["systemctl", "stop", "mcp-exec-tmpfs.service"], check=True)


def first_after_idle(n, exit_idle=idle_exit, size=2, what="front end, broker and mount daemon stopped"):
    """The first call after idle exit next to a call right after it (the
    daemons up, no warm unit ready yet: the cold path) and calls once the
    pool is full (warm units)."""
    firsts, colds, warms = [], [], []
    for _ in range(n):
        exit_idle()
        time.sleep(1)
        c = Client()
        firsts.append(timed(lambda: c.exec("pass")))
        if pool_ready() == 0:
            colds.append(timed(lambda: c.exec("pass")))
        for _ in range(100):        # the pool refills
            if pool_ready() >= size:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        for _ in range(2):
            warms.append(timed(lambda: c.exec("pass")))
            time.sleep(0.5)
        c.conn.close()              # no keep-alive holds the front end
    f = statistics.median(firsts)
    print("\n## The first call after idle exit (%s), %d times" % (what, n))
    print("| what | p50 ms | max ms | first / this (p50) |")
    print("|---|---:|---:|---:|")
    print("| first call | %.1f | %.1f | |" % (f, max(firsts)))
    if colds:
        print("| the call right after it (daemons up, no warm unit yet: cold path), %d of %d (goal: first ≤ 1.5× this) | %.1f | %.1f | %.2f× |"
              % (len(colds), n, statistics.median(colds), max(colds), f / statistics.median(colds)))
    print("| calls once the pool is full (warm units) | %.1f | %.1f | %.2f× |"
          % (statistics.median(warms), max(warms), f / statistics.median(warms)))


IDLE_DROPIN = "/run/systemd/system/mcp-exec-broker.service.d/bench-idle.conf"
IDLE_CONF = "/etc/mcp-exec/mcp-exec.conf"


def idle_first(n):
    """first_after_idle() after real idle exits: the broker's idle time 2 s
    (a drop-in), the front end's too (MCP_EXEC_IDLE_EXIT_S=2), one warm unit
    (so that the call right after the first finds none ready: the cold path)
    and MCP_EXEC_POOL_IDLE_S=10 (a broker that stays for its warm units, on
    a systemd that does not keep its fd store, exits after that)."""
    os.makedirs(os.path.dirname(IDLE_DROPIN), exist_ok=True)
    with open(IDLE_DROPIN, "w") as f:
        f.write("[Service]\nExecStart=\nExecStart=/usr/libexec/mcp-exec/mcp-exec-brokerd --idle-exit-sec=2\n")
    saved = None
    if os.path.exists(IDLE_CONF):
        with open(IDLE_CONF) as f:
            saved = f.read()
    os.makedirs(os.path.dirname(IDLE_CONF), exist_ok=True)
    with open(IDLE_CONF, "w") as f:
        f.write("MCP_EXEC_POOL_SIZE=1\nMCP_EXEC_POOL_IDLE_S=10\nMCP_EXEC_IDLE_EXIT_S=2\n")
    try:
        subprocess.run(["systemctl", "daemon-reload"], check=True)
        idle_exit()
        c = Client()                # the pool's first fill, then its idle exit
        c.exec("pass")
        c.conn.close()
        preserve = unit_prop("mcp-exec-broker.service", "FileDescriptorStorePreserve") or "unknown to this systemd"
        first_after_idle(n, waited_idle_exit, 1, "real idle exits of the front end and the broker, the mount "
                         "daemon stopped, one warm unit; the broker's FileDescriptorStorePreserve=%s" % preserve)
    finally:
        remove(IDLE_DROPIN)
        if saved is None:
            remove(IDLE_CONF)
        else:
            with open(IDLE_CONF, "w") as f:
                f.write(saved)
        subprocess.run(["systemctl", "daemon-reload"], check=True)
        idle_exit()


FDSTORE_UNIT = "mcp-exec-bench-fdstore.service"
FDSTORE_SCRIPT = """import array, os, socket, time
with open("/run/mcp-exec-bench-fdstore.listen", "a") as f:
    f.write(os.environ.get("LISTEN_FDS", "0") + "\\n")
a, b = socket.socketpair()
addr = os.environ["NOTIFY_SOCKET"]
addr = "\\0" + addr[1:] if addr.startswith("@") else addr
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.sendmsg([b"FDSTORE=1\\nFDNAME=kept"],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [a.fileno(), b.fileno()]).tobytes())], 0, addr)
n.sendto(b"READY=1", addr)
time.sleep(1)
"""


def remove(*paths):
    """Removes what a mode wrote for itself; one already gone is fine."""
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def unit_prop(unit, prop):
    return subprocess.run(["systemctl", "show", "-p", prop, "--value", unit],
                          capture_output=True, text=True, check=True).stdout.strip()


def fdstore():
    """What systemd keeps of a service across its exit: the only place a
    daemon that exits when idle could leave a live sandbox (its control
    socket) for its next start. A service stores both ends of a socket pair
    (FDSTORE=1, FileDescriptorStoreMax=4; both, so that neither hangs up
    when the process exits, which would drop it), is restarted while it
    runs (the case the store is kept for: the control), exits, and is
    started again."""
    unit_path = "/run/systemd/system/" + FDSTORE_UNIT
    with open("/run/mcp-exec-bench-fdstore.py", "w") as f:
        f.write(FDSTORE_SCRIPT)
    with open(unit_path, "w") as f:
        f.write("[Service]\nType=notify\nNotifyAccess=main\nFileDescriptorStoreMax=4\n"
                "ExecStart=%s /run/mcp-exec-bench-fdstore.py\n" % PY)
    try:
        subprocess.run(["systemctl", "daemon-reload"], check=True)
        subprocess.run(["systemctl", "start", FDSTORE_UNIT], check=True)
        running = unit_prop(FDSTORE_UNIT, "NFileDescriptorStore")
        subprocess.run(["systemctl", "restart", FDSTORE_UNIT], check=True)
        for _ in range(100):
            if unit_prop(FDSTORE_UNIT, "ActiveState") != "active":
                break
            time.sleep(0.1)
        exited = unit_prop(FDSTORE_UNIT, "NFileDescriptorStore")
        subprocess.run(["systemctl", "start", FDSTORE_UNIT], check=True)
        with open("/run/mcp-exec-bench-fdstore.listen") as f:
            received = f.read().split()
        preserve = unit_prop(FDSTORE_UNIT, "FileDescriptorStorePreserve") or "not known to this systemd"
    finally:
        subprocess.run(["systemctl", "stop", FDSTORE_UNIT])
        remove(unit_path, "/run/mcp-exec-bench-fdstore.py", "/run/mcp-exec-bench-fdstore.listen")
        subprocess.run(["systemctl", "daemon-reload"], check=True)
    print("\n## What systemd keeps of a service's stored fds across its exit (FDSTORE=1, a socket pair)")
    print("| what | |")
    print("|---|---:|")
    print("| fds in its store while it runs | %s |" % running)
    print("| fds a restart while it ran received (LISTEN_FDS) | %s |" % (received[1] if len(received) > 1 else "?"))
    print("| fds in its store once it exited | %s |" % exited)
    print("| fds the next start received (LISTEN_FDS) | %s |" % (received[2] if len(received) > 2 else "?"))
    print("| FileDescriptorStorePreserve= (keeps the store across an exit; systemd 254 and later) | %s |"
          % preserve)


BESIDE_UNIT = "mcp-exec-bench-beside.service"
BESIDE_DROPIN = "/run/systemd/system/mcp-exec.service.d/bench-beside.conf"
# Inline: the unit's /run is its own empty tmpfs. "%%" is a unit file's "%".
BESIDE_EXEC = ("-I -c \"import time; print('interpreter-up %%.6f' %% time.time(), flush=True); "
               "time.sleep(20)\"")


def beside(n):
    """The one route left to the first call after an idle exit on a systemd
    that empties the fd store: a sandbox unit that systemd starts beside the
    front end, in its own activation, its interpreter already waiting. Not
    built; measured here with a unit file of the run unit's properties (the
    old set less the seccomp family) whose Python only says when it is up,
    wanted by mcp-exec.service, and the pool off so that nothing else
    starts beside the four units. Against it: when the front end's main()
    logs its first line, the first call itself, and the cold call after."""
    conf = "/etc/mcp-exec/mcp-exec.conf"
    try:
        with open(conf) as f:
            saved = f.read()
    except FileNotFoundError:
        saved = None
    props = [p.replace("%", "%%") for p in RUN_UNIT_PROPS]
    with open("/run/systemd/system/" + BESIDE_UNIT, "w") as f:
        f.write("[Service]\nType=exec\nExecStart=%s %s\n" % (PY, BESIDE_EXEC) + "\n".join(props) + "\n")
    os.makedirs(os.path.dirname(BESIDE_DROPIN), exist_ok=True)
    with open(BESIDE_DROPIN, "w") as f:
        f.write("[Unit]\nWants=%s\n" % BESIDE_UNIT)
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    with open(conf, "w") as f:
        f.write("MCP_EXEC_POOL_SIZE=0\n")
    rows = []
    try:
        subprocess.run(["systemctl", "daemon-reload"], check=True)
        for _ in range(n):
            idle_exit(BESIDE_UNIT)
            time.sleep(1.5)
            c = Client()
            t0 = time.time()
            first = timed(lambda: c.exec("pass"))
            cold = timed(lambda: c.exec("pass"))
            subprocess.run(["journalctl", "--flush"], check=False)
            out = subprocess.run(["journalctl", "-o", "json", "--no-pager", "--since", "@%.6f" % t0],
                                 capture_output=True, text=True).stdout
            front = up = None
            for e in (json.loads(l) for l in out.splitlines() if l.strip()):
                msg = e.get("MESSAGE")
                if front is None and e.get("SYSLOG_IDENTIFIER") == "mcp-execd":
                    front = int(e["__REALTIME_TIMESTAMP"]) / 1e6
                if up is None and isinstance(msg, str) and msg.startswith("interpreter-up "):
                    up = float(msg.split()[1])
            if front is None or up is None:
                sys.exit("beside: no start-up line of the front end or of the unit beside it")
            rows.append((first, (front - t0) * 1000, (up - t0) * 1000, cold))
    finally:
        subprocess.run(["systemctl", "stop", BESIDE_UNIT])
        remove(BESIDE_DROPIN, "/run/systemd/system/" + BESIDE_UNIT)
        try:
            os.rmdir(os.path.dirname(BESIDE_DROPIN))
        except OSError:
            pass                # not empty: somebody else's drop-ins
        if saved is None:
            remove(conf)
        else:
            with open(conf, "w") as f:
                f.write(saved)
        subprocess.run(["systemctl", "daemon-reload"], check=True)
        subprocess.run(["systemctl", "stop", "mcp-exec.service", "mcp-exec-broker.service"])
    med = [statistics.median(r[k] for r in rows) for k in range(4)]
    print("\n## A sandbox unit started beside the front end after an idle exit (an experiment), %d times" % n)
    print("| what | p50 ms after the request |")
    print("|---|---:|")
    print("| the front end's first journal line (its main()) | %.1f |" % med[1])
    print("| the unit beside it: its interpreter up | %.1f |" % med[2])
    print("| the first call's reply (the pool off: its own cold unit) | %.1f |" % med[0])
    print("| the goal for a first call: 1.5× the cold call after it (%.1f ms) | %.1f |" % (med[3], 1.5 * med[3]))


def journal_cursor():
    out = subprocess.run(["journalctl", "-n", "0", "--show-cursor", "--no-pager"], capture_output=True, text=True).stdout
    return out.rsplit("-- cursor: ", 1)[-1].strip()


STAGES = [
    ("MCP_STAGE_HANDOFF_US", "front end to the broker and back: connect, request, a warm unit taken, "
                             "the run's fds to its launcher (\"started\")"),
    ("MCP_STAGE_INPUT_US", "the code in: its frame written to the launcher"),
    ("MCP_STAGE_REPORT_US", "the program ran and exited, the launcher's report ended (after its waitpid)"),
    ("MCP_STAGE_OUTPUT_END_US", "... the program's stdout and stderr ended (from the code in)"),
    ("MCP_STAGE_TOTAL_US", "the front end's whole run (connect to result)"),
]


def breakdown(n, language="python"):
    """Paced warm empty calls in `language`; the front end logs each run's
    stages at the debug level (bench/run turns it on for this mode only):
    their medians, and what the HTTP client saw around them."""
    code = {l: c for l, c, _ in LANGUAGES}[language]
    c = Client()
    for _ in range(3):
        c.exec(code, language=language)
    time.sleep(1)
    subprocess.run(["journalctl", "--flush"], check=False)
    cursor = journal_cursor()
    totals = []
    for _ in range(n):
        t0 = time.perf_counter()
        totals.append(timed(lambda: c.exec(code, language=language)))
        time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
    time.sleep(0.5)
    subprocess.run(["journalctl", "--flush"], check=False)
    # (journalctl matches FIELD=VALUE only: the lines with the field are picked here.)
    out = subprocess.run(["journalctl", "--no-pager", "-o", "json", "--after-cursor=" + cursor],
                         capture_output=True, text=True).stdout
    lines = [e for e in (json.loads(l) for l in out.splitlines() if l.strip()) if "MCP_STAGE_TOTAL_US" in e]
    if len(lines) < n:
        sys.exit("breakdown: %d stage lines for %d calls (is MCP_EXEC_LOG_LEVEL=debug set?)" % (len(lines), n))
    print("\n## Where a paced warm empty %s call's time goes (%d calls, p50)" % (language, n))
    print("| stage | p50 ms |")
    print("|---|---:|")
    med = {}
    for key, what in STAGES:
        v = [int(l[key]) / 1000 for l in lines if l.get(key)]
        med[key] = statistics.median(v) if v else float("nan")
        print("| %s | %.2f |" % (what, med[key]))
    client = statistics.median(totals)
    print("| the HTTP client's whole call | %.2f |" % client)
    print("| outside the run: HTTP, JSON-RPC, the tool call and the reply (client − front end's run) | %.2f |"
          % (client - med["MCP_STAGE_TOTAL_US"]))


def session_unit_memory():
    units = subprocess.run(["systemctl", "list-units", "mcp-exec-session-*", "--plain", "--no-legend"],
                           capture_output=True, text=True, check=True).stdout.split()
    units = [u for u in units if u.startswith("mcp-exec-session-")]
    if len(units) != 1:
        sys.exit("want one session unit, found: %s" % units)
    return int(subprocess.run(["systemctl", "show", "-P", "MemoryCurrent", units[0]],
                              capture_output=True, text=True, check=True).stdout)


def sessions(n):
    """What a session costs next to stateless calls: creating one, holding
    one idle (its unit's MemoryCurrent), and a call in it."""
    c = Client()
    for _ in range(3):
        c.exec("pass")
    creates = []
    for _ in range(n):
        t = time.perf_counter()
        h = c.call("session_create", {})["session"]
        creates.append((time.perf_counter() - t) * 1000)
        c.call("session_close", {"session": h})
    h = c.call("session_create", {})["session"]
    c.exec("pass", h)
    time.sleep(1)
    idle = session_unit_memory()
    base = "bare `python3 -I -c`"
    sess = "mcp-exec `pass` in a session"
    warm = "mcp-exec stateless `pass`, a call every 1 s (warm unit)"
    rows = {base: [], sess: [], warm: []}
    for _ in range(n):
        t0 = time.perf_counter()
        rows[base].append(timed(lambda: bare("pass")))
        rows[sess].append(timed(lambda: c.exec("pass", h)))
        rows[warm].append(timed(lambda: c.exec("pass")))
        time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
    c.exec("import pandas\ndf = pandas.DataFrame({'a': range(1000)})", h)
    time.sleep(1)
    pandas_mem = session_unit_memory()
    c.call("session_close", {"session": h})
    print("\n## Sessions: what one costs")
    print("| what | p50 | max |")
    print("|---|---:|---:|")
    print("| session_create, ms (%d times) | %.1f | %.1f |" % (n, statistics.median(creates), max(creates)))
    print("| MemoryCurrent of an idle session unit after one call, MiB | %.1f | |" % (idle / 2**20))
    print("| the same with pandas imported and a DataFrame, MiB | %.1f | |" % (pandas_mem / 2**20))
    table("`pass` in a session vs stateless, one call at a time", rows, base)


TOOLS_CODE = """import json, time
from mcp_servers import everything
for i in range(20):                 # warm-up: the gateway's upstream, the package's threads
    everything.echo(message="w%%d" %% i)
t = []
for i in range(%d):
    t0 = time.perf_counter()
    out = everything.echo(message="m%%d" %% i)
    t.append((time.perf_counter() - t0) * 1000)
    assert out == "Echo: m%%d" %% i, out
print(json.dumps(t))
"""


class UpstreamClient:
    """A direct MCP client of an upstream's socket (one newline-delimited
    JSON-RPC stream, as the gateway speaks to it): a new instance of the
    server, as the gateway's own connection is."""

    def __init__(self, name):
        import socket
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(60)
        self.s.connect("/run/mcp-exec/upstream/%s.sock" % name)
        self.f = self.s.makefile("rb")
        self.next_id = 1
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "mcp-exec-bench", "version": "1"}})
        self.s.sendall(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def rpc(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.s.sendall((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        while True:
            line = self.f.readline()
            if not line:
                sys.exit("the upstream closed the connection")
            m = json.loads(line)
            if m.get("id") == i and "method" not in m:
                if "error" in m:
                    sys.exit("%s: %s" % (method, m["error"]))
                return m["result"]

    def echo(self, message):
        r = self.rpc("tools/call", {"name": "echo", "arguments": {"message": message}})
        text = r["content"][0]["text"]
        if r.get("isError") or text != "Echo: " + message:
            sys.exit("echo: %s" % r)
        return text

    def close(self):
        self.f.close()
        self.s.close()


def tools_direct(n):
    c = UpstreamClient("everything")
    for i in range(20):
        c.echo("w%d" % i)
    t = []
    for i in range(n):
        t0 = time.perf_counter()
        c.echo("m%d" % i)
        t.append((time.perf_counter() - t0) * 1000)
    c.close()
    return t


def tools_from_code(c, n):
    sc = c.exec(TOOLS_CODE % n)
    t = json.loads(sc["stdout"].strip().splitlines()[-1])
    if len(t) != n:
        sys.exit("the run timed %d calls, not %d" % (len(t), n))
    return t


def tools(n, rounds=2):
    """One echo call of server-everything from code (mcp_servers in a run,
    through mcp-exec-toolsd and the generator's upstream unit) vs the same
    call from a direct MCP client on the same upstream socket. Each round:
    one run of N sequential calls, then N direct calls; all rounds pooled."""
    c = Client()
    c.exec("pass")
    code, direct = [], []
    for _ in range(rounds):
        code += tools_from_code(c, n)
        direct += tools_direct(n)
    cp, dp = statistics.median(code), statistics.median(direct)
    print("\n## A tool call from code vs a direct MCP client: server-everything's echo, %d rounds of %d "
          "sequential calls each" % (rounds, n))
    print("| what | p50 ms | p90 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    print("| from code: `everything.echo(message=...)` in a run (mcp_servers, the gateway, the upstream) "
          "| %.3f | %.3f | %.3f |" % (cp, pct(code, 0.9), pct(code, 0.99)))
    print("| direct: `tools/call` echo on the upstream's socket (root, one connection) | %.3f | %.3f | %.3f |"
          % (dp, pct(direct, 0.9), pct(direct, 0.99)))
    print("| ratio (p50), goal ≤ 1.2× + 1 ms (%.3f ms): %s | %.2f× | %.2f× | |"
          % (1.2 * dp + 1, "met" if cp <= 1.2 * dp + 1 else "not met", cp / dp, pct(code, 0.9) / pct(direct, 0.9)))


PKG_SRC = "/srv/bench/wheels"
PKG_FIVE = ["benchtiny", "benchtext", "benchdata", "benchutil", "benchext"]


def _wheel(outdir, name, version, files, tag="py3-none-any", requires=()):
    """A wheel made by hand (zipfile, fixed dates), as tests/lib/make-wheel.py makes them."""
    import base64
    import hashlib
    import zipfile
    dist = "%s-%s.dist-info" % (name, version)
    content = dict(files)
    content[dist + "/METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
                                   + "".join("Requires-Dist: %s\n" % r for r in requires))
    content[dist + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: %s\n" % tag
    content = {p: d.encode() if isinstance(d, str) else d for p, d in content.items()}
    record = "".join("%s,sha256=%s,%d\n" % (p, base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=")
                                             .decode(), len(d)) for p, d in content.items())
    content[dist + "/RECORD"] = (record + dist + "/RECORD,,\n").encode()
    path = os.path.join(outdir, "%s-%s-%s.whl" % (name, version, tag))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in content.items():
            z.writestr(zipfile.ZipInfo(p, (2020, 1, 1, 0, 0, 0)), d)
    return path


def packages_setup():
    """The benchmark's wheels, put in the wheelhouse as the operator does
    (`mcp-exec wheels add`, pip pointed at them): one tiny pure-Python
    package (one module), three pure-Python packages of 10 to 30 modules
    (about 40 to 200 KB unpacked), one with a compiled extension (built here
    with gcc for this interpreter). Returns the compiled one's name, or
    None without gcc (then the five are four)."""
    import shutil
    import sysconfig
    os.makedirs(PKG_SRC, exist_ok=True)
    _wheel(PKG_SRC, "benchtiny", "1.0", {"benchtiny.py": "VALUE = 'tiny'\n"})
    body = "".join("def f%d(x):\n    return [x * i for i in range(%d)]\n\n" % (i, i) for i in range(40))
    for name, n in (("benchtext", 10), ("benchdata", 30), ("benchutil", 20)):
        files = {"%s/__init__.py" % name: "from . import m0\nVALUE = %r\n" % name}
        files.update({"%s/m%d.py" % (name, i): body for i in range(n)})
        _wheel(PKG_SRC, name, "1.0", files, requires=["benchtiny"])
    ext = None
    inc = sysconfig.get_paths()["include"]
    if shutil.which("gcc") and os.path.exists(os.path.join(inc, "Python.h")):
        from pip._vendor.packaging import tags
        src = os.path.join(PKG_SRC, "_benchext.c")
        with open(src, "w") as f:
            f.write('#include <Python.h>\nstatic PyObject *twice(PyObject *self, PyObject *x) {\n'
                    '    return PyNumber_Add(x, x);\n}\n'
                    'static PyMethodDef methods[] = { { "twice", twice, METH_O, NULL }, { NULL } };\n'
                    'static struct PyModuleDef def = { PyModuleDef_HEAD_INIT, "_benchext", NULL, -1, methods };\n'
                    'PyMODINIT_FUNC PyInit__benchext(void) {\n    return PyModule_Create(&def);\n}\n')
        so = os.path.join(PKG_SRC, "_benchext.so")
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-I", inc, "-o", so, src], check=True)
        _wheel(PKG_SRC, "benchext", "1.0", {"benchext/__init__.py": "from ._benchext import twice\n",
                                            "benchext/_benchext" + sysconfig.get_config_var("EXT_SUFFIX"):
                                            open(so, "rb").read()}, tag=str(next(iter(tags.sys_tags()))))
        ext = "benchext"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=PKG_SRC)
    want = [p for p in PKG_FIVE if p != "benchext" or ext]
    r = subprocess.run(["mcp-exec", "wheels", "add"] + want, env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit("mcp-exec wheels add failed: %s" % (r.stdout + r.stderr)[-1500:])
    # (`mcp-exec wheels add` makes the package store too, issue 41.)
    subprocess.run(["systemctl", "stop", "mcp-exec.service", "mcp-exec-broker.service"])
    return ext


def packages(n):
    """Issue 41: the same call (`pass`) without packages, with one tiny
    pure-Python package, and with five (one with a compiled extension), a
    call every second (an agent's think time: the pool refills in between),
    interleaved in one run. Goal: with packages ≤ 1.2× without, plus 20 ms."""
    ext = packages_setup()
    five = [p for p in PKG_FIVE if p != "benchext" or ext]
    c = Client()
    without = "`pass`, no packages"
    one = "`pass`, packages [\"benchtiny\"]"
    many = "`pass`, packages %s" % json.dumps(five)
    calls = {without: None, one: ["benchtiny"], many: five}
    rows = {k: [] for k in calls}
    how = {}

    def call(pk):
        args = {"code": "pass"}
        if pk:
            args["packages"] = pk
        sc = c.call("exec", args)
        if sc.get("exit_code") != 0 or (pk and not (sc.get("packages") or {}).get("ok")):
            sys.exit("the call failed: %s" % json.dumps(sc)[:800])
        return sc

    for k, pk in calls.items():       # warm-up: the front end, the broker, the pool
        sc = call(pk)
        if pk:
            how[k] = "pip" if "Successfully installed" in sc["packages"].get("log", "") else "the store"
    time.sleep(2)
    for _ in range(n):
        for k, pk in calls.items():
            t0 = time.perf_counter()
            rows[k].append(timed(lambda: call(pk)))
            time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
    b = statistics.median(rows[without])
    print("\n## Packages (issue 41): the same call with and without, a call every 1 s")
    print("| what | p50 ms | p99 ms | p50 ratio to without | goal (≤ 1.2× + 20 ms) | installed by |")
    print("|---|---:|---:|---:|---|---|")
    for k, v in rows.items():
        m = statistics.median(v)
        goal = "" if k == without else ("met" if m <= 1.2 * b + 20 else "not met") + " (≤ %.1f ms)" % (1.2 * b + 20)
        print("| %s | %.1f | %.1f | %.2f× | %s | %s |" % (k, m, pct(v, 0.99), m / b, goal, how.get(k, "")))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "latency"
    if mode == "latency":
        compare("`pass`, one call at a time", "pass", int(sys.argv[2]) if len(sys.argv) > 2 else 50, 1.0,
                goal="≤ 0.2×")
    elif mode == "languages":
        languages(int(sys.argv[2]) if len(sys.argv) > 2 else 30)
    elif mode == "dataplot":
        compare("numpy + pandas + matplotlib, one plot saved to PNG", DATAPLOT,
                int(sys.argv[2]) if len(sys.argv) > 2 else 15, 3.0)
    elif mode == "datastack":
        compare("numpy + pandas + matplotlib.pyplot imported, nothing else", DATASTACK,
                int(sys.argv[2]) if len(sys.argv) > 2 else 15, 2.0, goal="≤ 0.05×", back_to_back=False)
    elif mode == "breakdown":
        breakdown(int(sys.argv[2]) if len(sys.argv) > 2 else 20, sys.argv[3] if len(sys.argv) > 3 else "python")
    elif mode == "throughput":
        throughput(int(sys.argv[2]), int(sys.argv[3]))
    elif mode == "props":
        props(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    elif mode == "first":
        first_after_idle(int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    elif mode == "idle":
        idle_first(int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    elif mode == "fdstore":
        fdstore()
    elif mode == "beside":
        beside(int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    elif mode == "session":
        sessions(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    elif mode == "packages":
        packages(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    elif mode == "tools":
        tools(int(sys.argv[2]) if len(sys.argv) > 2 else 200)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
