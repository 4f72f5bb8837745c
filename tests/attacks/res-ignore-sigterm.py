# attack: ignore and block every catchable signal (main process and a setsid() child), then sleep past the timeout
# expect: still killed at the timeout (KillSignal=SIGKILL for the whole cgroup): timed_out true, exit -1, SIGKILL; nothing left
# check: r.timed_out === true && r.exit_code === -1 && r.signal === 'SIGKILL'
# check: r.stdout.includes('IGNORING parent') && r.stdout.includes('IGNORING child') && !r.stdout.includes('WOKE')
# check: r.duration_ms < 30000
# timeout: 3
import os, signal, time

def deaf(who):
    for s in signal.valid_signals():
        try:
            signal.signal(s, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    print("IGNORING %s" % who, flush=True)

if os.fork() == 0:
    os.setsid()
    deaf("child")
    time.sleep(3600)
    print("WOKE child", flush=True)
    os._exit(0)
time.sleep(0.3)
deaf("parent")
time.sleep(3600)
print("WOKE parent")
