# attack: reach kernel attack surface with 28 raw system calls through ctypes: bpf, io_uring_setup, keyctl, add_key, request_key, perf_event_open, userfaultfd (both modes), kexec_load, kexec_file_load, init_module, finit_module, delete_module, open_by_handle_at, ptrace(TRACEME), personality(READ_IMPLIES_EXEC), iopl, ioperm, swapon, acct, syslog, reboot(CAD_OFF), pivot_root, fsopen, open_tree, clock_settime, sethostname, setdomainname
# expect: each fails with EPERM/EACCES/ENOSYS (seccomp @system-service with EPERM, no capabilities, LockPersonality, ProtectKernel*/Clock/Hostname); one that passed the filter and failed only on its arguments counts as reached (ESCAPED)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 28
import ctypes, errno, os, platform, time

assert platform.machine() == "x86_64", "syscall numbers below are x86_64"
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
DENIED = (errno.EPERM, errno.EACCES, errno.ENOSYS)

def sc(name, nr, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *args)
    e = ctypes.get_errno()
    if r >= 0:
        print("ESCAPED %s: returned %d" % (name, r))
        if name.startswith(("io_uring", "userfaultfd", "perf", "bpf", "fsopen", "open_tree")):
            os.close(r)
    elif e in DENIED:
        print("BLOCKED %s: %s" % (name, errno.errorcode[e]))
    else:
        print("ESCAPED %s: reached the kernel and failed only with %s" % (name, errno.errorcode.get(e, e)))

buf = ctypes.create_string_buffer(256)
bpf_attr = ctypes.create_string_buffer(128)
ctypes.memmove(bpf_attr, (2).to_bytes(4, "little") + (4).to_bytes(4, "little") + (4).to_bytes(4, "little") + (1).to_bytes(4, "little"), 16)
sc("bpf(BPF_MAP_CREATE)", 321, 0, bpf_attr, 128)
sc("io_uring_setup", 425, 4, ctypes.create_string_buffer(120))
sc("keyctl(KEYCTL_GET_KEYRING_ID, @u)", 250, 0, -4, 0)           # KEY_SPEC_USER_KEYRING
sc("add_key(user, @s)", 248, b"user", b"mcpatkb", b"data", 4, -3)  # KEY_SPEC_SESSION_KEYRING
sc("request_key(user)", 249, b"user", b"mcpatkb", None, 0)
perf_attr = ctypes.create_string_buffer(128)
ctypes.memmove(perf_attr, (1).to_bytes(4, "little") + (128).to_bytes(4, "little"), 8)  # PERF_TYPE_SOFTWARE, size
sc("perf_event_open(cpu-clock, self)", 298, perf_attr, 0, -1, -1, 0)
sc("userfaultfd(O_CLOEXEC)", 323, os.O_CLOEXEC)
sc("userfaultfd(UFFD_USER_MODE_ONLY)", 323, os.O_CLOEXEC | 1)
sc("kexec_load", 246, 0, 0, None, 0)
sc("kexec_file_load", 320, -1, -1, 0, b"", 0x4)                    # KEXEC_FILE_NO_INITRAMFS
sc("init_module", 175, buf, 16, b"")
sc("finit_module", 313, 0, b"", 0)
sc("delete_module", 176, b"loop", os.O_NONBLOCK)
handle = ctypes.create_string_buffer(8 + 128)
ctypes.memmove(handle, (8).to_bytes(4, "little") + (1).to_bytes(4, "little"), 8)
sc("open_by_handle_at", 304, -100, handle, os.O_RDONLY)            # AT_FDCWD
sc("ptrace(PTRACE_TRACEME)", 101, 0, 0, 0, 0)
sc("personality(READ_IMPLIES_EXEC)", 135, 0x0400000)
sc("iopl(3)", 172, 3)
sc("ioperm(0x80)", 173, 0x80, 1, 1)
sc("swapon(/tmp/swap)", 167, b"/tmp/swap", 0)
sc("acct(/tmp/acct)", 163, b"/tmp/acct")
sc("syslog(READ_ALL)", 103, 3, buf, 256)
sc("reboot(CAD_OFF)", 169, 0xfee1dead, 672274793, 0, None)
os.makedirs("/tmp/newroot/old", exist_ok=True)
sc("pivot_root", 155, b"/tmp/newroot", b"/tmp/newroot/old")
sc("fsopen(tmpfs)", 430, b"tmpfs", 0)
sc("open_tree(/, OPEN_TREE_CLONE)", 428, -100, b"/", 1)
ts = (ctypes.c_long * 2)(int(time.time()), 0)
sc("clock_settime(CLOCK_REALTIME)", 227, 0, ts)
sc("sethostname", 170, b"mcpatkb", 7)
sc("setdomainname", 171, b"mcpatkb", 7)
