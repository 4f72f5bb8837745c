# attack: make a process the code forked look like the run's end: the child calls os._exit(0) (an exit_group() the launcher hears too) at once, the interpreter itself goes on for half a second and exits with 4
# expect: the caller gets 4 and the parent's line: a child's exit_group() is answered and ignored (its pid is not the interpreter's)
# check: r.exit_code === 4 && r.timed_out === false && r.signal === null
# check: r.stdout === 'PARENT AFTER CHILD\n'
# timeout: 10
import os, sys, time

pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.5)
print("PARENT AFTER CHILD", flush=True)
sys.exit(4)
