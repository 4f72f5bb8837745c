# attack: leave a process behind: a setsid() double-forked daemon ignoring SIGTERM/SIGHUP that first tries to move itself out of the run's cgroup (into mcp-exec.slice, into the root cgroup, in every hierarchy); the main process exits at once
# expect: every cgroup move fails (ProtectControlGroups=yes: read-only); the run ends normally (exit 0) and the daemon dies with the run's cgroup (the harness finds no process of a dynamic uid, the next run sees none)
# check: r.exit_code === 0 && r.timed_out === false && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length >= 2 && r.stdout.includes('DAEMON running')
import errno, os, signal, time

r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    lines = []
    for line in open("/proc/self/cgroup"):
        _, ctrl, path = line.rstrip("\n").split(":", 2)
        base = "/sys/fs/cgroup/" + (ctrl.replace("name=", "") if ctrl else "unified")
        if not ctrl and not os.path.isdir(base):
            base = "/sys/fs/cgroup"
        parent = os.path.dirname(path)
        for target in (base + parent, base):
            p = target.rstrip("/") + "/cgroup.procs"
            try:
                with open(p, "w") as f:
                    f.write(str(os.getpid()))
                lines.append("ESCAPED moved into %s" % p)
            except OSError as e:
                lines.append("BLOCKED move into %s: %s" % (p, errno.errorcode.get(e.errno, e.errno)))
    lines.append("DAEMON running as %d in %s" % (os.getpid(), open("/proc/self/cgroup").read().splitlines()[-1]))
    os.write(w, ("\n".join(lines) + "\n").encode())
    os.close(w)
    os.closerange(0, 3)
    while True:
        time.sleep(1)
os.close(w)
out = b""
while True:
    b = os.read(r, 65536)
    if not b:
        break
    out += b
print(out.decode(), end="")
