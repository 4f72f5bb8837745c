# attack: write the run's result: find the interpreter's control socket among the program's fds, send "done 0" on it, put /dev/null on fds 0, 1 and 2 (the caller sees their end) and keep running forever
# expect: the caller does not get exit_code 0 at once: how the run ended is the launcher's own wait on the interpreter, which never exits, so the run is killed at its timeout (timed_out true, SIGKILL) as any busy loop
# check: r.timed_out === true && r.exit_code === -1 && r.signal === 'SIGKILL'
# check: r.stdout === 'FORGED 1\n'
# timeout: 3
import os, socket, sys

n = 0
for fd in sorted(int(x) for x in os.listdir("/proc/self/fd")):
    try:
        d = os.dup(fd)
    except OSError:
        continue
    try:
        s = socket.socket(fileno=d)
    except OSError:
        os.close(d)
        continue
    try:
        if s.type == socket.SOCK_SEQPACKET:
            s.send(b"done 0")
            n += 1
    except OSError as e:
        print("BLOCKED send on fd %d: %s" % (fd, e))
    finally:
        s.close()
print("FORGED %d" % n, flush=True)
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
while True:
    pass
