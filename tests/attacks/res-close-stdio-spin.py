# attack: close stdout and stderr early (the capture sees EOF), then keep running forever in a child and the main process
# expect: the run still ends at its timeout: timed_out true, exit -1, SIGKILL; the output written before closing is kept; nothing left
# check: r.timed_out === true && r.exit_code === -1 && r.signal === 'SIGKILL'
# check: r.stdout === 'BEFORE out\n' && r.stderr === 'BEFORE err\n' && r.duration_ms < 30000
# timeout: 3
import os, sys, time
sys.stdout.write("BEFORE out\n"); sys.stdout.flush()
sys.stderr.write("BEFORE err\n"); sys.stderr.flush()
os.close(0); os.close(1); os.close(2)
if os.fork() == 0:
    while True:
        time.sleep(0.1)
while True:
    pass
