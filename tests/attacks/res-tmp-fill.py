# attack: fill /tmp, /dev/shm and /var/tmp (several files, each below LimitFSIZE) to fill the host's memory or disk
# expect: each fails with ENOSPC at about the per-run tmpfs size (MCP_EXEC_TMP_SIZE_MAX, 64 MiB), a normal result (exit 0); nothing is left afterwards
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 3
# timeout: 60
import errno, os

LIMIT = 64 << 20          # MCP_EXEC_TMP_SIZE_MAX default
STOP = LIMIT + (32 << 20) # past this the cap is missing: stop before the memory limit does
PER_FILE = 32 << 20       # below LimitFSIZE (64 MiB), so only the file system's size can stop us
chunk = b"\0" * (1 << 20)

for d in ("/tmp", "/dev/shm", "/var/tmp"):
    total = 0
    err = None
    i = 0
    try:
        while total < STOP:
            with open("%s/fill%d" % (d, i), "wb") as f:
                n = 0
                while n < PER_FILE and total < STOP:
                    f.write(chunk)
                    f.flush()
                    n += len(chunk)
                    total += len(chunk)
            i += 1
    except OSError as e:
        err = e
    st = os.statvfs(d)
    size = st.f_blocks * st.f_frsize
    if err is not None and err.errno == errno.ENOSPC and total <= LIMIT:
        print("BLOCKED fill %s: ENOSPC after %d MiB (file system size %d MiB)" % (d, total >> 20, size >> 20))
    elif err is not None:
        print("ESCAPED fill %s: %r after %d MiB (file system size %d MiB)" % (d, err, total >> 20, size >> 20))
    else:
        print("ESCAPED fill %s: wrote %d MiB, past the %d MiB per-run size (file system size %d MiB)"
              % (d, total >> 20, LIMIT >> 20, size >> 20))
    for j in range(i + 1):
        try:
            os.unlink("%s/fill%d" % (d, j))
        except FileNotFoundError:
            pass
