# attack: make files bigger than LimitFSIZE (64 MiB): a sparse write past it, truncate() past it, and a child with SIGXFSZ at its default
# expect: Python's write and truncate fail with EFBIG; the child writing past the limit is killed by SIGXFSZ; RLIMIT_FSIZE reads 64 MiB; exit 0
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 3
# check: r.stdout.includes('RLIMIT_FSIZE 67108864 67108864')
# timeout: 30
import os, resource, signal, subprocess, sys

print("RLIMIT_FSIZE %d %d" % resource.getrlimit(resource.RLIMIT_FSIZE))
LIM = 64 << 20

try:
    with open("/tmp/big", "wb") as f:
        f.seek(LIM)
        f.write(b"x")
        f.flush()
    print("ESCAPED sparse write at offset %d: file is %d bytes" % (LIM, os.path.getsize("/tmp/big")))
except OSError as e:
    print("BLOCKED sparse write at offset %d: %s" % (LIM, e))

try:
    with open("/tmp/big2", "wb") as f:
        f.truncate(LIM + 4096)
    print("ESCAPED truncate past the limit: file is %d bytes" % os.path.getsize("/tmp/big2"))
except OSError as e:
    print("BLOCKED truncate to %d: %s" % (LIM + 4096, e))

child = r'''
import os, signal
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
fd = os.open("/dev/shm/big3", os.O_WRONLY | os.O_CREAT, 0o600)
os.lseek(fd, %d, 0)
os.write(fd, b"x")
print("child wrote past the limit")
''' % LIM
p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
if p.returncode == -signal.SIGXFSZ:
    print("BLOCKED child writing past the limit: killed by SIGXFSZ")
else:
    print("ESCAPED child writing past the limit: exit %d %s %s" % (p.returncode, p.stdout.strip(), p.stderr.strip()[-200:]))
