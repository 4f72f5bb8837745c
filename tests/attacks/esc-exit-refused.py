# attack: stay alive past the exit the launcher heard about: load a filter of the program's own (prctl) that fails exit_group() with EPERM, so that the call the launcher would be told of never happens, then exit the main thread through exit(2) and keep a second thread writing
# expect: the program's own stricter answer wins before the launcher's notification is asked, so nothing is reported early; the interpreter ends only when its threads do, and the caller gets its timeout (timed_out true, SIGKILL), never an exit status while a thread of it still runs
# check: r.timed_out === true && r.signal === 'SIGKILL'
# check: r.stdout.startsWith('REFUSED EPERM\n')
# timeout: 3
import ctypes, errno, os, platform, struct, threading, time

assert platform.machine() == "x86_64", "syscall numbers below are x86_64"
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
NR_exit_group, NR_exit = 231, 60
# exit_group -> ERRNO(EPERM), everything else allowed
prog = b"".join([
    struct.pack("HBBI", 0x20, 0, 0, 0),                    # ld nr
    struct.pack("HBBI", 0x15, 0, 1, NR_exit_group),        # jeq exit_group
    struct.pack("HBBI", 0x06, 0, 0, 0x00050000 | errno.EPERM),
    struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000),
])
buf = ctypes.create_string_buffer(prog)


class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


p = Prog(4, ctypes.addressof(buf))
assert libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(p), 0, 0) == 0, os.strerror(ctypes.get_errno())
r = libc.syscall(NR_exit_group, 0)
print("REFUSED %s" % errno.errorcode.get(ctypes.get_errno(), "?") if r < 0 else "EXIT_GROUP RETURNED", flush=True)


def spin():
    while True:
        time.sleep(0.05)


threading.Thread(target=spin, daemon=True).start()
libc.syscall(NR_exit, 0)        # the main thread alone
