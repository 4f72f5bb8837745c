#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test-tmpfsd TMPFSD: the mount daemon (src/tmpfs/mcp-exec-tmpfsd.c) driven
over its socket as the broker drives it, mounting for real: in a mount
namespace of its own (unshare; a user namespace too when not root), with a
fresh /run and a stand-in /sys/fs/cgroup where the test makes and removes
the runs' unit cgroups. What systemd adds (socket activation, the unit's
sandbox, PID 1's namespace) is the integration tests' (test-tmp-isolation,
test-fault-broker-kill, test-fail-closed, test-unit-security)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

TMPFSD = sys.argv[1]
ROOT = "/run/mcp-exec-tmp"
SOCK = "/run/mcp-exec/tmpfs.sock"
SLICE = "/sys/fs/cgroup/mcp.slice/mcp-exec.slice"
MIB = 1 << 20
failures = []


def enter_namespace():
    """Re-runs this script in a private mount namespace; 77 (skip) if none can be had."""
    if os.environ.get("TEST_TMPFSD_IN_NS") == "1":
        return
    env = dict(os.environ, TEST_TMPFSD_IN_NS="1")
    unshare = ["unshare"] + ([] if os.geteuid() == 0 else ["--map-root-user"]) + \
        ["--mount", "--propagation", "private"]
    argv = unshare + [sys.executable] + sys.argv
    try:
        probe = subprocess.run(unshare + ["true"], capture_output=True)
    except FileNotFoundError:
        probe = None
    if probe is None or probe.returncode != 0:
        print("SKIP: no private mount namespace here (unshare):",
              probe.stderr.decode(errors="replace").strip() if probe else "no unshare")
        sys.exit(77)
    os.execvpe(argv[0], argv, env)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def sh(cmd):
    subprocess.run(["sh", "-ec", cmd], check=True)


def mounts():
    """{mount point: (fs type, options)} under ROOT."""
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ")
            fields, rfields = left.split(), right.split()
            if fields[4].startswith(ROOT + "/"):
                out[fields[4]] = (rfields[0], fields[5] + "," + rfields[2])
    return out


class Conn:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(10)
        self.s.connect(SOCK)

    def ask(self, req):
        self.s.send(req if isinstance(req, bytes) else json.dumps(req).encode())
        data = self.s.recv(65536)
        return json.loads(data) if data else None

    def answer(self):
        """What a refused connection is told at once, before it asks."""
        data = self.s.recv(65536)
        return json.loads(data) if data else None

    def closed(self):
        try:
            return self.s.recv(65536) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.s.close()


def ident(n):
    return ("%x" % n) * 32


def mount_req(i, size=2 * MIB):
    return {"op": "mount", "id": i, "size": size}


def main():
    enter_namespace()
    sh("mount -t tmpfs -o mode=0755 run /run && mkdir -m 0755 /run/mcp-exec")
    sh("mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup && mkdir -p " + SLICE)
    daemon = subprocess.Popen([TMPFSD, "--listen=" + SOCK])
    try:
        for _ in range(100):
            if os.path.exists(SOCK):
                break
            time.sleep(0.05)
        run_tests(daemon.pid)
        check(daemon.poll() is None, "the daemon is still up after all of it")
    finally:
        daemon.terminate()
        daemon.wait(10)
    check(daemon.returncode == 0, "exits 0 on SIGTERM (%s)" % daemon.returncode)
    test_restart()
    test_idle_exit()
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)


def run_tests(pid):
    a, b, c, d = ident(1), ident(2), ident(3), ident(4)
    conn = Conn()

    # --- mount: a capped tmpfs of its own, 1777, nosuid, nodev; the root 0700.
    r = conn.ask(mount_req(a))
    check(r == {"ok": True}, "mount: %s" % r)
    st = os.stat(ROOT)
    check(st.st_mode & 0o7777 == 0o700 and st.st_uid == 0, "%s is 0700 root (%o)" % (ROOT, st.st_mode))
    m = mounts().get(ROOT + "/" + a)
    check(m is not None and m[0] == "tmpfs", "%s/%s is a tmpfs: %s" % (ROOT, a, m))
    opts = m[1].split(",") if m else []
    check("nosuid" in opts and "nodev" in opts and "size=2048k" in opts, "with nosuid, nodev, size=2048k: %s" % opts)
    st = os.stat(ROOT + "/" + a)
    check(st.st_mode & 0o7777 == 0o1777, "its root is 1777 (%o)" % st.st_mode)
    try:
        with open(ROOT + "/" + a + "/fill", "wb") as f:
            f.write(b"x" * (3 * MIB))
        full = False
    except OSError as e:
        full = e.errno == 28
    check(full, "3 MiB do not fit in a 2 MiB mount (ENOSPC)")
    r = conn.ask(mount_req(a))
    check(r.get("ok") is False and "already mounted" in r.get("error", ""), "the same id twice: %s" % r)

    # --- bad requests get an error and the connection stays.
    for req, why in [({"op": "remount", "id": b}, "unknown op"),
                     ({"id": b}, "unknown op"),
                     ({"op": "mount", "id": "../../etc", "size": MIB}, "id must be"),
                     ({"op": "mount", "id": ident(0xb).upper(), "size": MIB}, "id must be"),
                     ({"op": "umount", "id": b + "/.."}, "id must be"),
                     ({"op": "mount", "id": b, "size": 0}, "out of range"),
                     ({"op": "mount", "id": b, "size": "1M"}, "size must be")]:
        r = conn.ask(req)
        check(r.get("ok") is False and why in r.get("error", ""), "%s: %s" % (json.dumps(req), r))
    check(not os.path.exists(ROOT + "/" + b), "no mount point for a refused request")

    # --- umount: gone, mount point too; absent is no error.
    r = conn.ask({"op": "umount", "id": a})
    check(r == {"ok": True}, "umount: %s" % r)
    check(ROOT + "/" + a not in mounts() and not os.path.exists(ROOT + "/" + a), "unmounted and removed")
    r = conn.ask({"op": "umount", "id": a})
    check(r == {"ok": True}, "umount of what is not there: %s" % r)

    # --- fail closed: a root that others may enter is refused.
    os.chmod(ROOT, 0o755)
    r = conn.ask(mount_req(a))
    check(r.get("ok") is False and "only root may enter" in r.get("error", ""), "0755 root refused: %s" % r)
    check(not os.path.exists(ROOT + "/" + a), "nothing mounted under a 0755 root")
    os.chmod(ROOT, 0o700)

    # --- sweep: never what an open connection holds; else what has no unit cgroup.
    for i in (b, c, d):
        r = conn.ask(mount_req(i))
        check(r == {"ok": True}, "mount %s: %s" % (i[:4], r))
    os.mkdir(SLICE + "/mcp-exec-run-%s.service" % c)
    os.mkdir(SLICE + "/mcp-exec-session-%s.service" % d)
    other = Conn()
    r = other.ask({"op": "sweep"})
    check(r == {"ok": True}, "sweep: %s" % r)
    check(all(ROOT + "/" + i in mounts() for i in (b, c, d)), "a sweep keeps what an open connection holds")
    conn.close()
    time.sleep(0.2)
    r = other.ask({"op": "sweep"})
    check(r == {"ok": True}, "sweep after the holder closed: %s" % r)
    left = mounts()
    check(ROOT + "/" + b not in left and not os.path.exists(ROOT + "/" + b), "b (no unit) swept")
    check(ROOT + "/" + c in left and ROOT + "/" + d in left, "c (run unit) and d (session unit) kept")
    # Their units go: the daemon, watching what a closed connection held, removes them.
    os.rmdir(SLICE + "/mcp-exec-run-%s.service" % c)
    os.rmdir(SLICE + "/mcp-exec-session-%s.service" % d)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (ROOT + "/" + c in mounts() or ROOT + "/" + d in mounts()):
        time.sleep(0.5)
    check(ROOT + "/" + c not in mounts() and ROOT + "/" + d not in mounts(),
          "c and d removed once their units were gone, without a request")

    # --- a peer that asks and goes at once (a broker on its way out): all it asked is done, though
    # it takes no answer. (The daemon is stopped meanwhile, so that it finds the peer gone; the
    # units "live" on, so that its watch of closed connections removes nothing in their stead.)
    for i in (a, b):
        os.mkdir(SLICE + "/mcp-exec-run-%s.service" % i)
    k = Conn()
    for i in (a, b):
        r = k.ask(mount_req(i))
        check(r == {"ok": True}, "mount %s: %s" % (i[:4], r))
    os.kill(pid, signal.SIGSTOP)
    for i in (a, b):
        k.s.send(json.dumps({"op": "umount", "id": i}).encode())
    k.close()
    os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(os.path.exists(ROOT + "/" + i) for i in (a, b)):
        time.sleep(0.1)
    check(not any(os.path.exists(ROOT + "/" + i) for i in (a, b)), "removals asked for by a peer now gone: done")
    for i in (a, b):
        os.rmdir(SLICE + "/mcp-exec-run-%s.service" % i)

    # --- malformed packets close the connection: not JSON, oversized.
    for what, data in [("not JSON", b"{mount"), ("not an object", b"[1, 2]"),
                       ("oversized", b"{" + b" " * (70 * 1024) + b"}")]:
        k = Conn()
        r = k.ask(data)
        check(r is not None and r.get("ok") is False and "malformed" in r.get("error", ""), "%s: %s" % (what, r))
        check(k.closed(), "%s: connection closed" % what)
        k.close()

    # --- bounded: connections.
    extra = [Conn() for _ in range(7)]                  # with `other`: 8, the limit
    r = extra[0].ask({"op": "sweep"})
    check(r == {"ok": True}, "the 8th connection is served: %s" % r)
    k = Conn()
    r = k.answer()
    check(r is not None and r.get("ok") is False and "too many" in r.get("error", ""), "the 9th is refused: %s" % r)
    check(k.closed(), "and closed")
    k.close()
    for e in extra:
        e.close()

    # --- only root: another uid is refused (needs real root to become one), even
    # where the socket's mode would let it connect.
    if os.geteuid() == 0 and open("/proc/self/uid_map").read().split()[:3] == ["0", "0", "4294967295"]:
        os.chmod(SOCK, 0o666)
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            try:
                os.setgid(65534)
                os.setuid(65534)
                k = Conn()
                os.write(wr, json.dumps(k.answer()).encode())
            finally:
                os._exit(0)
        os.close(wr)
        r = json.loads(os.read(rd, 4096) or b"null")
        os.waitpid(pid, 0)
        os.chmod(SOCK, 0o600)
        check(r is not None and r.get("ok") is False and "only root" in r.get("error", ""),
              "uid 65534 refused: %s" % r)
        check(not os.path.exists(ROOT + "/" + a), "nothing mounted for uid 65534")
    else:
        print("skip the other-uid check: not real root")
    other.close()


def test_restart():
    """A (re)started daemon removes the tmpfs a former one left once their units are gone,
    without being asked: it no longer knows who held them."""
    gone, live = ident(5), ident(6)
    for i in (gone, live):
        sh("mkdir -m 0700 %s/%s && mount -t tmpfs -o size=1m tmpfs %s/%s" % (ROOT, i, ROOT, i))
    os.mkdir(SLICE + "/mcp-exec-run-%s.service" % live)
    daemon = subprocess.Popen([TMPFSD, "--listen=" + SOCK])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and ROOT + "/" + gone in mounts():
            time.sleep(0.5)
        left = mounts()
        check(ROOT + "/" + gone not in left and not os.path.exists(ROOT + "/" + gone),
              "restart: a former daemon's tmpfs without a unit removed unasked")
        check(ROOT + "/" + live in left, "restart: one whose unit is there kept")
        os.rmdir(SLICE + "/mcp-exec-run-%s.service" % live)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and ROOT + "/" + live in mounts():
            time.sleep(0.5)
        check(ROOT + "/" + live not in mounts(), "restart: and removed once its unit is gone")
    finally:
        daemon.terminate()
        daemon.wait(10)


def test_idle_exit():
    """Socket-activated, it exits once idle; a connection keeps it."""
    path = "/run/mcp-exec/idle.sock"
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lsock.bind(path)
    lsock.listen(4)
    daemon = subprocess.Popen(["sh", "-c", 'export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" --idle-exit-sec=1 3<&"$1"',
                               TMPFSD, str(lsock.fileno())], pass_fds=[lsock.fileno()])
    try:
        k = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        k.settimeout(10)
        k.connect(path)
        k.send(b'{"op":"sweep"}')
        check(json.loads(k.recv(4096)) == {"ok": True}, "socket-activated: answers")
        time.sleep(2)
        check(daemon.poll() is None, "socket-activated: stays while a connection is open")
        k.close()
        daemon.wait(10)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait()
    check(daemon.returncode == 0, "socket-activated: exits 0 when idle (%s)" % daemon.returncode)
    lsock.close()


if __name__ == "__main__":
    main()
