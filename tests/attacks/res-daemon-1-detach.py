# attack: daemonize to outlive the run: double fork, setsid(), ignore SIGTERM/SIGHUP, one daemon keeps stdout open, one closes every fd; the main process exits at once
# expect: the run ends when its main process exits (exit 0, no timeout, not held open by the daemon's stdout); every daemon is killed with the cgroup (no dynamic-uid process left; res-daemon-2-gone sees no heartbeat)
# check: r.exit_code === 0 && r.timed_out === false && r.duration_ms < 30000
# check: r.stdout.includes('DETACHED keep-stdout') && r.stdout.includes('DETACHED close-fds')
import os, signal, sys, time

def daemon(name, close_fds):
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    os.chdir("/")
    print("DETACHED %s pid %d" % (name, os.getpid()), flush=True)
    if close_fds:
        os.closerange(0, 1024)
    while True:
        for d in ("/tmp", "/dev/shm", "/var/tmp"):
            try:
                with open(d + "/mcpatkb-daemon-" + name, "w") as f:
                    f.write("%d %f\n" % (os.getpid(), time.time()))
            except OSError:
                pass
        time.sleep(0.2)

for name, close_fds in (("keep-stdout", False), ("close-fds", True)):
    pid = os.fork()
    if pid == 0:
        daemon(name, close_fds)
    os.waitpid(pid, 0)
time.sleep(0.5)
print("MAIN exits", flush=True)
