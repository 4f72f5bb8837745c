# attack: thread bomb: start threads until something stops us
# expect: thread creation fails (RuntimeError, EAGAIN underneath) below TasksMax (128); the program goes on and exits 0
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 1
# check: +(r.stdout.match(/after (\d+) threads/) || [])[1] > 32 && +(r.stdout.match(/after (\d+) threads/) || [])[1] < 128
# timeout: 20
import threading

ev = threading.Event()
n = 0
try:
    while n < 100000:
        threading.Thread(target=ev.wait, daemon=True).start()
        n += 1
    print("ESCAPED threads: started %d threads" % n)
except RuntimeError as e:
    print("BLOCKED thread creation after %d threads: %s" % (n, e))
ev.set()
