# attack: a busy loop that never ends, run with timeout_s 3
# expect: killed at the timeout: timed_out true, exit -1, SIGKILL; duration at least the timeout and not far past it (generous bound); it did burn CPU
# check: r.timed_out === true && r.exit_code === -1 && r.signal === 'SIGKILL' && r.oom_killed === false
# check: r.stdout === 'START\n' && r.duration_ms >= 2900 && r.duration_ms < 30000
# check: r.cpu_ms === null || r.cpu_ms > 500
# timeout: 3
print("START", flush=True)
while True:
    pass
