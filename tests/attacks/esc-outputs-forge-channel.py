# attack: forge the result channel: write result frames (a PNG figure) to every fd the program holds and to stdout, open the launcher's fds through /proc/PPID/fd for writing, and hand the launcher's figure socket (if the program holds one) a FIFO and an oversized memfd as figures
# expect: the program holds no end of the channel and cannot open the launcher's; raw frames on any socket it holds are not taken for figures, a FIFO handed over does not hang collection, an oversized one is not read; no image comes back and the frame printed to stdout stays text
# timeout: 20
# check: r.exit_code === 0 && !r.timed_out && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length >= 1
# check: r.images.every(i => !i.returned) && res.content.every(c => c.type === 'text') && r.stdout.includes('MCPR')
import base64, errno, json, os, socket, stat, struct

png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAFUlEQVR4nGM8IafBwcDAwDATE9jYAQAT2AESWOyqfwAAAABJRU5ErkJggg==")
meta = json.dumps({"source": "figure", "index": 1}).encode()
frame = b"MCPR\x02\0\0\0" + struct.pack("<IQ", len(meta), len(png)) + meta + png + b"MCPR\x06\0\0\0" + bytes(12)
# The fds the program was started with (not those this probe opens).
start_fds = sorted(int(n) for n in os.listdir("/proc/self/fd") if int(n) > 2)
for fd in start_fds:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        continue
    target = os.readlink("/proc/self/fd/%d" % fd)
    if stat.S_ISSOCK(mode):
        # The interpreter's figure hand-over: raw bytes, a FIFO and a huge memfd as "figures".
        s = socket.socket(fileno=os.dup(fd))
        try:
            s.send(frame)
            os.mkfifo("/tmp/fig.fifo")
            rfd = os.open("/tmp/fig.fifo", os.O_RDONLY | os.O_NONBLOCK)
            big = os.memfd_create("big")
            try:
                os.ftruncate(big, 1 << 40)
            except OSError as e:
                os.ftruncate(big, 60 << 20)
            socket.send_fds(s, [b"fig"], [rfd])
            socket.send_fds(s, [b"fig"], [big])
            print("INFO fd %d (%s): sent a raw frame, a FIFO and a %d-byte memfd as figures" % (fd, target, os.fstat(big).st_size))
        except OSError as e:
            print("BLOCKED the socket at fd %d: %s" % (fd, errno.errorcode.get(e.errno, e.errno)))
        continue
    try:
        os.write(fd, frame)
        print("ESCAPED wrote a frame to fd %d (%s)" % (fd, target))
    except OSError:
        pass
ppid = os.getppid()
try:
    fds = os.listdir("/proc/%d/fd" % ppid)
except OSError as e:
    print("BLOCKED list the launcher's fds: %s" % errno.errorcode.get(e.errno, e.errno))
    fds = []
for fd in fds:
    try:
        w = os.open("/proc/%d/fd/%s" % (ppid, fd), os.O_WRONLY | os.O_NONBLOCK)
        os.write(w, frame)
        print("ESCAPED wrote a frame to the launcher's fd %s" % fd)
    except OSError as e:
        print("BLOCKED the launcher's fd %s: %s" % (fd, errno.errorcode.get(e.errno, e.errno)))
os.write(1, b"stdout: " + frame[:24] + b"\n")
