# attack: allocate more than MemoryMax in small touched steps, hoping the excess is swapped out (MemorySwapMax=0)
# expect: swap is off for the run (swap limit 0, or no swap device on the host); the run is OOM-killed before it holds MemoryMax: the last size it reports is below the limit it read from its cgroup
# check: r.oom_killed === true && r.signal === 'SIGKILL' && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 1
# check: +(r.stdout.match(/^LIMIT (\d+)$/m) || [])[1] > 0
# check: Math.max(0, ...(r.stdout.match(/^HAVE (\d+)$/gm) || []).map((l) => +l.slice(5))) >= 64 << 20
# check: Math.max(0, ...(r.stdout.match(/^HAVE (\d+)$/gm) || []).map((l) => +l.slice(5))) < +(r.stdout.match(/^LIMIT (\d+)$/m) || [])[1]
# timeout: 60
import os

def cg_read(names):
    for line in open("/proc/self/cgroup"):
        _, ctrl, path = line.rstrip("\n").split(":", 2)
        for base in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup"):
            for n in names:
                p = base + path + "/" + n
                if os.path.exists(p):
                    try:
                        return n, open(p).read().strip()
                    except OSError:
                        pass
    return None, None

name, limit = cg_read(["memory.max", "memory.limit_in_bytes"])
sname, swap = cg_read(["memory.swap.max", "memory.memsw.limit_in_bytes"])
swaps = open("/proc/swaps").read().strip().splitlines()[1:]
print("INFO %s=%s %s=%s host swap devices: %d" % (name, limit, sname, swap, len(swaps)))
if sname == "memory.swap.max" and swap == "0":
    print("BLOCKED swap: memory.swap.max is 0")
elif sname == "memory.memsw.limit_in_bytes" and swap == limit:
    print("BLOCKED swap: memory.memsw.limit_in_bytes equals memory.limit_in_bytes")
elif not swaps:
    # cgroup v1 systemd does not set memsw; without a swap device there is nothing to swap to.
    print("BLOCKED swap: no swap device on this host (the run's swap limit is %s)" % swap)
else:
    print("ESCAPED swap: %d swap device(s) and the run's swap limit is %s=%s" % (len(swaps), sname, swap))
print("LIMIT %d" % int(limit), flush=True)
target = int(limit) * 3 // 2
chunks = []
have = 0
while have < target:
    chunks.append(b"\xa5" * (8 << 20))
    have += 8 << 20
    print("HAVE %d" % have, flush=True)
print("ESCAPED memory: held %d bytes, more than the limit %s" % (have, limit))
