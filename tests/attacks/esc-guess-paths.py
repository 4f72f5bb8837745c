# attack: reach earlier or other runs' files by guessing paths: /proc/*/cwd and /proc/*/root of every pid we can name, the hosts' systemd-private-* directories behind /tmp and /var/tmp, /var/lib/private, /var/cache/private, /var/log/private, the run cgroups' process lists
# expect: the 6 file lookups fail or find nothing; the other runs' cgroups may be listed (their names are not secret) but no process of another run is reachable through /proc
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 6
import errno, glob, os

me = os.getpid()
def attempt(what, fn):
    try:
        v = fn()
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
        return
    if v:
        print("ESCAPED %s: %s" % (what, v[:10]))
    else:
        print("BLOCKED %s: nothing" % what)

# Pids of other runs, as far as the cgroup tree tells them.
pids = set()
for p in glob.glob("/sys/fs/cgroup/*/mcp.slice/mcp-exec.slice/*/cgroup.procs") + glob.glob("/sys/fs/cgroup/mcp-exec.slice/*/cgroup.procs") + glob.glob("/sys/fs/cgroup/*/mcp-exec.slice/*/cgroup.procs"):
    try:
        pids |= {int(x) for x in open(p).read().split()}
    except OSError:
        pass
pids |= set(range(1, 64))
pids.discard(me)
print("INFO run cgroups visible: %d" % len(glob.glob("/sys/fs/cgroup/*/mcp.slice/mcp-exec.slice/mcp-exec-run-*") + glob.glob("/sys/fs/cgroup/mcp-exec.slice/mcp-exec-run-*")))

def through_proc(kind):
    got = []
    for pid in sorted(pids):
        try:
            got.append("%d:%s" % (pid, os.listdir("/proc/%d/%s/" % (pid, kind))[:3]))
        except OSError:
            pass
    return got
attempt("/proc/<other pid>/cwd", lambda: through_proc("cwd"))
attempt("/proc/<other pid>/root", lambda: through_proc("root"))
attempt("systemd-private-* beside our /tmp and /var/tmp",
        lambda: glob.glob("/tmp/systemd-private-*") + glob.glob("/var/tmp/systemd-private-*") + glob.glob("/tmp/../tmp/systemd-private-*"))
attempt("list /var/lib/private", lambda: os.listdir("/var/lib/private"))
attempt("list /var/cache/private", lambda: os.listdir("/var/cache/private"))
attempt("list /var/log/private", lambda: os.listdir("/var/log/private"))
