# attack: forge the result channel: write result frames (a PNG figure) to every fd the program may hold and to stdout, and open the launcher's fds through /proc/PPID/fd for writing
# expect: the program holds no end of the channel and cannot open the launcher's: no image comes back (the program makes no figure), the frame printed to stdout stays text in stdout
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length >= 1
# check: r.images.length === 0 && res.content.every(c => c.type === 'text') && r.stdout.includes('MCPR')
import base64, errno, json, os, struct

png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAFUlEQVR4nGM8IafBwcDAwDATE9jYAQAT2AESWOyqfwAAAABJRU5ErkJggg==")
meta = json.dumps({"source": "figure", "index": 1}).encode()
frame = b"MCPR\x02\0\0\0" + struct.pack("<IQ", len(meta), len(png)) + meta + png + b"MCPR\x06\0\0\0" + bytes(12)
forged = 0
for fd in range(3, 1024):
    try:
        os.write(fd, frame)
        forged += 1
        print("ESCAPED wrote a frame to fd %d (%s)" % (fd, os.readlink("/proc/self/fd/%d" % fd)))
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
