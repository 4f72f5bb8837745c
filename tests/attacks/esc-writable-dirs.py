# attack: find any directory outside the run's private ones where a file can be created: walk the whole file system (not /proc, /sys) and try to create a file in every directory that access() calls writable
# expect: the only writable directories are the run's own /tmp, /var/tmp, /dev/shm, /dev/mqueue and matplotlib's /var/cache/mcp-exec/mpl (each a tmpfs of the run, and below them); at least 1000 directories were walked
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 1
# check: +(r.stdout.match(/among (\d+) directories/) || [])[1] >= 1000
# timeout: 120
import errno, os

PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/var/cache/mcp-exec/mpl")
walked = 0
found = []
for root, dirs, files in os.walk("/", topdown=True, onerror=None, followlinks=False):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
    walked += 1
    if any(root == p or root.startswith(p + "/") for p in PRIVATE):
        dirs[:] = []
        continue
    if os.access(root, os.W_OK):
        p = os.path.join(root, ".mcpatkb-probe")
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            os.unlink(p)
            found.append(root)
        except OSError:
            pass
if found:
    print("ESCAPED writable directories outside %s: %s" % (", ".join(PRIVATE), found[:20]))
else:
    print("BLOCKED writable directories outside %s: none among %d directories" % (", ".join(PRIVATE), walked))
