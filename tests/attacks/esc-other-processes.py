# attack: look for other processes (other runs', the front end's, the broker's, the box's): scan /proc, kill(pid, 0) over pids 1-65535 and the daemons', pidfd_open() on the daemons; leave 20 orphans that exit at once (zombies count against TasksMax until someone reaps them); on systemd >= 257 also kill(1, SIGKILL) and kill(-1, SIGKILL)
# expect: every version: /proc lists only this run's own processes, no signal reaches a process that is not ours, the orphans are reaped; systemd >= 257 (PrivatePIDs=): the run is alone in a PID namespace of its own (its launcher is PID 1, kill(pid, 0) and pidfd_open() find nothing else, the daemons' pids do not exist), and signals to PID 1 and kill(-1) leave the launcher standing (the result comes back)
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === (@SYSTEMD_VERSION@ >= 257 ? 8 : 3)
import ctypes, errno, os, signal, time

VERSION = @SYSTEMD_VERSION@
DAEMONS = {"front end": @FRONTEND_PID@, "broker": @BROKER_PID@}
SYS_pidfd_open = 434
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
me, launcher = os.getpid(), os.getppid()


def visible():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())


def status(pid):
    try:
        return dict(l.split(":\t", 1) for l in open("/proc/%d/status" % pid).read().splitlines() if ":\t" in l)
    except OSError:
        return None


# 1. /proc: nothing of another uid.
others = [p for p in visible() if (status(p) or {}).get("Uid", "").split()[:1] != [str(os.getuid())]]
if others:
    print("ESCAPED /proc lists %d processes of other uids: %s" % (len(others), others[:20]))
else:
    print("BLOCKED /proc: only this run's own %s" % visible())

# 2. kill(pid, 0) over the pid range: a signal reaches only our own unit's
# processes and threads (this one, the launcher, hidden in /proc as it is not
# dumpable, and its threads), as our cgroup lists them (in our PID namespace's
# numbers). 252 tells that a pid exists (EPERM, not ESRCH): no PID namespace there.
def unit_tids():
    tids = set()
    for line in open("/proc/self/cgroup"):
        _, ctrl, path = line.rstrip("\n").split(":", 2)
        if not path.endswith(".service"):
            continue    # a hierarchy where we sit higher up: it lists others too
        dirs = ["/sys/fs/cgroup" + path, "/sys/fs/cgroup/unified" + path] if not ctrl else \
            ["/sys/fs/cgroup/%s%s" % (c.replace("name=", ""), path) for c in ctrl.split(",")]
        for d in dirs:
            for f in ("cgroup.threads", "tasks"):
                try:
                    tids |= {int(x) for x in open("%s/%s" % (d, f)).read().split()}
                except (OSError, ValueError):
                    pass
    return tids


ours = set(visible()) | {launcher} | unit_tids()
reached, exist = [], []
for pid in list(range(1, 65536)) + sorted(DAEMONS.values()):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        continue
    except PermissionError:
        exist.append(pid)
        continue
    if pid not in ours:
        reached.append(pid)
if reached:
    print("ESCAPED kill(pid, 0) reaches %d processes that are not ours: %s" % (len(reached), reached[:20]))
else:
    print("BLOCKED kill(pid, 0): reaches only our own %s" % sorted(ours))
print("INFO kill(pid, 0) says %d more pids exist (EPERM)" % len(exist))

# 3. Orphans: the intermediate exits, its 20 children are left to whoever reaps
# orphans here (systemd, or the launcher as PID 1 of our namespace).
orphans = []
for i in range(20):
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        grandchild = os.fork()
        if grandchild == 0:
            os.close(w)
            os._exit(0)
        os.write(w, b"%d\n" % grandchild)
        os._exit(0)
    os.close(w)
    orphans.append(int(os.read(r, 32)))
    os.close(r)
    os.waitpid(child, 0)
left = orphans
for _ in range(100):
    left = [p for p in orphans if (status(p) or {}).get("State", "").startswith("Z")]
    if not left:
        break
    time.sleep(0.05)
if left:
    print("ESCAPED %d orphans are left as zombies (nobody reaps them): %s" % (len(left), left))
else:
    print("BLOCKED orphans left as zombies: all 20 reaped")

# 4. pidfd_open() on the daemons: on 252 it works (it needs no permission;
# pidfd_send_signal() fails, esc-daemon-signal-ptrace.py).
for name, pid in sorted(DAEMONS.items()):
    fd = libc.syscall(SYS_pidfd_open, ctypes.c_long(pid), ctypes.c_long(0))
    e = ctypes.get_errno()
    if fd >= 0:
        os.close(fd)
    if VERSION < 257:
        print("INFO pidfd_open(%s %d): %s" % (name, pid, "works" if fd >= 0 else errno.errorcode.get(e, e)))
    elif fd >= 0 and pid not in ours:
        print("ESCAPED pidfd_open(%s %d): the pid exists in our namespace" % (name, pid))
    else:
        print("BLOCKED pidfd_open(%s %d): %s" % (name, pid, errno.errorcode.get(e, e) if fd < 0 else "one of ours"))

if VERSION >= 257:
    # 5. A PID namespace of our own: our launcher is its PID 1 (and /proc is
    # the namespace's: NSpid starts there).
    nspid = (status(me) or {}).get("NSpid", "").split()
    if launcher == 1 and nspid and nspid[-1] == str(me):
        print("BLOCKED a PID namespace of our own: launcher is PID 1, NSpid %s" % nspid)
    else:
        print("ESCAPED no PID namespace of our own: launcher is PID %d, NSpid %s" % (launcher, nspid))
    if not exist and set(ours) >= {1, me}:
        print("BLOCKED other pids: none exists for us (no EPERM anywhere)")
    else:
        print("ESCAPED kill(pid, 0) says other pids exist: %s" % exist[:20])
    # 6. PID 1 of the namespace takes no signal from inside it but those it
    # handles; kill(-1) spares it (and us).
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(1, sig)
        except OSError as e:
            print("ESCAPED kill(1, %s): PID 1 is not ours: %s" % (sig.name, e))
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass    # nobody to signal: neither PID 1 nor we count
    time.sleep(0.2)
    try:
        os.kill(1, 0)
        print("BLOCKED kill(1, SIGTERM/SIGKILL), kill(-1, SIGKILL): the launcher stands")
    except OSError as e:
        print("ESCAPED the launcher is gone: %s" % e)
