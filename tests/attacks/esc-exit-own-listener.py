# attack: take over the launcher's early word of the exit (it hears the interpreter's exit_group() through a seccomp user notification): ask the kernel for a notification listener of the program's own, with seccomp(2) as the launcher itself does, from the main thread and from a child
# expect: seccomp(2) fails with EPERM everywhere (the run's filter has no seccomp(2), as @system-service had none); prctl() can load a filter but never gets a listener
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 2
import ctypes, errno, os, platform, struct

assert platform.machine() == "x86_64", "syscall numbers below are x86_64"
libc = ctypes.CDLL(None, use_errno=True)
SYS_seccomp, SECCOMP_SET_MODE_FILTER, FLAG_NEW_LISTENER = 317, 1, 1 << 3
SECCOMP_RET_ALLOW = 0x7FFF0000
# One instruction: allow everything (what the program would put under its own supervisor).
insn = struct.pack("HBBI", 0x06, 0, 0, SECCOMP_RET_ALLOW)
buf = ctypes.create_string_buffer(insn)


class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def attempt(where):
    prog = Prog(1, ctypes.addressof(buf))
    fd = libc.syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, FLAG_NEW_LISTENER, ctypes.byref(prog))
    e = ctypes.get_errno()
    if fd >= 0:
        print("ESCAPED %s: a listener, fd %d" % (where, fd), flush=True)
    elif e == errno.EPERM:
        print("BLOCKED %s: %s" % (where, os.strerror(e)), flush=True)
    else:
        print("ESCAPED? %s: %s (not the filter's EPERM)" % (where, os.strerror(e)), flush=True)


attempt("main thread")
pid = os.fork()
if pid == 0:
    attempt("child")
    os._exit(0)
os.waitpid(pid, 0)
