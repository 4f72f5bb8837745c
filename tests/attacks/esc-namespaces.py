# attack: get privileges or a private world through namespaces and ids: mount(tmpfs), umount2(/proc), unshare() of each namespace type (user, mount, net, pid, ipc, uts, cgroup), chroot, setuid(0), setgid(0), setgroups([0]), setresuid(0,0,0)
# expect: all 14 fail with EPERM (empty capability set, RestrictNamespaces=yes, @mount filtered); uid stays the dynamic one
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 14
import ctypes, errno, os

libc = ctypes.CDLL(None, use_errno=True)

def c_call(what, fn, *args):
    r = fn(*args)
    e = ctypes.get_errno()
    if r < 0:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e, e)))
    else:
        print("ESCAPED %s: returned %d" % (what, r))

os.makedirs("/tmp/mnt", exist_ok=True)
c_call("mount tmpfs on /tmp/mnt", libc.mount, b"none", b"/tmp/mnt", b"tmpfs", ctypes.c_ulong(0), None)
c_call("umount2 /proc", libc.umount2, b"/proc", 2)  # MNT_DETACH
for name, flag in (("CLONE_NEWUSER", 0x10000000), ("CLONE_NEWNS", 0x00020000), ("CLONE_NEWNET", 0x40000000),
                   ("CLONE_NEWPID", 0x20000000), ("CLONE_NEWIPC", 0x08000000), ("CLONE_NEWUTS", 0x04000000),
                   ("CLONE_NEWCGROUP", 0x02000000)):
    c_call("unshare(%s)" % name, libc.unshare, flag)
c_call("chroot /tmp", libc.chroot, b"/tmp")

def py(what, fn):
    try:
        fn()
        print("ESCAPED %s: uid now %s" % (what, os.getresuid()))
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))

py("setuid(0)", lambda: os.setuid(0))
py("setgid(0)", lambda: os.setgid(0))
py("setgroups([0])", lambda: os.setgroups([0]))
py("setresuid(0, 0, 0)", lambda: os.setresuid(0, 0, 0))
print("INFO ids now: uid %s gid %s groups %s" % (os.getresuid(), os.getresgid(), os.getgroups()))
