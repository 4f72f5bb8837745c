# attack: after esc-leave-files, esc-leave-ipc and esc-leave-process: look for what they left: the marker files, /dev/mqueue entries, the SysV objects under the fixed key, /proc/sysvipc, the POSIX queue and shared memory, /run/lock, the daemon
# expect: nothing is found (11 lookups fail or come back empty)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 11
import ctypes, ctypes.util, errno, glob, os

KEY = 0x6d637061
libc = ctypes.CDLL(None, use_errno=True)

def none_found(what, found):
    if found:
        print("ESCAPED %s: found %s" % (what, found))
    else:
        print("BLOCKED %s: nothing" % what)

def names(d):
    try:
        return os.listdir(d)
    except FileNotFoundError:  # /run/lock: the run's /run is empty
        return []

home = os.environ.get("HOME", "/tmp")
for d in sorted({"/tmp", "/var/tmp", "/dev/shm", home, "/dev/mqueue", "/run/lock"}):
    none_found("leftovers in %s" % d, [n for n in names(d) if n.startswith("mcpatkb")])
for name, fn, args in (("shmget", libc.shmget, (KEY, 0, 0)), ("msgget", libc.msgget, (KEY, 0)), ("semget", libc.semget, (KEY, 0, 0))):
    r = fn(*args)
    none_found("SysV %s key %#x" % (name, KEY), [] if r < 0 else ["id %d" % r])
ipc = []
for f in ("shm", "msg", "sem"):
    ipc += open("/proc/sysvipc/" + f).read().splitlines()[1:]
none_found("/proc/sysvipc entries", ipc)
rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
mqd = rt.mq_open(b"/mcpatkb-mq", os.O_RDONLY, 0, None)
none_found("POSIX mq /mcpatkb-mq", [] if mqd < 0 else ["opened"])
me = os.getpid()
none_found("other processes", [p for p in os.listdir("/proc") if p.isdigit() and int(p) != me])
