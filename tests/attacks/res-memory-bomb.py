# attack: memory bomb: grow one bytearray by 16 MiB at a time (every page written) up to 2 GiB
# expect: the run is killed by the memory limit (256 MiB): oom_killed true, signal SIGKILL, exit -1, not a timeout; it never gets near 2 GiB
# check: r.oom_killed === true && r.signal === 'SIGKILL' && r.exit_code === -1 && r.timed_out === false
# check: r.stdout.includes('HAVE 16 MiB') && !r.stdout.includes('ESCAPED')
# check: r.memory_peak_bytes === null || r.memory_peak_bytes <= 300 * 1024 * 1024
# timeout: 60
import sys

chunk = b"\x5a" * (16 << 20)
b = bytearray()
while len(b) < (2 << 30):
    b += chunk
    print("HAVE %d MiB" % (len(b) >> 20), flush=True)
print("ESCAPED memory: grew a bytearray to %d MiB" % (len(b) >> 20))
