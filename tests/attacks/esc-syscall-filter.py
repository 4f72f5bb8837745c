# attack: get around the launcher's own system call filter (it replaced the unit's SystemCallFilter=): from a child process and from a fresh exec of another program, after loading an allow-everything seccomp filter of its own, and through the x32 ABI (another architecture on x86-64)
# expect: io_uring_setup, add_key, perf_event_open and ptrace fail with EPERM in every one of those processes (the filter is inherited and cannot be loosened), an x32 call kills its process with SIGSYS
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 13
import ctypes, errno, os, platform, signal, subprocess, sys

assert platform.machine() == "x86_64", "syscall numbers below are x86_64"
PROBE = r'''
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for name, nr in (("io_uring_setup", 425), ("add_key", 248), ("perf_event_open", 298), ("ptrace", 101)):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), ctypes.c_long(0), None, ctypes.c_long(0), ctypes.c_long(-1), ctypes.c_long(0))
    e = ctypes.get_errno()
    print(("BLOCKED %s %s: EPERM" if r < 0 and e == errno.EPERM else "ESCAPED %s %s: " + str((r, e))) % (WHERE, name))
'''

def probe(where):
    exec(PROBE.replace("WHERE", repr(where)), {})

# 1. A child of the interpreter (a fork, no exec).
pid = os.fork()
if pid == 0:
    probe("fork")
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)

# 2. A fresh exec of another program: the filter survives execve.
out = subprocess.run(["/bin/sh", "-c", 'exec "$0" -c "$1"', sys.executable, PROBE.replace("WHERE", "'exec'")],
                     capture_output=True, text=True)
print(out.stdout, end="")

# 3. An allow-everything filter of our own on top: the strictest answer still wins.
libc = ctypes.CDLL(None, use_errno=True)
class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]
allow_all = (SockFilter * 1)(SockFilter(0x06, 0, 0, 0x7fff0000))       # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
prog = SockFprog(1, allow_all)
ctypes.set_errno(0)
r = libc.prctl(22, 2, ctypes.byref(prog), 0, 0)                         # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
print("loaded an allow-all filter: %s" % ("yes" if r == 0 else errno.errorcode.get(ctypes.get_errno())))
probe("own filter")

# 4. The x32 ABI: getpid with __X32_SYSCALL_BIT, in a child: it must die by SIGSYS.
pid = os.fork()
if pid == 0:
    libc.syscall.restype = ctypes.c_long
    libc.syscall(ctypes.c_long(0x40000000 | 39))
    os._exit(0)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS:
    print("BLOCKED x32 getpid: killed by SIGSYS")
else:
    print("ESCAPED x32 getpid: status %d" % status)
