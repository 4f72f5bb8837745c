# attack: flood stderr with 64 MiB of lines as fast as possible
# expect: truncated true, at most 1 MiB kept, starting with the first line; the program exits 0 by itself
# check: r.exit_code === 0 && r.truncated === true && r.timed_out === false && r.stdout === ''
# check: r.stderr.length <= 1048576 && r.stderr.length >= 1000000 && r.stderr.startsWith('line 0 e')
# check: /^(line \d+ e+\n)*(line \d+ e*|line|lin|li|l)?$/.test(r.stderr)
# timeout: 60
import sys

w = sys.stderr.write
for i in range(64 * 1024):
    w("line %d %s\n" % (i, "e" * 1000))
sys.stderr.flush()
