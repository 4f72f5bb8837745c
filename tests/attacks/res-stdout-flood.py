# attack: flood stdout with 64 MiB of lines as fast as possible
# expect: truncated true, at most 1 MiB kept, starting with the first line; the program is not blocked by the dropped output and exits 0 by itself
# check: r.exit_code === 0 && r.truncated === true && r.timed_out === false && r.stderr === ''
# check: r.stdout.length <= 1048576 && r.stdout.length >= 1000000 && r.stdout.startsWith('line 0 o')
# check: /^(line \d+ o+\n)*(line \d+ o*|line|lin|li|l)?$/.test(r.stdout)
# timeout: 60
import sys

w = sys.stdout.write
for i in range(64 * 1024):
    w("line %d %s\n" % (i, "o" * 1000))
sys.stdout.flush()
