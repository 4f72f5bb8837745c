# attack: race the early word: the main thread calls os._exit(0) while another thread sends the process SIGKILL in a loop, so that the kernel's last word may differ from the status the main thread asked for
# expect: the run ends at once either way: exit_code 0 (the status heard as the main thread asked to exit) or SIGKILL (the kill came first); no timeout, no hang, no other status
# check: r.timed_out === false && ((r.exit_code === 0 && r.signal === null) || r.signal === 'SIGKILL')
# timeout: 10
import os, signal, threading, time

go = threading.Event()


def killer():
    go.wait()
    while True:
        os.kill(os.getpid(), signal.SIGKILL)


threading.Thread(target=killer, daemon=True).start()
time.sleep(0.2)
go.set()
os._exit(0)
