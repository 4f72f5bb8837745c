# attack: leave a FIFO nobody writes to, a unix socket and a regular file in /tmp/outputs, so that a collector that opens the FIFO blocks forever
# expect: the call ends promptly; the FIFO and the socket are listed with returned: false; the regular file comes back
# timeout: 20
# check: !r.timed_out && r.exit_code === 0 && (r.stdout.match(/^MADE /gm) || []).length === 3
# check: ['pipe', 'sock'].every(n => r.files.some(f => f.path === '/tmp/outputs/' + n && !f.returned && f.reason))
# check: r.files.some(f => f.path === '/tmp/outputs/ok.txt' && f.returned)
import os, socket

os.makedirs("/tmp/outputs")
os.mkfifo("/tmp/outputs/pipe")
print("MADE pipe")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("/tmp/outputs/sock")
print("MADE sock")
open("/tmp/outputs/ok.txt", "w").write("ok\n")
print("MADE ok.txt")
