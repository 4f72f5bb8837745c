# attack: escape or loosen the run's cgroup: move ourselves into the parent and the root cgroup, raise our memory and pids limits, make a child cgroup, set a v1 release_agent, mount a cgroup file system of our own
# expect: all 7 fail (ProtectControlGroups=yes: read-only, mount filtered); the memory and pids limits read back unchanged
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 7
import ctypes, errno, os

def cg_dir(ctrl):
    for line in open("/proc/self/cgroup"):
        _, c, path = line.rstrip("\n").split(":", 2)
        if ctrl in c.split(","):
            return "/sys/fs/cgroup/" + ctrl + path, "/sys/fs/cgroup/" + ctrl
        if c == "" and ctrl == "" :
            base = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified") else "/sys/fs/cgroup"
            return base + path, base
    return None, None

v1 = os.path.isdir("/sys/fs/cgroup/memory")
mem, mem_root = cg_dir("memory") if v1 else cg_dir("")
pids, pids_root = cg_dir("pids") if v1 else cg_dir("")
mem_file = "memory.limit_in_bytes" if v1 else "memory.max"

def write(what, path, value):
    try:
        with open(path, "w") as f:
            f.write(value)
        print("ESCAPED %s: wrote %s to %s" % (what, value, path))
    except OSError as e:
        print("BLOCKED %s: %s" % (what, errno.errorcode.get(e.errno, e.errno)))

before = (open(mem + "/" + mem_file).read().strip(), open(pids + "/pids.max").read().strip())
write("move into the parent cgroup", os.path.dirname(mem) + "/cgroup.procs", str(os.getpid()))
write("move into the root cgroup", mem_root + "/cgroup.procs", str(os.getpid()))
write("raise our memory limit", mem + "/" + mem_file, "9223372036854771712" if v1 else "max")
write("raise our pids limit", pids + "/pids.max", "max")
try:
    os.mkdir(mem + "/child")
    print("ESCAPED mkdir a child cgroup")
    os.rmdir(mem + "/child")
except OSError as e:
    print("BLOCKED mkdir a child cgroup: %s" % errno.errorcode.get(e.errno, e.errno))
write("set release_agent", mem_root + "/release_agent", "/tmp/agent")
os.makedirs("/tmp/cg", exist_ok=True)
libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(b"cgroup", b"/tmp/cg", b"cgroup2" if not v1 else b"cgroup", ctypes.c_ulong(0), b"memory" if v1 else None) == 0:
    print("ESCAPED mount a cgroup file system on /tmp/cg")
else:
    print("BLOCKED mount a cgroup file system: %s" % errno.errorcode.get(ctypes.get_errno()))
after = (open(mem + "/" + mem_file).read().strip(), open(pids + "/pids.max").read().strip())
print("INFO limits before %s after %s" % (before, after))
if before != after:
    print("ESCAPED limits changed")
