# attack: write the run's result: find the interpreter's control socket among the program's fds, send "done -2147483648" (INT_MIN) and "done 0" on it, then go on for a second and exit with 3
# expect: the caller gets the real end, exit_code 3, not the forged 0 (nor a status made of INT_MIN); no timeout
# check: r.exit_code === 3 && r.timed_out === false && r.signal === null
# check: r.stdout === 'FORGED 1 1\nSTILL RUNNING\n'
# timeout: 10
import os, socket, sys, time


def forge(text):
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
                s.send(text.encode())
                n += 1
        except OSError as e:
            print("BLOCKED send on fd %d: %s" % (fd, e))
        finally:
            s.close()
    return n


print("FORGED %d %d" % (forge("done -2147483648"), forge("done 0")), flush=True)
time.sleep(1)
print("STILL RUNNING", flush=True)
sys.exit(3)
