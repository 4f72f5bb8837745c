# attack: symlink and hardlink tricks in /tmp: symlink to /etc/shadow and read it, symlink to another process's root, hardlink to /etc/shadow and to /etc/passwd (root-owned) from /tmp and /dev/shm, rename a symlink over /etc/passwd, open a root-owned file by its /proc/self/fd path for writing
# expect: reading through the symlink fails (EACCES), the links cross file systems (EXDEV) or are refused (EPERM, protected_hardlinks), renames across file systems fail; nothing root-owned becomes writable
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 8
import errno, os

def attempt(what, fn):
    try:
        v = fn()
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))
        return
    print("ESCAPED %s: %r" % (what, v if isinstance(v, int) else len(v)))

print("INFO fs.protected_symlinks=%s fs.protected_hardlinks=%s" % (
    open("/proc/sys/fs/protected_symlinks").read().strip(), open("/proc/sys/fs/protected_hardlinks").read().strip()))
os.symlink("/etc/shadow", "/tmp/shadow")
attempt("read /etc/shadow through /tmp/shadow", lambda: open("/tmp/shadow", "rb").read())
os.symlink("/proc/1/root/etc/shadow", "/tmp/root1")
attempt("read through a symlink to /proc/1/root", lambda: open("/tmp/root1", "rb").read())
for d in ("/tmp", "/dev/shm"):
    attempt("hardlink %s/h -> /etc/shadow" % d, lambda: os.link("/etc/shadow", d + "/h") or "linked")
    attempt("hardlink %s/p -> /etc/passwd" % d, lambda: os.link("/etc/passwd", d + "/p") or "linked")
os.symlink("/tmp/evil", "/tmp/evil-link")
attempt("rename a /tmp symlink over /etc/passwd", lambda: os.rename("/tmp/evil-link", "/etc/passwd") or "renamed")
def reopen():
    fd = os.open("/etc/passwd", os.O_RDONLY)
    try:
        fd2 = os.open("/proc/self/fd/%d" % fd, os.O_WRONLY | os.O_APPEND)
        os.close(fd2)
        return "reopened for writing"
    finally:
        os.close(fd)
attempt("reopen /etc/passwd for writing via /proc/self/fd", reopen)
