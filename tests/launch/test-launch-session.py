#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-launch-session LAUNCHER BOOTSTRAP: the launcher's session mode
(src/launch/launch-session.h), driven as the broker drives it: the control
socket as its stdin, each call's stdin, stdout, stderr and result channel as
fds, the code in a launch frame. Runs the real launcher and the interpreter the
service uses (/usr/bin/python3), in a
private mount namespace with its own /tmp (unshare), without systemd: what
the sandbox adds is the integration tests' (test-sessions.sh)."""
import atexit
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# The launcher runs with a tmpfs on /tmp, which would hide a build tree
# under /tmp (rpmbuild builds there): run copies kept elsewhere.
STAGE = tempfile.mkdtemp(prefix="mcp-exec-launch-test.", dir="/var/tmp" if os.path.isdir("/var/tmp") else "/dev/shm")
atexit.register(shutil.rmtree, STAGE, True)
LAUNCHER = shutil.copy2(sys.argv[1], STAGE)
BOOTSTRAP = shutil.copy2(sys.argv[2], STAGE)
# Code mode's package, next to the bootstrap as installed (issue 40).
shutil.copytree(os.path.join(os.path.dirname(sys.argv[2]), "python"), os.path.join(STAGE, "python"))
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def frame(code, files=()):
    code = code.encode()
    if not files:
        return b"MCPX" + struct.pack("<IQ", 1, len(code)) + code
    out = b"MCPX" + struct.pack("<IQ", 2, len(code)) + code + struct.pack("<I", len(files))
    for name, data in files:
        out += struct.pack("<HQ", len(name), len(data)) + name.encode() + data
    return out


def read_all(fd, out):
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        out.append(b)
    os.close(fd)


def frames(data):
    """The result channel's frames: [(type, meta, data)]."""
    out = []
    while len(data) >= 20:
        magic, typ, meta_len, data_len = data[:4], data[4], *struct.unpack("<IQ", data[8:20])
        assert magic == b"MCPR", data[:20]
        meta = json.loads(data[20:20 + meta_len]) if meta_len else None
        out.append((typ, meta, data[20 + meta_len:20 + meta_len + data_len]))
        data = data[20 + meta_len + data_len:]
    return out


class Session:
    def __init__(self, session=True):
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # A private /tmp, as the unit has; the launcher writes input files into its cwd.
        self.proc = subprocess.Popen(
            ["unshare"] + ([] if os.geteuid() == 0 else ["--map-root-user"]) +
            ["--mount", "--propagation", "private", "sh", "-c",
             'mount -t tmpfs tmpfs /tmp && cd /tmp && exec "$0" "$@"',
             LAUNCHER] + (["--session"] if session else []) + ["--python=" + os.path.realpath("/usr/bin/python3"),
             "--bootstrap=" + BOOTSTRAP],
            stdin=theirs.fileno(), pass_fds=())
        theirs.close()
        self.session = session
        self.ctl.settimeout(30)
        self.ready = json.loads(self.ctl.recv(65536))

    def call(self, code, timeout_ms=10000, stdin=b"", files=(), interrupt_after=None, limits=None):
        fds = [os.pipe() for _ in range(4)]   # stdin, stdout, stderr, result
        child_fds = [fds[0][0], fds[1][1], fds[2][1], fds[3][1]]
        msg = {"op": "run", "timeout_ms": timeout_ms, "limits": limits or {}}
        socket.send_fds(self.ctl, [json.dumps(msg).encode()], child_fds)
        for fd in child_fds:
            os.close(fd)
        outs = {1: [], 2: [], 3: []}
        readers = [threading.Thread(target=read_all, args=(fds[i][0], outs[i])) for i in (1, 2, 3)]
        for t in readers:
            t.start()
        os.write(fds[0][1], frame(code, files) + stdin)
        os.close(fds[0][1])
        if interrupt_after is not None:
            time.sleep(interrupt_after)
            self.ctl.send(json.dumps({"op": "interrupt"}).encode())
        try:
            done = json.loads(self.ctl.recv(65536) or b"null") if self.session else None
        except (socket.timeout, ValueError):
            done = None
        for t in readers:
            t.join(20)
        return {"done": done, "stdout": b"".join(outs[1]).decode(), "stderr": b"".join(outs[2]).decode(),
                "frames": frames(b"".join(outs[3])), "alive": all(not t.is_alive() for t in readers)}

    def close(self):
        self.ctl.close()
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def ok_done(r, code=0):
    d = r["done"] or {}
    return d.get("event") == "done" and d.get("exit_code") == code and not d.get("lost") and not d.get("timed_out")


s = Session()
check(s.ready.get("event") == "ready", "the launcher says it is ready: %s" % s.ready)

r = s.call("x = 41")
check(ok_done(r) and r["stdout"] == "" and r["alive"], "x = 41: %s" % r["done"])
r = s.call("print(x + 1)")
check(ok_done(r) and r["stdout"] == "42\n", "globals persist: print(x + 1) gave %r" % r["stdout"])
status = [f for f in r["frames"] if f[0] == 1]
check(len(status) == 1 and status[0][1].get("exit_code") == 0 and status[0][1].get("session_lost") is False
      and r["frames"][-1][0] == 6, "the result channel carries the call's status and its end: %s" % r["frames"])

# The mcp_servers package: on the code's path (after the standard library,
# before the site packages), not imported until the code imports it; without
# a tools connection it lists no servers and a call says why.
code = """import sys
loaded = 'mcp_servers' in sys.modules
import mcp_servers
mine = sys.path.index(%r)
site = min(i for i, p in enumerate(sys.path) if p.endswith(('site-packages', 'dist-packages')))
stdlib = max(i for i, p in enumerate(sys.path) if p.endswith('/lib-dynload'))
try:
    mcp_servers.call('everything', 'echo', message='hi')
except mcp_servers.ToolsUnavailable as e:
    why = 'MCP_EXEC_TOOLS_FD' in str(e)
print(loaded, mcp_servers.__file__.startswith(%r), stdlib < mine < site, mcp_servers.servers(), why)
""" % (os.path.join(STAGE, "python"), os.path.join(STAGE, "python", "mcp_servers"))
r = s.call(code)
check(ok_done(r) and r["stdout"] == "False True True [] True\n",
      "mcp_servers: importable, from next to the bootstrap, not preloaded, no tools without a connection: %r %r"
      % (r["stdout"], r["stderr"][-300:]))

r = s.call("import sys\nprint(sys.stdin.read().upper())", stdin=b"hello")
check(ok_done(r) and r["stdout"] == "HELLO\n", "each call has its own stdin: %r" % r["stdout"])

r = s.call("open('/tmp/state.txt', 'w').write('kept')\nimport json")
r = s.call("print(open('/tmp/state.txt').read(), json.dumps(1))")
check(ok_done(r) and r["stdout"] == "kept 1\n", "files in /tmp and imports persist: %r" % r["stdout"])

r = s.call("print(open('in.txt').read())", files=[("in.txt", b"one")])
r2 = s.call("print(open('in.txt').read())", files=[("in.txt", b"two")])
check(ok_done(r) and r["stdout"] == "one\n" and ok_done(r2) and r2["stdout"] == "two\n",
      "an input file replaces the same name of an earlier call: %r %r" % (r["stdout"], r2["stdout"]))

r = s.call("import os\nos.makedirs('/tmp/outputs', exist_ok=True)\nopen('/tmp/outputs/a.txt','w').write('A')")
files = [f for f in r["frames"] if f[0] == 3]
r2 = s.call("import os\nprint(os.path.exists('/tmp/outputs'))")
check(len(files) == 1 and files[0][2] == b"A" and r2["stdout"] == "False\n",
      "/tmp/outputs comes back once, and is emptied for the next call: %s %r" % (files, r2["stdout"]))

# Figures need matplotlib, which the package Recommends but does not build with: a package build
# (Build-Depends only, e.g. a fresh Debian 13 root) has none, and says so here.
code = """import matplotlib.pyplot as plt
for i in range(3):
    plt.figure(figsize=(1, 1))
    plt.show()
for i in range(2):
    plt.figure(figsize=(1, 1))
"""
if subprocess.run(["/usr/bin/python3", "-I", "-c", "import matplotlib.pyplot"], capture_output=True).returncode == 0:
    r = s.call(code, limits={"max_images": 2})
    images = [f for f in r["frames"] if f[0] == 2]
    skipped = [f for f in r["frames"] if f[0] == 4]
    check(ok_done(r) and len(images) == 2 and images[0][2].startswith(b"\x89PNG") and len(skipped) == 1
          and skipped[0][1].get("count") == 3 and skipped[0][1].get("source") == "figure",
          "figures come back up to the limit, the rest counted once: %s" % [(f[0], f[1]) for f in r["frames"]])
    r = s.call("import matplotlib.pyplot as plt\nprint(len(plt.get_fignums()))")
    check(ok_done(r) and r["stdout"] == "0\n" and not [f for f in r["frames"] if f[0] == 2],
          "no figure is left over for the next call: %r" % r["stdout"])
else:
    print("skip figures: /usr/bin/python3 has no matplotlib (python3-matplotlib)", flush=True)

r = s.call("raise SystemExit(3)")
check(ok_done(r, 3), "SystemExit(3) ends the call with 3: %s" % r["done"])
r = s.call("def f():\n    return 1 / 0\n")
r = s.call("y = 2\nf()")
check(ok_done(r, 1) and "ZeroDivisionError" in r["stderr"] and "return 1 / 0" in r["stderr"]
      and "bootstrap" not in r["stderr"],
      "an exception ends the call with 1 and a traceback of the calls' own lines: %r" % r["stderr"])
r = s.call("print(x, y)")
check(ok_done(r) and r["stdout"] == "41 2\n", "the session survives both: %r" % r["stdout"])

r = s.call("import os\nmain_pid = os.getpid()\nprint('child' if os.fork() == 0 else 'parent')")
# Parent and child write the same pipe at once: their lines may interleave.
check(ok_done(r) and "parent" in r["stdout"], "a call that forks: %s %r" % (r["done"], r["stdout"]))
outs = [s.call("print(os.getpid() == main_pid, x)")["stdout"] for _ in range(4)]
check(outs == ["True 41\n"] * 4,
      "a forked child that runs off the end of its code exits; the calls after run in the session's interpreter: %r"
      % outs)

r = s.call("import time\ntime.sleep(60)", timeout_ms=300)
d = r["done"] or {}
check(d.get("timed_out") is True and d.get("lost") is False and d.get("signal") == 2
      and "KeyboardInterrupt" in r["stderr"], "a timeout interrupts the call, the state stays: %s" % d)
r = s.call("print(x)")
check(ok_done(r) and r["stdout"] == "41\n", "after the timeout x is still there: %r" % r["stdout"])

r = s.call("import time\ntime.sleep(60)", interrupt_after=0.3)
d = r["done"] or {}
check(d.get("interrupted") is True and d.get("timed_out") is False and d.get("lost") is False,
      "the broker's interrupt stops the call: %s" % d)

code = """import threading, time, sys
def chatter():
    while True:
        print("between", flush=True)
        time.sleep(0.01)
threading.Thread(target=chatter, daemon=True).start()
time.sleep(0.05)
"""
r = s.call(code)
check(ok_done(r) and r["alive"], "a printing thread does not hold the call's stdout open: %s" % r["done"])
time.sleep(0.3)
r = s.call("import sys\nsys.stdout.flush()\nprint('mine')")
check(ok_done(r) and r["stdout"].count("between") <= 5 and "mine" in r["stdout"],
      "what the thread printed between calls is not the next call's: %r" % r["stdout"][:200])

# No replacement file for sys.stdout: one opened right after os.close(1) only
# lands on fd 1 when no other thread opens a file first (the chatter thread,
# dying of EBADF, reads its traceback's source), which made this check flaky.
r = s.call("import os\nos.close(1)\nos.close(2)")
check((r["done"] or {}).get("lost") is False and r["alive"], "closing stdout and stderr ends nothing: %s" % r["done"])
r = s.call("print('still here')")
# The chatter thread of above still runs and may print during this call too,
# its newline a write of its own (python -u) that may fall after the call.
check(ok_done(r) and re.sub(r"between\n?", "", r["stdout"]) == "still here\n",
      "stdout is back in the next call: %r" % r["stdout"])

r = s.call("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)", timeout_ms=300)
d = r["done"] or {}
check(d.get("lost") is True and d.get("timed_out") is True,
      "a call that ignores SIGINT is killed after the grace, the state lost: %s" % d)
rc = s.close()
check(rc is not None and rc != 0, "the launcher exits after a lost session: %s" % rc)

s = Session()
r = s.call("import os\nos._exit(7)")
d = r["done"] or {}
check(d.get("lost") is True and d.get("exit_code") == 7, "os._exit(7) mid-call loses the session: %s" % d)
check(s.close() == 7, "and the launcher exits as the interpreter did")

s = Session()
r = s.call("x = 1")
check(s.close() == 0, "EOF on the control socket closes the session cleanly")

# The same launcher without --session: one run, then it exits as the program did.
for code, want in (("print('hi')", 0), ("raise SystemExit(3)", 3), ("import os, sys\nsys.stdout.flush()\nos._exit(5)", 5),
                   ("1/0", 1)):
    s = Session(session=False)
    r = s.call(code)
    status = [f[1] for f in r["frames"] if f[0] == 1]
    rc = s.close()
    check(status and status[0].get("exit_code") == want and r["frames"][-1][0] == 6 and rc == want and r["alive"],
          "a single run of %r reports %d and the launcher exits with it: %s, %s" % (code, want, status, rc))

# The interpreter's control socket is the program's too: what it says there
# about its end is a claim. FORGE finds it among the fds and sends a "done".
FORGE = """import os, socket
def forge(text):
    n = 0
    for fd in sorted(int(x) for x in os.listdir('/proc/self/fd')):
        try:
            d = os.dup(fd)
        except OSError:
            continue        # listdir()'s own, closed by now
        try:
            s = socket.socket(fileno=d)
        except OSError:
            os.close(d)     # not a socket (a leaked copy of stdout would keep it open)
            continue
        try:
            if s.type == socket.SOCK_SEQPACKET:
                s.send(text.encode())
                n += 1
        except OSError:
            pass
        finally:
            s.close()
    return n
"""

# A single run: a forged "done 0", then the real exit 3 a moment later. The
# status is the launcher's waitpid()'s, never the program's word.
s = Session(session=False)
r = s.call(FORGE + "import sys, time\nprint(forge('done 0'), flush=True)\ntime.sleep(0.5)\nsys.exit(3)")
status = [f[1] for f in r["frames"] if f[0] == 1]
rc = s.close()
check(r["stdout"] == "1\n" and status and status[0].get("exit_code") == 3 and r["frames"][-1][0] == 6 and rc == 3,
      "a forged done 0 before exit 3: the run reports 3: %r %s %s" % (r["stdout"], status, rc))

# INT_MIN and an overflow as the status: refused (no signal -INT_MIN), the call goes on to its real end.
s = Session()
r = s.call(FORGE + "print(forge('done -2147483648'), forge('done 99999999999999999999'), forge('done -65'))")
status = [f[1] for f in r["frames"] if f[0] == 1]
check(ok_done(r) and r["stdout"] == "1 1 1\n" and r["alive"] and status and status[0].get("exit_code") == 0
      and r["frames"][-1][0] == 6, "done INT_MIN, an overflow and -65 are not taken: %s %r %s"
      % (r["done"], r["stdout"], status))

# In a session the call's end is the interpreter's word (the program is in that
# process): a forged done ends the call with the program's status, and still
# the launcher's STATUS and END go out. The real "done" that follows belongs
# to no call: the next one runs and reports its own.
r = s.call(FORGE + "import sys\nforge('done 5')\nsys.exit(3)")
status = [f[1] for f in r["frames"] if f[0] == 1]
check((r["done"] or {}).get("exit_code") in (3, 5) and status and [f[0] for f in r["frames"]][-2:] == [1, 6],
      "a forged done in a session: the report is complete: %s %s" % (r["done"], [f[0] for f in r["frames"]]))
time.sleep(0.3)
r = s.call("print('mine')")
check(ok_done(r) and r["stdout"] == "mine\n", "the call after it is reported as its own: %s %r" % (r["done"], r["stdout"]))
check(s.close() == 0, "the session closes cleanly")

# /tmp/outputs with a path whose metadata cannot fit in a frame (three names of
# 255 control bytes, six bytes each in JSON): that file is left out, unnamed,
# the others come back and STATUS and END follow.
code = """import os
d = '/tmp/outputs/' + '/'.join(chr(c) * 255 for c in (1, 2, 3))
os.makedirs(d)
open(d + '/deep.txt', 'w').write('deep')
open('/tmp/outputs/a.txt', 'w').write('A')
open('/tmp/outputs/z.txt', 'w').write('Z')
"""
s = Session(session=False)
r = s.call(code)
rc = s.close()
files = sorted((f[1].get("path"), f[2]) for f in r["frames"] if f[0] == 3)
skipped = [f[1] for f in r["frames"] if f[0] == 4]
status = [f[1] for f in r["frames"] if f[0] == 1]
check(files == [("/tmp/outputs/a.txt", b"A"), ("/tmp/outputs/z.txt", b"Z")] and len(skipped) == 1
      and "path" not in skipped[0] and "too long" in skipped[0].get("reason", "") and status
      and status[0].get("exit_code") == 0 and r["frames"][-1][0] == 6 and rc == 0,
      "a path too long for a frame is left out, the rest comes back: %s %s %s" % (files, skipped, status))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
