# attack: read the front end's (mcp-execd, user mcp-exec) and the root broker's /proc/<pid>/{environ,cmdline,maps,mem,status,fd,root,cwd} (pids substituted by the harness)
# expect: all 16 fail: both processes are invisible to the run (ProtectProc=invisible, other uids)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 16
import errno, os

def attempt(what, fn):
    try:
        v = fn()
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
        return
    print("ESCAPED %s: got %d items/bytes" % (what, len(v)))

def read_mem(pid):
    with open("/proc/%d/mem" % pid, "rb") as f:
        f.seek(0x400000)
        return f.read(64)

for name, pid in (("front end", @FRONTEND_PID@), ("broker", @BROKER_PID@)):
    attempt("%s %d environ" % (name, pid), lambda: open("/proc/%d/environ" % pid, "rb").read())
    attempt("%s %d cmdline" % (name, pid), lambda: open("/proc/%d/cmdline" % pid, "rb").read())
    attempt("%s %d maps" % (name, pid), lambda: open("/proc/%d/maps" % pid, "rb").read())
    attempt("%s %d mem" % (name, pid), lambda: read_mem(pid))
    attempt("%s %d status" % (name, pid), lambda: open("/proc/%d/status" % pid, "rb").read())
    attempt("%s %d fd" % (name, pid), lambda: os.listdir("/proc/%d/fd" % pid))
    attempt("%s %d root" % (name, pid), lambda: os.listdir("/proc/%d/root/" % pid))
    attempt("%s %d cwd" % (name, pid), lambda: os.listdir("/proc/%d/cwd/" % pid))
