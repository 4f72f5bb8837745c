# attack: leave a sparse 1 TB file in /tmp/outputs (and, since LimitFSIZE= refuses that, a sparse 60 MiB one), so that collection reads or sends all of it
# expect: the terabyte is refused by LimitFSIZE= (EFBIG); the 60 MiB file is listed with returned: false, past MCP_EXEC_MAX_RESULT_BYTES, and the call ends promptly
# timeout: 20
# check: !r.timed_out && (r.stdout.match(/^BLOCKED /gm) || []).length === 1 && /^MADE sparse 62914560$/m.test(r.stdout)
# check: r.files.some(f => f.path === '/tmp/outputs/sparse.bin' && !f.returned && f.reason && (f.bytes === null || f.bytes === 62914560))
# check: res.content.every(c => c.type === 'text')
import errno, os

os.makedirs("/tmp/outputs")
with open("/tmp/outputs/sparse.bin", "wb") as f:
    try:
        f.truncate(1 << 40)
        print("ESCAPED a 1 TB file: %d" % os.fstat(f.fileno()).st_size)
    except OSError as e:
        print("BLOCKED 1 TB: %s" % errno.errorcode.get(e.errno, e.errno))
    f.truncate(60 << 20)
    print("MADE sparse %d" % os.fstat(f.fileno()).st_size)
