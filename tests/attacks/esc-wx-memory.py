# attack: run machine code written into memory (issue 42): an anonymous mapping writable and executable at once (private and shared), a written mapping made executable with mprotect() and pkey_mprotect(), a SysV segment attached with SHM_EXEC; in the interpreter, in a forked child and in a fresh exec of python3; and node, whose JIT needs writable code, started from a Python run
# expect: every attempt fails with EPERM (the launcher's W^X filter, loaded in every unit but a JavaScript one's, inherited across fork and exec); node dies at its first compiled function unless started --jitless; code mapped executable from a file (a shared library) still loads
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 16 && r.stdout.includes('still works: ctypes callback 42')
import ctypes, errno, mmap, os, shutil, subprocess, sys

PROBE = r'''
import ctypes, errno, mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
libc.syscall.restype = ctypes.c_long
RWX = mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC
ANON = 0x20
def report(what, ok):
    e = ctypes.get_errno()
    if ok:
        print("ESCAPED %s %s" % (WHERE, what))
    elif e == errno.EPERM:
        print("BLOCKED %s %s: EPERM" % (WHERE, what))
    else:
        print("ESCAPED %s %s: failed with %s, not EPERM" % (WHERE, what, errno.errorcode.get(e)))
ctypes.set_errno(0)
p = libc.mmap(None, 4096, RWX, mmap.MAP_PRIVATE | ANON, -1, 0)
report("mmap(RWX, private)", p not in (None, ctypes.c_void_p(-1).value))
ctypes.set_errno(0)
p = libc.mmap(None, 4096, mmap.PROT_WRITE | mmap.PROT_EXEC, mmap.MAP_SHARED | ANON, -1, 0)
report("mmap(WX, shared)", p not in (None, ctypes.c_void_p(-1).value))
p = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | ANON, -1, 0)
ctypes.memmove(p, b"\xb8\x2a\x00\x00\x00\xc3", 6)   # mov eax, 42; ret
ctypes.set_errno(0)
report("mprotect(written page, RX)", libc.mprotect(ctypes.c_void_p(p), 4096, mmap.PROT_READ | mmap.PROT_EXEC) == 0)
ctypes.set_errno(0)
report("pkey_mprotect(written page, RX)",
       libc.syscall(ctypes.c_long(329), ctypes.c_void_p(p), ctypes.c_long(4096),
                    ctypes.c_long(mmap.PROT_READ | mmap.PROT_EXEC), ctypes.c_long(-1)) == 0)
ctypes.set_errno(0)
shmid = libc.shmget(0, 4096, 0o1700)                  # IPC_PRIVATE, IPC_CREAT | 0700 (x: SHM_EXEC)
r = libc.syscall(ctypes.c_long(30), ctypes.c_long(shmid), None, ctypes.c_long(0o100000))   # shmat(SHM_EXEC)
report("shmat(SHM_EXEC)", r not in (-1,))
libc.shmctl(shmid, 0, None)                          # IPC_RMID
'''

def probe(where):
    exec(PROBE.replace("WHERE", repr(where)), {})

probe("interpreter")
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    probe("fork")
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
out = subprocess.run([sys.executable, "-c", PROBE.replace("WHERE", "'exec'")], capture_output=True, text=True)
print(out.stdout, end="")
print(out.stderr, end="", file=sys.stderr)

# Node in a Python unit: its JIT is refused (it dies: SIGTRAP), --jitless runs.
node = shutil.which("node") or shutil.which("nodejs")
if node:
    loop = "let s = 0; for (let i = 0; i < 1e6; i++) s += i; console.log(s)"
    r = subprocess.run([node, "-e", loop], capture_output=True, text=True)
    if r.returncode != 0 and "499999500000" not in r.stdout:
        print("BLOCKED node's JIT in a Python unit: status %d" % r.returncode)
    else:
        print("ESCAPED node's JIT in a Python unit: %r" % r.stdout)
    r = subprocess.run([node, "--jitless", "-e", loop], capture_output=True, text=True)
    print("node --jitless: %s" % r.stdout.strip())
else:
    print("BLOCKED node's JIT in a Python unit: no node here")

# What must still work: a ctypes callback (libffi's trampolines come from a file).
CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
print("still works: ctypes callback %d" % CB(lambda x: x + 1)(41))
