# attack: leave a process behind that keeps appending to a file in /tmp/outputs while the outputs are collected, so that collection never ends or the file grows past every limit
# expect: the call ends within its timeout and the reply stays small; the file is listed, returned cut or left out, and no process of the run is left (the harness checks)
# timeout: 20
# check: r !== null && !r.timed_out && JSON.stringify(res).length < 12 * 1024 * 1024
# check: r.stdout === 'MADE grower\n' && r.files.some(f => f.path === '/tmp/outputs/grow.bin')
import os, sys

os.makedirs("/tmp/outputs")
open("/tmp/outputs/grow.bin", "wb").close()
if os.fork() == 0:
    os.setsid()
    with open("/tmp/outputs/grow.bin", "ab", buffering=0) as f:
        while True:
            f.write(b"x" * 65536)
print("MADE grower")
sys.stdout.flush()
