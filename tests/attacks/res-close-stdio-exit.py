# attack: close stdin, stdout and stderr early, keep running for a while, then exit 7
# expect: the run is not cut short by the closed pipes nor held up: exit_code 7 when the program exits, the output written before closing is kept, no timeout
# check: r.exit_code === 7 && r.timed_out === false && r.signal === null
# check: r.stdout === 'BEFORE out\n' && r.stderr === 'BEFORE err\n' && r.duration_ms >= 1900
# timeout: 20
import os, sys, time
sys.stdout.write("BEFORE out\n"); sys.stdout.flush()
sys.stderr.write("BEFORE err\n"); sys.stderr.flush()
os.close(0); os.close(1); os.close(2)
time.sleep(2)
os._exit(7)
