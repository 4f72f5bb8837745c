# attack: one 4 MiB line without a newline on stdout, written in one call
# expect: the output is cut at MCP_EXEC_MAX_OUTPUT_BYTES (1 MiB, stdout+stderr): truncated true, stdout is the first part of the line, nothing else; exit 0
# check: r.exit_code === 0 && r.truncated === true && r.timed_out === false
# check: r.stdout.length + r.stderr.length <= 1048576 && r.stdout.length >= 1000000
# check: r.stdout.startsWith('FIRST') && /^FIRST[a]*$/.test(r.stdout) && r.stderr === ''
import sys

sys.stdout.write("FIRST" + "a" * (4 << 20))
sys.stdout.flush()
sys.stderr.write("dropped: after the limit\n")
