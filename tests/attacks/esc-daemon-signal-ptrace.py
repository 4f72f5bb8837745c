# attack: attack the front end and the root broker directly (pids substituted by the harness): kill(SIGKILL), kill(SIGSTOP), ptrace ATTACH and SEIZE and process_vm_readv through ctypes, pidfd_send_signal(SIGKILL) and pidfd_getfd on a pidfd
# expect: all 14 fail (EPERM: other uids, @debug calls filtered); both services keep working (the always-check runs print(6*7) right after)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 14
import ctypes, errno, os, platform, signal

assert platform.machine() == "x86_64", "syscall numbers below are x86_64"
SYS_ptrace, SYS_process_vm_readv, SYS_pidfd_open, SYS_pidfd_send_signal, SYS_pidfd_getfd = 101, 310, 434, 424, 438
PTRACE_ATTACH, PTRACE_SEIZE, PTRACE_DETACH = 16, 0x4206, 17
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def sc(what, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(*args)
    e = ctypes.get_errno()
    if r < 0:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e, e)))
    else:
        print("ESCAPED %s: returned %d" % (what, r))
    return r

class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

for name, pid in (("front end", @FRONTEND_PID@), ("broker", @BROKER_PID@)):
    for sig in (signal.SIGKILL, signal.SIGSTOP):
        try:
            os.kill(pid, sig)
            print("ESCAPED kill(%s %d, %s): delivered" % (name, pid, sig.name))
            if sig == signal.SIGSTOP:
                os.kill(pid, signal.SIGCONT)
        except OSError as e:
            print("BLOCKED kill(%s %d, %s): %s" % (name, pid, sig.name, errno.errorcode.get(e.errno, e.errno)))
    if sc("ptrace(PTRACE_ATTACH, %s %d)" % (name, pid), SYS_ptrace, PTRACE_ATTACH, pid, 0, 0) >= 0:
        libc.syscall(SYS_ptrace, PTRACE_DETACH, pid, 0, 0)
    if sc("ptrace(PTRACE_SEIZE, %s %d)" % (name, pid), SYS_ptrace, PTRACE_SEIZE, pid, 0, 0) >= 0:
        libc.syscall(SYS_ptrace, PTRACE_DETACH, pid, 0, 0)
    buf = ctypes.create_string_buffer(64)
    local = iovec(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = iovec(0x400000, 64)
    sc("process_vm_readv(%s %d)" % (name, pid), SYS_process_vm_readv, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    pidfd = libc.syscall(SYS_pidfd_open, ctypes.c_long(pid), ctypes.c_long(0))
    if pidfd < 0:
        e = errno.errorcode.get(ctypes.get_errno())
        print("BLOCKED pidfd_send_signal(%s %d, SIGKILL): no pidfd: %s" % (name, pid, e))
        print("BLOCKED pidfd_getfd(%s %d, 0): no pidfd: %s" % (name, pid, e))
    else:
        print("INFO pidfd_open(%s %d) works (it needs no permission)" % (name, pid))
        sc("pidfd_send_signal(%s %d, SIGKILL)" % (name, pid), SYS_pidfd_send_signal, pidfd, int(signal.SIGKILL), 0, 0)
        sc("pidfd_getfd(%s %d, 0)" % (name, pid), SYS_pidfd_getfd, pidfd, 0, 0)
        os.close(pidfd)
