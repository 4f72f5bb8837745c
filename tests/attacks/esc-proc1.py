# attack: snoop on PID 1 (systemd) through /proc: environ, cmdline, status, mountinfo, its root and cwd, its open fds; and list /proc for anyone else's processes
# expect: every /proc/1 access fails (ProtectProc=invisible hides processes of other users); /proc lists only this run's own processes
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 8
import errno, os

def attempt(what, fn):
    try:
        v = fn()
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
        return
    print("ESCAPED %s: got %d items/bytes" % (what, len(v)))

attempt("/proc/1/environ", lambda: open("/proc/1/environ", "rb").read())
attempt("/proc/1/cmdline", lambda: open("/proc/1/cmdline", "rb").read())
attempt("/proc/1/status", lambda: open("/proc/1/status", "rb").read())
attempt("/proc/1/mountinfo", lambda: open("/proc/1/mountinfo", "rb").read())
attempt("/proc/1/root", lambda: os.listdir("/proc/1/root/"))
attempt("/proc/1/cwd", lambda: os.listdir("/proc/1/cwd/"))
attempt("/proc/1/fd", lambda: os.listdir("/proc/1/fd"))

# Our own processes: this one and its descendants (none here).
me = os.getpid()
mine = {me}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            st = open("/proc/%s/status" % p).read()
        except OSError:
            continue
        uid = int(st.split("\nUid:\t", 1)[1].split()[0])
        if uid == os.getuid():
            mine.add(int(p))
others = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine)
if others:
    print("ESCAPED /proc lists %d processes that are not ours: %s" % (len(others), others[:20]))
else:
    print("BLOCKED other processes in /proc: only our own %s" % sorted(mine))
