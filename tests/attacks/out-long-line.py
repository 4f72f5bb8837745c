# attack: a 6 MB single line of JSON-looking text on stdout (no newline anywhere), past MCP_EXEC_MAX_OUTPUT_BYTES (1 MiB by default)
# expect: the run completes; stdout is the first 1 MiB of the line exactly, truncated: true
# check: r.exit_code === 0 && r.truncated === true && r.stderr === ''
# check: r.stdout.length === 1048576 && r.stdout === ('{"k":"' + 'v'.repeat(56) + '",').repeat(16384)
import sys

# 64-byte units: '{"k":"' + 56 x 'v' + '",'
unit = '{"k":"' + "v" * 56 + '",'
assert len(unit) == 64
sys.stdout.write(unit * (6 * 1024 * 1024 // 64))
