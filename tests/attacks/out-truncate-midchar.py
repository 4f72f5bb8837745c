# attack: output whose 1 MiB limit falls inside a multi-byte character (1048575 x 'x' then a 2-byte 'é', then more)
# expect: truncated: true and still valid UTF-8: the cut half character becomes one U+FFFD, nothing else changes
# check: r.exit_code === 0 && r.truncated === true && r.stdout.length === 1048576
# check: r.stdout.startsWith('x'.repeat(1048575)) && r.stdout.endsWith('\ufffd')
import sys

sys.stdout.write("x" * 1048575 + "é" * 1000)
