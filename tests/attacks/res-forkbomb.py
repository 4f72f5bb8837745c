# attack: fork bomb: every process forks as fast as it can, forever
# expect: fork() fails with EAGAIN once the run has TasksMax (128) tasks; the run ends at its timeout (timed_out, exit -1); nothing of it is left
# check: r.timed_out === true && r.exit_code === -1 && r.signal === 'SIGKILL'
# check: !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 1
# check: +(r.stdout.match(/pids\.max=(\d+)/) || [])[1] === 128 && +(r.stdout.match(/pids\.current=(\d+)/) || [])[1] <= 128
# timeout: 8
import os, time

def pids_file(name):
    for line in open("/proc/self/cgroup"):
        _, ctrl, path = line.rstrip("\n").split(":", 2)
        for p in ("/sys/fs/cgroup/pids" + path, "/sys/fs/cgroup" + path):
            if (ctrl == "pids" or ctrl == "") and os.path.exists(p + "/" + name):
                return open(p + "/" + name).read().strip()
    return "?"

print("START", flush=True)
while True:
    try:
        os.fork()
    except OSError as e:
        # The first process to be refused reports (one line in all).
        try:
            os.close(os.open("/tmp/reported", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            first = True
        except OSError:
            first = False
        if first:
            print("BLOCKED fork: errno %d (%s) at pids.current=%s pids.max=%s"
                  % (e.errno, os.strerror(e.errno), pids_file("pids.current"), pids_file("pids.max")), flush=True)
        time.sleep(0.05)
